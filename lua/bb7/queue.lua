-- Messages sent while their chat's answer streams: queued here, listed above the
-- Message pane (dimmed) with "queued (N)" in its title, and sent one at a time, oldest
-- first, each when the answer before it ends.
--
-- Neovim keeps the queue itself rather than sending `"queue": true` (docs/PROTOCOL.md,
-- "Extension: queue while streaming"): a queued message must also wait when the answer
-- before it left changes to review, which only the plugin knows the user has not seen
-- yet. So an answer that ends in an error, a cancel, edits that could not be applied
-- or changes to review holds the queue with a note, until the user sends (a message of
-- their own, after whose answer the queue goes on, or the send key on an empty Message
-- pane, which sends the next queued message now) or drops it (:BB7Unqueue). Nothing
-- queued has reached the binary, so taking one back or dropping it needs no cancel.

local state = require('bb7.state')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

local layout = util.lazy('bb7.ui.layout')

--- The key in the Message pane (normal mode) that takes the last queued message back.
M.edit_key = 'gQ'

---@class bb7.Queue
---@field items string[] the messages, oldest first
---@field note string? why the queue waits (the answer before did not end well)

---@type table<string, bb7.Queue> by chat id
local Q = {}

local ns = vim.api.nvim_create_namespace('bb7_queue')

local function active_id()
  local chat = state.chat()
  return chat and chat.id
end

--- The messages queued for `chat_id` (the active chat when nil), oldest first.
---@param chat_id string?
---@return string[]
function M.items(chat_id)
  local q = Q[chat_id or active_id() or '']
  return q and vim.deepcopy(q.items) or {}
end

--- Why the queue of `chat_id` (the active chat when nil) waits, or nil.
---@param chat_id string?
---@return string?
function M.note(chat_id)
  local q = Q[chat_id or active_id() or '']
  return q and q.note
end

--- ` · queued (N)` for the Message pane's title while the active chat has queued
--- messages (` · queued (N), waiting` while they wait), else ''.
---@return string
function M.title()
  local q = Q[active_id() or '']
  if not q or #q.items == 0 then
    return ''
  end
  return ' · queued (' .. #q.items .. ')' .. (q.note and ', waiting' or '')
end

local function first_line(text)
  local line = vim.trim(text):match('^[^\n]*') or ''
  return line .. (vim.trim(text):find('\n', 1, true) and ' …' or '')
end

