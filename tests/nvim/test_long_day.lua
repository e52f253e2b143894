-- A long working day: a long chat streams as fast as a new one (no highlighter parses
-- the whole chat on each delta), and the preview keeps the reading position.
local test, H = ...

-- A project with a chat whose first answer is `n` lines long, the UI open.
local function long_chat(n)
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local lines = {}
  for i = 1, n do
    lines[i] = (i % 50 == 1) and ('### Part ' .. i) or ('Line ' .. i .. ' with `code` and **bold**.')
  end
  H.script({ text = table.concat(lines, '\n') .. '\n' })
  require('bb7').send('a long answer')
  H.wait(function() return H.note('Response received') ~= nil end, 20000, 'long answer')
  H.notes = {}
end

local function preview()
  local layout = require('bb7.ui.layout')
  return layout.buf('preview'), layout.win('preview')
end

test('long chat: no Tree-sitter highlighter on the preview; history highlighted only where shown; the streaming answer highlighted on its own', function()
  long_chat(3000)
  local buf, win = preview()
  H.eq(vim.treesitter.highlighter.active[buf], nil, 'no buffer highlighter re-parsing the chat')
  vim.cmd('redraw')
  local hl = require('bb7.ui.highlight')
  -- Held after the code block's end (its fourth word) until the checks while it streams.
  H.script({ text = 'Streaming:\n\n```lua\nlocal streamed = true\n```\n\nand more words to come', hold_after = 4, hold_until = 'go' })
  require('bb7').send('another')
  H.wait(function()
    for i, l in ipairs(H.pane('preview')) do
      if l == 'local streamed = true' then
        vim.cmd('redraw')
        return vim.tbl_contains(H.hl_groups(buf, i - 1), '@keyword.lua')
      end
    end
  end, 10000, 'the streamed code block highlighted as Lua while it streams')
  H.truthy(require('bb7.state').streaming(), 'still streaming')
  -- The start of the chat is far above the view: nothing there was parsed.
  H.eq(H.hl_groups(buf, 1), {}, 'off-screen history not highlighted')
  local parsed = hl.stats()
  H.release('go')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  vim.api.nvim_win_call(win, function()
    vim.cmd('normal! gg')
  end)
  vim.cmd('redraw')
  H.truthy(#H.hl_groups(buf, 0) > 0, 'history highlighted once scrolled to: ' .. vim.inspect(H.pane('preview')[1]))
  H.truthy(hl.stats().parses > parsed.parses, 'parsed lazily')
end)

test('reading position: a view scrolled away from the end keeps its lines when the answer completes', function()
  long_chat(80)
  local buf, win = preview()
  local words = {}
  for i = 1, 60 do
    words[i] = 'word' .. i .. (i % 6 == 0 and '\n' or '')
  end
  H.script({ text = table.concat(words, ' '), chunk_delay_ms = 20 })
  require('bb7').send('more')
  H.wait(function() return #H.pane('preview') > 95 end, 10000, 'streaming')
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = 10, lnum = 12 })
  end)
  local line = H.pane('preview')[10]
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  vim.api.nvim_win_call(win, function()
    H.eq(vim.fn.line('w0'), 10, 'top line kept')
  end)
  H.eq(vim.api.nvim_buf_get_lines(buf, 9, 10, false)[1], line, 'same text at the top')
end)

test('reading position: a view following the end of a long answer stays at its end when it completes', function()
  long_chat(10)
  local buf, win = preview()
  local words = {}
  for i = 1, 120 do
    words[i] = 'word' .. i .. (i % 4 == 0 and '\n' or '')
  end
  H.script({ text = table.concat(words, ' ') .. ' the-last-word', chunk_delay_ms = 5 })
  require('bb7').send('long')
  H.wait(function() return H.note('Response received') ~= nil end, 20000, 'answer')
  local last = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_win_call(win, function()
    H.eq(vim.fn.line('w$'), last, 'the end of the chat in view')
    local shown = table.concat(vim.api.nvim_buf_get_lines(buf, vim.fn.line('w0') - 1, last, false), '\n')
    H.truthy(shown:find('the-last-word', 1, true), 'the answer\'s last words shown')
  end)
end)

