-- The layout (winbar titles, no ~ filler, no tabline, q, ?, the float layout), the
-- answer as Markdown with reasoning folded and changes as one expandable line, the
-- statusline component, and setup() with bad options.
local test, H = ...

local function winbar(name)
  local w = require('bb7.ui.layout').win(name)
  return vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
end

test('winbar titles: chat name, model, tokens, cost, a spinner while streaming', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Parser work')
  vim.cmd('BB7Add a.txt')
  vim.cmd('BB7')
  H.truthy(winbar('chats'):find('Chats (1)', 1, true), 'chats title: ' .. winbar('chats'))
  H.truthy(winbar('files'):find('Files (1)', 1, true), 'files title: ' .. winbar('files'))
  H.truthy(winbar('input'):find('<C-s> send', 1, true), 'input title: ' .. winbar('input'))
  H.eq(winbar('preview'), ' Parser work · fake/model', 'preview title before a turn')
  -- Held after its first word until the spinner was seen.
  H.script({ text = 'slow answer', hold_after = 1, hold_until = 'go', usage = { prompt_tokens = 1000, completion_tokens = 234, total_tokens = 1234, cost = 0.0125 } })
  require('bb7').send('hello')
  H.wait(function() return winbar('preview'):find('answering', 1, true) ~= nil end, 3000, 'spinner in the title')
  H.truthy(require('bb7').status():match('^bb7 '), 'statusline component while streaming')
  H.release('go')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local title = winbar('preview')
  -- The whole title; the pane (55 columns at 80) shows what fits, the cost always.
  local whole = require('bb7.ui.render').preview_title()
  H.truthy(whole:find('Parser work · fake/model · ', 1, true), 'name and model: ' .. whole)
  H.truthy(whole:find('tok, 3% cached, $', 1, true), 'tokens and cost: ' .. whole)
  H.truthy(title:find('Parser work · ', 1, true) and title:find('tok, 3% cached, $0.0015', 1, true), 'the winbar: ' .. title)
  H.truthy(not title:find('answering', 1, true), 'spinner gone: ' .. title)
  H.eq(require('bb7').status(), '', 'nothing unread while the UI shows')
end)

