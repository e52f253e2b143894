-- :BB7Add forms that attach editor state instead of a file (docs/PROTOCOL.md,
-- "Extension: rules files and attachments"): `diagnostics` (the current buffer's, `%`
-- every buffer's), `quickfix`, `gitdiff [REV]` and `cmd <command>`. Each becomes one
-- `context_attach`: a named, read-only snapshot the binary keeps like a section. An
-- image file (`:BB7Add shot.png`) is added by path: the binary reads its bytes.

local api = require('bb7.api')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

--- The words that start an attachment form of :BB7Add.
M.forms = { 'diagnostics', 'quickfix', 'gitdiff', 'cmd' }

local severities = { 'error', 'warning', 'info', 'hint' }

--- Whether `args` (the text after :BB7Add) names an attachment form.
---@param args string?
---@return boolean
function M.handles(args)
  local word = (args or ''):match('^(%S+)')
  return word ~= nil and (vim.tbl_contains(M.forms, word) or M.is_image(args))
end

--- Whether `path` names an image file bb7 sends as an image (PNG, JPEG, GIF, WebP).
---@param path string
---@return boolean
function M.is_image(path)
  local ext = (vim.fn.fnamemodify(path, ':e') or ''):lower()
  return vim.tbl_contains({ 'png', 'jpg', 'jpeg', 'gif', 'webp' }, ext)
end

--- One line per diagnostic, `path:line:col: severity: message [source]` (1-based).
---@param list vim.Diagnostic[]
---@return string
function M.format_diagnostics(list)
  table.sort(list, function(a, b)
    if a.bufnr ~= b.bufnr then
      return a.bufnr < b.bufnr
    end
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    return a.col < b.col
  end)
  local out = {}
  for _, d in ipairs(list) do
    local path = state.relpath(vim.api.nvim_buf_get_name(d.bufnr))
    local line = string.format('%s:%d:%d: %s: %s', path, d.lnum + 1, d.col + 1, severities[d.severity] or 'error', (d.message:gsub('\n', ' ')))
    local source = d.source and tostring(d.source) or nil
    if d.code then
      source = (source and (source .. ' ') or '') .. tostring(d.code)
    end
    if source then
      line = line .. ' [' .. source .. ']'
    end
    table.insert(out, line)
  end
  return table.concat(out, '\n') .. '\n'
end

--- One line per quickfix entry, `path:line:col: text` (the type letter first when set).
---@return string content, string title
function M.format_quickfix()
  local qf = vim.fn.getqflist({ items = 1, title = 1 })
  local out = {}
  for _, item in ipairs(qf.items) do
    local path = item.bufnr > 0 and state.relpath(vim.api.nvim_buf_get_name(item.bufnr)) or ''
    local kind = (item.type and item.type ~= '') and (item.type .. ': ') or ''
    table.insert(out, string.format('%s:%d:%d: %s%s', path, item.lnum, item.col, kind, (item.text:gsub('\n', ' '))))
  end
  return #out > 0 and (table.concat(out, '\n') .. '\n') or '', qf.title or ''
end

--- Runs `argv` in the project root; returns its exit status and what it printed.
local function run(argv)
  local ok, r = pcall(function()
    return vim.system(argv, { cwd = state.root(), text = true }):wait()
  end)
  if not ok then
    return nil, tostring(r)
  end
  return r.code, (r.stdout or '') .. (r.stderr or '')
end

--- What `:BB7Add <form> …` attaches: `{kind, name, content, meta?}`, or nil and why not.
---@param args string
---@return table? item
---@return string? why
function M.item(args)
  local word, rest = args:match('^(%S+)%s*(.-)%s*$')
  if word == 'diagnostics' then
    local all = rest == '%'
    local buf = vim.api.nvim_get_current_buf()
    local list = vim.diagnostic.get(not all and buf or nil)
    local name = all and 'all buffers' or state.relpath(vim.api.nvim_buf_get_name(buf))
    if #list == 0 then
      return nil, 'no diagnostics in ' .. (all and 'any buffer' or name)
    end
    return { kind = 'diagnostics', name = name, content = M.format_diagnostics(list), meta = { count = #list } }
  elseif word == 'quickfix' then
    local content, title = M.format_quickfix()
    if content == '' then
      return nil, 'the quickfix list is empty'
    end
    return { kind = 'quickfix', name = title ~= '' and title or 'quickfix', content = content }
  elseif word == 'gitdiff' then
    local argv = { 'git', '--no-pager', 'diff', '--no-color' }
    if rest ~= '' then
      table.insert(argv, rest)
    end
    local code, out = run(argv)
    if code ~= 0 then
      return nil, 'git diff failed: ' .. vim.trim(out or '')
    end
    local name = 'git diff' .. (rest ~= '' and (' ' .. rest) or '')
    if out == '' then
      return nil, 'no changes (' .. name .. ')'
    end
    return { kind = 'git_diff', name = name, content = out, meta = rest ~= '' and { rev = rest } or nil }
  elseif word == 'cmd' then
    if rest == '' then
      return nil, 'name the command: :BB7Add cmd <command>'
    end
    -- One stream, as a terminal shows it: stderr goes where stdout goes.
    local code, out = run({ vim.o.shell, '-c', 'exec 2>&1\n' .. rest })
    if not code then
      return nil, 'cannot run ' .. rest .. ': ' .. out
    end
    return { kind = 'command_output', name = rest, content = out, meta = { command = rest, exit_status = code } }
  end
  return nil, 'unknown form ' .. tostring(word)
end

--- :BB7Add diagnostics|quickfix|gitdiff|cmd …: attaches the item to the active chat.
---@param args string
---@return boolean attached
function M.add(args)
  if M.is_image(args) then
    -- bb7 reads the image's bytes from the file itself.
    local path = state.relpath(vim.trim(args))
    local _, err = api.context_add({ path = path, content = '' })
    if err then
      say('Failed to add ' .. path .. ': ' .. (err.message or '?'), levels.ERROR)
      return false
    end
    say('Added image:' .. path)
    return true
  end
  local item, why = M.item(args)
  if not item then
    say('Nothing attached: ' .. why, levels.WARN)
    return false
  end
  local r, err = api.call('context_attach', item)
  if not r then
    say('Failed to attach ' .. item.kind .. ': ' .. (err.message or '?'), levels.ERROR)
    return false
  end
  local note = 'Attached ' .. r.path
  if item.meta and item.meta.exit_status then
    note = note .. ' (exit ' .. item.meta.exit_status .. ')'
  end
  if r.truncated then
    note = note .. ', cut to 64 KiB'
  end
  say(note)
  require('bb7.invisible').warn(r)
  return true
end

--- Completion for :BB7Add: the forms, `%` after `diagnostics`, files otherwise.
---@param arglead string
---@param cmdline string
---@param files fun(arglead: string): string[]
---@return string[]
function M.complete(arglead, cmdline, files)
  local before = cmdline:gsub('^%s*%S+%s*', '', 1)
  local first = before:match('^(%S+)%s')
  if first == 'diagnostics' then
    return { '%' }
  elseif first == 'gitdiff' then
    return vim.tbl_filter(function(r)
      return r:sub(1, #arglead) == arglead
    end, { 'HEAD', '--staged', 'HEAD~1', 'main' })
  elseif first == 'cmd' then
    return vim.fn.getcompletion(arglead, 'shellcmd')
  elseif first then
    return files(arglead)
  end
  local out = vim.tbl_filter(function(f)
    return f:sub(1, #arglead) == arglead
  end, M.forms)
  return vim.list_extend(out, files(arglead))
end

return M
