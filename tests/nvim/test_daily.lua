-- Daily use: drafts stay with their chat, stale context is named before a send, pane
-- keys leave Vim's motions alone, a stream belongs to its chat, the preview shows the
-- latest exchange, and everything fits 80 columns.
local test, H = ...
local L = vim.log.levels

local function layout()
  return require('bb7.ui.layout')
end

local function input_text()
  return table.concat(H.pane('input'), '\n')
end

local function type_in_input(text)
  layout().focus('input')
  vim.api.nvim_buf_set_lines(layout().buf('input'), 0, -1, false, vim.split(text, '\n'))
end

-- Selects a chat by name through the Chats pane, as a user does (<CR> on its row).
local function open_chat(name)
  layout().focus('chats')
  for i, l in ipairs(H.pane('chats')) do
    if l:find(name, 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      H.feed('<CR>')
      return
    end
  end
  H.fail('no chat ' .. name .. ' in ' .. vim.inspect(H.pane('chats')))
end

local function winbar(name)
  local w = layout().win(name)
  return vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
end

test('drafts: each chat keeps its own, switching never carries text across, gi appends', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Alpha')
  vim.cmd('BB7NewChat Beta')
  vim.cmd('BB7')
  type_in_input('Another question')
  open_chat('Alpha')
  H.eq(input_text(), '', 'Alpha has no draft: the pane is empty')
  type_in_input('Make Chain::len simpler')
  open_chat('Beta')
  H.eq(input_text(), 'Another question', "Beta's draft is back")
  open_chat('Alpha')
  H.eq(input_text(), 'Make Chain::len simpler', "Alpha's draft is back")
  -- The binary holds both drafts, unmixed.
  local drafts = {}
  for _, c in ipairs(require('bb7.client').request_sync('chat_list', {}).chats) do
    require('bb7.client').request_sync('chat_select', { id = c.id })
    drafts[c.name] = require('bb7.client').request_sync('chat_get', {}).draft
  end
  H.eq(drafts, { Alpha = 'Make Chain::len simpler', Beta = 'Another question' }, 'drafts on disk')
  require('bb7.commands').select_chat(require('bb7.client').request_sync('chat_list', {}).chats[1].id)
  -- gi puts the cursor after the draft's last character.
  type_in_input('first line\nsecond')
  layout().focus('chats')
  H.feed('gi!<Esc>')
  H.eq(H.pane('input')[2], 'second!', 'typed at the end of the draft')
  -- A new chat starts with an empty Message pane.
  vim.cmd('BB7NewChat Gamma')
  H.eq(input_text(), '', 'new chat: empty pane')
end)

test('drafts: text typed while no chat is active becomes the next chat\'s draft', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7')
  type_in_input('first thoughts')
  layout().focus('chats')
  H.feed('a')
  H.eq(input_text(), 'first thoughts', 'kept')
  H.eq(require('bb7.client').request_sync('chat_get', {}).draft, 'first thoughts', 'saved as the new chat\'s draft')
end)

test('stale context: the Message pane names the files, U updates and sends, <C-s> again sends as is', function()
  local proj = H.project({ ['src/chain.rs'] = 'fn len() {}\n', ['other.rs'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add src/chain.rs')
  vim.cmd('BB7Add other.rs')
  vim.cmd('BB7')
  vim.fn.writefile({ 'fn len() { 0 }' }, proj .. '/src/chain.rs')
  H.script({ text = 'Sure.' })
  type_in_input('simplify len')
  H.feed('<C-s>')
  local message = require('bb7.ui.message')
  H.eq(vim.tbl_map(function(f) return f.path end, message.warning() or {}), { 'src/chain.rs' }, 'warning names the changed file')
  local marks = vim.api.nvim_buf_get_extmarks(layout().buf('input'), -1, 0, -1, { details = true })
  local shown = {}
  for _, m in ipairs(marks) do
    for _, l in ipairs(m[4].virt_lines or {}) do
      table.insert(shown, l[1][1])
    end
  end
  H.truthy(shown[1] and shown[1]:find('Changed since added: src/chain.rs', 1, true), 'warning in the pane: ' .. vim.inspect(shown))
  H.truthy(shown[2] and shown[2]:find('U update and send', 1, true), 'the keys: ' .. vim.inspect(shown))
  H.eq(#H.requests(), 0, 'nothing sent yet')
  H.eq(input_text(), 'simplify len', 'the text stays')
  H.feed('U')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local user = H.requests()[1].body.messages[2].content
  H.truthy(user:find('fn len() { 0 }', 1, true), 'the new content was sent')
  H.eq(input_text(), '', 'sent: the pane is empty')
  H.eq(message.warning(), nil, 'warning gone')

  -- A second <C-s> sends the old snapshot.
  vim.fn.writefile({ 'fn len() { 1 }' }, proj .. '/src/chain.rs')
  H.notes = {}
  H.script({ text = 'Again.' })
  type_in_input('once more')
  H.feed('<C-s>')
  H.truthy(message.warning(), 'warned again')
  H.feed('<C-s>')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local second = H.requests()[2].body.messages
  H.truthy(not second[#second].content:find('{ 1 }', 1, true), 'old snapshot sent as asked')

  -- send_stale = 'refresh' updates without asking.
  require('bb7').setup({ binary = H.bin, send_stale = 'refresh' })
  H.notes = {}
  H.script({ text = 'Third.' })
  type_in_input('third')
  H.feed('<C-s>')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  H.expect_note('Updated src/chain.rs before sending', L.INFO)
  local third = H.requests()[3].body.messages
  H.truthy(third[#third].content:find('{ 1 }', 1, true), 'refreshed content sent')
end)

test('pane keys: no mapping shadows a motion or scroll key; fork and edit are listed in ?', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local vim_keys = { '<C-E>', '<C-Y>', '<C-F>', '<C-B>', '<C-D>', '<C-U>', 'gg', 'G', 'j', 'k', 'h', 'l', 'w', 'b', 'e', 'n', 'N', 'H', 'M', 'L', '{', '}', '0', '$', 'zz', 'zt', 'zb', '%' }
  for _, name in ipairs(layout().order) do
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(layout().buf(name), 'n')) do
      H.truthy(not vim.tbl_contains(vim_keys, m.lhs), name .. ' pane maps ' .. m.lhs)
    end
  end
  -- <C-e> scrolls the preview instead of cutting the chat.
  local client = require('bb7.client')
  H.script({ text = table.concat(vim.fn.map(vim.fn.range(1, 60), '"line " . v:val'), '\n') })
  require('bb7').send('a long answer please')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  layout().focus('preview')
  vim.cmd('normal! gg')
  H.feed('<C-e><C-e>')
  H.eq(vim.fn.line('w0'), 3, '<C-e> scrolled two lines')
  H.feed('<C-f>')
  H.truthy(vim.fn.line('w0') > 3, '<C-f> scrolled a page')
  H.eq(#client.request_sync('chat_list', {}).chats, 1, 'no fork was made')
  H.eq(#client.request_sync('chat_get', {}).messages, 2, 'the chat was not cut')
  -- In the answer `?` is Vim's backward search; g? shows the keys there.
  H.feed('g?')
  local help = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.truthy(help:find('cf ', 1, true) and help:find('fork', 1, true), 'fork listed: ' .. help)
  H.truthy(help:find('ce ', 1, true) and help:find('edit this message', 1, true), 'edit listed')
  H.truthy(help:find("take the model's version", 1, true), 'take listed')
end)

test('a stream belongs to its chat: switching away keeps it in the background, back shows it live', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Quiet')
  vim.cmd('BB7NewChat Busy')
  vim.cmd('BB7')
  -- Held after its first word until Busy was seen streaming from Quiet.
  H.script({ text = 'one two three four five six seven eight', hold_after = 1, hold_until = 'go', usage = { prompt_tokens = 10, completion_tokens = 5, total_tokens = 15, cost = 0.5 } })
  require('bb7').send('talk slowly')
  H.wait(function() return vim.tbl_contains(H.pane('preview'), 'one') or table.concat(H.pane('preview'), '\n'):find('one', 1, true) ~= nil end, 5000, 'first words')
  open_chat('Quiet')
  local preview = table.concat(H.pane('preview'), '\n')
  H.truthy(not preview:find('one', 1, true) and not preview:find('talk slowly', 1, true), "Quiet does not show Busy's stream: " .. preview)
  H.truthy(not winbar('preview'):find('answering', 1, true), 'no spinner in the title of Quiet: ' .. winbar('preview'))
  H.truthy(not winbar('preview'):find('tok', 1, true), 'no tokens of another chat')
  local spinning
  for _, l in ipairs(H.pane('chats')) do
    if l:find('Busy', 1, true) and not l:find('▸', 1, true) and l:sub(1, 2) ~= '  ' then
      spinning = l
    end
  end
  H.truthy(spinning, 'Busy spins in the Chats pane: ' .. vim.inspect(H.pane('chats')))
  -- Text typed meanwhile stays with Quiet.
  open_chat('Busy')
  H.truthy(table.concat(H.pane('preview'), '\n'):find('talk slowly', 1, true), 'Busy shows its question')
  H.release('go')
  H.wait(function() return table.concat(H.pane('preview'), '\n'):find('eight', 1, true) ~= nil end, 10000, 'the stream goes on live')
  H.wait(function() return not require('bb7.state').streaming() end, 5000, 'end')
  -- At the end: the chat is drawn again and its latest exchange is in view (waited for:
  -- the redraw may come after the end on a loaded machine).
  local w = layout().win('preview')
  H.wait(function()
    return vim.fn.line('w$', w) >= vim.api.nvim_buf_line_count(layout().buf('preview')) - 1
      and winbar('preview'):find(' tok, 3% cached, $0.0015', 1, true) ~= nil
  end, 10000, 'the end in view with the tokens')
  local last = vim.api.nvim_buf_line_count(layout().buf('preview'))
  H.truthy(vim.fn.line('w$', w) >= last - 1, 'the end is in view (w$ ' .. vim.fn.line('w$', w) .. ' of ' .. last .. ')')
  H.truthy(winbar('preview'):find(' tok, 3% cached, $0.0015', 1, true), 'tokens of this chat: ' .. winbar('preview'))
  open_chat('Quiet')
  H.truthy(not winbar('preview'):find('tok', 1, true), "Quiet's title has no tokens: " .. winbar('preview'))
end)

test('the preview opens at the latest exchange', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  for i = 1, 3 do
    H.script({ text = table.concat(vim.fn.map(vim.fn.range(1, 15), '"answer ' .. i .. ' line " . v:val'), '\n') })
    require('bb7').send('question ' .. i)
    H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer ' .. i)
    H.notes = {}
  end
  vim.cmd('BB7')
  local w = layout().win('preview')
  local lines = H.pane('preview')
  local shown = table.concat(vim.list_slice(lines, vim.fn.line('w0', w), vim.fn.line('w$', w)), '\n')
  H.truthy(shown:find('question 3', 1, true), 'the last question is in view: ' .. shown)
  H.truthy(not shown:find('question 1', 1, true), 'not the oldest')
end)

test('80 columns: help in one column, titles and rows cut with …, messages fit', function()
  H.project({ ['a/very/long/directory/name/that/goes/on/and/on/file_name.rs'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat A chat with a very long name that does not fit the preview title at all at eighty columns')
  vim.cmd('BB7Add a/very/long/directory/name/that/goes/on/and/on/file_name.rs')
  vim.o.columns = 80
  vim.cmd('BB7')
  local title = winbar('preview')
  H.truthy(title:sub(1, 7) == ' A chat', 'title cut at the right: ' .. title)
  H.truthy(vim.endswith(title, '…'), 'with an ellipsis: ' .. title)
  local row = H.pane('files')[1]
  H.truthy(row:find('…', 1, true) and vim.endswith(row, 'file_name.rs'), 'file row keeps the name: ' .. row)
  H.truthy(vim.fn.strdisplaywidth(row) < vim.api.nvim_win_get_width(layout().win('files')), 'row fits')
  H.feed('?')
  local help = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local width = vim.api.nvim_win_get_width(0)
  for _, l in ipairs(help) do
    H.truthy(vim.fn.strdisplaywidth(l) <= width, 'help line fits: ' .. l)
  end
  H.truthy(width <= 76, 'help fits the screen')
  H.feed('q')
  local util = require('bb7.util')
  local long = string.rep('word ', 40)
  H.truthy(vim.fn.strdisplaywidth(util.fit(long)) < 80, 'fit() cuts a long message')
  H.eq(util.fit('two\nlines'), 'two lines', 'one line')
  H.eq(util.truncate('abcdef', 4), 'abc…', 'truncate')
  H.eq(util.truncate_left('abcdef', 4), '…def', 'truncate_left')
end)

test('float layout covers the whole editor', function()
  require('bb7').setup({ binary = H.bin, layout = 'float' })
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local back = layout().backdrop()
  H.truthy(back, 'a backdrop')
  local cfg = vim.api.nvim_win_get_config(back)
  H.eq({ cfg.row, cfg.col, cfg.width, cfg.height }, { 0, 0, vim.o.columns, vim.o.lines - vim.o.cmdheight }, 'over every cell')
  H.truthy(cfg.zindex < vim.api.nvim_win_get_config(layout().win('preview')).zindex, 'under the panes')
  H.feed('q')
  H.truthy(not vim.api.nvim_win_is_valid(back), 'closed with the panes')
  -- :q in one pane closes them all, the backdrop too.
  vim.cmd('BB7')
  back = layout().backdrop()
  layout().focus('files')
  vim.cmd('quit')
  H.wait(function() return not vim.api.nvim_win_is_valid(back) end, 2000, 'backdrop closed')
  H.truthy(not layout().visible(), 'every pane closed')
end)

test(':BB7Add from a pane: the file under the cursor in Files, else the last file buffer, never bb7://', function()
  local proj = H.project({ ['a.txt'] = 'a\n', ['b.txt'] = 'b\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('edit b.txt')
  vim.cmd('edit a.txt')
  vim.cmd('BB7')
  for _, pane in ipairs({ 'preview', 'input', 'chats' }) do
    layout().focus(pane)
    vim.cmd('BB7Add')
  end
  H.expect_note('BB-7: Added a.txt', L.INFO)
  local client = require('bb7.client')
  local paths = vim.tbl_map(function(f) return f.path end, client.request_sync('context_list', {}).files)
  H.eq(paths, { 'a.txt' }, 'the last file buffer, once: ' .. vim.inspect(paths))
  -- In the Files pane: the row under the cursor is updated from disk.
  vim.fn.writefile({ 'A' }, proj .. '/a.txt')
  layout().focus('files')
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  H.notes = {}
  vim.cmd('BB7Add')
  H.expect_note('BB-7: Updated a.txt', L.INFO)
  H.eq(client.request_sync('get_context_file', { path = 'a.txt' }).content, 'A\n', 'new snapshot')
  H.eq(#H.notes, 1, 'one message: ' .. vim.inspect(H.notes))
  layout().focus('preview')
  vim.cmd('1,1BB7Add')
  H.expect_note('a line range needs the file in the current window', L.ERROR)
end)

test('one message per outcome: a refused apply is not followed by "No output to apply"', function()
  local proj = H.chat_with_output({ ['f.txt'] = 'one\ntwo\n' }, 'f.txt', { ['f.txt'] = 'ONE\ntwo\n' })
  vim.fn.writefile({ 'mine', 'two' }, proj .. '/f.txt')
  H.notes = {}
  vim.cmd('BB7Apply')
  H.eq(#H.notes, 1, 'one message: ' .. vim.inspect(H.notes))
  H.expect_note('f.txt conflicts with your edits', L.WARN)
end)

test(':BB7Checkpoints lists local times with the files and says what a rollback does', function()
  local proj = H.chat_with_output({ ['f.txt'] = 'one\n' }, 'f.txt', { ['f.txt'] = 'ONE\n' })
  vim.cmd('BB7Apply')
  local cps = require('bb7.checkpoints')
  local seen = {}
  local real = vim.ui.select
  vim.ui.select = function(items, opts, cb)
    table.insert(seen, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) })
    cb(nil)
  end
  vim.cmd('BB7Checkpoints')
  vim.ui.select = real
  local created = require('bb7.client').request_sync('checkpoint_list', {}).checkpoints[1].created_at
  local want = os.date('%Y-%m-%d %H:%M', vim.fn.localtime()):sub(1, 13)
  H.truthy(seen[1].items[1]:find('f.txt', 1, true), 'files listed: ' .. seen[1].items[1])
  H.truthy(vim.startswith(seen[1].items[1], want), 'local time ' .. want .. ' (UTC ' .. created .. '): ' .. seen[1].items[1])
  vim.env.TZ = 'UTC'
  H.eq(cps.local_time('2026-11-24T13:03:11Z'), '2026-11-24 13:03:11', 'UTC stays')
  H.truthy(cps.consequence({ created_at = created, files = { { path = 'f.txt' } } }):find('restores f.txt', 1, true), 'what a rollback does')
end)
