-- What the panes show, all of it from the binary: the chat list, the files with their
-- statuses (R, ~ and ~M computed here against the buffer or the file on disk), and the
-- chat as Markdown (Tree-sitter when the parser is present) with reasoning folded and
-- each tool step or change on one line, the change expandable to its diff (za, <CR>).

local api = require('bb7.api')
local config = require('bb7.config')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}

local ns = vim.api.nvim_create_namespace('bb7_preview')

local R = {
  chat_rows = {}, -- chats pane line -> chat
  file_rows = {}, -- files pane line -> file status row
  line_msg = {}, -- preview line -> index of a user message
  folds = {}, -- preview line -> foldexpr value
  pending = {}, -- path -> true while the file has output to review
  diffs = {}, -- path .. version -> change built from the pending output
  chats = {}, -- the last chat_list
  drawn_chat = nil, -- id of the chat the preview shows
}

local layout = util.lazy('bb7.ui.layout')

local function set_lines(name, lines)
  local b = layout().buf(name)
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  return b
end

--- The fold level of a preview line as a 'foldexpr' value: reasoning and change diffs
--- are folds (the pane makes them by hand from the same ranges).
---@return string
function M.foldexpr()
  return R.folds[vim.v.lnum] or '0'
end

--- foldtext of the preview pane: the fold's summary line.
---@return string
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  local n = vim.v.foldend - vim.v.foldstart
  return first .. '  (' .. n .. (n == 1 and ' line' or ' lines') .. ', za)'
end

--- The chat under the cursor in the Chats pane.
---@return table?
function M.chat_under_cursor()
  if layout().pane_of() ~= 'chats' then
    return nil
  end
  return R.chat_rows[vim.api.nvim_win_get_cursor(0)[1]]
end

--- The file status row under the cursor in the Files pane.
---@return table?
function M.file_row()
  if layout().pane_of() ~= 'files' then
    return nil
  end
  return R.file_rows[vim.api.nvim_win_get_cursor(0)[1]]
end

--- Whether the file of a context row is gone from disk (and no buffer holds unsaved
--- text of it): its snapshot is all the model can be sent.
---@param f table a get_file_statuses row
---@return boolean
function M.deleted(f)
  if vim.uv.fs_stat(state.abs(f.path)) then
    return false
  end
  local buf = state.loaded_buf(f.path)
  return not (buf and vim.bo[buf].modified)
end

--- The frontend status of a context file: @ (an attachment: diagnostics, command output,
--- an image…, a snapshot with no file behind it, so never deleted nor stale), D (deleted on
--- disk), R (read-only), ~ (local differs from the snapshot), ~M (local differs and the
--- model changed it too). Unsaved buffer text counts as local; otherwise the server's
--- `out_of_sync` is used when it sends one.
---@param f table a get_file_statuses row
---@return string
function M.frontend_status(f)
  if f.kind then
    return '@'
  end
  if f.in_context and not f.external and M.deleted(f) then
    return 'D'
  end
  if not f.in_context or f.start_line or f.external then
    return f.status
  end
  local buf = state.loaded_buf(f.path)
  local out_of_sync
  if (buf and vim.bo[buf].modified) or f.out_of_sync == nil then
    local abs = state.abs(f.path)
    local text = buf and util.buffer_text(buf) or (vim.fn.filereadable(abs) == 1 and util.file_text(abs)) or nil
    local snapshot = f.context_hash or (f.context_content and vim.fn.sha256(f.context_content))
    out_of_sync = text ~= nil and snapshot ~= nil and vim.fn.sha256(text) ~= snapshot
  else
    out_of_sync = f.out_of_sync
  end
  if out_of_sync then
    return f.status == 'M' and '~M' or '~'
  end
  if f.status == '' and f.readonly then
    return 'R'
  end
  return f.status
end

-- Width of the text area of a pane (its fold column is a margin).
local function pane_width(name)
  local w = layout().win(name)
  if not w then
    return 80
  end
  return math.max(vim.api.nvim_win_get_width(w) - 1, 4)
