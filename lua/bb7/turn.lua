-- One model turn: `send`, then the stream (reasoning, text, tool steps, approvals,
-- clarifications) drawn by bb7.ui.stream, and the final message reported to the user.

local api = require('bb7.api')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

local stream_ui = util.lazy('bb7.ui.stream')
local render = util.lazy('bb7.ui.render')

-- An error after the model was called (code `api`: an HTTP error, a stream cut
-- mid-answer) leaves the question saved in the chat (docs/PROTOCOL.md, "send"). Handed
-- back as well, a retry would send it twice: it is taken out of the chat first
-- (`chat_edit` truncates before it), so the chat and the Message pane never both hold it.
-- Whether the take-back happened.
local function take_back(chat_id, sent)
  -- chat_get reads the active chat only.
  if not state.chat() or state.chat().id ~= chat_id then
    return false
  end
  local chat = api.call('chat_get', {})
  local msgs = chat and chat.messages or {}
  for i = #msgs, 1, -1 do
    local m = msgs[i]
    if m.role == 'user' then
      local text = {}
      for _, p in ipairs(m.parts or {}) do
        if p.type == 'text' and p.content then
          table.insert(text, p.content)
        end
      end
      local own = m.content or table.concat(text, '')
      if vim.trim(own) ~= vim.trim(sent) then
        return false
      end
      local _, err = api.call('chat_edit', { chat_id = chat_id, message_index = i - 1, content = sent })
      return err == nil
    end
  end
  return false
end

-- `sent`, `chat_id`: the text sent and its chat, kept here since a send refused at once
-- ends before its stream is recorded.
-- Peers' turns that ended: a late `started` note never shows one again.
local peers_ended = {}

local function finished(rid, final, sent, sent_chat)
  local st = state.stream(rid)
  if rid then
    require('bb7.approval').forget(rid)
  end
  if type(rid) == 'string' and rid:sub(1, 5) == 'peer:' then
    peers_ended[rid] = true
  end
  state.end_stream(rid)
  if final.type == 'done' then
    local n = #(final.output_files or {})
    if final.cancelled then
      say('Cancelled')
    elseif n > 0 then
      say('Response received: ' .. n .. ' file' .. (n == 1 and '' or 's') .. ' changed')
    else
      say('Response received')
    end
    if final.chat_id or (st and st.chat_id) then
      state.add_changes(final.chat_id or st.chat_id, final.changes or {})
    end
    -- A budget this answer brought to 80% of its limit (docs/PROTOCOL.md, "Extension: budgets").
    for _, w in ipairs(final.budget_warnings or {}) do
      say(w.message, levels.WARN)
    end
  elseif final.code == 'cancelled' then
    say('Cancelled')
  elseif final.type == 'diff_error' then
    say("The model's edits could not be applied: " .. table.concat(final.errors or {}, '; '), levels.ERROR)
  elseif final.code == 'busy' then
    say('This chat is still answering; wait or :BB7Cancel', levels.WARN)
  else
    say('Failed to get a response: ' .. (final.message or '?'), levels.ERROR)
  end
  -- The provider that answered (and why a fallback happened) goes with the usage.
  local usage = final.usage
  if usage and final.provider then
    usage = vim.tbl_extend('force', usage, { provider = final.provider, fallback_reason = final.fallback_reason })
  end
  state.set_usage(usage)
  require('bb7.spend').note(final.spent_today)
  local chat_id = final.chat_id or (st and st.chat_id)
  if chat_id and (usage or final.chat_usage) then
    state.set_chat_usage(chat_id, usage, final.chat_usage)
  end
  if not require('bb7.ui.layout').visible() then
    state.set_unread(true)
  end
  stream_ui().finish(st, final)
  -- A refused send (an error, not a cancel) gives the typed text back.
  chat_id = chat_id or sent_chat
  if final.type == 'error' and final.code ~= 'cancelled' and sent and chat_id then
    local reason = final.message or final.code or '?'
    if final.code == 'api' and take_back(chat_id, sent) then
      reason = reason .. ' (taken out of the chat; send it again to retry)'
      render().refresh()
    end
    require('bb7.ui.message').restore(chat_id, sent, reason)
  end
  -- The chat's next queued message goes now, or waits with a note (lua/bb7/queue.lua).
  require('bb7.queue').ended(chat_id, final)
  vim.cmd('redrawstatus!')
