-- The bb7 panes, in a tab of their own:
--   chats (top left) · files (bottom left) · preview (top right) · input (bottom right)
-- Everything shown comes from the binary; frontend statuses R, ~ and ~M are computed
-- here against the buffer (or the file on disk), as seed 001 "File Status" says.

local client = require('bb7.client')

local M = {}

local P = {
  tab = nil,
  bufs = {}, -- name -> bufnr
  wins = {}, -- name -> winid
  chat = nil, -- last chat_get
  files = {}, -- rows shown in the files pane, by line
  line_msg = {}, -- preview line -> message index (user messages)
  stream = nil, -- the stream being drawn
  spinner = nil,
}
M._panes = P

local function bb7()
  return require('bb7')
end

local function scratch(name, ft, modifiable)
  local b = P.bufs[name]
  if b and vim.api.nvim_buf_is_valid(b) then
    return b
  end
  b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(b, 'bb7://' .. name)
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].bufhidden = 'hide'
  vim.bo[b].swapfile = false
  vim.bo[b].filetype = ft or 'bb7'
  vim.bo[b].modifiable = modifiable or false
  P.bufs[name] = b
  return b
end

local function set_lines(name, lines)
  local b = P.bufs[name]
  if not b or not vim.api.nvim_buf_is_valid(b) then
    return
  end
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
end

function M.visible()
  return P.tab ~= nil and vim.api.nvim_tabpage_is_valid(P.tab)
end

local function map(buf, lhs, fn, desc)
  vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = 'bb7: ' .. desc })
end

local function focus(name)
  local w = P.wins[name]
  if w and vim.api.nvim_win_is_valid(w) then
    vim.api.nvim_set_current_win(w)
  end
end

