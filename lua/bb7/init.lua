-- bb7 for Neovim: commands, the state machine of seed 001 ("Initialization & State
-- Machine") and its messages ("User Feedback"). The plugin holds no state the binary
-- does not hold: it asks the binary and draws.

local client = require('bb7.client')

local M = {}

M.config = {
  binary = nil, -- path to the bb7 binary (default: bb7 on PATH, else the checkout's build)
  send_key = '<C-s>', -- sends the input pane
  diff_style = 'unified', -- :BB7Diff shows 'unified' in the preview, or 'split' side by side
  chat_style = 'markdown', -- filetype of the preview pane
  keymaps = true, -- set the pane keymaps of :help bb7-keys
}

-- Session state mirrored from the binary.
local S = {
  initialized = nil, -- nil: not asked yet; false: no .bb7/ in the project; true
  root = nil,
  streams = {}, -- request_id -> { chat_id, text, thinking }
  unread = false,
}
M._state = S

local levels = vim.log.levels

local function say(msg, level)
  vim.notify('BB-7: ' .. msg, level or levels.INFO)
end
M.say = say

local function ui()
  return require('bb7.ui')
end

--- Relative path of `file` inside the project root, or the absolute path outside it.
function M.relpath(file)
  local abs = vim.fn.fnamemodify(file, ':p')
  local root = S.root or vim.fn.getcwd()
  root = root:gsub('/$', '') .. '/'
  if abs:sub(1, #root) == root then
    return abs:sub(#root + 1)
  end
  return abs
end

--- Makes sure the binary runs and knows the project. Returns true when the project is
--- initialised (has .bb7/); otherwise says so, as seed 001 asks, and returns false.
function M.ensure(quiet)
  if S.initialized == nil or not client.running() then
    S.root = vim.fn.getcwd()
    local r = client.request_sync('init', { project_root = S.root })
    if r.type == 'error' then
      say('Failed to start: ' .. (r.message or '?'), levels.ERROR)
      return false
    end
    S.initialized = not r.global_only
  end
  if not S.initialized and not quiet then
    say('Not initialized. Run :BB7Init', levels.WARN)
  end
  return S.initialized
end

--- The active chat id, or nil (and a warning unless `quiet`).
function M.active_chat(quiet)
  local r = client.request_sync('chat_active', {})
  if r.type ~= 'chat_active' or not r.id then
    if not quiet then
      say('No active chat', levels.WARN)
    end
    return nil
  end
  return r.id
end

local function report_error(action, r)
  say('Failed to ' .. action .. ': ' .. (r.message or 'unknown error'), levels.ERROR)
end

function M.init_project()
  S.root = vim.fn.getcwd()
  local r = client.request_sync('bb7_init', { project_root = S.root })
  if r.type == 'error' then
    if r.message == 'Already initialized' then
      say('Already initialized')
      S.initialized = nil
      M.ensure(true)
    else
      report_error('initialize', r)
    end
    return
  end
  S.initialized = true
  say('Initialized in ' .. S.root)
end

function M.new_chat(name)
  if not M.ensure() then
    return
  end
  local r = client.request_sync('chat_new', { name = (name ~= '' and name) or nil })
  if r.type == 'error' then
    return report_error('create a chat', r)
  end
  say('New chat')
  ui().refresh()
end

--- The text of a loaded buffer as it would be on disk: lines joined with "\n", and a
--- final newline only when the buffer has one ('eol'), so a file without a final
--- newline is not reported as changed.
function M.buffer_text(buf)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  if vim.bo[buf].eol then
    text = text .. '\n'
  end
  return text
end

--- The text of a file on disk, exactly (nil when unreadable).
function M.file_text(path)
  local ok, lines = pcall(vim.fn.readfile, path, 'b')
  if not ok then
    return nil
  end
  return table.concat(lines, '\n')
end

--- Content and path for :BB7Add. `arg` is `path`, `path:start:end`, or empty (the
--- current buffer); a range (line1..line2) adds a section of the current buffer.
local function add_target(arg, range, line1, line2)
  local path, s, e = nil, nil, nil
  if arg and arg ~= '' then
    local p, a, b = arg:match('^(.-):(%d+):(%d+)$')
    if p then
      path, s, e = p, tonumber(a), tonumber(b)
    else
      path = arg
    end
  else
    path = vim.api.nvim_buf_get_name(0)
    if path == '' then
      return nil, 'the current buffer has no file'
    end
    if range and range > 0 then
      s, e = line1, line2
    end
  end
  local buf = vim.fn.bufnr(vim.fn.fnamemodify(path, ':p'))
  local content
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    content = M.buffer_text(buf)
  else
    content = M.file_text(vim.fn.fnamemodify(path, ':p'))
    if not content then
      return nil, 'cannot read file ' .. path
    end
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
  return { path = M.relpath(path), content = content, start_line = s, end_line = e }
end

function M.add(opts, readonly)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local t, err = add_target(opts.args, opts.range, opts.line1, opts.line2)
  if not t then
    return say('Cannot read file: ' .. err, levels.ERROR)
  end
  local r
  if t.start_line then
    r = client.request_sync('context_add_section', t)
  else
    r = client.request_sync('context_add', { path = t.path, content = t.content, readonly = readonly or nil })
  end
  if r.type == 'error' then
    if r.message == 'File already in context' or r.message == 'Section already in context' then
      return say(r.message, levels.WARN)
    end
    return report_error('add file', r)
  end
  local shown = t.start_line and (t.path .. ':' .. t.start_line .. '-' .. t.end_line) or t.path
  say('Added ' .. shown)
  ui().refresh()
end

function M.remove(opts)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local path = (opts.args ~= '' and opts.args) or vim.api.nvim_buf_get_name(0)
  local rel = M.relpath(path)
  local r = client.request_sync('context_remove', { path = rel })
  if r.type == 'error' then
    if r.message == 'File not in context' then
      return say('File not in context', levels.WARN)
    end
    return report_error('remove file', r)
  end
  say('Removed ' .. rel)
  ui().refresh()
end

function M.toggle()
  if not M.ensure() then
    return
  end
  ui().toggle()
end

function M.choose_model()
  if not M.ensure() or not M.active_chat() then
    return
  end
  client.request('get_models', {}, function(r)
    if r.type ~= 'models' then
      return report_error('load models', r)
    end
    vim.ui.select(r.models, {
      prompt = 'Model',
      format_item = function(m)
        return string.format('%s  (%dk, $%.2f/M in)', m.id, math.floor((m.context_length or 0) / 1000), (m.pricing and m.pricing.prompt or 0) * 1e6)
      end,
    }, function(choice)
      if not choice then
        return
      end
      local s = client.request_sync('save_chat_settings', { model = choice.id })
      if s.type == 'error' then
        return report_error('set the model', s)
      end
      say('Model set to ' .. choice.id)
      ui().refresh()
    end)
  end)
end

--- The row of get_file_statuses for `path` (texts replaced by hashes), or nil.
function M.status_of(path)
  local r = client.request_sync('get_file_statuses', { contents = false })
  if r.type ~= 'file_statuses' then
    return nil
  end
  for _, f in ipairs(r.files) do
    if f.path == path and not f.start_line then
      return f
    end
  end
end

--- A unified diff of `old` → `new` as lines, with ---/+++ headers for `path`.
function M.unified(path, old, new)
  local d = vim.diff(old or '', new or '', { result_type = 'unified', ctxlen = 3 })
  local lines = { '--- a/' .. path, '+++ b/' .. path }
  for _, l in ipairs(vim.split(d, '\n', { plain = true })) do
    if l ~= '' then
      table.insert(lines, l)
    end
  end
  return lines
end

function M.diff(opts)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local path = ui().file_under_cursor() or M.relpath((opts.args ~= '' and opts.args) or vim.api.nvim_buf_get_name(0))
  local f = M.status_of(path)
  if not f or not f.has_output then
    return say('No output for ' .. path, levels.WARN)
  end
  if M.config.diff_style == 'split' then
    return M.diff_local({ args = path })
  end
  local old = f.in_context and client.request_sync('get_context_file', { path = path }).content or ''
  local new = client.request_sync('get_output_file', { path = path }).content
  ui().show_lines(M.unified(path, old, new), 'diff')
end

function M.diff_local(opts)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local path = (opts.args ~= '' and opts.args) or ui().file_under_cursor() or M.relpath(vim.api.nvim_buf_get_name(0))
  local r = client.request_sync('get_diff_paths', { path = path })
  if r.type == 'error' then
    return report_error('open the diff', r)
  end
  if vim.fn.filereadable(r.output_path) == 0 then
    return say('No output for ' .. path, levels.WARN)
  end
  vim.cmd('tabnew ' .. vim.fn.fnameescape(r.local_path))
  local local_buf = vim.api.nvim_get_current_buf()
  vim.cmd('rightbelow vert diffsplit ' .. vim.fn.fnameescape(r.output_path))
  local out_buf = vim.api.nvim_get_current_buf()
  vim.bo[out_buf].readonly = true
  local function done()
    if vim.bo[local_buf].modified then
      return say('Write ' .. path .. ' first (:w), then press q', levels.WARN)
    end
    local d = client.request_sync('diff_local_done', { path = path })
    if d.type == 'error' then
      report_error('finish the diff', d)
    else
      say('Merged ' .. path .. ': ' .. d.outcome)
    end
    vim.cmd('tabclose')
    ui().refresh()
  end
  for _, b in ipairs({ local_buf, out_buf }) do
    vim.keymap.set('n', 'q', done, { buffer = b, desc = 'bb7: finish the local diff' })
  end
  say('Merge with do/dp, write the file, then press q')
end

function M.review(opts)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local path = (opts.args ~= '' and opts.args) or ui().file_under_cursor() or M.relpath(vim.api.nvim_buf_get_name(0))
  require('bb7.review').open(M.relpath(path))
end

function M.checkpoints()
  if not M.ensure() then
    return
  end
  require('bb7.review').checkpoints()
end

function M.search(opts)
  if not M.ensure() then
    return
  end
  local function run(query)
    if not query or query == '' then
      return
    end
    local r = client.request_sync('search_chats', { query = query })
    if r.type ~= 'search_results' then
      return report_error('search', r)
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
      end
    end)
  end
  if opts.args ~= '' then
    run(opts.args)
  else
    vim.ui.input({ prompt = 'Search chats: ' }, run)
  end
end

function M.select_chat(id)
  local r = client.request_sync('chat_select', { id = id })
  if r.type == 'error' then
    return report_error('select the chat', r)
  end
  ui().open()
  ui().refresh()
end

function M.edit_instructions(opts)
  if not M.ensure(opts.args == 'global' or opts.args == 'system') then
    if opts.args ~= 'global' and opts.args ~= 'system' then
      return
    end
  end
  local level = (opts.args ~= '' and opts.args) or 'project'
  local r = client.request_sync('prepare_instructions', { level = level })
  if r.type == 'error' then
    return report_error('open instructions', r)
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(r.path))
end

--- Reloads the buffers of `path` after an apply wrote the file.
local function reload(path)
  local buf = vim.fn.bufnr(vim.fn.fnamemodify((S.root or vim.fn.getcwd()) .. '/' .. path, ':p'))
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! edit!')
    end)
  end
end

local function modified_buffer(path)
  local buf = vim.fn.bufnr(vim.fn.fnamemodify((S.root or vim.fn.getcwd()) .. '/' .. path, ':p'))
  return buf > 0 and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified
end

function M.apply_one(path)
  if modified_buffer(path) then
    say('Save or discard your changes to ' .. path .. ' first', levels.WARN)
    return false
  end
  local r = client.request_sync('apply_file', { path = path })
  if r.type == 'error' then
    report_error('apply ' .. path, r)
    return false
  end
  reload(path)
  return true
end

function M.apply(opts)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local path = opts.args ~= '' and opts.args or nil
  if path then
    local f = M.status_of(M.relpath(path))
    if not f or not f.has_output then
      return say('No output to apply', levels.WARN)
    end
    if M.apply_one(f.path) then
      say('Applied ' .. f.path)
    end
    return ui().refresh()
  end
  local r = client.request_sync('get_file_statuses', { contents = false })
  local n, skipped = 0, {}
  for _, f in ipairs(r.files or {}) do
    if f.status == 'M' or f.status == 'A' then
      if M.apply_one(f.path) then
        n = n + 1
      end
    elseif f.status == '!A' then
      table.insert(skipped, f.path)
    end
  end
  if #skipped > 0 then
    say('Not applied (the file exists locally; use :BB7DiffLocal): ' .. table.concat(skipped, ', '), levels.WARN)
  end
  if n == 0 then
    if #skipped == 0 then
      say('No output to apply', levels.WARN)
    end
  elseif n == 1 then
    say('Applied 1 file')
  else
    say('Applied ' .. n .. ' files')
  end
  ui().refresh()
end

--- Sends `text` to the active chat. The reply streams into the preview pane.
function M.send(text)
  if not M.ensure() or not M.active_chat() then
    return
  end
  if not text or vim.trim(text) == '' then
    return say('Nothing to send', levels.WARN)
  end
  local rid
  rid = client.request('send', { content = text }, function(final)
    local st = S.streams[rid]
    S.streams[rid] = nil
    if final.type == 'done' then
      local n = #(final.output_files or {})
      if final.cancelled then
        say('Cancelled')
      elseif n > 0 then
        say('Response received: ' .. n .. ' file' .. (n == 1 and '' or 's') .. ' changed')
      else
        say('Response received')
      end
    elseif final.type == 'diff_error' then
      say('The model\'s edits could not be applied: ' .. table.concat(final.errors or {}, '; '), levels.ERROR)
    else
      say('Failed to get a response: ' .. (final.message or '?'), levels.ERROR)
    end
    S.last_usage = final.usage or S.last_usage
    if not ui().visible() then
      S.unread = true
    end
    ui().stream_end(st, final)
    vim.cmd('redrawstatus!')
  end, function(msg)
    local st = S.streams[rid]
    if not st then
      return
    end
    if msg.type == 'chunk' then
      st.text = st.text .. msg.content
    elseif msg.type == 'thinking' then
      st.thinking = st.thinking .. msg.content
    elseif msg.type == 'tool_approval' then
      vim.ui.select({ 'Allow', 'Deny' }, { prompt = 'BB-7: ' .. (msg.payload.description or 'Allow this read') .. '?' }, function(choice)
        client.request('tool_approve', { approval_id = msg.approval_id, approved = choice == 'Allow' }, function() end)
      end)
      return
    elseif msg.type == 'clarification' then
      vim.ui.input({ prompt = 'BB-7 asks: ' .. msg.question .. ' ' }, function(answer)
        local a = (answer and vim.trim(answer) ~= '') and answer or 'no_user_answer'
        client.request('clarify', { question_id = msg.question_id, answer = a }, function() end)
      end)
      return
    end
    ui().stream_delta(st, msg)
    -- Keep statuslines that show M.statusline() moving, at most ten times a second.
    local now = vim.uv.now()
    if now - (S.last_redraw or 0) > 100 then
      S.last_redraw = now
      vim.cmd('redrawstatus!')
    end
  end)
  if rid then
    S.streams[rid] = { rid = rid, text = '', thinking = '' }
    ui().stream_start(S.streams[rid], text)
  end
  return rid
end

--- :BB7Tools [off|ask|auto]: whether the model may list, search and read project files
--- (read-only) and ask clarifying questions; without an argument, shows the setting.
function M.tools(opts)
  if not M.ensure() or not M.active_chat() then
    return
  end
  local mode = vim.trim(opts.args or '')
  if mode == '' then
    local chat = client.request_sync('chat_get', {})
    return say('Tools: ' .. (chat.tools or 'off'))
  end
  local r = client.request_sync('save_chat_settings', { tools = mode })
  if r.type == 'error' then
    return report_error('set tools', r)
  end
  say('Tools: ' .. mode)
end

function M.cancel()
  local any = false
  for rid in pairs(S.streams) do
    any = true
    client.request('cancel', { target_request_id = rid }, function() end)
  end
  if not any then
    say('Nothing to cancel', levels.WARN)
  end
end

function M.version()
  local r = client.request_sync('version', {})
  if r.type ~= 'version' then
    return report_error('get the version', r)
  end
  say('bb7 ' .. r.version .. ' (' .. client.binary() .. ')')
end

--- For a statusline: `bb7 ⠋` while streaming, `bb7 •` for an unread reply, else ''.
function M.statusline()
  if next(S.streams) then
    local frames = { '⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏' }
    return 'bb7 ' .. frames[(math.floor(vim.uv.now() / 100) % #frames) + 1]
  end
  if S.unread then
    return 'bb7 •'
  end
  return ''
end

function M.setup(opts)
  M._user_setup = true
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  client.setup({ binary = M.config.binary })
  client.set_on_exit(function(code)
    S.initialized = nil
    S.streams = {}
    if code ~= 0 and not M._exiting then
      vim.schedule(function()
        say('bb7 exited (status ' .. code .. '); the next command restarts it', levels.WARN)
      end)
    end
  end)
  client.on('title_updated', function()
    ui().refresh()
  end)
  vim.api.nvim_create_autocmd('VimLeavePre', {
    callback = function()
      M._exiting = true
      client.stop()
    end,
  })
end

return M