end

local last_redraw = 0

local function event(rid, msg)
  local st = state.stream(rid)
  if not st then
    return
  end
  st.chat_id = st.chat_id or msg.chat_id
  -- A retry after an HTTP error waits `delay_ms`: the preview's title counts it down.
  st.retry = msg.type == 'retry' and { at = vim.uv.now() + (tonumber(msg.delay_ms) or 0), reason = msg.reason } or nil
  if msg.type == 'retry' then
    return
  elseif msg.type == 'chunk' then
    st.text = st.text .. msg.content
  elseif msg.type == 'thinking' then
    st.thinking = st.thinking .. msg.content
  elseif msg.type == 'attempt' then
    st.text, st.thinking = '', ''
  elseif msg.type == 'notice' then
    -- Said once per switch (the server refused tool calls): worth a notification.
    vim.notify('BB-7: ' .. (msg.message or ''), vim.log.levels.WARN)
    return
  elseif msg.type == 'waiting' then
    -- Every few seconds until the first token: shown in the echo area, not kept.
    st.waiting = msg.message
    vim.api.nvim_echo({ { 'BB-7: ' .. (msg.message or 'waiting'), 'Comment' } }, false, {})
    return
  elseif msg.type == 'tool_approval' then
    -- Asked in a bb7 pane only, never with the keys typed in a code buffer.
    require('bb7.approval').request(rid, msg)
    return
  elseif msg.type == 'clarification' then
    vim.ui.input({ prompt = 'BB-7 asks: ' .. msg.question .. ' ' }, function(answer)
      local given = (answer and vim.trim(answer) ~= '') and answer or nil
      if st.chat_id then
        state.set_answer(st.chat_id, msg.question, given or '(no answer)')
      end
      api.clarify(msg.question_id, given or 'no_user_answer')
    end)
    return
  end
  stream_ui().delta(st, msg)
  -- Keep statuslines showing require('bb7').status() moving, at most ten times a second.
  local now = vim.uv.now()
  if now - last_redraw > 100 then
    last_redraw = now
    vim.cmd('redrawstatus!')
  end
end

--- Shows a turn another bb7 process (`bb7 ask`, `bb7 chat`) started on the chat this
--- one holds, as our own: spinner, reasoning and text as they stream, the answer and its
--- changes at the end; :BB7Cancel cancels it by its `peer:` id (docs/PROTOCOL.md, "One
--- chat, many front-ends"). A turn already followed is left as it is.
---@param rid string the turn's `peer:` id
---@param chat_id string?
function M.follow_peer(rid, chat_id)
  if state.stream(rid) or peers_ended[rid] then
    return
  end
  state.add_stream(rid, { rid = rid, chat_id = chat_id, text = '', thinking = '', pieces = {}, peer = true, started = vim.uv.now() })
  require('bb7.client').follow(rid, function(final)
    finished(rid, final)
  end, function(msg)
    event(rid, msg)
  end)
  stream_ui().start(state.stream(rid))
  vim.cmd('redrawstatus!')
end

--- Sends `text` to the active chat, `chat_id`; with `named`, to `chat_id` whichever
--- chat is active (a queued message of a chat no longer shown).
---@param text string
---@param chat_id string?
---@param named boolean?
---@return string? request_id nil when the binary cannot start
function M.send(text, chat_id, named)
  local rid
  local ended = false
  rid = api.send({ content = text, chat_id = named and chat_id or nil }, function(final)
    ended = true
    finished(rid, final, text, chat_id)
  end, function(msg)
    event(rid, msg)
  end)
  -- A send refused at once has ended before api.send returned: no stream to follow.
  if rid and not ended then
    state.add_stream(rid, { rid = rid, chat_id = chat_id, text = '', thinking = '', pieces = {}, started = vim.uv.now() })
    stream_ui().start(state.stream(rid))
  end
  return rid
end

return M