-- The Message pane's text and the reason shown above it.
local function message_pane()
  local layout = require('bb7.ui.layout')
  local b = layout.buf('input')
  local ns = vim.api.nvim_get_namespaces()['bb7_message']
  local shown = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })) do
    for _, l in ipairs(m[4].virt_lines or {}) do
      table.insert(shown, l[1][1])
    end
  end
  return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n'), table.concat(shown, ' ')
end

local function send_from_pane(text)
  local layout = require('bb7.ui.layout')
  vim.api.nvim_buf_set_lines(layout.buf('input'), 0, -1, false, vim.split(text, '\n'))
  layout.focus('input')
  require('bb7.ui.message').send()
end

test('a send refused before the model is called keeps the typed text in the pane and the draft, the reason above it', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  vim.cmd('BB7Mode local')
  H.notes = {}
  send_from_pane('my long question\nsecond line')
  H.wait(function() return not require('bb7.state').streaming() end, 10000, 'the refusal')
  local text, shown = message_pane()
  H.eq(text, 'my long question\nsecond line', 'the text is back in the pane')
  H.truthy(shown:find('Not sent:', 1, true), 'the reason above the text: ' .. shown)
  H.eq(require('bb7.state').streaming(), false, 'no stream left answering')
  H.truthy(not require('bb7.ui.render').preview_title():find('answering', 1, true), 'no spinner in the title')
  H.wait(function()
    return (require('bb7.client').request_sync('chat_get', {}).draft or '') == 'my long question\nsecond line'
  end, 5000, 'the draft saved')
end)

test('a send refused after the model is called (HTTP 401) keeps the typed text', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  H.script({ status = 401, message = 'No auth credentials found' })
  send_from_pane('question for a refusing model')
  H.wait(function() return H.note('Failed to get a response') ~= nil end, 10000, 'the error')
  local text, shown = message_pane()
  H.eq(text, 'question for a refusing model', 'the text is back in the pane')
  H.truthy(shown:find('No auth credentials', 1, true), 'the reason above the text: ' .. shown)
end)

test('messages whole in :messages; the command line gets one line', function()
  vim.notify = H.real_notify
  vim.o.columns = 80
  local long = 'The hunk at lines 120-131 of src/very/long/path/to/a/module.rs conflicts with your edits at lines 118-125; the end of this message matters'
  require('bb7.util').say(long, vim.log.levels.WARN)
  require('bb7.util').say('a second message right after', vim.log.levels.INFO)
  local messages = vim.fn.execute('messages')
  H.truthy(messages:find('BB-7: ' .. long, 1, true), 'the whole text in :messages: ' .. messages)
  H.truthy(messages:find('a second message right after', 1, true), 'the second one too')
end)