--- Lists the active chat's queued messages above the Message pane's first line (at
--- most three, then how many more), and redraws the pane's title.
function M.show()
  local b = layout().buf('input')
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  local q = Q[active_id() or '']
  if q and #q.items > 0 then
    local w = layout().win('input')
    local width = math.max(20, (w and vim.api.nvim_win_get_width(w) or vim.o.columns) - 2)
    local send_key = require('bb7.config').get().send_key
    local head
    if q.note then
      head = { { util.truncate('Queued (' .. #q.items .. ') waits: ' .. q.note .. ' · ' .. send_key .. ' on an empty Message sends the next · :BB7Unqueue drops', width), 'WarningMsg' } }
    else
      head = { { util.truncate('Queued (' .. #q.items .. '), sent when the answer ends · ' .. M.edit_key .. ' edit the last · :BB7Unqueue drops', width), 'Comment' } }
    end
    local lines = { head }
    for i = 1, math.min(#q.items, 3) do
      table.insert(lines, { { util.truncate(i .. '. ' .. first_line(q.items[i]), width), 'Comment' } })
    end
    if #q.items > 3 then
      table.insert(lines, { { '… ' .. (#q.items - 3) .. ' more', 'Comment' } })
    end
    vim.api.nvim_buf_set_extmark(b, ns, 0, 0, { virt_lines = lines, virt_lines_above = true })
    if w then
      vim.api.nvim_win_call(w, function()
        vim.fn.winrestview({ topline = 1, topfill = #lines })
      end)
    end
  end
  if layout().visible() then
    require('bb7.ui.render').render_titles()
  end
  vim.cmd('redrawstatus!')
end

--- Whether a send of `chat_id` now is queued: an answer streams into that chat.
---@param chat_id string
---@return boolean
function M.wanted(chat_id)
  return state.chat_streaming(chat_id)
end

--- Queues `text` for `chat_id`; returns 'queued'.
---@param chat_id string
---@param text string
---@return string
function M.add(chat_id, text)
  local q = Q[chat_id] or { items = {} }
  Q[chat_id] = q
  table.insert(q.items, text)
  -- The pane was emptied: so is the draft the binary keeps, or the text comes back
  -- when the chat is shown again.
  if chat_id == active_id() then
    state.chat().draft = ''
    require('bb7.api').save_draft('')
  end
  say('Queued (' .. #q.items .. '): sent when the answer ends')
  M.show()
  return 'queued'
end

--- The user sent a message of their own to `chat_id`: a queue that waited goes on
--- after that answer (when it ends well).
---@param chat_id string
function M.sent(chat_id)
  local q = Q[chat_id]
  if q and q.note then
    q.note = nil
    M.show()
  end
end

-- Sends the oldest queued message of `chat_id` (the chat shown or not).
local function send_next(chat_id)
  local q = Q[chat_id]
  if not q or #q.items == 0 or state.chat_streaming(chat_id) then
    return
  end
  local text = table.remove(q.items, 1)
  q.note = nil
  if #q.items == 0 then
    Q[chat_id] = nil
  end
  M.show()
  if chat_id == active_id() then
    -- The whole path of a send from the pane (an `/mcp:` prompt is rendered first).
    require('bb7.commands').send(text)
  else
    require('bb7.turn').send(text, chat_id, true)
  end
end

-- Why the queue waits after `final`, or nil when the answer ended well.
local function hold_reason(final)
  if final.type == 'diff_error' then
    return "the answer's edits could not be applied"
  elseif final.type ~= 'done' then
    return final.code == 'cancelled' and 'the answer was cancelled' or 'the answer ended in an error'
  elseif final.cancelled then
    return 'the answer was cancelled'
  elseif #(final.output_files or {}) > 0 then
    return 'changes wait for review'
  end
end

--- A turn of `chat_id` ended with `final` (its last message): the next queued message
--- is sent, or, when the answer did not end well, the queue waits with a note.
---@param chat_id string?
---@param final table
function M.ended(chat_id, final)
  local q = chat_id and Q[chat_id]
  if not q or #q.items == 0 then
    return
  end
  local why = hold_reason(final)
  if why then
    q.note = why
    say(#q.items .. ' queued message' .. (#q.items == 1 and '' or 's') .. ' wait: ' .. why .. '. Send (an empty Message sends the next) or :BB7Unqueue', levels.WARN)
    return M.show()
  end
  if q.note then
    return
  end
  -- After the final reply's own handling (the chat redrawn, a refusal restored).
  vim.schedule(function()
    send_next(chat_id)
  end)
end

--- The send key on an empty Message pane: sends the next queued message of the active
--- chat when its queue waits. Whether there was one.
---@return boolean
function M.release()
  local id = active_id()
  local q = id and Q[id]
  if not q or #q.items == 0 or state.chat_streaming(id) then
    return false
  end
  send_next(id)
  return true
end

--- :BB7QueueEdit and the edit key: takes the active chat's last queued message back
--- into the Message pane (above what the pane holds), where it can be edited and sent.
function M.edit_last()
  local id = active_id()
  local q = id and Q[id]
  if not q or #q.items == 0 then
    return say('Nothing queued', levels.WARN)
  end
  local text = table.remove(q.items)
  if #q.items == 0 then
    Q[id] = nil
  end
  local message = require('bb7.ui.message')
  local now = message.text()
  message.replace(id, vim.trim(now) == '' and text or (text .. '\n' .. now))
  message.save()
  M.show()
  say('Took the queued message back into the Message pane')
end

--- :BB7Unqueue [N] — drops the active chat's queued message N (1 is the next to be
--- sent), or all of them.
---@param arg string? a number, or '' for all
function M.unqueue(arg)
  local id = active_id()
  local q = id and Q[id]
  if not q or #q.items == 0 then
    return say('Nothing queued', levels.WARN)
  end
  local n = tonumber(arg ~= nil and arg ~= '' and arg or nil)
  if arg ~= nil and arg ~= '' and (not n or n < 1 or n > #q.items or n % 1 ~= 0) then
    return say('No queued message ' .. arg .. ' (1 to ' .. #q.items .. ')', levels.ERROR)
  end
  local dropped
  if n then
    table.remove(q.items, n)
    dropped = 1
  else
    dropped = #q.items
    q.items = {}
  end
  if #q.items == 0 then
    Q[id] = nil
  end
  M.show()
  say('Dropped ' .. dropped .. ' queued message' .. (dropped == 1 and '' or 's'))
end

return M
