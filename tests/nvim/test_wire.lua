-- What the server says about the wire while a turn runs: the wait for the first
-- token (`waiting`, shown in the echo area) and a switch to SEARCH/REPLACE blocks
-- (`notice`, a notification).
local test, H = ...

test('waiting and notice: the wait is shown and a switch to blocks is notified', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local chat_id = require('bb7').active_chat()
  local api = require('bb7.api')
  local real = api.send
  local got = {}
  api.send = function(_, on_final, on_event)
    got.final, got.event = on_final, on_event
    return 'stub-1'
  end
  require('bb7.turn').send('hi', chat_id)
  api.send = real
  local st = require('bb7.state').stream('stub-1')
  got.event({ type = 'waiting', seconds = 10, received = 'pings', message = 'the local server is reading the prompt, 10 s', chat_id = chat_id })
  H.eq(st.waiting, 'the local server is reading the prompt, 10 s', 'the wait is kept on the stream')
  H.truthy(H.note('reading the prompt') == nil, 'a wait is not a notification')
  got.event({ type = 'notice', kind = 'blocks', message = 'the server refused tool calls; edits as blocks', chat_id = chat_id })
  H.expect_note('BB-7: the server refused tool calls')
  H.eq(st.text, '', 'neither is answer text')
  got.final({ type = 'done', chat_id = chat_id, usage = {} })
end)
