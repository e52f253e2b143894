-- Messages sent while the answer streams (lua/bb7/queue.lua): queued, listed above the
-- Message pane with "queued (N)" in its title, sent in order as each answer ends; the
-- queue waits after a cancelled answer or one with changes to review, until the user
-- sends; the last one can be taken back to edit, and :BB7Unqueue drops them. The fake
-- model sends the first answers a word every few seconds: room to type in while it
-- streams, never an assertion about time.
local test, H = ...

local function preview()
  return table.concat(H.pane('preview'), '\n')
end

local function winbar(name)
  local w = require('bb7.ui.layout').win(name)
  return vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
end

-- The lines listed above the Message pane (the queue's virtual lines), as text.
local function listed()
  local b = require('bb7.ui.layout').buf('input')
  local ns = vim.api.nvim_get_namespaces()['bb7_queue']
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })) do
    for _, line in ipairs(m[4].virt_lines or {}) do
      table.insert(out, table.concat(vim.tbl_map(function(chunk) return chunk[1] end, line), ''))
    end
  end
  return table.concat(out, '\n')
end

-- Types `text` into the Message pane and presses the send key there.
local function send(text)
  local layout = require('bb7.ui.layout')
  layout.focus('input')
  vim.api.nvim_buf_set_lines(layout.buf('input'), 0, -1, false, vim.split(text, '\n', { plain = true }))
  H.feed('<C-s>')
end

-- The last user message of each streaming request the fake model received.
local function questions()
  local out = {}
  for _, r in ipairs(H.requests()) do
    if r.path:find('chat/completions', 1, true) and r.body.stream ~= false then
      for i = #r.body.messages, 1, -1 do
        local m = r.body.messages[i]
        if m.role == 'user' then
          table.insert(out, type(m.content) == 'string' and m.content or vim.json.encode(m.content))
          break
        end
      end
    end
  end
  return out
end

