-- Words and small things of a day in Neovim: messages speak the plugin's commands, an
-- apply says everything in one message, `?` searches in the answer, chats are archived
-- from the Chats pane, wrapped reasoning keeps its rule, and the wait for the first
-- token is counted in the title.
local test, H = ...

local BASE = 'one\ntwo\nthree\n'

local function layout()
  return require('bb7.ui.layout')
end

local function last_note()
  return H.notes[#H.notes]
end

--- The last of `lines` that contains `needle` (plain text): its index and text.
local function line_with(lines, needle)
  local at, found
  for i, l in ipairs(lines) do
    if l:find(needle, 1, true) then
      at, found = i, l
    end
  end
  return at, found
end

--- Picks model `id` in :BB7Model's list; the notification that says it was set.
local function choose_model(id)
  vim.ui.select = function(items, _, cb)
    for _, m in ipairs(items) do
      if m.id == id then
        return cb(m)
      end
    end
  end
  vim.cmd('BB7Model')
  H.wait(function() return H.note('Model set to ' .. id) ~= nil end, 10000, 'the model is set: ' .. id)
  return H.note('Model set to ' .. id)
end

test('apply and rollback speak the plugin, and one message keeps the conflict', function()
  local proj = H.project({ ['f.txt'] = BASE, ['g.txt'] = BASE })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add f.txt')
  vim.cmd('BB7Add g.txt')
  H.output(proj, 'f.txt', 'ONE\ntwo\nthree\n')
  H.output(proj, 'g.txt', 'one\ntwo\nTHREE\n')
  -- The user changed the line the model changed in f.txt.
  vim.fn.writefile({ 'mine', 'two', 'three' }, proj .. '/f.txt')
  H.notes = {}
  vim.cmd('BB7Apply')
  H.eq(#H.notes, 1, 'one message: ' .. vim.inspect(H.notes))
  local msg = H.notes[1].msg
  H.truthy(msg:find('Applied 1 file', 1, true), 'the apply: ' .. msg)
  H.truthy(msg:find('f.txt conflicts with your edits', 1, true), 'the conflict beside it: ' .. msg)
  H.truthy(msg:find(':BB7Apply!', 1, true) and msg:find(':BB7Review', 1, true), 'the plugin\'s commands: ' .. msg)
  H.truthy(not msg:find('--force', 1, true) and not msg:find('force: true', 1, true), 'no command-line words: ' .. msg)
  H.eq(H.notes[1].level, vim.log.levels.WARN, 'a warning')
  H.eq(H.read(proj .. '/g.txt'), 'one\ntwo\nTHREE\n', 'g.txt applied')

  -- Rolling back over an edit made since: refused in the plugin's words.
  vim.fn.writefile({ 'one', 'two', 'THREE', 'more of mine' }, proj .. '/g.txt')
  vim.ui.select = function(items, _, cb) cb(items[1]) end
  H.notes = {}
  vim.cmd('BB7Checkpoints')
  local n = last_note()
  H.truthy(n and n.msg:find('not rolled back: g.txt', 1, true), 'refused: ' .. vim.inspect(H.notes))
  H.truthy(n.msg:find(':BB7Checkpoints', 1, true), 'says how here: ' .. n.msg)
  H.truthy(not n.msg:find('scoped', 1, true) and not n.msg:find('with force', 1, true), 'no protocol words: ' .. n.msg)
  -- The held-chat advice of the binary names :BB7Unlock.
  local held = require('bb7.words').plugin('Chat is locked by another bb7 process (PID 7); chat_force_unlock takes it over (that process …)')
  H.truthy(held:find(':BB7Unlock takes it over', 1, true), held)
end)

test('? searches backward in the answer, g? shows the keys', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  H.script({ text = 'needle at the top\n\nsome words\n\nand more words' })
  require('bb7').send('answer me')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  vim.cmd('BB7')
  layout().focus('preview')
  vim.cmd('normal! G')
  local before = vim.api.nvim_win_get_cursor(0)[1]
  H.feed('?needle<CR>')
  H.eq(layout().pane_of(), 'preview', 'still in the preview: no float')
  local line = vim.api.nvim_get_current_line()
  H.truthy(vim.api.nvim_win_get_cursor(0)[1] < before and line:find('needle', 1, true), 'searched backward: ' .. line)
  H.feed('g?')
  local help = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.eq(vim.api.nvim_win_get_config(0).relative, 'editor', 'g? opens the keys float')
  H.truthy(help:find('g?', 1, true) and help:find('archive the chat', 1, true), 'keys listed: ' .. help)
  H.feed('q')
  layout().focus('chats')
  H.feed('?')
  H.eq(vim.api.nvim_win_get_config(0).relative, 'editor', '? in Chats still shows the keys')
end)

test('X in the Chats pane archives a chat; :BB7Archive! brings it back', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Old notes')
  vim.cmd('BB7NewChat Current work')
  vim.cmd('BB7')
  layout().focus('chats')
  local rows = H.pane('chats')
  local at = line_with(rows, 'Old notes')
  H.truthy(at, 'listed: ' .. vim.inspect(rows))
  vim.api.nvim_win_set_cursor(0, { at, 0 })
  H.feed('X')
  H.expect_note('BB-7: Archived "Old notes" (:BB7Archive! brings it back)')
  local function listed()
    return table.concat(H.pane('chats'), '\n'):find('Old notes', 1, true) ~= nil
  end
  H.truthy(not listed(), 'gone from the pane')
  vim.ui.select = function(items, _, cb) cb(items[1]) end
  vim.cmd('BB7Archive!')
  H.expect_note('BB-7: Brought back "Old notes"')
  H.truthy(listed(), 'back in the pane')
  -- Without the pane: the active chat.
  vim.cmd('wincmd p')
  layout().focus('preview')
  vim.cmd('BB7Archive')
  H.expect_note('BB-7: Archived "Current work"')
end)

test('a wrapped reasoning line keeps its rule on every screen line', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local long = string.rep('alpha beta gamma ', 12)
  H.script({ thinking = long, text = 'Done.' })
  vim.cmd('BB7')
  require('bb7').send('think hard')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local w = layout().win('preview')
  vim.api.nvim_set_current_win(w)
  vim.cmd('normal! zR')
  local row
  for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    if l:find('alpha beta', 1, true) then
      row = i
    end
  end
  H.truthy(row, 'the reasoning is drawn')
  vim.api.nvim_win_set_cursor(w, { row, 0 })
  vim.cmd('normal! zt')
  vim.cmd('redraw')
  local pos = vim.fn.screenpos(w, row, 1)
  H.truthy(pos.row > 0, 'on screen')
  H.eq(vim.fn.screenstring(pos.row, pos.col), '│', 'the first screen line has the rule')
  H.eq(vim.fn.screenstring(pos.row + 1, pos.col), '│', 'the wrapped one has it too')
  H.eq(vim.fn.screenstring(pos.row + 1, pos.col + 2), 'a', 'and the text goes on after it')
end)

test('the title counts the seconds until the first token', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  -- The first token comes once the count was seen going on (held before the text),
  -- the second once "answering" was seen.
  H.script({ text = 'late words', holds = { { after = 0, ['until'] = 'go' }, { after = 1, ['until'] = 'go2' } } })
  vim.cmd('BB7')
  require('bb7').send('take your time')
  local title = function() return require('bb7.ui.render').preview_title() end
  H.wait(function() return title():find('waiting %d+ s') ~= nil end, 5000, 'waiting: ' .. title())
  H.wait(function() return title():find('waiting [1-9]%d* s') ~= nil end, 10000, 'the count goes on')
  H.truthy(require('bb7').status():match('^bb7 %S+ %d+s'), 'the statusline counts too: ' .. require('bb7').status())
  H.release('go')
  H.wait(function() return title():find('answering', 1, true) ~= nil end, 15000, 'answering once words come')
  H.release('go2')
  H.wait(function() return H.note('Response received') ~= nil end, 15000, 'answer')
end)

test('the preview names attachments in words and lists tool steps under the answer', function()
  H.project({ ['README.md'] = 'Project readme\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Tools auto')
  vim.cmd('BB7Add cmd echo hi')
  H.script({ tool_calls = { { name = 'read_file', args = { path = 'README.md' } } } })
  H.script({ text = 'The readme says hello.' })
  vim.cmd('BB7')
  require('bb7').send('what does it say?')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local lines = H.pane('preview')
  local text = table.concat(lines, '\n')
  H.truthy(text:find('· Attached output of `echo hi`', 1, true), 'the attachment in words: ' .. text)
  H.truthy(not text:find('UserAttach', 1, true) and not text:find('command_output', 1, true), 'no protocol names: ' .. text)
  local head, step
  for i, l in ipairs(lines) do
    if l == '## Assistant' then
      head = head or i
    elseif l:find('^· Read README.md') then
      step = i
    end
  end
  H.truthy(head and step and head < step, 'the tool step under ## Assistant: ' .. text)
  H.eq(require('bb7.words').action('UserSomethingNew'), 'Something new', 'an unknown action in words')
end)

test('the Files pane follows a change made outside Neovim when it gets the focus back', function()
  local proj = H.chat_with_output({ ['a.txt'] = BASE }, 'a.txt', { ['a.txt'] = 'ONE\ntwo\nthree\n' })
  vim.cmd('BB7')
  local function row()
    return select(2, line_with(H.pane('files'), 'a.txt'))
  end
  local before = row()
  H.truthy(before and before:find('M', 1, true), 'M first: ' .. tostring(before))
  -- Outside Neovim the user edits the line the model changed.
  vim.fn.writefile({ 'mine', 'two', 'three' }, proj .. '/a.txt')
  H.eq(row(), before, 'nothing redrew it yet')
  vim.api.nvim_exec_autocmds('FocusGained', {})
  H.wait(function() return row() ~= before end, 5000, 'redrawn on focus: ' .. tostring(row()))
  H.truthy(row():find('~M', 1, true), 'both changed it now: ' .. row())
end)

test('a rolled-back checkpoint is marked and not rolled back again', function()
  local proj = H.chat_with_output({ ['f.txt'] = BASE }, 'f.txt', { ['f.txt'] = 'ONE\ntwo\nthree\n' })
  vim.cmd('BB7Apply f.txt')
  H.eq(H.read(proj .. '/f.txt'), 'ONE\ntwo\nthree\n', 'applied')
  local shown
  -- The apply, then the first choice (files not changed since).
  vim.ui.select = function(items, opts, cb)
    if opts.format_item then
      shown = vim.tbl_map(opts.format_item, items)
      for _, cp in ipairs(items) do
        if cp.action ~= 'rollback' then
          return cb(cp)
        end
      end
    end
    cb(items[1])
  end
  vim.cmd('BB7Checkpoints')
  H.expect_note('BB-7: Rolled back f.txt')
  H.eq(H.read(proj .. '/f.txt'), BASE, 'rolled back')
  H.notes = {}
  vim.cmd('BB7Checkpoints')
  local _, apply_line = line_with(shown, 'applied')
  H.truthy(apply_line and apply_line:find('(rolled back at ', 1, true), 'marked: ' .. vim.inspect(shown))
  H.truthy(H.note('Already rolled back'), 'not again: ' .. vim.inspect(H.notes))
  H.truthy(not H.note('Nothing to roll back'), 'no second rollback')
  H.eq(H.read(proj .. '/f.txt'), BASE, 'unchanged')
end)

test('choosing a model whose window the chat does not fit says so', function()
  local lines = {}
  for i = 1, 3000 do
    lines[i] = 'line ' .. i .. ' of a long file with words in it'
  end
  H.project({ ['big.txt'] = table.concat(lines, '\n') })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.fn.confirm = function() return 1 end
  vim.cmd('BB7Add big.txt')
  local n = choose_model('fake/other')
  H.truthy(n.msg:find('does not fit its window (8k)', 1, true), 'the window is named: ' .. n.msg)
  H.eq(n.level, vim.log.levels.WARN, 'a warning')
  -- A model the chat fits: no warning.
  H.notes = {}
  H.eq(choose_model('fake/model').msg, 'BB-7: Model set to fake/model', 'no warning')
end)

test('context events before the first question are not under an answer heading', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.txt')
  vim.cmd('BB7')
  local lines = H.pane('preview')
  local at = vim.fn.index(lines, '· Added a.txt') + 1
  H.truthy(at > 0, 'the event is drawn: ' .. vim.inspect(lines))
  H.truthy(not vim.tbl_contains(vim.list_slice(lines, 1, at), '## Assistant'), 'no heading over it: ' .. vim.inspect(lines))
end)
