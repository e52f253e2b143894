-- The Message pane: its text is the draft of one chat (the protocol's `draft`), saved
-- before another chat becomes active and replaced by that chat's own draft after, so
-- words typed for one chat never reach another. Before a send, context files that
-- changed since they were added (the Files pane's ~ and ~M) are named in the pane and
-- resolved as the `send_stale` option says.

local api = require('bb7.api')
local config = require('bb7.config')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

local ns = vim.api.nvim_create_namespace('bb7_message')

-- The key that updates the stale files and sends, shown in the warning.
M.update_key = 'U'

local D = {
  chat = nil, ---@type string? id of the chat whose draft the pane holds
  stale = nil, ---@type table[]? files named by the warning on show
  restore = {}, ---@type table<string, {text: string, reason: string}> refused sends of chats not shown
}

local layout = util.lazy('bb7.ui.layout')

local function buf()
  return layout().buf('input')
end

--- The pane's text.
---@return string
function M.text()
  return table.concat(vim.api.nvim_buf_get_lines(buf(), 0, -1, false), '\n')
end

local function set_text(text)
  vim.api.nvim_buf_set_lines(buf(), 0, -1, false, vim.split(text or '', '\n', { plain = true }))
end

--- Saves the pane as the draft of the chat it belongs to, while that chat is still
--- the active one (save_draft goes to the active chat).
function M.save()
  local chat = state.chat()
  if not chat or D.chat ~= chat.id then
    return
  end
  local text = M.text()
  if text ~= (chat.draft or '') then
    chat.draft = text
    api.save_draft(text)
  end
end

--- Shows the draft of `chat` when the pane holds another chat's (or none).
---@param chat table? a chat_get reply
function M.load(chat)
  if not chat then
    D.chat = nil
    return
  end
  if D.chat == chat.id then
    return
  end
  local orphan = D.chat == nil and M.text() ~= ''
  D.chat = chat.id
  M.clear_warning()
  -- This chat's queued messages, listed above the pane (lua/bb7/queue.lua).
  require('bb7.queue').show()
  if orphan and (chat.draft or '') == '' then
    -- Typed while no chat was active: it becomes this chat's draft.
    return M.save()
  end
  set_text(chat.draft or '')
  local back = D.restore[chat.id]
  if back then
    D.restore[chat.id] = nil
    M.restore(chat.id, back.text, back.reason)
  end
end

--- Replaces the pane's text for the active chat (a fork's or edit's message).
---@param chat_id string
---@param text string
function M.replace(chat_id, text)
  D.chat = chat_id
  M.clear_warning()
  set_text(text)
end

--- Removes the stale-context warning and its key.
function M.clear_warning()
  if D.stale then
    D.stale = nil
    pcall(vim.keymap.del, 'n', M.update_key, { buffer = buf() })
  end
  vim.api.nvim_buf_clear_namespace(buf(), ns, 0, -1)
end

--- Context files whose snapshot differs from the file (or its unsaved buffer), or
--- whose file is gone from disk (`deleted` set on the row).
---@return table[] rows of get_file_statuses
function M.stale_files()
  local out = {}
  local r = api.file_statuses()
  local render = require('bb7.ui.render')
  for _, f in ipairs(r and r.files or {}) do
    -- An attachment (`kind` set) has no file on disk: never stale, never deleted.
    if f.in_context and not f.external and not f.kind then
      local st = render.frontend_status(f)
      if f.start_line and st ~= 'D' then
        st = f.out_of_sync and '~' or ''
      end
      if st:sub(1, 1) == '~' or st == 'D' then
        f.deleted = st == 'D'
        table.insert(out, f)
      end
    end
  end
  return out
end

local function label(f)
  return f.path .. (f.start_line and (':' .. f.start_line .. '-' .. f.end_line) or '')
end

--- Takes new snapshots of `files`: the unsaved buffer when there is one, else the
--- file on disk; a file deleted on disk is dropped from the context.
---@param files table[]
---@return boolean ok every file was updated
function M.update(files)
  local ok = true
  for _, f in ipairs(files) do
    local b = state.loaded_buf(f.path)
    local err
    if f.deleted and f.start_line then
      _, err = api.context_remove_section({ path = f.path, start_line = f.start_line, end_line = f.end_line })
    elseif f.deleted then
      _, err = api.context_remove({ path = f.path })
    elseif b and vim.bo[b].modified and not f.start_line then
      _, err = api.context_update({ path = f.path, content = util.buffer_text(b) })
    else
      _, err = api.sync_context({ path = f.path, start_line = f.start_line, end_line = f.end_line })
    end
    if err then
      ok = false
      say('Failed to update ' .. label(f) .. ': ' .. err.message, levels.ERROR)
    end
  end
  return ok
end

local function really_send(text)
  M.clear_warning()
  -- Emptied first: a send refused at once gives the text back (M.restore) before
  -- send() returns.
  set_text('')
  local chat = state.chat()
  local draft = chat and chat.draft
  if chat then
    chat.draft = ''
  end
  if not require('bb7.commands').send(text) and M.text() == '' then
    set_text(text)
    if chat then
      chat.draft = draft
    end
  end
end

-- Shows `reason` above the pane's first line (a refused send), until the next send:
-- wrapped to the pane's width, at most three lines (the whole text is in :messages).
local function show_refusal(reason)
  local width = math.max(20, (layout().win('input') and vim.api.nvim_win_get_width(layout().win('input')) or vim.o.columns) - 2)
  local rows, row = {}, ''
  for word in (('Not sent: ' .. reason):gsub('%s+', ' ')):gmatch('%S+') do
    if row ~= '' and vim.fn.strdisplaywidth(row .. ' ' .. word) > width then
      table.insert(rows, row)
      row = word
    else
      row = row == '' and word or (row .. ' ' .. word)
    end
  end
  table.insert(rows, row)
  local lines = {}
  for i = 1, math.min(#rows, 3) do
    local l = (i == 3 and #rows > 3) and (rows[i] .. ' …') or rows[i]
    table.insert(lines, { { util.truncate(l, width), 'ErrorMsg' } })
  end
  vim.api.nvim_buf_set_extmark(buf(), ns, 0, 0, { virt_lines = lines, virt_lines_above = true })
  local w = layout().win('input')
  if w then
    vim.api.nvim_win_call(w, function()
      vim.fn.winrestview({ topline = 1, topfill = #lines })
    end)
  end
end

--- A send of `text` to `chat_id` was refused (before or after the model was called):
--- the text goes back into the Message pane and the chat's draft (before anything
--- typed since), and `reason` is shown above it. For a chat not shown now, the text
--- waits until that chat is shown.
---@param chat_id string
---@param text string
---@param reason string
function M.restore(chat_id, text, reason)
  local chat = state.chat()
  if not chat or chat.id ~= chat_id or D.chat ~= chat_id then
    D.restore[chat_id] = { text = text, reason = reason }
    return
  end
  local now = M.text()
  if now == text or vim.startswith(now, text .. '\n') then
    return
  end
  set_text(vim.trim(now) == '' and text or (text .. '\n' .. now))
  M.save()
  M.clear_warning()
  show_refusal(reason)
end

--- What M.update did to `files`, e.g. "Updated a.rs; dropped b.rs (deleted on disk)".
---@param files table[]
---@return string
function M.updated_text(files)
  local up, dropped = {}, {}
  for _, f in ipairs(files) do
    table.insert(f.deleted and dropped or up, label(f))
  end
  local parts = {}
  if #up > 0 then
    table.insert(parts, 'Updated ' .. table.concat(up, ', '))
  end
  if #dropped > 0 then
    table.insert(parts, (#up > 0 and 'dropped ' or 'Dropped ') .. table.concat(dropped, ', ') .. ' (deleted on disk)')
  end
  return table.concat(parts, '; ')
end

local function warn(files, text)
  M.clear_warning()
  D.stale = files
  local changed = vim.tbl_filter(function(f) return not f.deleted end, files)
  local deleted = vim.tbl_filter(function(f) return f.deleted end, files)
  local width = math.max(20, (layout().win('input') and vim.api.nvim_win_get_width(layout().win('input')) or vim.o.columns) - 2)
  local lines = {}
  if #changed > 0 then
    table.insert(lines, { { util.truncate('Changed since added: ' .. table.concat(vim.tbl_map(label, changed), ', '), width), 'WarningMsg' } })
  end
  if #deleted > 0 then
    table.insert(lines, { { util.truncate('Deleted on disk: ' .. table.concat(vim.tbl_map(label, deleted), ', '), width), 'WarningMsg' } })
  end
  local what = (#changed > 0 and #deleted > 0) and 'update, drop deleted' or #deleted > 0 and 'drop' or 'update'
  local old = #deleted > 0 and 'send the snapshot' or 'send the old version'
  table.insert(lines, { { util.truncate(M.update_key .. ' ' .. what .. ' and send · ' .. config.get().send_key .. ' ' .. old, width), 'WarningMsg' } })
  local b = buf()
  vim.api.nvim_buf_set_extmark(b, ns, 0, 0, { virt_lines = lines, virt_lines_above = true })
  vim.keymap.set('n', M.update_key, function()
    local stale = D.stale or {}
    if M.update(stale) then
      say(M.updated_text(stale))
      really_send(M.text())
    end
  end, { buffer = b, nowait = true, desc = 'bb7: update the changed context files and send' })
  -- Scrolled up so the lines above the first one show.
  local w = layout().win('input')
  if w then
    vim.api.nvim_win_call(w, function()
      vim.fn.winrestview({ topline = 1, topfill = #lines })
    end)
  end
  vim.cmd('stopinsert')
  return text
end

--- Sends the pane's text. Stale context: with `send_stale` 'ask' the first press
--- shows the files and the keys, a second press sends as is; 'refresh' updates them
--- first; 'send' sends the old snapshots with a note.
function M.send()
  local text = M.text()
  if vim.trim(text) == '' then
    -- A queue that waits (lua/bb7/queue.lua): the next queued message goes now.
    require('bb7.queue').release()
    return
  end
  if D.stale then
    return really_send(text)
  end
  local stale = M.stale_files()
  if #stale > 0 then
    local mode = config.get().send_stale
    if mode == 'ask' then
      return warn(stale, text)
    elseif mode == 'refresh' then
      if not M.update(stale) then
        return
      end
      say(M.updated_text(stale) .. ' before sending')
    else
      say('Sent the old version of ' .. table.concat(vim.tbl_map(label, stale), ', '), levels.WARN)
    end
  end
  really_send(text)
end

--- The warning shown, for tests: the stale files, or nil.
---@return table[]?
function M.warning()
  return D.stale
end

return M