local function asked(list, want)
  H.eq(#list, #want, 'requests: ' .. vim.inspect(list))
  for i, w in ipairs(want) do
    H.truthy(list[i]:find(w, 1, true), 'request ' .. i .. ' asks ' .. w .. ': ' .. list[i])
  end
end

local function open_chat()
  H.project({ ['a.txt'] = 'alpha\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
end

test('queue: a message sent while the answer streams waits, listed, and is sent when it ends', function()
  open_chat()
  local queue = require('bb7.queue')
  H.script({ text = 'First answer goes slowly on', chunk_delay_ms = 3000 })
  H.script({ text = 'Second answer.' })
  H.script({ text = 'Third answer.' })
  send('first question')
  H.wait(function() return preview():find('First', 1, true) ~= nil end, 20000, 'the first answer streams')

  send('second question')
  H.eq(H.pane('input'), { '' }, 'the Message pane clears')
  H.eq(queue.items(), { 'second question' }, 'queued')
  H.expect_note('Queued (1)')
  H.truthy(winbar('input'):find('queued (1)', 1, true), 'Message title: ' .. winbar('input'))
  H.truthy(require('bb7').status():find('queued (1)', 1, true), 'statusline: ' .. require('bb7').status())
  H.truthy(listed():find('1. second question', 1, true), 'listed above the pane: ' .. listed())

  send('third question\nwith a second line')
  H.eq(queue.items(), { 'second question', 'third question\nwith a second line' }, 'two queued')
  H.truthy(listed():find('2. third question …', 1, true), 'the first line listed: ' .. listed())
  H.truthy(winbar('input'):find('queued (2)', 1, true), 'Message title: ' .. winbar('input'))

  -- Taken back to edit: into the pane, out of the queue; sent again, queued again.
  vim.api.nvim_buf_set_lines(require('bb7.ui.layout').buf('input'), 0, -1, false, { 'half typed' })
  H.feed('gQ')
  H.eq(H.pane('input'), { 'third question', 'with a second line', 'half typed' }, 'taken back above the text typed')
  H.eq(queue.items(), { 'second question' }, 'out of the queue')
  send('third question')
  H.eq(queue.items(), { 'second question', 'third question' }, 'queued again, edited')
  H.truthy(require('bb7.state').chat_streaming(require('bb7').active_chat()), 'the first answer still streams')
  asked(questions(), { 'first question' })

  H.wait(function() return preview():find('Third answer.', 1, true) ~= nil end, 60000, 'both queued messages answered')
  H.wait(function() return not require('bb7.state').streaming() end, 10000, 'the last answer ended')
  H.eq(queue.items(), {}, 'the queue is empty')
  H.eq(listed(), '', 'nothing listed')
  H.truthy(not winbar('input'):find('queued', 1, true), 'Message title: ' .. winbar('input'))
  asked(questions(), { 'first question', 'second question', 'third question' })
  local p = preview()
  H.truthy(p:find('goes slowly on', 1, true) < p:find('second question', 1, true), 'in order: ' .. p)
  H.truthy(p:find('Second answer.', 1, true) < p:find('third question', 1, true), 'in order: ' .. p)
end)

test('queue: waits after a cancel and after changes to review, until the user sends', function()
  local proj = H.project({ ['a.txt'] = 'alpha\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local queue = require('bb7.queue')
  local state = require('bb7.state')
  H.script({ text = 'Slow one two three four', chunk_delay_ms = 3000 })
  send('first')
  H.wait(function() return preview():find('Slow', 1, true) ~= nil end, 20000, 'the first answer streams')
  send('after cancel')
  vim.cmd('BB7Cancel')
  H.wait(function() return queue.note() ~= nil end, 20000, 'the queue waits')
  H.eq(queue.note(), 'the answer was cancelled', 'why it waits')
  H.expect_note('1 queued message wait: the answer was cancelled', vim.log.levels.WARN)
  H.eq(queue.items(), { 'after cancel' }, 'still queued')
  H.truthy(listed():find('Queued (1) waits: the answer was cancelled', 1, true), 'the note above the pane: ' .. listed())
  H.truthy(winbar('input'):find('queued (1), waiting', 1, true), 'Message title: ' .. winbar('input'))
  H.truthy(not state.streaming(), 'nothing was sent')
  asked(questions(), { 'first' })

  -- The send key on an empty pane sends the next queued message; this answer writes a
  -- file, so what is queued meanwhile waits for the review.
  H.script({ text = 'Writing it now', chunk_delay_ms = 3000, tool_calls = { { name = 'write_file', args = { path = 'new.txt', content = 'new\n' } } } })
  send('')
  H.wait(function() return preview():find('Writing', 1, true) ~= nil end, 20000, 'the queued message is answered')
  H.eq(queue.items(), {}, 'sent')
  send('after review')
  send('to drop')
  send('also queued')
  vim.cmd('BB7Unqueue 2')
  H.eq(queue.items(), { 'after review', 'also queued' }, ':BB7Unqueue 2 dropped the second')
  H.expect_note('Dropped 1 queued message')
  H.wait(function() return H.note('Response received: 1 file changed') ~= nil end, 60000, 'the answer with a change')
  H.eq(queue.note(), 'changes wait for review', 'why it waits')
  H.truthy(listed():find('changes wait for review', 1, true), 'the note above the pane: ' .. listed())
  H.truthy(not state.streaming(), 'nothing was sent')
  H.eq(vim.fn.filereadable(proj .. '/new.txt'), 0, 'the change waits for review')
  vim.cmd('BB7Unqueue 3')
  H.expect_note('No queued message 3 (1 to 2)', vim.log.levels.ERROR)

  -- A message of the user's own goes at once; the queue goes on after its answer.
  H.script({ text = 'Own answer.' })
  H.script({ text = 'Review answer.' })
  H.script({ text = 'Also answer.' })
  send('my own')
  H.eq(queue.note(), nil, 'the queue no longer waits')
  H.wait(function() return preview():find('Also answer.', 1, true) ~= nil end, 60000, 'the queue went on')
  H.wait(function() return not state.streaming() end, 10000, 'the last answer ended')
  asked(questions(), { 'first', 'after cancel', 'my own', 'after review', 'also queued' })
  vim.cmd('BB7Unqueue')
  H.expect_note('Nothing queued', vim.log.levels.WARN)
end)

test('queue: :BB7Unqueue drops every queued message before it is sent', function()
  open_chat()
  local queue = require('bb7.queue')
  H.script({ text = 'Only answer goes on', chunk_delay_ms = 3000 })
  send('only question')
  H.wait(function() return preview():find('Only', 1, true) ~= nil end, 20000, 'the answer streams')
  send('one')
  send('two')
  H.eq(#queue.items(), 2, 'two queued')
  vim.cmd('BB7Unqueue')
  H.expect_note('Dropped 2 queued messages')
  H.eq(queue.items(), {}, 'none left')
  H.eq(listed(), '', 'nothing listed')
  H.wait(function() return H.note('Response received') ~= nil end, 60000, 'the answer ends')
  H.truthy(not require('bb7.state').streaming(), 'nothing more was sent')
  asked(questions(), { 'only question' })
  -- The take-back key with nothing queued says so.
  require('bb7.ui.layout').focus('input')
  H.feed('gQ')
  H.expect_note('Nothing queued', vim.log.levels.WARN)
end)

test('queue: a queued message goes to its own chat when another chat is shown', function()
  open_chat()
  local queue = require('bb7.queue')
  local first = require('bb7').active_chat()
  H.script({ text = 'Chat one answer goes on', chunk_delay_ms = 3000 })
  H.script({ text = 'Queued answer.' })
  send('question one')
  H.wait(function() return preview():find('Chat one', 1, true) ~= nil end, 20000, 'the answer streams')
  send('queued for chat one')
  H.eq(queue.items(first), { 'queued for chat one' }, 'queued')
  vim.cmd('BB7NewChat Other')
  local other = require('bb7').active_chat()
  H.truthy(other ~= first, 'another chat is shown')
  H.eq(queue.items(), {}, 'the chat shown has no queue')
  H.eq(listed(), '', 'nothing listed for it')
  H.wait(function() return #questions() == 2 end, 60000, 'the queued message was sent')
  H.wait(function() return not require('bb7.state').streaming() end, 20000, 'its answer ended')
  asked(questions(), { 'question one', 'queued for chat one' })
  H.eq(require('bb7').active_chat(), other, 'the chat shown stays')
  H.eq(queue.items(first), {}, 'the queue is empty')
  -- Asked in the first chat: its history went with it.
  local reqs = vim.tbl_filter(function(r) return r.path:find('chat/completions', 1, true) and r.body.stream ~= false end, H.requests())
  local history = vim.json.encode(reqs[2].body.messages)
  H.truthy(history:find('question one', 1, true) and history:find('goes on', 1, true), 'the first chat history: ' .. history)
end)
