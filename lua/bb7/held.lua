-- A chat shown read-only follows the process that holds it (docs/PROTOCOL.md, "One
-- chat, many front-ends"). When that process lets the chat go (`holder_left`), the
-- view no longer moves: the user is told so, and when the holder quit the chat is
-- taken over here if it is free (else it is followed where it is held now).

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

---@param msg {chat_id: string, reason: string, pid: integer?}
local function on_left(msg)
  local active = api.chat_active()
  if not active or active.id ~= msg.chat_id or not active.read_only then
    return
  end
  local who = 'The bb7 process that held this chat' .. (msg.pid and (' (PID ' .. msg.pid .. ')') or '')
  if msg.reason == 'switched' then
    say(who .. ' switched to another chat: this chat no longer moves here. It is free: select it again in the Chats pane to take it over', levels.WARN)
    return
  end
  require('bb7.ui.message').save()
  local reply, err = api.chat_select({ id = msg.chat_id })
  if not err then
    say(who .. ' has quit: the chat is yours now')
    require('bb7.state_warnings').say(reply)
  elseif err.code == 'locked' then
    -- Another process took it first: followed there, read-only.
    local pid = type(err.data) == 'table' and err.data.holder_pid or nil
    api.chat_select({ id = msg.chat_id, read_only = true })
    say(who .. ' has quit; another bb7 process' .. (pid and (' (PID ' .. pid .. ')') or '') .. ' holds the chat now: still shown read-only, :BB7Unlock takes it over', levels.WARN)
  else
    say(who .. ' has quit, and the chat could not be opened here: ' .. err.message, levels.WARN)
  end
  require('bb7.ui.render').refresh()
end

--- Listens for `holder_left` (once, from setup()).
function M.setup()
  require('bb7.client').on('holder_left', function(msg)
    -- Out of the reader's callback: the answer is waited for.
    vim.schedule(function()
      on_left(msg)
    end)
  end)
end

return M
