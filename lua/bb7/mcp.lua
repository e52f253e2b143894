-- MCP resources and prompts (docs/PROTOCOL.md "MCP resources and prompts"):
-- `:BB7Add mcp` picks a server, then one of its resources (a template is filled in
-- first) and attaches it; `:BB7Add mcp:SERVER:URI` attaches it directly. A message
-- `/mcp:SERVER:PROMPT name=value …` is rendered by its server and sent as the message
-- (its embedded resources attached). The servers' answers come asynchronously: a
-- server may take its whole timeout, and the editor must not freeze meanwhile.

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

--- Whether `args` (the text after :BB7Add) is an MCP form.
---@param args string?
---@return boolean
function M.handles(args)
  args = vim.trim(args or '')
  return args == 'mcp' or args:match('^mcp:') ~= nil
end

--- Reads `uri` of `server` and attaches it; `done()` after success.
local function attach(server, uri, done)
  api.notify('mcp_resource_attach', { server = server, uri = uri }, function(r, err)
    if err then
      return say('Failed to attach ' .. uri .. ': ' .. (err.message or '?'), levels.ERROR)
    end
    local note = 'Attached ' .. table.concat(r.paths or {}, ', ')
    if r.truncated then
      note = note .. ', cut to 64 KiB'
    end
    if r.user_only then
      note = note .. ' (for you only: not sent to the model)'
    end
    say(note)
    if done then
      done()
    end
  end)
end

--- A picker of `server`'s resources and templates; the choice is attached.
function M.pick_resource(server, done)
  api.notify('mcp_resources_list', { server = server }, function(r, err)
    if err then
      return say('MCP ' .. server .. ': ' .. (err.message or '?'), levels.ERROR)
    end
    local items = {}
    for _, res in ipairs(r.resources or {}) do
      table.insert(items, { uri = res.uri, label = res.uri .. (res.mime and ('  ' .. res.mime) or '') .. (res.user_only and '  (for you only)' or '') })
    end
    for _, t in ipairs(r.templates or {}) do
      table.insert(items, { template = t.uri_template, label = t.uri_template .. '  (template)' })
    end
    if #items == 0 then
      return say('MCP server ' .. server .. ' lists no resources', levels.WARN)
    end
    vim.ui.select(items, {
      prompt = 'Resource of ' .. server,
      format_item = function(i) return i.label end,
    }, function(item)
      if not item then
        return
      end
      if item.uri then
        return attach(server, item.uri, done)
      end
      vim.ui.input({ prompt = 'URI: ', default = item.template }, function(uri)
        if uri and uri ~= '' then
          attach(server, uri, done)
        end
      end)
    end)
  end)
end

--- Asks once whether this project's own servers may run; `go()` when they may.
local function consent(go)
  vim.ui.select({ 'Allow', 'Not now' }, {
    prompt = "This project's .bb7/config.json names MCP servers, which run commands. Allow them?",
  }, function(choice)
    if choice ~= 'Allow' then
      return
    end
    local _, err = api.call('mcp_consent', { allow = true })
    if err then
      return say('Cannot allow: ' .. (err.message or '?'), levels.ERROR)
    end
    go()
  end)
end

--- `:BB7Add mcp` (pickers) and `:BB7Add mcp:SERVER:URI`; `done()` after an attach.
---@param args string
---@param done fun()?
function M.add(args, done)
  local server, uri = vim.trim(args):match('^mcp:([^:]+):(.+)$')
  if server then
    return attach(server, uri, done)
  end
  local r, err = api.call('mcp_servers_list', {})
  if not r then
    return say('MCP: ' .. (err.message or '?'), levels.ERROR)
  end
  if r.consent_needed then
    return consent(function() M.add(args, done) end)
  end
  local servers = vim.tbl_filter(function(s) return not s.error and not s.needs_consent end, r.servers or {})
  if #servers == 0 then
    return say('No MCP servers: set mcp_servers in ~/.config/bb7/config.json', levels.WARN)
  end
  vim.ui.select(servers, {
    prompt = 'MCP server',
    format_item = function(s) return s.name .. ' (' .. (s.transport or '?') .. ')' end,
  }, function(s)
    if s then
      M.pick_resource(s.name, done)
    end
  end)
end

--- Completion after :BB7Add: `mcp` when the first word is being typed.
---@param arglead string
---@param cmdline string
---@return string[]
function M.complete(arglead, cmdline)
  local before = cmdline:gsub('^%s*%S+%s*', '', 1)
  if before:match('%s') or ('mcp'):sub(1, #arglead) ~= arglead then
    return {}
  end
  return { 'mcp' }
end

--- For a message `/mcp:SERVER:PROMPT name=value …`: renders it and calls
--- `send(text)` with the server's text. Returns false when `text` is no such message.
---@param text string
---@param send fun(text: string)
---@return boolean
function M.prompt(text, send)
  local server, name, rest = vim.trim(text):match('^/mcp:([^:%s]+):(%S+)%s*(.*)$')
  if not server then
    return false
  end
  local arguments = vim.empty_dict()
  -- name=value, or name="value with blanks".
  rest = rest:gsub('([^%s=]+)="([^"]*)"', function(k, v)
    arguments[k] = v
    return ''
  end)
  for k, v in rest:gmatch('([^%s=]+)=(%S+)') do
    arguments[k] = v
  end
  api.notify('mcp_prompt_get', { server = server, name = name, arguments = arguments }, function(r, err)
    if err then
      return say('MCP prompt ' .. name .. ': ' .. (err.message or '?'), levels.ERROR)
    end
    for _, p in ipairs(r.attached or {}) do
      say('Attached ' .. p)
    end
    send(r.text)
  end)
  return true
end

--- The Message pane's 'completefunc' (<C-x><C-u>): on a line that starts with
--- `/mcp:`, every server's prompts as `/mcp:SERVER:PROMPT` with their arguments as
--- the menu text. Asking starts the servers, so it waits for them (at most 30 s).
---@param findstart integer
---@param base string
---@return integer|table
function M.completefunc(findstart, base)
  if findstart == 1 then
    return vim.api.nvim_get_current_line():match('^/mcp') and 0 or -3
  end
  local r = require('bb7.client').request_sync('mcp_prompts_list', {}, 30000)
  local out = {}
  for _, p in ipairs(r and r.prompts or {}) do
    local word = '/mcp:' .. p.server .. ':' .. p.name
    if word:sub(1, #base) == base then
      local args = vim.tbl_map(function(a) return a.name .. '=' end, p.arguments or {})
      table.insert(out, { word = word, menu = table.concat(args, ' '), info = p.description })
    end
  end
  return out
end

return M
