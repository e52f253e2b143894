-- Local, remote and hybrid: a dropped attempt clears what it streamed, the provider
-- that answered shows in the preview's title, an answer after a fallback ends with
-- its reason, and :BB7Mode sets the chat's agent_mode.
local test, H = ...

local function preview_text()
  return table.concat(H.pane('preview'), '\n')
end

-- Sends `text` with api.send replaced: returns the stream's on_event and on_final,
-- which the test feeds as the binary would.
local function stubbed_send(text)
  local api = require('bb7.api')
  local real = api.send
  local got = {}
  api.send = function(_, on_final, on_event)
    got.final, got.event = on_final, on_event
    return 'stub-1'
  end
  require('bb7.turn').send(text, require('bb7').active_chat())
  api.send = real
  H.truthy(got.event, 'the stream was started')
  return got.event, got.final
end

test('attempt: what the dropped attempt streamed is cleared, a note says what follows', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local chat_id = require('bb7').active_chat()
  local event, final = stubbed_send('fix it')
  event({ type = 'thinking', content = 'local musings', chat_id = chat_id })
  event({ type = 'chunk', content = 'local answer\nsecond line', chat_id = chat_id })
  H.truthy(preview_text():find('local answer', 1, true), 'the first attempt shows: ' .. preview_text())
  local st = require('bb7.state').stream('stub-1')
  event({ type = 'attempt', provider = 'remote', reason = 'schema_fail', chat_id = chat_id })
  local text = preview_text()
  H.truthy(not text:find('local musings', 1, true) and not text:find('local answer', 1, true) and not text:find('second line', 1, true), 'cleared: ' .. text)
  H.truthy(text:find('## Assistant\n↻ retrying on remote: schema_fail', 1, true), 'the note: ' .. text)
  H.eq(st.text, '', 'the text so far is reset')
  H.eq(st.thinking, '', 'the reasoning so far is reset')
  event({ type = 'thinking', content = 'remote thoughts', chat_id = chat_id })
  event({ type = 'chunk', content = 'remote answer', chat_id = chat_id })
  text = preview_text()
  H.truthy(text:find('↻ retrying on remote: schema_fail\n\n▸ Reasoning\n│ remote thoughts\n\nremote answer', 1, true), 'the next attempt follows: ' .. text)

  -- Drawn again (switching back to the chat): the dropped attempt stays away.
  require('bb7.ui.render').refresh()
  text = preview_text()
  H.truthy(not text:find('local answer', 1, true) and text:find('remote answer', 1, true), 'redrawn: ' .. text)

  -- An attempt without provider or reason clears without a note.
  event({ type = 'attempt', chat_id = chat_id })
  text = preview_text()
  H.truthy(not text:find('remote answer', 1, true) and not text:find('↻', 1, true), 'cleared, no note: ' .. text)

  -- done names the provider: the title's usage part shows it.
  final({ type = 'done', chat_id = chat_id, provider = 'local', usage = { prompt_tokens = 100, completion_tokens = 20, total_tokens = 120, cost = 0.0015 } })
  H.wait(function() return not require('bb7.state').streaming() end, 2000, 'the turn ended')
  local title = require('bb7.ui.render').preview_title()
  H.truthy(title:find('120 tok, $0.0015, local', 1, true), 'provider in the title: ' .. title)
end)

test('hybrid_auto fallback: the answer comes from remote, says why, and names it in the title', function()
  H.project({}, {
    providers = {
      ['local'] = { base_url = H.fake().url, model = 'fake/local', context_window = 16 },
      remote = { base_url = H.fake().url, model = 'fake/model', api_key = 'test-key' },
    },
    agent_mode = 'hybrid_auto',
  })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  H.script({ text = 'Answered remotely.' })
  require('bb7').send(string.rep('a question too long for the local window ', 20))
  H.wait(function() return H.note('Response received') ~= nil end, 15000, 'answer')
  local chat = require('bb7.client').request_sync('chat_get', {})
  local u = chat.messages[#chat.messages].usage or {}
  H.eq(u.provider, 'remote', 'answered by remote')
  H.eq(u.fallback_reason, 'context_overflow', 'the reason')
  local text = preview_text()
  H.truthy(text:find('Answered remotely.\n\n↻ answered by remote after a fallback: context_overflow', 1, true), 'the note ends the answer: ' .. text)
  H.truthy(require('bb7.ui.render').preview_title():find('$0.0015, remote', 1, true), 'title: ' .. require('bb7.ui.render').preview_title())
end)

test(':BB7Mode sets, shows and clears the chat agent_mode', function()
  -- A mode that runs the local model needs one configured (save_chat_settings refuses it otherwise).
  H.project({}, { providers = { ['local'] = { base_url = H.fake().url, model = 'fake/local' } } })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local client = require('bb7.client')
  vim.cmd('BB7Mode hybrid_auto')
  H.expect_note('BB-7: Mode: hybrid_auto')
  local chat = client.request_sync('chat_get', {})
  H.eq(chat.agent_mode, 'hybrid_auto', 'saved')
  H.eq(chat.agent_mode_set, true, "the chat's own")

  -- No argument: vim.ui.select, its prompt showing the current mode.
  local seen
  local real = vim.ui.select
  vim.ui.select = function(items, opts, cb)
    seen = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item, items) }
    cb('local')
  end
  H.notes = {}
  vim.cmd('BB7Mode')
  vim.ui.select = real
  H.eq(seen.prompt, 'Mode (now hybrid_auto)', 'prompt')
  H.eq(seen.items, { 'local', 'remote', 'hybrid_auto', "default (the config's)" }, 'items')
  H.expect_note('BB-7: Mode: local')
  H.eq(client.request_sync('chat_get', {}).agent_mode, 'local', 'picked')

  H.notes = {}
  vim.cmd('BB7Mode default')
  H.expect_note('BB-7: Mode: remote (config)')
  chat = client.request_sync('chat_get', {})
  H.eq(chat.agent_mode_set, false, 'cleared')

  H.notes = {}
  vim.cmd('BB7Mode sometimes')
  H.truthy(H.note('Failed to set the mode') or H.note('set the mode'), 'an invalid mode is reported: ' .. vim.inspect(H.notes))
end)
