-- The :BB7 commands: the state machine of the reference plugin ("Not initialized. Run
-- :BB7Init", "No active chat") and its user messages. The plugin holds no state the
-- binary does not hold: it asks the binary (bb7.api) and draws (bb7.ui.*).

local api = require('bb7.api')
local state = require('bb7.state')
local util = require('bb7.util')
local config = require('bb7.config')

local M = {}
local say, levels = util.say, vim.log.levels

local render = util.lazy('bb7.ui.render')
local layout = util.lazy('bb7.ui.layout')

---@param what string
---@param err bb7.Error
local function report(what, err)
  say('Failed to ' .. what .. ': ' .. (err.message or 'unknown error'), levels.ERROR)
end

-- Problems of config.json the binary reported in `init` (config_error, and the
-- config_warnings extension: an unknown key with the one it likely means), each shown
-- once per Neovim session however often the binary starts. Whole in :messages (the
-- key it names is the point); the command line shows what fits.
local config_noted = {}

local function note_config(r)
  local fresh = {}
  for _, w in ipairs(vim.list_extend({ r.config_error }, r.config_warnings or {})) do
    if type(w) == 'string' and not config_noted[w] then
      config_noted[w] = true
      table.insert(fresh, w)
    end
  end
  if #fresh > 0 then
    say(table.concat(fresh, '; '), levels.WARN)
  end
end

--- Makes sure the binary runs and knows the project.
---@param quiet boolean? do not warn when the project has no .bb7/
---@return boolean initialized
function M.ensure(quiet)
  if state.initialized() == nil or not require('bb7.client').running() then
    state.set_root(vim.fn.getcwd())
    local r, err = api.init(state.root())
    if not r and err and err.code == 'not_initialized' then
      -- No .bb7/ here: global-only mode (global chats only), as the reference does.
      r, err = api.init('')
    end
    if not r then
      say('Failed to start: ' .. err.message, levels.ERROR)
      return false
    end
    note_config(r)
    state.set_initialized(not r.global_only)
  end
  if not state.initialized() and not quiet then
    say('Not initialized. Run :BB7Init', levels.WARN)
  end
  return state.initialized() == true
end

--- The active chat id.
---@param quiet boolean? do not warn when there is none
---@return string?
function M.active_chat(quiet)
  local r = api.chat_active()
  if not r or not r.id then
    if not quiet then
      say('No active chat', levels.WARN)
    end
    return nil
  end
  return r.id
end

local function ready()
  return M.ensure() and M.active_chat() ~= nil
end

--- :BB7Init — creates .bb7/ in the current directory.
function M.init_project()
  state.set_root(vim.fn.getcwd())
  local r, err = api.bb7_init(state.root())
  if not r then
    if err.code == 'conflict' then
      say('Already initialized')
      state.set_initialized(nil)
      M.ensure(true)
    else
      report('initialize', err)
    end
    return
  end
  state.set_initialized(true)
  if M.gitignored(state.root()) then
    return say('Initialized in ' .. state.root())
  end
  -- One message: the hint must survive a narrow command line, the path may shrink.
  local hint = '; add .bb7/ to .gitignore'
  local root = vim.fn.fnamemodify(state.root(), ':~')
  if vim.fn.strdisplaywidth('BB-7: Initialized in ' .. root .. hint) > vim.v.echospace then
    root = vim.fn.pathshorten(root)
  end
  say('Initialized in ' .. root .. hint)
end

--- Whether the project's .gitignore has a line for .bb7/.
---@param root string
---@return boolean
function M.gitignored(root)
  local ok, lines = pcall(vim.fn.readfile, root .. '/.gitignore')
  for _, l in ipairs(ok and lines or {}) do
    if vim.trim(l):match('^/?%.bb7/?%*?$') then
      return true
    end
  end
  return false
end

---@param name string? empty for an automatic title
function M.new_chat(name)
  if not M.ensure() then
    return
  end
  require('bb7.ui.message').save()
  local _, err = api.chat_new({ name = (name ~= '' and name) or nil })
  if err then
    return report('create a chat', err)
  end
  say('New chat')
  render().refresh()
end

--- Whether `buf` holds a file of the user's (not a bb7 pane, help or terminal).
---@param buf integer
---@return boolean
function M.is_file_buffer(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= '' and vim.bo[buf].buftype == '' and not name:match('^bb7://')
end

--- The file of the last file buffer entered (or the most recently used one), or nil.
---@return string?
function M.last_file()
  local buf = state.last_file_buf()
  if buf and vim.api.nvim_buf_is_valid(buf) and M.is_file_buffer(buf) then
    return vim.api.nvim_buf_get_name(buf)
  end
  local best
  for _, info in ipairs(vim.fn.getbufinfo({ buflisted = 1 })) do
    if M.is_file_buffer(info.bufnr) and (not best or info.lastused > best.lastused) then
      best = info
    end
  end
  return best and best.name
end

--- Content and path for :BB7Add. `arg` is `path`, `path:start:end`, or empty (the
--- current buffer); a range (line1..line2) adds a section of the current buffer.
local function add_target(arg, range, line1, line2)
  local path, s, e
  if arg and arg ~= '' then
    local p, a, b = arg:match('^(.-):(%d+):(%d+)$')
    if p then
      path, s, e = p, tonumber(a), tonumber(b)
    else
      path = arg
    end
  elseif not M.is_file_buffer(0) then
    path = M.last_file()
    if not path then
      return nil, 'no file buffer to add (name a file: :BB7Add path)'
    end
    if range and range > 0 then
      return nil, 'a line range needs the file in the current window'
    end
  else
    path = vim.api.nvim_buf_get_name(0)
    if range and range > 0 then
      s, e = line1, line2
    end
  end
  local buf = vim.fn.bufnr(vim.fn.fnamemodify(path, ':p'))
  local content
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    content = util.buffer_text(buf)
    if not s and not require('bb7.ui.estimate').confirm_add(path, #content) then
      return nil, nil
    end
  else
    local abs = vim.fn.fnamemodify(path, ':p')
    local stat = vim.uv.fs_stat(abs)
    if stat and stat.type ~= 'file' then
      return nil, path .. ' is not a regular file'
    end
    -- A binary file is refused before it is read whole (and before Neovim freezes).
    local head = util.file_head(abs, 8192)
    if head and head:find('\0', 1, true) then
      return nil, path .. ' is a binary file (it has NUL bytes); bb7 adds text files only'
    end
    if stat and not s and not require('bb7.ui.estimate').confirm_add(path, stat.size) then
      return nil, nil
    end
    content = util.file_text(abs)
    if not content then
      return nil, 'cannot read file ' .. path
    end
  end
  local why = util.not_text(content)
  if why then
    return nil, path .. ' cannot be added: ' .. why .. '; bb7 adds text files only'
  end
  if s then
    local lines = vim.split(content, '\n', { plain = true })
    if content:sub(-1) == '\n' then
      table.remove(lines)
    end
    if e < s or e > #lines then
      return nil, 'invalid line range ' .. s .. '-' .. e
    end
    content = table.concat(vim.list_slice(lines, s, e), '\n') .. '\n'
  end
  return { path = state.relpath(path), content = content, start_line = s, end_line = e }
end

---@param opts table command opts (args, range, line1, line2)
---@param readonly boolean
function M.add(opts, readonly)
  if not ready() then
    return
  end
  if require('bb7.mcp').handles(opts.args) then
    return require('bb7.mcp').add(opts.args, function() render().refresh() end)
  end
  if require('bb7.attach').handles(opts.args) then
    return require('bb7.attach').add(opts.args) and render().refresh()
  end
  local row = (opts.args == nil or opts.args == '') and render().file_row()
  if row and not row.in_context then
    opts = { args = row.path }
  elseif row and row.path:match('^mcp_resource:') then
    -- An MCP resource is re-read from its server (lua/bb7/mcp.lua).
    return require('bb7.mcp').add('mcp:' .. row.path:sub(#'mcp_resource:' + 1), function() render().refresh() end)
  elseif row then
    -- In the Files pane: the file under the cursor, updated from disk.
    local _, err = api.sync_context({ path = row.path, start_line = row.start_line, end_line = row.end_line })
    if err then
      return report('update ' .. row.path, err)
    end
    say('Updated ' .. row.path)
    return render().refresh()
  end
  local t, why = add_target(opts.args, opts.range, opts.line1, opts.line2)
  if not t then
    -- No reason: the user said no to a large file.
    return why and say('Cannot add: ' .. why, levels.ERROR)
  end
  local added, err
  if t.start_line then
    added, err = api.context_add_section(t)
  else
    added, err = api.context_add({ path = t.path, content = t.content, readonly = readonly or nil })
  end
  if err then
    if err.code == 'conflict' then
      return say(err.message, levels.WARN)
    end
    return report('add file', err)
  end
  say('Added ' .. (t.start_line and (t.path .. ':' .. t.start_line .. '-' .. t.end_line) or t.path))
  require('bb7.invisible').warn(added)
  render().refresh()
end

---@param opts table command opts
function M.remove(opts)
  if not ready() then
    return
  end
  local rel = state.relpath((opts.args ~= '' and opts.args) or vim.api.nvim_buf_get_name(0))
  local _, err = api.context_remove({ path = rel })
  if err then
    if err.code == 'not_found' then
      return say('File not in context', levels.WARN)
    end
    return report('remove file', err)
  end
  say('Removed ' .. rel)
  render().refresh()
end

--- :BB7 — opens the UI, or closes it when it has the focus.
function M.toggle()
  if M.ensure() then
    layout().toggle()
  end
end

--- :BB7Model — picks the active chat's model (bb7.models).
function M.choose_model()
  if ready() then
    require('bb7.models').choose()
  end
end

-- The commands on the model's changes (diff, review, apply, checkpoints) live in
-- bb7.changes; these names stay for the callers that know them here.
local changes = require('bb7.changes')
for _, name in ipairs({ 'status_of', 'diff', 'diff_local', 'review', 'checkpoints', 'apply_one', 'apply' }) do
  M[name] = changes[name]
end

--- :BB7Search [query] — searches chats and makes the chosen one active.
---@param opts {args: string}
function M.search(opts)
  if not M.ensure() then
    return
  end
  local function run(query)
    if not query or query == '' then
      return
    end
    local r, err = api.search_chats({ query = query })
    if not r then
      return report('search', err)
    end
    if #r.results == 0 then
      return say('No chats match ' .. query, levels.WARN)
    end
    vim.ui.select(r.results, {
      prompt = 'Chats',
      format_item = function(h)
        return h.name .. (h.excerpt and ('  — ' .. h.excerpt) or '')
      end,
    }, function(choice)
      if choice then
        M.select_chat(choice.id)
        render().show_match(query)
      end
    end)
  end
  if opts.args ~= '' then
    run(opts.args)
  else
    vim.ui.input({ prompt = 'Search chats: ' }, run)
  end
end

---@param id string
function M.select_chat(id)
  -- The Message pane's text stays the draft of the chat it was typed for.
  require('bb7.ui.message').save()
  local reply, err = api.chat_select({ id = id })
  if err and err.code == 'locked' then
    -- Held by another bb7 process: shown read-only, to read and to fork (cf).
    require('bb7.locks').report(id, err)
    reply, err = api.chat_select({ id = id, read_only = true })
  end
  if err then
    return report('select the chat', err)
  end
  require('bb7.state_warnings').say(reply)
  layout().open()
  render().refresh()
end

--- :BB7EditInstructions [project|global|system|rules] — edits an instructions file.
---@param opts {args: string}
function M.edit_instructions(opts)
  local level = (opts.args ~= '' and opts.args) or 'project'
  if level == 'rules' then return ready() and require('bb7.rules').edit() end
  if not M.ensure(level ~= 'project') and level == 'project' then
    return
  end
  local r, err = api.prepare_instructions({ level = level })
  if not r then
    return report('open instructions', err)
  end
  -- From a pane: the file opens in an editor window, never in the pane itself.
  vim.api.nvim_set_current_win(layout().editor_window())
  vim.cmd('edit ' .. vim.fn.fnameescape(r.path))
end

--- Sends `text` to the active chat; the reply streams into the preview pane.
---@param text string
---@return string? request_id
function M.send(text)
  if not M.ensure() then
    return
  end
  local chat_id = M.active_chat()
  if not chat_id then
    return
  end
  if not text or vim.trim(text) == '' then
    return say('Nothing to send', levels.WARN)
  end
  -- While the chat's answer streams the message waits its turn (lua/bb7/queue.lua).
  local queue = require('bb7.queue')
  if queue.wanted(chat_id) then
    return queue.add(chat_id, text)
  end
  queue.sent(chat_id)
  -- `/mcp:SERVER:PROMPT …`: the server renders the message (lua/bb7/mcp.lua).
  if require('bb7.mcp').prompt(text, function(t) require('bb7.turn').send(t, chat_id) end) then
    return 'mcp'
  end
  return require('bb7.turn').send(text, chat_id)
end

--- :BB7Send — like send(), but context files changed since they were added are
--- resolved first as `send_stale` says ('ask' asks with vim.ui.select).
---@param text string
function M.send_command(text)
  if not ready() then
    return
  end
  local message = require('bb7.ui.message')
  local stale = message.stale_files()
  local mode = config.get().send_stale
  if #stale == 0 or mode == 'send' then
    return M.send(text)
  end
  if mode == 'refresh' then
    return message.update(stale) and M.send(text)
  end
  local names = table.concat(vim.tbl_map(function(f)
    return f.path .. (f.deleted and ' (deleted: dropped by an update)' or '')
  end, stale), ', ')
  vim.ui.select({ 'Update them and send', 'Send the old version', 'Cancel' }, { prompt = 'Changed since added: ' .. names }, function(choice)
    if choice == 'Update them and send' then
      if message.update(stale) then
        M.send(text)
      end
    elseif choice == 'Send the old version' then
      M.send(text)
    end
  end)
end

--- :BB7Tools [off|ask|auto] — sets or shows the retrieval tools of the chat.
---@param opts {args: string}
function M.tools(opts)
  if not ready() then
    return
  end
  local mode = vim.trim(opts.args or '')
  if mode == '' then
    local chat = api.chat_get() or {}
    return say('Tools: ' .. (chat.tools or 'off'))
  end
  local _, err = api.save_chat_settings({ tools = mode })
  if err then
    return report('set tools', err)
  end
  say('Tools: ' .. mode)
end

local modes = { 'local', 'remote', 'hybrid_auto' }

--- :BB7Mode [local|remote|hybrid_auto|default] — sets which provider answers in the
--- active chat (`default`: the config's again); no argument: picks with vim.ui.select().
---@param opts {args: string}
function M.mode(opts)
  if not ready() then
    return
  end
  local function set(mode)
    local _, err = api.save_chat_settings({ agent_mode = mode == 'default' and '' or mode })
    if err then
      return report('set the mode', err)
    end
    local chat = api.chat_get() or {}
    say('Mode: ' .. (chat.agent_mode or mode) .. (chat.agent_mode_set and '' or ' (config)'))
    render().refresh()
  end
  local mode = vim.trim(opts.args or '')
  if mode ~= '' then
    return set(mode)
  end
  local chat = api.chat_get() or {}
  local items = vim.list_extend(vim.deepcopy(modes), { 'default' })
  vim.ui.select(items, {
    prompt = 'Mode (now ' .. (chat.agent_mode or 'remote') .. (chat.agent_mode_set and '' or ', config') .. ')',
    format_item = function(m)
      return m == 'default' and "default (the config's)" or m
    end,
  }, function(choice)
    if choice then
      set(choice)
    end
  end)
end

--- :BB7Cancel — cancels every streaming turn.
function M.cancel()
  local ids = state.stream_ids()
  if #ids == 0 then
    return say('Nothing to cancel', levels.WARN)
  end
  for _, rid in ipairs(ids) do
    api.cancel(rid)
  end
end

--- :BB7Version — shows the binary's version and path.
function M.version()
  local r, err = api.version()
  if not r then
    return report('get the version', err)
  end
  say('bb7 ' .. r.version .. ' (' .. require('bb7.client').binary() .. ')')
end

local function files(arglead)
  return vim.fn.getcompletion(arglead, 'file')
end

--- Creates the user commands. `entry()` runs first in every command (lazy setup).
---@param entry fun()
function M.register(entry)
  local function cmd(name, fn, opts)
    vim.api.nvim_create_user_command(name, function(o)
      entry()
      fn(o)
    end, vim.tbl_extend('force', { force = true }, opts or {}))
  end
  local function words(list)
    return function()
      return list
    end
  end
  cmd('BB7Init', M.init_project, { desc = 'Initialize bb7 in the current directory' })
  cmd('BB7', M.toggle, { desc = 'Toggle the bb7 UI' })
  cmd('BB7NewChat', function(o) M.new_chat(o.args) end, { nargs = '?', desc = 'Start a new chat' })
  local function add_forms(a, l) return vim.list_extend(require('bb7.mcp').complete(a, l), require('bb7.attach').complete(a, l, files)) end
  cmd('BB7Add', function(o) M.add(o, false) end, { nargs = '*', range = true, complete = add_forms, desc = 'Add a file, a section, diagnostics, quickfix, gitdiff [REV], cmd <command> or mcp to context' })
  cmd('BB7AddReadonly', function(o) M.add(o, true) end, { nargs = '?', range = true, complete = files, desc = 'Add a file to context, read-only' })
  cmd('BB7Remove', M.remove, { nargs = '?', complete = files, desc = 'Remove a file from context' })
  cmd('BB7Model', M.choose_model, { desc = 'Choose the model of the active chat' })
  cmd('BB7Diff', M.diff, { nargs = '?', complete = files, desc = "Show the model's changes to a file" })
  cmd('BB7DiffLocal', M.diff_local, { nargs = '?', complete = files, desc = "Diff the local file against the model's output" })
  cmd('BB7Review', M.review, { nargs = '?', bang = true, complete = files, desc = "Review the model's changes in the file (! lists all hunks)" })
  cmd('BB7Checkpoints', M.checkpoints, { desc = 'Roll back an apply' })
  cmd('BB7Search', M.search, { nargs = '?', desc = 'Search chats' })
  cmd('BB7EditInstructions', M.edit_instructions, { nargs = '?', complete = words({ 'project', 'global', 'system', 'rules' }), desc = 'Edit instructions (rules: the rules files included, AGENTS.md, …)' })
  cmd('BB7Send', function(o) M.send_command(o.args) end, { nargs = '+', desc = 'Send a message to the active chat' })
  cmd('BB7Apply', M.apply, { nargs = '?', bang = true, complete = files, desc = "Apply the model's output (! overwrites conflicting edits)" })
  cmd('BB7Tools', M.tools, { nargs = '?', complete = words({ 'off', 'ask', 'auto' }), desc = 'Let the model read project files (off, ask, auto)' })
  cmd('BB7Mode', M.mode, { nargs = '?', complete = words(vim.list_extend(vim.deepcopy(modes), { 'default' })), desc = 'Which provider answers in the chat (local, remote, hybrid_auto)' })
  cmd('BB7Cancel', M.cancel, { desc = 'Cancel the streaming response' })
  cmd('BB7Unqueue', function(o) require('bb7.queue').unqueue(o.args) end, { nargs = '?', desc = 'Drop the queued messages (or queued message N)' })
  cmd('BB7QueueEdit', function() require('bb7.queue').edit_last() end, { desc = 'Take the last queued message back into the Message pane' })
  cmd('BB7Unlock', function() require('bb7.locks').unlock() end, { desc = 'Take over a chat held by another bb7 process' })
  cmd('BB7Archive', function(o) require('bb7.archive').command(o) end, { bang = true, desc = 'Archive the chat (! brings an archived chat back)' })
  cmd('BB7Version', M.version, { desc = 'Show the bb7 version' })
  cmd('BB7Export', function(o) require('bb7.export').run(o.args) end, { nargs = '*', complete = function() return require('bb7.export').complete() end, desc = 'Export the chat (md or json; secrets redacted in md)' })
  cmd('BB7Install', function(o) require('bb7.install').install({ force = o.bang }) end, { bang = true, desc = 'Download the release binary of this plugin (! even when bb7 is found)' })
end

return M
