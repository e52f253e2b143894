-- :BB7Add mcp (a picker of servers, then of resources), :BB7Add mcp:SERVER:URI, and a
-- message /mcp:SERVER:PROMPT, against the npm registry's everything server
-- (scripts/mcp-servers installs it into .tools/mcp).
local test, H = ...
local L = vim.log.levels

local function everything()
  local r = vim.system({ 'bash', H.root .. '/scripts/mcp-servers' }, { text = true }):wait()
  H.eq(r.code, 0, 'scripts/mcp-servers: ' .. (r.stderr or ''))
  local dir = vim.trim(r.stdout)
  return { command = 'node', args = { dir .. '/node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio' } }
end

local DOC = 'demo://resource/static/document/architecture.md'

local function paths()
  return vim.tbl_map(function(f) return f.path end, require('bb7.client').request_sync('context_list', {}).files)
end

--- vim.ui.select picks the item whose label contains `want` (one per call, in order).
local function choose(...)
  local wants = { ... }
  vim.ui.select = function(items, opts, cb)
    local want = table.remove(wants, 1)
    for _, item in ipairs(items) do
      local label = opts.format_item and opts.format_item(item) or item
      if label:find(want, 1, true) then
        return cb(item)
      end
    end
    error('no item like ' .. want .. ' in ' .. vim.inspect(items))
  end
end

test(':BB7Add mcp picks a server, then a resource or a template to fill in', function()
  H.project({ ['a.txt'] = 'one\n' }, { mcp_servers = { everything = everything() } })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  H.truthy(vim.tbl_contains(vim.fn.getcompletion('BB7Add ', 'cmdline'), 'mcp'), 'completes mcp')
  choose('everything (stdio)', DOC)
  vim.cmd('BB7Add mcp')
  H.wait(function() return H.note('Attached mcp_resource:everything:' .. DOC) end, 60000, 'the attach')
  H.truthy(vim.tbl_contains(paths(), 'mcp_resource:everything:' .. DOC), 'in context')

  choose('everything', 'dynamic/text/{resourceId}')
  vim.ui.input = function(opts, cb)
    H.eq(opts.default, 'demo://resource/dynamic/text/{resourceId}', 'the template offered')
    cb('demo://resource/dynamic/text/5')
  end
  vim.cmd('BB7Add mcp')
  H.wait(function() return H.note('Attached mcp_resource:everything:demo://resource/dynamic/text/5') end, 60000, 'the template attach')

  -- :BB7Add on its row in the Files pane reads it again.
  vim.cmd('BB7')
  require('bb7.ui.layout').focus('files')
  local rows = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local at
  for i, l in ipairs(rows) do
    if l:find('dynamic/text/5', 1, true) then
      at = i
    end
  end
  H.truthy(at, 'the row: ' .. vim.inspect(rows))
  vim.api.nvim_win_set_cursor(0, { at, 0 })
  H.notes = {}
  vim.cmd('BB7Add')
  H.wait(function() return H.note('Attached mcp_resource:everything:demo://resource/dynamic/text/5') end, 60000, 're-read from the row')
  vim.cmd('BB7Add mcp:everything:demo://resource/dynamic/text/7')
  H.wait(function() return H.note('Attached mcp_resource:everything:demo://resource/dynamic/text/7') end, 60000, 'a direct attach')
  vim.cmd('BB7Add mcp:everything:demo://nothing')
  H.wait(function() return H.note('Failed to attach demo://nothing: MCP server everything') end, 60000, 'an error')
  H.expect_note('Failed to attach demo://nothing', L.ERROR)
end)

test('a /mcp: message is rendered by its server and sent', function()
  H.project({}, { mcp_servers = { everything = everything() } })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  -- The Message pane completes the prompts (<C-x><C-u>).
  vim.cmd('BB7')
  local input = require('bb7.ui.layout').buf('input')
  H.eq(vim.bo[input].completefunc, "v:lua.require'bb7.mcp'.completefunc", 'completefunc set')
  local mcp = require('bb7.mcp')
  vim.api.nvim_set_current_win(vim.fn.bufwinid(input))
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { '/mcp:every' })
  H.eq(mcp.completefunc(1, ''), 0, 'completes from the line start')
  local words = vim.tbl_map(function(i) return i.word end, mcp.completefunc(0, '/mcp:everything:args'))
  H.eq(words, { '/mcp:everything:args-prompt' }, 'the prompt')
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { 'hello' })
  H.eq(mcp.completefunc(1, ''), -3, 'nothing on another line')
  H.script({ text = 'Cold.' })
  require('bb7.commands').send('/mcp:everything:args-prompt city="Oslo Sentrum" state=N')
  H.wait(function() return #H.requests() == 1 end, 60000, 'the send')
  local user = vim.json.encode(H.requests()[1].body.messages)
  H.truthy(user:find("What's weather in Oslo Sentrum, N?", 1, true), user)
end)

test("a project's own servers run only once allowed", function()
  local proj = H.project({}, {})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.fn.writefile({ vim.json.encode({ mcp_servers = { mine = everything() } }) }, proj .. '/.bb7/config.json')
  choose('Not now')
  vim.cmd('BB7Add mcp')
  local list = require('bb7.client').request_sync('mcp_servers_list', {})
  H.eq(list.consent_needed, true, 'still not allowed')
  choose('Allow', 'mine (stdio)', DOC)
  vim.cmd('BB7Add mcp')
  H.wait(function() return H.note('Attached mcp_resource:mine:' .. DOC) end, 60000, 'the attach')
end)