local function keymaps()
  local cfg = bb7().config
  if not cfg.keymaps then
    return
  end
  local order = { 'chats', 'files', 'preview', 'input' }
  for i, name in ipairs(order) do
    local b = P.bufs[name]
    map(b, 'q', M.close, 'close the UI')
    map(b, '<Tab>', function()
      focus(order[i % #order + 1])
    end, 'next pane')
    map(b, '<C-c>', bb7().cancel, 'cancel the response')
  end
  local chats, files, preview, input = P.bufs.chats, P.bufs.files, P.bufs.preview, P.bufs.input
  map(chats, '<CR>', function()
    local c = M.chat_under_cursor()
    if c then
      bb7().select_chat(c.id)
    end
  end, 'select chat')
  map(chats, 'n', function()
    bb7().new_chat('')
  end, 'new chat')
  map(chats, 'r', function()
    local c = M.chat_under_cursor()
    if not c then
      return
    end
    vim.ui.input({ prompt = 'Rename chat: ', default = c.name }, function(name)
      if name and name ~= '' then
        client.request_sync('chat_rename', { id = c.id, name = name })
        M.refresh()
      end
    end)
  end, 'rename chat')
  map(chats, 'dd', function()
    local c = M.chat_under_cursor()
    if c and vim.fn.confirm('Delete chat "' .. c.name .. '"?', '&Yes\n&No', 2) == 1 then
      client.request_sync('chat_delete', { id = c.id })
      M.refresh()
    end
  end, 'delete chat')
  map(chats, 'p', function()
    local c = M.chat_under_cursor()
    if c then
      client.request_sync('chat_pin', { id = c.id, pinned = not c.pinned })
      M.refresh()
    end
  end, 'pin or unpin chat')
  map(files, 'a', function()
    local f = M.file_row()
    if f and bb7().apply_one(f.path) then
      bb7().say('Applied ' .. f.path)
    end
    M.refresh()
  end, 'apply file')
  map(files, 'A', function()
    bb7().apply({ args = '' })
  end, 'apply all files')
  map(files, 'u', function()
    local f = M.file_row()
    if not f then
      return
    end
    local r = client.request_sync('sync_context', { path = f.path })
    if r.type == 'error' then
      bb7().say('Failed to update ' .. f.path .. ': ' .. r.message, vim.log.levels.ERROR)
    else
      bb7().say('Updated ' .. f.path)
    end
    M.refresh()
  end, 'update from disk')
  map(files, 'r', function()
    local f = M.file_row()
    if f and not f.start_line then
      local r = client.request_sync('context_set_readonly', { path = f.path, readonly = not f.readonly })
      if r.type == 'error' then
        bb7().say(r.message, vim.log.levels.WARN)
      end
      M.refresh()
    end
  end, 'toggle read-only')
  map(files, 'd', function()
    bb7().diff({ args = '' })
  end, 'diff context to output')
  map(files, 'R', function()
    local f = M.file_row()
    if f and f.has_output then
      focus('preview')
      require('bb7.review').open(f.path)
    end
  end, 'review hunk by hunk')
  map(files, 'D', function()
    local f = M.file_row()
    if f then
      bb7().diff_local({ args = f.path })
    end
  end, 'diff local to output')
  map(files, 'x', function()
    local f = M.file_row()
    if not f then
      return
    end
    local r
    if f.has_output then
      r = client.request_sync('output_delete', { path = f.path })
    elseif f.start_line then
      r = client.request_sync('context_remove_section', { path = f.path, start_line = f.start_line, end_line = f.end_line })
    else
      r = client.request_sync('context_remove', { path = f.path })
    end
    if r.type == 'error' then
      bb7().say(r.message, vim.log.levels.WARN)
    end
    M.refresh()
  end, 'reject output or remove from context')
  map(preview, '<C-f>', function()
    M.fork_or_edit('fork')
  end, 'fork from this message')
  map(preview, '<C-e>', function()
    M.fork_or_edit('edit')
  end, 'edit this message')
  local function send_input()
    local text = table.concat(vim.api.nvim_buf_get_lines(input, 0, -1, false), '\n')
    if vim.trim(text) == '' then
      return
    end
    if bb7().send(text) then
      vim.api.nvim_buf_set_lines(input, 0, -1, false, {})
    end
  end
  vim.keymap.set({ 'n', 'i' }, cfg.send_key, send_input, { buffer = input, desc = 'bb7: send' })
  map(input, '<CR>', send_input, 'send')
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    buffer = input,
    callback = function()
      local text = table.concat(vim.api.nvim_buf_get_lines(input, 0, -1, false), '\n')
      if P.chat and text ~= (P.chat.draft or '') then
        P.chat.draft = text
        client.request('save_draft', { draft = text }, function() end)
      end
    end,
  })
end

function M.open()
  if M.visible() then
    vim.api.nvim_set_current_tabpage(P.tab)
    return
  end
  local cfg = bb7().config
  scratch('chats')
  scratch('files')
  scratch('preview', cfg.chat_style)
  scratch('input', 'markdown', true)
  vim.cmd('tabnew')
  P.tab = vim.api.nvim_get_current_tabpage()
  local scratch_buf = vim.api.nvim_get_current_buf()
  P.wins.preview = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.preview, P.bufs.preview)
  if vim.api.nvim_buf_is_valid(scratch_buf) and scratch_buf ~= P.bufs.preview then
    pcall(vim.api.nvim_buf_delete, scratch_buf, { force = true })
  end
  vim.cmd('belowright split')
  P.wins.input = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.input, P.bufs.input)
  vim.api.nvim_win_set_height(P.wins.input, 6)
  vim.api.nvim_set_current_win(P.wins.preview)
  vim.cmd('topleft vsplit')
  P.wins.chats = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.chats, P.bufs.chats)
  vim.api.nvim_win_set_width(P.wins.chats, 34)
  vim.cmd('belowright split')
  P.wins.files = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.files, P.bufs.files)
  for _, name in ipairs({ 'chats', 'files', 'preview', 'input' }) do
    local w = P.wins[name]
    vim.wo[w].number = false
    vim.wo[w].relativenumber = false
    vim.wo[w].signcolumn = 'no'
    vim.wo[w].wrap = name == 'preview' or name == 'input'
    vim.wo[w].winfixwidth = name == 'chats' or name == 'files'
  end
  vim.wo[P.wins.chats].winbar = ' Chats'
  vim.wo[P.wins.files].winbar = ' Files'
  vim.wo[P.wins.input].winbar = ' Message (' .. cfg.send_key .. ' to send)'
  keymaps()
  bb7()._state.unread = false
  vim.cmd('redrawstatus!')
  M.refresh()
  focus(P.chat and 'input' or 'chats')