test('layout: no ~ filler, no tabline, sizes follow the editor, q closes all, ? shows the keys', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.o.showtabline = 1
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  H.eq(vim.o.showtabline, 0, 'no tabline in the UI tab')
  for _, name in ipairs(layout.order) do
    H.truthy(vim.wo[layout.win(name)].fillchars:find('eob: ', 1, true), name .. ' has no ~ filler')
    H.eq(vim.wo[layout.win(name)].number, false, name .. ' without numbers')
  end
  H.eq(vim.api.nvim_win_get_width(layout.win('chats')), 24, 'left column at 80 columns (headless)')
  vim.o.columns = 120
  vim.api.nvim_exec_autocmds('VimResized', {})
  H.eq(vim.api.nvim_win_get_width(layout.win('chats')), 30, 'left column follows the width')
  layout.focus('files')
  H.feed('?')
  local help = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.eq(vim.api.nvim_win_get_config(0).relative, 'editor', 'help is a float')
  for _, want in ipairs({ '<Tab>', 'gc', 'go to Chats', 'review the file in its buffer', 'accept the hunk under the cursor' }) do
    H.truthy(help:find(want, 1, true), 'help lists ' .. want .. ':\n' .. help)
  end
  H.feed('q')
  H.eq(layout.pane_of(), 'files', 'q closes the help only')
  H.feed('gp')
  H.eq(layout.pane_of(), 'preview', 'gp focuses the preview')
  H.feed('<Tab>')
  H.eq(layout.pane_of(), 'input', '<Tab> goes on')
  vim.cmd('tabprevious')
  H.eq(vim.o.showtabline, 0, 'the UI tab does not make a tabline appear in the editor')
  vim.cmd('tabnext')
  H.eq(layout.pane_of(), 'input', 'back in the UI')
  H.feed('q')
  H.truthy(not layout.visible(), 'q closed the UI')
  H.eq(#vim.api.nvim_list_tabpages(), 1, 'its tab is gone')
  H.eq(vim.o.showtabline, 1, 'tabline setting restored')
end)

test('float layout: four floating panes with titles, q closes them all', function()
  require('bb7').setup({ binary = H.bin, layout = 'float' })
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Floating')
  local before = #vim.api.nvim_list_wins()
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  H.eq(#vim.api.nvim_list_tabpages(), 1, 'no new tab')
  for _, name in ipairs(layout.order) do
    H.eq(vim.api.nvim_win_get_config(layout.win(name)).relative, 'editor', name .. ' floats')
  end
  H.truthy(winbar('preview'):find('Floating', 1, true), 'title: ' .. winbar('preview'))
  H.feed('q')
  H.eq(#vim.api.nvim_list_wins(), before, 'all floats closed')
end)

test('the answer: Markdown with Tree-sitter, reasoning folded, a change as one line that expands to its diff', function()
  local proj = H.project({ ['main.lua'] = 'local x = 1\nreturn x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add main.lua')
  vim.cmd('BB7')
  H.script({
    thinking = 'Think about x.\nThen answer.',
    text = 'Here:\n\n```lua\nlocal y = 2\n```\n',
    tool_calls = { { name = 'edit_file', args = { path = 'main.lua', edits = { { old_string = 'local x = 1', new_string = 'local x = 2' } } } } },
  })
  require('bb7').send('change x')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local layout = require('bb7.ui.layout')
  local buf, win = layout.buf('preview'), layout.win('preview')
  H.eq(vim.bo[buf].filetype, 'markdown', 'markdown filetype')
  local lines = H.pane('preview')
  -- The ```lua block is highlighted as Lua (a Tree-sitter injection), once drawn.
  vim.cmd('redraw')
  local code_row
  for i, l in ipairs(lines) do
    if l == 'local y = 2' then
      code_row = i - 1
    end
  end
  H.truthy(code_row, 'code block in the preview')
  local groups = H.hl_groups(buf, code_row)
  H.truthy(vim.tbl_contains(groups, '@keyword.lua'), 'code block highlighted as lua: ' .. vim.inspect(groups))
  local function row(prefix)
    for i, l in ipairs(lines) do
      if l:sub(1, #prefix) == prefix then
        return i
      end
    end
    H.fail('no line starting with ' .. prefix .. ' in ' .. vim.inspect(lines))
  end
  local reasoning = row('▸ Reasoning')
  H.eq(lines[reasoning + 1], '│ Think about x.', 'reasoning body')
  local change = row('▸ Edit main.lua')
  H.truthy(lines[change]:find('1 hunk', 1, true), 'change summary from done.changes: ' .. lines[change])
  H.truthy(vim.tbl_contains(lines, '+local x = 2'), 'the diff is in the buffer')
  vim.api.nvim_win_call(win, function()
    H.eq(vim.fn.foldclosed(reasoning + 1), reasoning, 'reasoning folded')
    H.eq(vim.fn.foldclosed(change + 1), change, 'diff folded under its summary')
    H.truthy(vim.fn.foldclosed(row('Here:')) == -1, 'answer text open')
  end)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { change, 0 })
  H.feed('<CR>')
  H.eq(vim.fn.foldclosed(change + 1), -1, '<CR> expands the change')
  H.eq(vim.fn.readfile(proj .. '/main.lua')[1], 'local x = 1', 'nothing applied yet')
end)

test('setup() reports bad options and keeps the good ones', function()
  H.notes = {}
  local problems = require('bb7').setup({ binary = H.bin, layout = 'sideways', keymaps = 'yes', colour = true, send_key = '<C-g>', review_keys = { accept = 'ya', explode = 'x' } })
  H.eq(#problems, 4, 'four problems: ' .. vim.inspect(problems))
  local note = H.expect_note('setup()', vim.log.levels.ERROR)
  for _, want in ipairs({ 'option "layout" must be one of tab, float, got "sideways"', 'option "keymaps" must be a boolean, got string', 'unknown option "colour"', 'review_keys: unknown key "explode"' }) do
    H.truthy(note.msg:find(want, 1, true), 'reported: ' .. want .. ' in ' .. note.msg)
  end
  local cfg = require('bb7').config()
  H.eq({ cfg.layout, cfg.keymaps, cfg.send_key, cfg.review_keys.accept, cfg.review_keys.reject }, { 'tab', true, '<C-g>', 'ya', 'gr' }, 'defaults kept for bad options')
  H.eq(require('bb7').setup({ binary = H.bin }), {}, 'good options: no problems')
  H.eq(require('bb7').setup('fast')[1], 'setup() takes a table, got string', 'not a table')
end)

test('a change from an earlier session still shows as one line that expands to its pending diff', function()
  local proj = H.project({ ['main.lua'] = 'local x = 1\nreturn x\n' })
  -- The turn runs in another process (the CLI), so this Neovim never saw its `done`.
  H.script({ text = 'Done.', tool_calls = { { name = 'edit_file', args = { path = 'main.lua', edits = { { old_string = 'local x = 1', new_string = 'local x = 2' } } } } } })
  for _, args in ipairs({ { 'init' }, { 'new' }, { 'add', 'main.lua' }, { 'ask', 'change x' } }) do
    local out = vim.fn.system(vim.list_extend({ H.bin }, args))
    H.eq(vim.v.shell_error, 0, 'bb7 ' .. args[1] .. ': ' .. out)
  end
  vim.cmd('BB7')
  local lines = H.pane('preview')
  local row
  for i, l in ipairs(lines) do
    if l == '▸ Edit main.lua: +1 −1, pending' then
      row = i
    end
  end
  H.truthy(row, 'the change line: ' .. vim.inspect(lines))
  H.truthy(vim.tbl_contains(lines, '+local x = 2'), 'its diff')
  vim.api.nvim_win_call(require('bb7.ui.layout').win('preview'), function()
    H.eq(vim.fn.foldclosed(row + 1), row, 'folded under the line')
  end)
  -- Once applied, nothing is pending: the event is a plain line again.
  vim.cmd('BB7Apply')
  H.eq(vim.fn.readfile(proj .. '/main.lua')[1], 'local x = 2', 'applied')
  H.truthy(vim.tbl_contains(H.pane('preview'), '· Assistant changed main.lua'), 'plain event line: ' .. vim.inspect(H.pane('preview')))
end)

test('a pane resized by hand (<C-w>) keeps its size and its title is cut to it', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Parser work')
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  H.truthy(not vim.endswith(winbar('preview'), '…'), 'the whole title fits first: ' .. winbar('preview'))
  -- Once the estimate is in, nothing else redraws the titles.
  H.wait(function() return winbar('input'):find('~', 1, true) ~= nil end, 10000, 'the estimate')
  vim.api.nvim_win_set_width(layout.win('chats'), 60)
  -- What Neovim's main loop does after a resize (a script run with -l never reaches it).
  vim.api.nvim_exec_autocmds('WinResized', {})
  local width = vim.api.nvim_win_get_width(layout.win('preview'))
  H.truthy(width < 24, 'the preview got narrower: ' .. width)
  H.wait(function() return vim.endswith(winbar('preview'), '…') or not winbar('preview'):find('fake/model', 1, true) end, 2000, 'title shortened: ' .. winbar('preview'))
  local title = winbar('preview')
  H.truthy(vim.api.nvim_strwidth(title) <= width, 'title fits the new width: ' .. title)
  H.eq(vim.api.nvim_win_get_width(layout.win('chats')), 60, 'the hand-made size stays')
end)

test('a system note (sent as content, the reference form) shows in the preview', function()
  H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local _, err = require('bb7.api').call('add_system_message', { message = 'File changes failed to apply.' })
  H.eq(err, nil, 'add_system_message')
  require('bb7.ui.render').refresh()
  local text = table.concat(H.pane('preview'), '\n')
  H.truthy(text:find('## Note', 1, true), 'note heading: ' .. text)
  H.truthy(text:find('File changes failed to apply.', 1, true), 'note text: ' .. text)
end)
