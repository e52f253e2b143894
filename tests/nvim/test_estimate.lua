-- The estimate of the next send in the Message pane's title (debounced, one request in
-- flight), the cached share of the last answer in the preview's title (per chat), an
-- answer whose edits failed (diff_error) drawn with its failures, and edit blocks
-- shown as one line while the answer streams.
local test, H = ...

local function layout()
  return require('bb7.ui.layout')
end

local function winbar(name)
  local w = layout().win(name)
  return vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
end

local function est()
  return require('bb7.ui.estimate')
end

local function type_in_input(text)
  vim.api.nvim_buf_set_lines(layout().buf('input'), 0, -1, false, vim.split(text, '\n'))
end

test('estimate: tokens, cached part and cost of the next send in the Message title, debounced, one request in flight', function()
  H.project({ ['notes.txt'] = string.rep('some words for the context\n', 200) })
  vim.cmd('BB7Init')
  -- The saved model list gives the price (fake/model: $1 per million input tokens).
  H.truthy(require('bb7.client').request_sync('get_models', { refresh = true }).models, 'models fetched')
  vim.cmd('BB7NewChat Estimates')
  vim.cmd('BB7Add notes.txt')
  vim.cmd('BB7')
  H.wait(function() return winbar('input'):find('~', 1, true) ~= nil end, 5000, 'an estimate in the title')
  local title = winbar('input')
  H.truthy(title:match('^ Message  ~[%d%.]+k?/128k %(%d+%%%) %$%d%.%d%d%d%d · '), 'format: ' .. title)
  H.truthy(not title:find('cached', 1, true), 'nothing cached before the first request: ' .. title)
  local before = est().stats().reply.total

  -- Every reply is held until the test lets it through, so changes arrive while one is
  -- in flight (held by the test rather than for a time: a loaded machine stretches any
  -- interval, and then each change was asked apart).
  local api = require('bb7.api')
  local real = api.estimate_tokens
  local open, most, texts, held = 0, 0, {}, {}
  api.estimate_tokens = function(text, cb)
    open = open + 1
    most = math.max(most, open)
    table.insert(texts, text)
    real(text, function(r, err)
      table.insert(held, function()
        open = open - 1
        cb(r, err)
      end)
    end)
  end
  -- Counts the debounce timer's firings (it looks M.ask up each time it is started).
  local real_ask, asks = est().ask, 0
  est().ask = function()
    asks = asks + 1
    real_ask()
  end
  local sent = est().stats().sent
  layout().focus('input')
  type_in_input('a')
  vim.wait(100)
  H.eq(est().stats().sent, sent, 'nothing asked while typing (debounced)')
  H.wait(function() return #held == 1 end, 5000, 'the first draft asked')
  for i = 1, 5 do
    local fired = asks
    type_in_input(string.rep('word ', 100 * i))
    H.wait(function() return asks > fired end, 5000, 'the change ' .. i .. ' comes while one is in flight')
  end
  -- Let the held replies through one by one until nothing is asked any more.
  H.wait(function()
    if #held > 0 then
      table.remove(held, 1)()
    end
    return #held == 0 and not est().stats().in_flight and texts[#texts] == string.rep('word ', 500)
  end, 5000, 'the last draft asked')
  est().ask = real_ask
  H.eq(most, 1, 'never more than one request in flight')
  H.truthy(#texts < 6, 'changes during a request asked once more, not each: ' .. #texts)
  H.truthy(est().stats().reply.total > before + 400, 'the draft counts: ' .. est().stats().reply.total .. ' vs ' .. before)
  api.estimate_tokens = real

  -- After a turn the cached part shows, and a narrow pane cuts the title with …
  type_in_input('')
  H.script({ text = 'Noted.' })
  require('bb7').send('read this')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  H.wait(function() return winbar('input'):find('cached)', 1, true) ~= nil end, 5000, 'cached part: ' .. winbar('input'))
  H.truthy(winbar('input'):match('^ Message  ~[%d%.]+k?/128k %(%d+%%%) %([%d%.]+k? cached%) %$%d'), 'with the cached part: ' .. winbar('input'))
  vim.o.columns = 60
  vim.wait(50)
  require('bb7.ui.render').render_titles()
  title = winbar('input')
  H.truthy(vim.endswith(title, '…') and title:find('^ Message  ~'), 'cut at the right: ' .. title)
end)

test('cached share of the last answer in the preview title, kept per chat', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Other')
  vim.cmd('BB7NewChat Main')
  vim.cmd('BB7')
  -- The whole title (the winbar cuts it to the pane's width).
  local function winbar(name)
    H.eq(name, 'preview', 'pane')
    return require('bb7.ui.render').preview_title()
  end
  -- The fake reports 100 prompt tokens (3 cached), 20 completion tokens, $0.0015.
  H.script({ text = 'First.' })
  require('bb7').send('one')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  H.wait(function() return winbar('preview'):find('cached', 1, true) ~= nil end, 3000, 'usage in the title')
  H.truthy(winbar('preview'):find('Main · fake/model · 120 tok, 3% cached, $0.0015', 1, true), 'title: ' .. winbar('preview'))
  H.notes = {}
  H.script({ text = 'Second.' })
  require('bb7').send('two')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer 2')
  H.wait(function() return winbar('preview'):find('chat $0.0030', 1, true) ~= nil end, 3000, 'chat total: ' .. winbar('preview'))
  local main = require('bb7').active_chat()
  local chats = require('bb7.client').request_sync('chat_list', {}).chats
  for _, c in ipairs(chats) do
    if c.id ~= main then
      require('bb7.commands').select_chat(c.id)
    end
  end
  H.truthy(not winbar('preview'):find('tok', 1, true), 'Other has no usage: ' .. winbar('preview'))
  require('bb7.commands').select_chat(main)
  H.truthy(winbar('preview'):find('120 tok, 3% cached, $0.0015, remote · chat $0.0030', 1, true), 'back: ' .. winbar('preview'))
end)

test('diff_error: the answer shows its failures, no note follows', function()
  H.project({ ['main.lua'] = 'local x = 1\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add main.lua')
  vim.cmd('BB7')
  H.script({
    text = 'Changing y.',
    tool_calls = { { name = 'edit_file', args = { path = 'main.lua', edits = { { old_string = 'local y = 1', new_string = 'local y = 2' } } } } },
  })
  require('bb7').send('change y')
  H.wait(function() return H.note('could not be applied') ~= nil end, 10000, 'diff_error')
  local chat = require('bb7.client').request_sync('chat_get', {})
  local last = chat.messages[#chat.messages]
  H.eq(last.role, 'assistant', 'the answer is the last message')
  H.truthy(last.diff_error and #last.diff_error.errors > 0, 'failures on it: ' .. vim.inspect(last.diff_error))
  local lines = H.pane('preview')
  local text = table.concat(lines, '\n')
  H.truthy(text:find('Changing y.', 1, true), 'the answer text: ' .. text)
  H.truthy(text:find('✗ Edits not applied (nothing was written):', 1, true), 'the failure: ' .. text)
  H.truthy(text:find('  • ' .. last.diff_error.errors[1]:sub(1, 20), 1, true), 'the error: ' .. text)
  H.truthy(not text:find('## Note', 1, true), 'no note: ' .. text)
  H.eq(lines[#lines - 1]:sub(1, 6), '  • ', 'the failures end the answer')
  H.eq(vim.fn.readfile('main.lua'), { 'local x = 1' }, 'nothing written')
end)

test('edit_format blocks: a block shows as one line while the answer streams, then as the change', function()
  H.project({ ['main.lua'] = 'local x = 1\n' }, { edit_format = 'blocks' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add main.lua')
  vim.cmd('BB7')
  local block = table.concat({
    'Setting x to 2.', '', 'main.lua', '```lua', '<<<<<<< SEARCH', 'local x = 1', '=======', 'local x = 2',
    '>>>>>>> REPLACE', '```', '', 'That is all for now, thank you.',
  }, '\n')
  -- Held after the block's closing fence (its twelfth word) until the checks while it
  -- streams.
  H.script({ text = block, hold_after = 12, hold_until = 'go' })
  require('bb7').send('set x to 2')
  H.wait(function() return vim.tbl_contains(H.pane('preview'), '· Edit main.lua') end, 10000, 'the block as one line: ' .. table.concat(H.pane('preview'), '\n'))
  H.truthy(require('bb7.state').streaming(), 'while it streams')
  local text = table.concat(H.pane('preview'), '\n')
  H.truthy(not text:find('SEARCH', 1, true) and not text:find('local x = 2', 1, true), 'not the block text: ' .. text)
  H.release('go')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  H.truthy(#H.requests() > 0 and H.requests()[#H.requests()].body.tools == nil, 'no tools in the request')
  text = table.concat(H.pane('preview'), '\n')
  H.truthy(text:find('▸ Edit main.lua', 1, true), 'the change line: ' .. text)
  H.truthy(text:find('That is all for now', 1, true), 'the prose after the block: ' .. text)
end)
