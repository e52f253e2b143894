-- A chat held by another bb7 process, shown read-only in Neovim, follows its holder:
-- a turn the holder runs streams into the preview as it comes (spinner, reasoning,
-- text), and its answer stays shown once it ends, without selecting the chat again.
local test, H = ...

local function preview()
  return table.concat(H.pane('preview'), '\n')
end

-- Another bb7 process holds chat "Held one", which Neovim shows read-only and
-- follows; returns a function sending that process a request, and one telling
-- whether it answered a request id.
local function held_and_followed()
  local proj = H.project({ ['a.txt'] = 'alpha\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Held one')
  local held = require('bb7').active_chat()
  vim.cmd('BB7NewChat Mine')
  -- Another bb7 process opens the first chat and keeps it.
  local o = H.hold_elsewhere(proj, held)
  local other, other_request, answered = o.job, o.request, o.answered
  vim.cmd('BB7')
  require('bb7.commands').select_chat(held)
  H.eq(require('bb7.api').chat_active().read_only, true, 'shown read-only')
  -- Neovim's bb7 follows the holder once it has connected to its socket: the holder
  -- saves drafts until Neovim hears of one.
  local heard = false
  require('bb7.client').on('peer_change', function(msg)
    if msg.chat_id == held then
      heard = true
    end
  end)
  -- A draft a try until Neovim hears (600 tries: a hang guard for a loaded machine).
  for n = 1, 600 do
    other_request({ action = 'save_draft', draft = 'draft ' .. n, request_id = 'd' .. n })
    H.wait(function() return answered('d' .. n) end, 10000, 'the holder saved a draft')
    if vim.wait(200, function() return heard end, 10) then
      break
    end
  end
  H.truthy(heard, 'Neovim follows the holder')

  return other, other_request, answered
end

test('a held chat shown read-only streams its holder turn live', function()
  local other, other_request, answered = held_and_followed()
  local state = require('bb7.state')
  H.script({ thinking = 'Holding alpha.', text = 'The holder answer is here and it goes on', chunk_delay_ms = 300 })
  other_request({ action = 'send', content = 'what is in a.txt', request_id = 'o3' })
  H.wait(function() return preview():find('The holder', 1, true) ~= nil end, 20000, 'the answer streams into the preview')
  H.truthy(state.streaming(), 'a stream is running while it streams')
  H.truthy(require('bb7').status():find('bb7 ', 1, true) == 1, 'statusline spinner')
  H.truthy(preview():find('Holding alpha.', 1, true), 'reasoning shown: ' .. preview())
  H.truthy(preview():find('what is in a.txt', 1, true), 'the question shown: ' .. preview())
  H.wait(function() return not state.streaming() end, 20000, 'the turn ended in Neovim')
  H.wait(function() return answered('o3', 'done') end, 10000, 'the holder got its answer')
  H.wait(function() return preview():find('it goes on', 1, true) ~= nil end, 10000, 'the finished answer')
  -- Drawn again from the chat as saved, the answer stays.
  require('bb7.ui.render').refresh()
  H.truthy(preview():find('The holder answer is here and it goes on', 1, true), 'the answer is in the chat: ' .. preview())
  H.eq(require('bb7.api').chat_active().read_only, true, 'still read-only')
  vim.fn.jobstop(other)
end)

test('BB7Cancel in a read-only chat cancels the holder turn it shows', function()
  local other, other_request, answered = held_and_followed()
  local state = require('bb7.state')
  H.script({ text = 'a slow answer that goes on and on and on and on and on', chunk_delay_ms = 400 })
  other_request({ action = 'send', content = 'tell a story', request_id = 'o3' })
  H.wait(H.peer_streaming, 20000, 'the holder turn is followed')
  vim.cmd('BB7Cancel')
  H.truthy(not H.note('Nothing to cancel'), 'something to cancel')
  H.wait(function() return H.note('Cancelled') ~= nil end, 10000, 'cancelled')
  H.wait(function() return not state.streaming() end, 10000, 'no stream left')
  H.wait(function() return answered('o3', 'done') or answered('o3', 'error') end, 10000, 'the holder turn ended')
  vim.fn.jobstop(other)
end)

test('a held chat shown read-only shows the question the holder queued and its answer', function()
  local other, other_request, answered = held_and_followed()
  H.script({ text = 'first answer of the holder', hold_after = 2, hold_until = 'first' })
  H.script({ text = 'the queued one is answered too' })
  other_request({ action = 'send', content = 'first question', request_id = 'o3' })
  H.wait(function() return preview():find('first answer', 1, true) ~= nil end, 20000, 'the first answer streams')
  other_request({ action = 'send', content = 'a queued question', queue = true, request_id = 'o4' })
  H.wait(function() return answered('o4', 'queued') end, 10000, 'the holder queued it')
  H.release('first')
  H.wait(function() return answered('o4', 'done') end, 20000, 'the holder got the queued answer')
  H.wait(function() return preview():find('the queued one is answered too', 1, true) ~= nil end, 20000, 'the queued answer shown')
  H.wait(function() return not require('bb7.state').streaming() end, 10000, 'no stream left')
  local p = preview()
  local q, a = p:find('a queued question', 1, true), p:find('the queued one is answered', 1, true)
  H.truthy(q and a and q < a, 'the queued question before its answer: ' .. p)
  vim.fn.jobstop(other)
end)

test('a held chat shown read-only is told when its holder switches chats', function()
  local other, other_request, answered = held_and_followed()
  local held = require('bb7').active_chat()
  other_request({ action = 'chat_new', request_id = 'o3' })
  H.wait(function() return answered('o3') end, 10000, 'the holder opened another chat')
  H.wait(function() return H.note('switched to another chat') ~= nil end, 10000, 'told of the switch')
  H.eq(require('bb7.api').chat_active().read_only, true, 'still read-only until selected again')
  -- The chat is free: selecting it again takes it.
  require('bb7.commands').select_chat(held)
  H.eq(require('bb7.api').chat_active().read_only, nil, 'selected again: held here')
  vim.fn.jobstop(other)
end)

test('a held chat shown read-only is taken over when its holder quits', function()
  local other = held_and_followed()
  local held = require('bb7').active_chat()
  vim.fn.jobstop(other)
  H.wait(function() return H.note('has quit: the chat is yours now') ~= nil end, 20000, 'told, and taken over')
  local active = require('bb7.api').chat_active()
  H.eq(active.id, held, 'the same chat')
  H.truthy(not active.read_only, 'held here now')
end)
