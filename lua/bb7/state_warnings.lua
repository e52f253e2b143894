-- What bb7 found wrong reading a chat's state when the chat was selected (the
-- `state_warnings` of `chat_select`'s reply: its context journal skipped, or read
-- only in part, so context adds are missing): each told once as a warning, as a
-- send's notices are (docs/PROTOCOL.md, `chat_select`).
local M = {}

---@param reply table? the reply of `chat_select`
function M.say(reply)
  local warnings = type(reply) == 'table' and reply.state_warnings or nil
  if type(warnings) ~= 'table' then
    return
  end
  for _, w in ipairs(warnings) do
    if type(w) == 'string' then
      require('bb7.util').say(w, vim.log.levels.WARN)
    end
  end
end

return M
