-- Chats held by another bb7 process (docs/PROTOCOL.md, `locked`): a chat open in
-- another Neovim or `bb7 chat` cannot be selected here; :BB7Unlock takes it over after
-- a confirmation, and asks once more when the holder is running and answers (the
-- binary refuses a `careful` unlock then): once taken, the old holder refuses its next
-- save and writes nothing more to the chat.

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

-- The chat last refused for being held, and its holder's PID when known.
local refused = nil ---@type {id: string, pid: integer?}?

--- Tells the user that chat `id` is held elsewhere (a `locked` error) and how to take
--- it over; :BB7Unlock then offers this chat first.
---@param id string
---@param err bb7.Error
function M.report(id, err)
  local pid = type(err.data) == 'table' and err.data.holder_pid or nil
  refused = { id = id, pid = pid }
  say('This chat is open in another bb7 process' .. (pid and (' (PID ' .. pid .. ')') or '') .. '; shown read-only: cf on one of your messages forks it, :BB7Unlock takes it over', levels.WARN)
end

local function take_over(chat)
  local pid = refused and refused.id == chat.id and refused.pid or nil
  local question = string.format('Chat "%s" is held by another bb7 process%s. If it is still running, it will refuse to save anything more to this chat. Take it over?', chat.name or chat.id, pid and (' (PID ' .. pid .. ')') or '')
  if vim.fn.confirm(question, '&Take over\n&Cancel', 2) ~= 1 then
    return
  end
  local _, err = api.call('chat_force_unlock', { id = chat.id, careful = true })
  if err and err.code == 'locked' then
    -- The holder is running and answers: it surely writes the chat too.
    local live = type(err.data) == 'table' and err.data.holder_pid or pid
    local again = string.format('Chat "%s" is open in a running bb7 process%s that answers. Close it there first, or take it anyway (what it has not saved yet stays unsaved)?', chat.name or chat.id, live and (' (PID ' .. live .. ')') or '')
    if vim.fn.confirm(again, '&Take anyway\n&Cancel', 2) ~= 1 then
      return
    end
    _, err = api.call('chat_force_unlock', { id = chat.id })
  end
  if err then
    return say('Failed to unlock: ' .. err.message, levels.ERROR)
  end
  refused = nil
  say('Unlocked ' .. (chat.name or chat.id))
  require('bb7.commands').select_chat(chat.id)
end

--- :BB7Unlock — takes over a chat held by another bb7 process: the chat under the
--- cursor in the Chats pane, else the one just refused, else one picked from the
--- locked chats.
function M.unlock()
  local row = require('bb7.ui.render').chat_under_cursor()
  if row and row.locked then
    return take_over(row)
  end
  local list = (api.chat_list() or {}).chats or {}
  local locked = vim.tbl_filter(function(c)
    return c.locked
  end, list)
  for _, c in ipairs(locked) do
    if refused and c.id == refused.id then
      return take_over(c)
    end
  end
  if #locked == 0 then
    return say('No chat is held by another bb7 process')
  elseif #locked == 1 then
    return take_over(locked[1])
  end
  vim.ui.select(locked, {
    prompt = 'Take over which chat?',
    format_item = function(c)
      return c.name or c.id
    end,
  }, function(c)
    if c then
      take_over(c)
    end
  end)
end

return M
