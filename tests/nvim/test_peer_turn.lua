-- A turn started beside Neovim (`bb7 ask` in a shell, `bb7 chat` in a pane) on the chat
-- Neovim holds is shown live in the UI, as Neovim's own: spinner, reasoning and text as
-- they stream, then the answer; :BB7Cancel cancels it.
local test, H = ...

local function preview()
  return table.concat(H.pane('preview'), '\n')
end

test('a turn started by bb7 ask beside Neovim streams into the preview', function()
  local proj = H.project({ ['a.txt'] = 'alpha\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.txt')
  vim.cmd('BB7')
  local state = require('bb7.state')
  -- Held after "The peer " until the checks while it streams.
  H.script({ thinking = 'Peering at alpha.', text = 'The peer answer is here and it goes on', hold_after = 2, hold_until = 'go' })
  local ask = vim.system({ H.bin, 'ask', 'what is in a.txt' }, { cwd = proj, text = true })
  -- Live: the stream is Neovim's (statusline spinner) and the preview grows.
  H.wait(function() return preview():find('The peer', 1, true) ~= nil end, 20000, 'the answer streams into the preview')
  H.truthy(state.streaming(), 'a stream is running while it streams')
  H.truthy(require('bb7').status():find('bb7 ', 1, true) == 1, 'statusline spinner')
  H.truthy(preview():find('Peering at alpha.', 1, true), 'reasoning shown: ' .. preview())
  H.truthy(preview():find('what is in a.txt', 1, true), 'the question shown: ' .. preview())
  H.release('go')
  local r = ask:wait(30000)
  H.eq(r.code, 0, 'bb7 ask: ' .. (r.stderr or ''))
  H.wait(function() return not state.streaming() end, 10000, 'the turn ended in Neovim')
  H.wait(function() return preview():find('it goes on', 1, true) ~= nil end, 10000, 'the finished answer')
  H.truthy(H.note('Response received'), 'the end is told')
end)

test('BB7Cancel in Neovim cancels a turn started by bb7 ask', function()
  local proj = H.project({ ['a.txt'] = 'alpha\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.txt')
  local state = require('bb7.state')
  -- Held after its first word (never let go): the cancel always finds it running.
  H.script({ text = 'a slow answer that goes on and on and on and on and on', hold_after = 1, hold_until = 'never' })
  local ask = vim.system({ H.bin, 'ask', 'tell a story' }, { cwd = proj, text = true })
  H.wait(H.peer_streaming, 20000, 'the peer turn is followed')
  vim.cmd('BB7Cancel')
  H.truthy(not H.note('Nothing to cancel'), 'something to cancel')
  H.wait(function() return H.note('Cancelled') ~= nil end, 10000, 'cancelled')
  H.wait(function() return not state.streaming() end, 10000, 'no stream left')
  local r = ask:wait(30000)
  H.truthy(not (r.stdout or ''):find('and on and on and on and on', 1, true), 'the answer was cut: ' .. (r.stdout or ''))
end)