end

function M.close()
  if M.visible() then
    if #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd('tabclose ' .. vim.api.nvim_tabpage_get_number(P.tab))
    end
  end
  P.tab = nil
end

function M.toggle()
  if M.visible() and vim.api.nvim_get_current_tabpage() == P.tab then
    M.close()
  else
    M.open()
  end
end

--- Shows `lines` in the preview pane (diffs), until the next refresh.
function M.show_lines(lines, ft)
  if not M.visible() then
    M.open()
  end
  set_lines('preview', lines)
  vim.bo[P.bufs.preview].filetype = ft or 'bb7'
  focus('preview')
end

function M.chat_under_cursor()
  if not P.chat_rows or vim.api.nvim_get_current_buf() ~= P.bufs.chats then
    return nil
  end
  return P.chat_rows[vim.api.nvim_win_get_cursor(0)[1]]
end

function M.file_row()
  if vim.api.nvim_get_current_buf() ~= P.bufs.files then
    return nil
  end
  return P.files[vim.api.nvim_win_get_cursor(0)[1]]
end

function M.file_under_cursor()
  local f = M.file_row()
  return f and f.path or nil
end

--- The frontend status of a context file: R (read-only), ~ (local differs from the
--- snapshot), ~M (local differs and the model changed it too).
local function frontend_status(f)
  if not f.in_context or f.start_line or f.external then
    return f.status
  end
  local root = bb7()._state.root or vim.fn.getcwd()
  local abs = root .. '/' .. f.path
  local buf = vim.fn.bufnr(abs)
  local text
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    text = bb7().buffer_text(buf)
  elseif vim.fn.filereadable(abs) == 1 then
    text = bb7().file_text(abs)
  end
  local snapshot = f.context_hash or (f.context_content and vim.fn.sha256(f.context_content))
  local out_of_sync = text ~= nil and snapshot ~= nil and vim.fn.sha256(text) ~= snapshot
  if out_of_sync then
    return f.status == 'M' and '~M' or '~'
  end
  if f.status == '' and f.readonly then
    return 'R'
  end
  return f.status
end
M.frontend_status = frontend_status

