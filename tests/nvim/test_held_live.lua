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