end

--- Draws the chat list from the last chat_list reply (a streaming chat shows the
--- spinner instead of its mark, so the timer redraws this without asking the binary).
function M.draw_chats()
  local chat = state.chat()
  local width = pane_width('chats')
  local lines, rows = {}, {}
  for _, c in ipairs(R.chats or {}) do
    local mark = state.chat_streaming(c.id) and (require('bb7').spinner() .. ' ') or (chat and chat.id == c.id) and '▸ ' or '  '
    local line = mark .. (c.pinned and '^ ' or '') .. c.name .. (c.locked and ' (held)' or '')
    table.insert(lines, util.truncate(line, width))
    rows[#lines] = c
  end
  if #lines == 0 then
    lines = { '  No chats yet.', '  a: new chat' }
  end
  R.chat_rows = rows
  set_lines('chats', lines)
  -- The active chat stays in view (a resize or a long list must not hide it), unless
  -- the user is moving in the pane.
  local w = layout().win('chats')
  if w and chat and vim.api.nvim_get_current_win() ~= w then
    for l, c in pairs(rows) do
      if c.id == chat.id then
        pcall(vim.api.nvim_win_set_cursor, w, { l, 0 })
      end
    end
  end
  layout().set_title('chats', string.format(' Chats (%d)', #(R.chats or {})))
end

local function render_chats()
  local r = api.chat_list() or {}
  R.chats = r.chats or {}
  M.draw_chats()
end

local function render_files()
  local lines, rows, changed = {}, {}, 0
  if state.chat() then
    local r = api.file_statuses() or {}
    for _, f in ipairs(r.files or {}) do
      local st = M.frontend_status(f)
      local range = f.start_line and (':' .. f.start_line .. '-' .. f.end_line) or ''
      -- A long path loses its start: the file name is what tells files apart.
      table.insert(lines, string.format('%-3s %s', st, util.truncate_left(f.path .. range, pane_width('files') - 4)))
      f.shown_status = st
      rows[#lines] = f
      if f.has_output then
        changed = changed + 1
      end
    end
    if #lines == 0 then
      lines = { '  No files. :BB7Add adds one.' }
    end
  end
  R.file_rows = rows
  R.pending = {}
  for _, f in pairs(rows) do
    if f.has_output then
      R.pending[f.path] = true
    end
  end
  local b = set_lines('files', lines)
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  for l, f in pairs(rows) do
    local group = ({ ['@'] = 'Special', D = 'Removed', M = 'Changed', A = 'Added', ['!A'] = 'WarningMsg', ['~'] = 'WarningMsg', ['~M'] = 'WarningMsg', R = 'Comment', S = 'Comment' })[f.shown_status]
    if group then
      vim.api.nvim_buf_set_extmark(b, ns, l - 1, 0, { end_col = #f.shown_status, hl_group = group })
    end
  end
  local title = string.format(' Files (%d)', #vim.tbl_keys(rows))
  if changed > 0 then
    title = title .. string.format(' · %d changed · R review', changed)
  end
  layout().set_title('files', title)
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
  UserAcceptHunk = 'Accepted a hunk of',
  UserRejectHunk = 'Rejected a hunk of',
  UserRollback = 'Rolled back',
  UserAttach = 'Attached',
  UserRemoveAttachment = 'Removed',
  AssistantWriteFile = 'Assistant changed',
  ForkWarningModified = 'Changed since then:',
  ForkWarningDeleted = 'Deleted since then:',
}

-- A builder of preview lines that records folds and highlights as it goes.
local function builder()
  local B = { lines = {}, folds = {}, ranges = {}, marks = {}, line_msg = {} }
  function B.add(text, group)
    table.insert(B.lines, text)
    if group then
      table.insert(B.marks, { #B.lines, group })
    end
    return #B.lines
  end
  function B.text(text, prefix)
    for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
      B.add((prefix or '') .. l)
    end
  end
  -- A fold: `summary` is its one visible line, `body` lines are hidden until za.
  function B.fold(summary, group, body)
    local first = B.add(summary, group)
    for _, l in ipairs(body) do
      B.add(l[1], l[2])
    end
    if #body > 0 then
      B.folds[first] = '>1'
      for i = first + 1, #B.lines do
        B.folds[i] = '1'
      end
      table.insert(B.ranges, { first, #B.lines })
    end
  end
  return B
end

local function reasoning(B, text)
  local body = {}
  for _, l in ipairs(vim.split(vim.trim(text), '\n', { plain = true })) do
    table.insert(body, { '│ ' .. l, 'Comment' })
  end
  B.fold('▸ Reasoning', 'BB7Step', body)
end

--- The diff of a change payload as fold body lines (a fenced `diff` block).
local function change_body(change)
  local body = {}
  local diff = change.unified_diff or change.preview
  if not diff then
    return body
  end
  table.insert(body, { '```diff' })
  for _, l in ipairs(vim.split(diff, '\n', { plain = true })) do
    local c = l:sub(1, 1)
    local group = (c == '+' and not l:match('^%+%+%+')) and 'Added' or (c == '-' and not l:match('^%-%-%-')) and 'Removed' or nil
    if change.type == 'write' then
      group = 'Added'
    end
    table.insert(body, { l, group })
  end
  if body[#body][1] == '' then
    table.remove(body)
  end
  table.insert(body, { '```' })
  return body
end

--- A change for a write this Neovim did not see stream (a chat from an earlier
--- session): the diff from the snapshot to the output still pending, cached by version.
local function pending_change(p)
  if not R.pending[p.path] then
    return nil
  end
  local key = p.path .. '@' .. tostring(p.version)
  if R.diffs[key] == nil then
    local old = (api.get_context_file({ path = p.path }) or {}).content or ''
    local new = (api.get_output_file({ path = p.path }) or {}).content
    if not new then
      return nil
    end
    local lines = util.unified(p.path, old, new)
    local added, removed = 0, 0
    for i = 3, #lines do
      local c = lines[i]:sub(1, 1)
      added = added + (c == '+' and 1 or 0)
      removed = removed + (c == '-' and 1 or 0)
    end
    R.diffs[key] = {
      type = 'edit',
      path = p.path,
      description = string.format('Edit %s: +%d −%d, pending', p.path, added, removed),
      unified_diff = table.concat(lines, '\n'),
    }
  end
  return R.diffs[key]
end

-- The newest AssistantWriteFile part of each path (set while the preview is drawn).
local last_write = {}

local function render_message(B, chat, index, m)
  local head = m.role == 'user' and ('## You' .. (m.model and (' (' .. m.model .. ')') or '')) or m.role == 'system' and '## Note' or '## Assistant'
  local headed = false
  local first_user_line
  for _, p in ipairs(m.parts or {}) do
    -- An answer's tool steps and changes are the answer's: under its heading (the
    -- user's context events before it are not).
    if m.role == 'assistant' and not headed and (p.type == 'tool_call' or p.action == 'AssistantWriteFile') then
      headed = true
      B.add(head)
    end
    if p.type == 'context_event' then
      local range = p.start_line and (':' .. p.start_line .. '-' .. p.end_line) or ''
      local change = p.action == 'AssistantWriteFile' and (state.change_for(chat.id, p.path, p.version) or last_write[p] and pending_change(p))
      if change then
        B.fold('▸ ' .. (change.description or ('Changed ' .. p.path)), 'BB7Step', change_body(change))
      else
        local words = require('bb7.words')
        B.add('· ' .. (event_words[p.action] or words.action(p.action)) .. ' ' .. words.path(p.path) .. range, 'Comment')
      end
    elseif p.type == 'tool_call' then
      B.add('· ' .. (p.content or p.name or '') .. (p.status == 'denied' and ' (denied)' or ''), 'BB7Step')
      -- Stored with the step since the answer is part of the chat; a chat saved before
      -- that has it only for this session.
      local answer = p.name == 'clarify_user' and (p.answer or state.answer(chat.id, type(p.arguments) == 'table' and p.arguments.question or nil))
      if answer then
        B.add('  → ' .. answer, 'BB7Step')
      end
    else
      if not headed then
        headed = true
        B.add(head)
        first_user_line = #B.lines + 1
        if m.role == 'user' then
          B.last_user = #B.lines
        end
      end
      if p.type == 'thinking' then
        reasoning(B, p.content or '')
      elseif p.content then
        B.text(p.content)
      end
    end
  end
  -- The failures of an answer whose edits were not applied (nothing of it was written).
  local failed = type(m.diff_error) == 'table' and m.diff_error.errors or nil
  if failed then
    if not headed then
      headed = true
      B.add(head)
    end
    B.add('')
    B.add('✗ Edits not applied (nothing was written):', 'ErrorMsg')
    for _, e in ipairs(#failed > 0 and failed or { '?' }) do
      for j, l in ipairs(vim.split(tostring(e), '\n', { plain = true })) do
        B.add((j == 1 and '  • ' or '    ') .. l, 'ErrorMsg')
      end
    end
  end
  -- An answer given after a fallback says why the first provider's attempt was dropped.
  local u = m.role == 'assistant' and type(m.usage) == 'table' and m.usage or {}
  if headed and u.fallback_reason then
    B.add('')
    B.add('↻ answered by ' .. (u.provider or 'remote') .. ' after a fallback: ' .. u.fallback_reason, 'Comment')
  end
  if headed then
    if m.role == 'user' then
      for l = first_user_line, #B.lines do
        B.line_msg[l] = index
      end
    end
    B.add('')
  end
end

local function draw_preview(B)
  local w = layout().win('preview')
  -- Folds and highlights are made again below: updating the old ones line by line as
  -- the text is replaced costs more than making them (most with a long chat).
  if w then
    vim.wo[w].foldmethod = 'manual'
  end
  require('bb7.ui.highlight').stop(layout().buf('preview'))
  local b = set_lines('preview', B.lines)
  require('bb7.ui.rule').mark(b, 0, -1)
  R.folds = B.folds
  R.line_msg = B.line_msg
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  for _, mk in ipairs(B.marks) do
    vim.api.nvim_buf_set_extmark(b, ns, mk[1] - 1, 0, { end_row = mk[1] - 1, end_col = #B.lines[mk[1]], hl_group = mk[2], priority = 200 })
  end
  if w then
    -- Manual folds made from the drawn ranges: a fold expression would be evaluated
    -- for every line of the chat on each draw.
    vim.wo[w].foldtext = "v:lua.require'bb7.ui.render'.foldtext()"
    vim.wo[w].foldlevel = 0
    vim.wo[w].foldenable = true
    vim.api.nvim_win_call(w, function()
      vim.cmd('silent! normal! zE')
      for _, r in ipairs(B.ranges) do
        vim.cmd(string.format('silent! %d,%dfold', r[1], r[2]))
      end
    end)
  end
end

--- Starts Markdown highlighting of the preview drawn with `rows` lines: Tree-sitter
--- through bb7.ui.highlight when the markdown parser is present (code blocks are then
--- highlighted in their language, and the cost stays that of the visible lines), else
--- the filetype's syntax file.
---@param b integer
---@param rows integer
local function markdown(b, rows)
  local ft = config.get().chat_style
  if vim.bo[b].filetype ~= ft then
    vim.bo[b].filetype = ft
  end
  local hl = require('bb7.ui.highlight')
  if ft == 'markdown' and hl.available() then
    hl.history(b, rows)
  else
    hl.stop(b)
  end
end

--- Puts the latest exchange of the preview in view: the last question with what
--- follows when it fits the window, else the question at the top.
---@param from integer? first line of the latest exchange (default: the last line)
local function scroll_to_latest(from)
  local w = layout().win('preview')
  if not w then
    return
  end
  vim.api.nvim_win_call(w, function()
    local last = vim.api.nvim_buf_line_count(0)
    vim.api.nvim_win_set_cursor(w, { last, 0 })
    vim.cmd('normal! zb')
    if from and vim.fn.line('w0') > from then
      vim.api.nvim_win_set_cursor(w, { from, 0 })
      vim.cmd('normal! zt')
    end
  end)
end

--- Draws the active chat into the preview, and the answer that streams into it, if
--- any; `scroll` puts its latest exchange in view.
---@param scroll boolean?
function M.render_preview(scroll)
  local chat = state.chat()
  local B = builder()
  if not chat then
    B.add('No active chat.')
    B.add('')
    B.add('Select one on the left (Enter), or press a there for a new chat.')
  else
    local newest = {}
    for _, m in ipairs(chat.messages or {}) do
      for _, p in ipairs(m.parts or {}) do
        if p.action == 'AssistantWriteFile' and p.path then
          newest[p.path] = p
        end
      end
    end
    last_write = {}
    for _, p in pairs(newest) do
      last_write[p] = true
    end
    for i, m in ipairs(chat.messages or {}) do
      render_message(B, chat, i - 1, m)
    end
    if #B.lines == 0 then
      B.add('New chat. Add files with :BB7Add, then write a message below.')
    end
  end
  draw_preview(B)
  markdown(layout().buf('preview'), #B.lines)
  local live = chat and state.chat_stream(chat.id)
  local stream = require('bb7.ui.stream')
  if live then
    stream.show(live)
    if scroll then
      scroll_to_latest(nil)
    end
  else
    stream.show(nil)
    if scroll then
      scroll_to_latest(B.last_user)
    end
  end
  R.drawn_chat = chat and chat.id
end

--- The preview's title (bb7.ui.title): the whole title, or what fits `width` cells.
---@param width integer?
---@return string
function M.preview_title(width)
  return require('bb7.ui.title').preview(width)
end

--- Redraws the titles of the preview and input panes.
function M.render_titles()
  local w = layout().win('preview')
  layout().set_title('preview', M.preview_title(w and vim.api.nvim_win_get_width(w)))
  local est = require('bb7.ui.estimate').text()
  est = est ~= '' and ('  ' .. est) or ''
  layout().set_title('input', ' Message' .. est .. require('bb7.queue').title() .. ' · ' .. config.get().send_key .. ' send · ? keys · q close')
end

-- How many refreshes began (M.refresh).
local refreshes = 0

--- Redraws every pane from the binary's state (nothing when the UI is closed). The
--- preview scrolls to the latest exchange when another chat is shown or `opts.scroll`.
---@param opts {scroll: boolean?}?
function M.refresh(opts)
  if not layout().visible() then
    return
  end
  -- While chat_get waits, messages that came meanwhile are handled, and one may refresh
  -- with a newer chat: this older answer is then not drawn over it.
  refreshes = refreshes + 1
  local mine = refreshes
  local chat = api.chat_get()
  if mine ~= refreshes then
    return
  end
  state.set_chat(chat)
  render_chats()
  render_files()
  local other = (chat and chat.id) ~= R.drawn_chat
  M.render_preview(other or (opts and opts.scroll))
  require('bb7.ui.message').load(chat)
  M.render_titles()
  -- The chat or its context may have changed: the estimate of the next send follows.
  local estimate = require('bb7.ui.estimate')
  estimate.watch(layout().buf('input'))
  estimate.schedule()
end

--- Draws the Files pane again (a file changed outside Neovim, or was written).
function M.refresh_files()
  if layout().visible() then
    render_files()
  end
end

--- Puts the first preview line holding `query` (any case; else its first word found)
--- in the middle of the preview and goes there, folds opened: a chat found by
--- :BB7Search opens at the match, not at its end.
---@param query string
---@return integer? line 1-based, nil when not found
function M.show_match(query)
  local w = layout().win('preview')
  if not w then
    return nil
  end
  local lines = vim.api.nvim_buf_get_lines(layout().buf('preview'), 0, -1, false)
  local needles = { query:lower() }
  vim.list_extend(needles, vim.split(query:lower(), '%s+', { trimempty = true }))
  for _, needle in ipairs(needles) do
    for i, l in ipairs(lines) do
      if needle ~= '' and l:lower():find(needle, 1, true) then
        vim.api.nvim_set_current_win(w)
        vim.api.nvim_win_set_cursor(w, { i, 0 })
        vim.cmd('normal! zvzz')
        return i
      end
    end
  end
end

--- Shows `lines` in the preview (a diff) until the next refresh.
---@param lines string[]
---@param ft string? filetype (default 'bb7')
function M.show_lines(lines, ft)
  if not layout().visible() then
    layout().open()
  end
  -- A streaming answer is not appended to the diff; the next refresh shows it again.
  require('bb7.ui.stream').show(nil)
  R.drawn_chat = nil
  R.folds = {}
  local b = set_lines('preview', lines)
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  require('bb7.ui.highlight').stop(b)
  vim.bo[b].filetype = ft or 'bb7'
  layout().focus('preview')
end

--- Saves the Message pane as the draft of its chat (see bb7.ui.message).
function M.save_draft()
  require('bb7.ui.message').save()
end

--- Asks before `ce` cuts the chat at message `index` (0-based): how many later
--- exchanges go, and that the Message pane's draft is replaced by the message.
---@param chat table a chat_get reply
---@param index integer
---@return boolean go on
function M.confirm_cut(chat, index)
  local later = 0
  for i = index + 2, #(chat.messages or {}) do
    if chat.messages[i].role == 'user' then
      later = later + 1
    end
  end
  local parts = { 'Edit this message? Its answer' }
  if later > 0 then
    table.insert(parts, string.format(' and the %d later exchange%s', later, later == 1 and '' or 's'))
  end
  table.insert(parts, ' are cut from the chat')
  if vim.trim(require('bb7.ui.message').text()) ~= '' then
    table.insert(parts, ', and your draft is replaced by the message')
  end
  table.insert(parts, '.')
  return vim.fn.confirm(table.concat(parts), '&Cut and edit\n&Keep', 2) == 1
end

--- Forks the chat at the user message under the cursor, or edits it in place.
---@param kind 'fork'|'edit'
function M.fork_or_edit(kind)
  local chat = state.chat()
  if not chat then
    return
  end
  local index = R.line_msg[vim.api.nvim_win_get_cursor(0)[1]]
  if not index then
    return util.say('Put the cursor on one of your messages', vim.log.levels.WARN)
  end
  local message = require('bb7.ui.message')
  if kind == 'edit' and not M.confirm_cut(chat, index) then
    return
  end
  -- The Message pane's text stays with the chat it was typed for.
  message.save()
  local r, err, content
  if kind == 'fork' then
    r, err = api.fork_chat({ chat_id = chat.id, fork_message_index = index })
    content = r and r.fork_message_content
  else
    content = ''
    for _, p in ipairs(chat.messages[index + 1].parts or {}) do
      if p.type == 'text' then
        content = content .. (p.content or '')
      end
    end
    r, err = api.chat_edit({ chat_id = chat.id, message_index = index, content = content })
  end
  if not r then
    return util.say('Failed to ' .. kind .. ': ' .. err.message, vim.log.levels.ERROR)
  end
  local changed = vim.tbl_map(function(w)
    return w.path .. ' (' .. w.issue .. ')'
  end, r.context_warnings or {})
  if #changed > 0 then
    util.say('Changed since that message: ' .. table.concat(changed, ', '), vim.log.levels.WARN)
  end
  message.replace(kind == 'fork' and r.new_chat_id or chat.id, content or '')
  M.refresh()
  layout().focus('input')
end

return M