local function render_chats()
  local r = client.request_sync('chat_list', {})
  local lines, rows = {}, {}
  for _, c in ipairs(r.chats or {}) do
    local mark = (P.chat and P.chat.id == c.id) and '▸ ' or '  '
    local pin = c.pinned and '^ ' or ''
    local lock = c.locked and ' (locked)' or ''
    table.insert(lines, mark .. pin .. c.name .. lock)
    rows[#lines] = c
  end
  if #lines == 0 then
    lines = { '  No chats yet.', '  Press n for a new chat.' }
  end
  P.chat_rows = rows
  set_lines('chats', lines)
end

local function render_files()
  local lines, rows = {}, {}
  if P.chat then
    -- Hashes instead of texts: a large context stays cheap to redraw.
    local r = client.request_sync('get_file_statuses', { contents = false })
    for _, f in ipairs(r.files or {}) do
      local st = frontend_status(f)
      local range = f.start_line and (':' .. f.start_line .. '-' .. f.end_line) or ''
      table.insert(lines, string.format('%-3s %s%s', st, f.path, range))
      f.shown_status = st
      rows[#lines] = f
    end
    if #lines == 0 then
      lines = { '  No files. :BB7Add adds one.' }
    end
  end
  P.files = rows
  set_lines('files', lines)
end

local event_words = {
  UserAddFile = 'Added',
  UserAddSection = 'Added section',
  UserRemoveFile = 'Removed',
  UserRemoveSection = 'Removed section',
  UserWriteFile = 'Updated',
  UserApplyFile = 'Applied',
  UserSaveAs = 'Saved as',
  UserRejectOutput = 'Rejected output of',
  UserSetReadOnly = 'Changed read-only:',
  AssistantWriteFile = 'Assistant changed',
  ForkWarningModified = 'Changed since then:',
  ForkWarningDeleted = 'Deleted since then:',
}

local function part_lines(lines, text, prefix)
  for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
    table.insert(lines, (prefix or '') .. l)
  end
end

local function render_preview()
  local lines = {}
  P.line_msg = {}
  if not P.chat then
    lines = { 'No active chat.', '', 'Select one on the left (Enter), or press n there for a new chat.' }
  else
    for i, m in ipairs(P.chat.messages or {}) do
      local index = i - 1
      local events, texts = {}, {}
      for _, p in ipairs(m.parts or {}) do
        if p.type == 'context_event' then
          local range = p.start_line and (':' .. p.start_line .. '-' .. p.end_line) or ''
          table.insert(events, '· ' .. (event_words[p.action] or p.action) .. ' ' .. (p.path or '') .. range)
        elseif p.type == 'thinking' then
          table.insert(texts, { p.content or '', '│ ' })
        elseif p.type == 'tool_call' then
          table.insert(events, '· ' .. (p.content or p.name or '') .. (p.status == 'denied' and ' (denied)' or ''))
        elseif p.content then
          table.insert(texts, { p.content, '' })
        end
      end
      if #texts > 0 then
        local head = m.role == 'user' and ('## You' .. (m.model and (' (' .. m.model .. ')') or ''))
          or m.role == 'system' and '## Note'
          or '## Assistant'
        table.insert(lines, head)
        local first = #lines
        for _, t in ipairs(texts) do
          part_lines(lines, t[1], t[2])
        end
        if m.role == 'user' then
          for l = first, #lines do
            P.line_msg[l] = index
          end
        end
        table.insert(lines, '')
      end
      for _, e in ipairs(events) do
        table.insert(lines, e)
      end
    end
    if #lines == 0 then
      lines = { 'New chat. Add files with :BB7Add, then write a message below.' }
    end
  end
  set_lines('preview', lines)
  if P.bufs.preview then
    vim.bo[P.bufs.preview].filetype = bb7().config.chat_style
  end
end

local function render_winbar()
  if not (P.wins.preview and vim.api.nvim_win_is_valid(P.wins.preview)) then
    return
  end
  local parts = { ' bb7' }
  if P.chat then
    table.insert(parts, P.chat.name)
    table.insert(parts, P.chat.model)
  end
  local u = bb7()._state.last_usage
  if u then
    table.insert(parts, string.format('%d tok, $%.4f', u.total_tokens or 0, u.cost or 0))
  end
  local s = bb7().statusline()
  if s ~= '' then
    table.insert(parts, s)
  end
  vim.wo[P.wins.preview].winbar = table.concat(parts, ' — '):gsub('%%', '%%%%')
end

--- Redraws every pane from the binary's state.
function M.refresh()
  if not M.visible() then
    return
  end
  local r = client.request_sync('chat_get', {})
  P.chat = r.type == 'chat' and r or nil
  render_chats()
  render_files()
  if not P.stream then
    render_preview()
  end
  if P.chat and P.bufs.input then
    local cur = table.concat(vim.api.nvim_buf_get_lines(P.bufs.input, 0, -1, false), '\n')
    if cur == '' and (P.chat.draft or '') ~= '' then
      vim.api.nvim_buf_set_lines(P.bufs.input, 0, -1, false, vim.split(P.chat.draft, '\n', { plain = true }))
    end
  end
  render_winbar()
end

-- Streaming: the user message and the growing answer are appended to the preview
-- as deltas arrive, without redrawing the rest.

local function append(text, prefix)
  local b = P.bufs.preview
  if not b or not vim.api.nvim_buf_is_valid(b) then
    return
  end
  vim.bo[b].modifiable = true
  local last = vim.api.nvim_buf_line_count(b)
  local tail = vim.api.nvim_buf_get_lines(b, last - 1, last, false)[1] or ''
  local pieces = vim.split(text, '\n', { plain = true })
  pieces[1] = tail .. pieces[1]
  for i = 2, #pieces do
    pieces[i] = (prefix or '') .. pieces[i]
  end
  vim.api.nvim_buf_set_lines(b, last - 1, last, false, pieces)
  vim.bo[b].modifiable = false
  local w = P.wins.preview
  if w and vim.api.nvim_win_is_valid(w) and vim.api.nvim_get_current_win() ~= w then
    pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(b), 0 })
  end