test('context files: a file deleted on disk shows as D; the warning before a send offers to drop it or send the snapshot', function()
  local proj = H.project({ ['gone.rs'] = 'fn gone() {}\n', ['kept.rs'] = 'fn kept() {}\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add gone.rs')
  vim.cmd('BB7Add kept.rs')
  vim.cmd('BB7')
  os.remove(proj .. '/gone.rs')
  require('bb7.ui.render').refresh()
  local files = table.concat(H.pane('files'), '\n')
  H.truthy(files:find('D   gone.rs', 1, true), 'D in the Files pane: ' .. files)
  H.script({ text = 'ok' })
  send_from_pane('does it still exist?')
  local _, shown = message_pane()
  H.truthy(shown:find('Deleted on disk: gone.rs', 1, true), 'named before the send: ' .. shown)
  H.truthy(shown:find('U drop and send', 1, true), 'U drops it: ' .. shown)
  H.truthy(shown:find('send the snapshot', 1, true), 'or the snapshot is sent: ' .. shown)
  H.feed('U')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'the answer')
  H.expect_note('Dropped gone.rs (deleted on disk)')
  files = table.concat(H.pane('files'), '\n')
  H.truthy(not files:find('gone.rs', 1, true), 'dropped from the context: ' .. files)
  local body = H.requests()[#H.requests()].body
  H.truthy(not vim.json.encode(body):find('fn gone', 1, true), 'not sent')
end)

test(':BB7Add refuses a binary file or one that is not UTF-8 at once, with the reason', function()
  local proj = H.project({})
  local f = io.open(proj .. '/image.bin', 'wb')
  f:write('\137PNG\r\n\26\n\0\0\0\rIHDR' .. string.rep('\0\1\2\255', 4096))
  f:close()
  f = io.open(proj .. '/latin1.txt', 'wb')
  f:write('caf\233 cr\232me\n')
  f:close()
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add image.bin')
  H.expect_note('image.bin is a binary file (it has NUL bytes)', vim.log.levels.ERROR)
  vim.cmd('BB7Add latin1.txt')
  H.expect_note('latin1.txt cannot be added: it is not UTF-8 text', vim.log.levels.ERROR)
  local r = require('bb7.client').request_sync('get_file_statuses', {})
  H.eq(#(r.files or {}), 0, 'nothing added')
  H.eq(require('bb7.util').not_text('plain ascii, é, 日本, 🎉\n'), nil, 'UTF-8 text passes')
end)

test(':BB7Add of a file over confirm_add_kb asks first, naming its tokens; no adds nothing', function()
  local proj = H.project({})
  local f = io.open(proj .. '/big.log', 'wb')
  f:write(string.rep('a log line of forty bytes, more or less\n', 10000))
  f:close()
  require('bb7').setup({ binary = H.bin, confirm_add_kb = 100 })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local asked
  local real = vim.fn.confirm
  vim.fn.confirm = function(q) asked = q return 2 end
  vim.cmd('BB7Add big.log')
  H.truthy(asked and asked:find('big.log is 0.4 MiB: about 100k tokens, about $0.10 per send at fake/model prices', 1, true), 'asks with size, tokens and cost: ' .. tostring(asked))
  local r = require('bb7.client').request_sync('get_file_statuses', {})
  H.eq(#(r.files or {}), 0, 'no: nothing added')
  vim.fn.confirm = function() return 1 end
  vim.cmd('BB7Add big.log')
  vim.fn.confirm = real
  H.expect_note('Added big.log')
end)

-- 300 models, as OpenRouter lists them.
local function many_models()
  local models = {}
  for i = 1, 300 do
    table.insert(models, { id = 'vendor' .. (i % 30) .. '/model-' .. i, name = 'Model ' .. i, context_length = 8000, pricing = { prompt = '0.000001' } })
  end
  table.insert(models, { id = 'fake/other', name = 'Other fake', context_length = 8000, pricing = { prompt = '0' } })
  return models
end

test(':BB7Model without a picker plugin: a filter first, then the few matches; a picker plugin gets the whole list', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local models = require('bb7.models')
  H.truthy(models.builtin_select(), "Neovim's own vim.ui.select")
  local prompts, listed = {}, nil
  local real_input, real_list = vim.ui.input, vim.fn.inputlist
  vim.ui.input = function(opts, cb)
    table.insert(prompts, opts.prompt)
    cb(#prompts == 1 and 'model' or 'vendor7 model-27')
  end
  vim.fn.inputlist = function(items)
    listed = items
    return 0
  end
  models.choose_from(many_models())
  H.truthy(prompts[1]:find('Model (301; type words to filter', 1, true), 'asks for a filter: ' .. tostring(prompts[1]))
  H.expect_note('300 models match "model": add a word')
  H.eq(#prompts, 2, 'asked again, narrower')
  H.truthy(listed == nil, 'a single match is taken without a list')
  H.wait(function() return H.note('Model set to') ~= nil end, 5000, 'model set')
  H.expect_note('Model set to vendor7/model-27')
  -- Few enough matches: listed to choose from.
  H.notes, prompts = {}, {}
  vim.ui.input = function(opts, cb)
    table.insert(prompts, opts.prompt)
    cb('other')
  end
  models.choose_from(vim.list_extend(many_models(), { { id = 'x/other-two', name = 'Other two' } }))
  H.truthy(listed and #listed == 3, 'the two matches listed: ' .. vim.inspect(listed))
  vim.ui.input, vim.fn.inputlist = real_input, real_list
  -- A picker plugin: it gets every model and filters itself.
  local got
  vim.ui.select = function(items, opts, cb)
    got = items
    H.eq(opts.format_item(items[1]):match('^vendor1/model%-1 '), 'vendor1/model-1 ', 'formatted')
    cb(nil)
  end
  H.truthy(not models.builtin_select(), 'a plugin replaced vim.ui.select')
  models.choose_from(many_models())
  H.eq(#got, 301, 'the whole list for fuzzy filtering')
end)

test('ce asks before cutting, naming the later exchanges and the draft; Keep changes nothing', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  for i = 1, 3 do
    H.script({ text = 'answer ' .. i })
    require('bb7').send('question ' .. i)
    H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer ' .. i)
    H.notes = {}
  end
  local layout = require('bb7.ui.layout')
  vim.api.nvim_buf_set_lines(layout.buf('input'), 0, -1, false, { 'a draft I typed' })
  vim.api.nvim_set_current_win(layout.win('preview'))
  for i, l in ipairs(H.pane('preview')) do
    if l == 'question 1' then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  local asked
  local real = vim.fn.confirm
  vim.fn.confirm = function(q) asked = q return 2 end
  H.feed('ce')
  vim.fn.confirm = real
  H.truthy(asked and asked:find('the 2 later exchanges are cut', 1, true), 'names the exchanges: ' .. tostring(asked))
  H.truthy(asked:find('your draft is replaced', 1, true), 'names the draft: ' .. asked)
  H.eq(vim.api.nvim_buf_get_lines(layout.buf('input'), 0, -1, false), { 'a draft I typed' }, 'draft kept')
  local chat = require('bb7.client').request_sync('chat_get', {})
  H.eq(#chat.messages, 6, 'nothing cut')
end)

test('<C-c> in the Message pane in insert mode cancels the answer', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  -- Held after its first word (never let go): the cancel always finds it running.
  H.script({ text = 'a slow answer that goes on and on and on', hold_after = 1, hold_until = 'never' })
  require('bb7').send('talk slowly')
  H.wait(function() return require('bb7.state').streaming() end, 5000, 'streaming')
  local layout = require('bb7.ui.layout')
  vim.api.nvim_set_current_win(layout.win('input'))
  H.feed('ityping<C-c>')
  H.wait(function() return H.note('Cancelled') ~= nil end, 10000, 'cancelled from insert mode')
end)

test('? in a pane lists that pane\'s keys first', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  vim.api.nvim_set_current_win(layout.win('input'))
  require('bb7.ui.keymaps').help()
  local lines = vim.api.nvim_buf_get_lines(0, 0, 3, false)
  H.truthy(lines[1]:find('Message (this pane)', 1, true), 'Message keys first: ' .. vim.inspect(lines))
  H.truthy(table.concat(lines, '\n'):find('<C-s>', 1, true), 'the send key at the top: ' .. vim.inspect(lines))
end)

test('a chat held by another bb7: the refusal names :BB7Unlock, which asks and then takes it over', function()
  local proj = H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Held elsewhere')
  local held = require('bb7').active_chat()
  vim.cmd('BB7NewChat Mine')
  -- Another bb7 process opens the first chat and keeps it.
  local other = H.hold_elsewhere(proj, held).job
  require('bb7.commands').select_chat(held)
  H.expect_note('This chat is open in another bb7 process (PID', vim.log.levels.WARN)
  H.expect_note(':BB7Unlock takes it over')
  local asked
  local real = vim.fn.confirm
  vim.fn.confirm = function(q) asked = q return 2 end
  vim.cmd('BB7Unlock')
  H.truthy(asked and asked:find('Chat "Held elsewhere" is held by another bb7 process (PID', 1, true), 'asks, naming the chat and the holder: ' .. tostring(asked))
  H.eq(require('bb7.api').chat_active().read_only, true, 'Cancel: not taken, shown read-only')
  vim.fn.confirm = function() return 1 end
  vim.cmd('BB7Unlock')
  vim.fn.confirm = real
  H.expect_note('Unlocked Held elsewhere')
  H.eq(require('bb7').active_chat(), held, 'taken over')
  vim.fn.jobstop(other)
end)

test('a retried HTTP 429 shows "retrying in N s (HTTP 429)" in the title, then the answer', function()
  H.project({}, { retry_backoff_ms = 2000 })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  H.script({ status = 429, message = 'Rate limited' })
  H.script({ text = 'after the wait' })
  require('bb7').send('hello')
  local seen
  H.wait(function()
    local t = require('bb7.ui.render').preview_title()
    if t:find('retrying in', 1, true) then
      seen = t
    end
    return seen ~= nil
  end, 10000, 'the retry in the title')
  H.truthy(seen:find('retrying in [12] s %(HTTP 429%)'), 'seconds and reason: ' .. seen)
  H.wait(function() return H.note('Response received') ~= nil end, 15000, 'the answer after the retry')
  H.truthy(not require('bb7.ui.render').preview_title():find('retrying', 1, true), 'gone after the answer')
end)

test(':BB7Search opens the chat at the match, not at its end', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local lines = {}
  for i = 1, 80 do
    lines[i] = i == 5 and 'the zanzibar protocol is explained here' or ('filler line ' .. i)
  end
  H.script({ text = table.concat(lines, '\n') })
  require('bb7').send('explain')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  vim.cmd('BB7NewChat')
  local real = vim.ui.select
  vim.ui.select = function(items, _, cb) cb(items[1]) end
  vim.cmd('BB7Search zanzibar')
  vim.ui.select = real
  local layout = require('bb7.ui.layout')
  local w = layout.win('preview')
  H.eq(vim.api.nvim_get_current_win(), w, 'in the preview')
  H.eq(vim.api.nvim_get_current_line(), 'the zanzibar protocol is explained here', 'cursor on the match')
  H.truthy(vim.fn.line('w0', w) <= vim.fn.line('.') and vim.fn.line('.') <= vim.fn.line('w$', w), 'the match in view')
end)

test('the answer to a clarifying question is shown under it, while it streams and after', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Tools auto')
  vim.cmd('BB7')
  H.script({ tool_calls = { { name = 'clarify_user', args = { question = 'Which file do you mean?' } } } })
  H.script({ text = 'Then main.rs it is.' })
  local real = vim.ui.input
  vim.ui.input = function(_, cb) cb('main.rs, the entry point') end
  require('bb7').send('fix the file')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  vim.ui.input = real
  local text = table.concat(H.pane('preview'), '\n')
  H.truthy(text:find('Asked: Which file do you mean?', 1, true), 'the question: ' .. text)
  H.truthy(text:find('→ main.rs, the entry point', 1, true), 'the answer under it: ' .. text)
  -- The chat keeps the answer: drawn again without this session's memory of it.
  local st = require('bb7.state')
  local remembered = st.answer
  st.answer = function() return nil end
  require('bb7.ui.render').refresh()
  text = table.concat(H.pane('preview'), '\n')
  st.answer = remembered
  H.truthy(text:find('→ main.rs, the entry point', 1, true), 'the stored answer: ' .. text)
end)

test('the active chat stays in view in the Chats pane after a resize', function()
  H.project({})
  vim.cmd('BB7Init')
  for i = 1, 30 do
    vim.cmd('BB7NewChat chat ' .. i)
  end
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  -- The oldest chat, at the end of the list.
  local first
  for _, c in ipairs(require('bb7.client').request_sync('chat_list', {}).chats) do
    if c.name == 'chat 1' then
      first = c.id
    end
  end
  require('bb7.commands').select_chat(first)
  vim.o.lines = 16
  vim.api.nvim_exec_autocmds('VimResized', {})
  layout.focus('input')
  local w = layout.win('chats')
  local row
  for i, l in ipairs(H.pane('chats')) do
    if l:find('▸ chat 1', 1, true) then
      row = i
    end
  end
  H.truthy(row, 'the active chat is marked: ' .. vim.inspect(H.pane('chats')))
  H.truthy(vim.fn.line('w0', w) <= row and row <= vim.fn.line('w$', w), string.format('row %d in view (%d-%d)', row, vim.fn.line('w0', w), vim.fn.line('w$', w)))
end)

test('80 columns: the title drops the cached share and provider before it cuts the cost', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat A chat with a long enough name')
  vim.o.columns = 80
  vim.cmd('BB7')
  H.script({ text = 'ok', usage = { prompt_tokens = 10000, completion_tokens = 234, total_tokens = 10234, cached_tokens = 5000, cost = 0.0125 } })
  require('bb7').send('hello')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local width = vim.api.nvim_win_get_width(require('bb7.ui.layout').win('preview'))
  local title = require('bb7.ui.render').preview_title(width)
  H.truthy(title:find('$0.0015', 1, true) and not vim.endswith(title, '…'), 'the cost whole: ' .. title)
  H.eq(vim.wo[require('bb7.ui.layout').win('preview')].winbar:find('$0.0015', 1, true) ~= nil, true, 'the winbar shows it')
  H.truthy(vim.fn.strdisplaywidth(title) <= width, 'fits ' .. width .. ': ' .. title)
end)