end

function M.stream_start(st, text)
  P.stream = st
  st.block = nil
  if not M.visible() then
    return
  end
  render_preview()
  local b = P.bufs.preview
  vim.bo[b].modifiable = true
  local lines = { '## You' }
  part_lines(lines, text)
  table.insert(lines, '')
  table.insert(lines, '## Assistant')
  table.insert(lines, '')
  vim.api.nvim_buf_set_lines(b, -1, -1, false, lines)
  vim.bo[b].modifiable = false
  P.spinner = vim.uv.new_timer()
  P.spinner:start(0, 100, vim.schedule_wrap(render_winbar))
end

function M.stream_delta(st, msg)
  if not M.visible() or P.stream ~= st then
    return
  end
  if msg.type == 'thinking' then
    if st.block ~= 'thinking' then
      append('│ ', '│ ')
      st.block = 'thinking'
    end
    append(msg.content, '│ ')
  elseif msg.type == 'tool_call' then
    if msg.status ~= 'requested' then
      local mark = msg.status == 'denied' and ' (denied)' or ''
      append('\n· ' .. (msg.summary or msg.name) .. mark .. '\n')
      st.block = 'tool'
    end
  elseif msg.type == 'chunk' then
    if st.block ~= 'text' then
      if st.block == 'thinking' then
        append('\n\n')
      end
      st.block = 'text'
    end
    append(msg.content)
  end
end

function M.stream_end(st, _)
  if P.spinner then
    P.spinner:stop()
    P.spinner:close()
    P.spinner = nil
  end
  if P.stream == st then
    P.stream = nil
  end
  M.refresh()
end

function M.fork_or_edit(kind)
  if not P.chat then
    return
  end
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local index = P.line_msg[line]
  if not index then
    return bb7().say('Put the cursor on one of your messages', vim.log.levels.WARN)
  end
  local r, content
  if kind == 'fork' then
    r = client.request_sync('fork_chat', { chat_id = P.chat.id, fork_message_index = index })
    content = r.fork_message_content
  else
    content = ''
    for _, p in ipairs(P.chat.messages[index + 1].parts or {}) do
      if p.type == 'text' then
        content = content .. (p.content or '')
      end
    end
    r = client.request_sync('chat_edit', { chat_id = P.chat.id, message_index = index, content = content })
  end
  if r.type == 'error' then
    return bb7().say('Failed to ' .. kind .. ': ' .. r.message, vim.log.levels.ERROR)
  end
  for _, w in ipairs(r.context_warnings or {}) do
    bb7().say(w.path .. ' was ' .. w.issue .. ' since that message', vim.log.levels.WARN)
  end
  vim.api.nvim_buf_set_lines(P.bufs.input, 0, -1, false, vim.split(content or '', '\n', { plain = true }))
  M.refresh()
  focus('input')
end

return M
