-- Reviewing and reading through a day: a read approval never takes keys typed in a
-- code buffer, ]h goes on from a file whose review is done, a file the model replaced
-- (!A) shows the model's lines, :BB7EditInstructions from a pane opens in an editor
-- window, and :BB7 from inside a diff opens the normal layout.
local test, H = ...

test('a read approval waits for a bb7 pane and never takes keys typed in a code buffer', function()
  H.project({ ['README.md'] = 'Project readme\n', ['code.lua'] = 'local x = 1\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Tools ask')
  H.script({ tool_calls = { { name = 'read_file', args = { path = 'README.md' } } } })
  H.script({ text = 'The readme says hello.' })
  local asked = {}
  vim.ui.select = function(items, opts, cb)
    table.insert(asked, { prompt = opts.prompt, cb = cb, items = items })
  end
  vim.cmd('edit code.lua')
  local code = vim.api.nvim_get_current_buf()
  require('bb7').send('what does the readme say?')
  H.wait(function() return H.note('Answer in the bb7 UI') ~= nil end, 10000, 'the approval is announced')
  H.eq(#asked, 0, 'no prompt opened over the code buffer')
  H.feed('Oyes<Esc>')
  H.eq(vim.api.nvim_buf_get_lines(code, 0, 1, false)[1], 'yes', 'the keys went to the code buffer')
  H.eq(#asked, 0, 'still no prompt')
  vim.cmd('BB7')
  H.wait(function() return #asked == 1 end, 5000, 'asked once in the UI')
  H.eq(asked[1].prompt, 'BB-7: Read README.md (1 line, 15 B)?', 'the prompt')
  asked[1].cb('Allow')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'the answer')
  H.truthy(vim.tbl_contains(H.pane('preview'), 'The readme says hello.'), 'answer shown')
end)

local BASE = 'one\ntwo\nthree\n'

test(']h goes on into the next file after the review of a file is done', function()
  local proj = H.project({ ['a.txt'] = BASE, ['b.txt'] = BASE })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.txt')
  vim.cmd('BB7Add b.txt')
  H.output(proj, 'a.txt', 'ONE\ntwo\nthree\n')
  H.output(proj, 'b.txt', 'one\ntwo\nTHREE\n')
  vim.cmd('BB7Review a.txt')
  H.eq(vim.fn.expand('%:t'), 'a.txt', 'reviewing a.txt')
  H.feed('gA')
  H.eq(H.read(proj .. '/a.txt'), 'ONE\ntwo\nthree\n', 'a.txt accepted')
  H.eq(#require('bb7.review').hunks(0), 0, 'nothing left in a.txt')
  H.feed(']h')
  H.eq(vim.fn.expand('%:t'), 'b.txt', ']h went on into b.txt')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 3, 'on its hunk')
  H.eq(vim.fn.maparg(']h', 'n', false, true).buffer, 1, ']h is still bb7\'s in b.txt')
  H.feed('gA')
  H.eq(vim.fn.maparg(']h', 'n', false, true).buffer, nil, ']h is the user\'s again once nothing is pending')
  vim.cmd('buffer a.txt')
  H.eq(vim.fn.maparg(']h', 'n', false, true).buffer, nil, 'in a.txt too')
end)

test('reviewing a file the model replaced (!A) shows the model\'s lines over the file', function()
  local proj = H.project({ ['a.txt'] = BASE, ['c.txt'] = 'c\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add c.txt')
  H.output(proj, 'a.txt', 'MODEL1\nMODEL2\n')
  vim.cmd('BB7Review a.txt')
  local ns = require('bb7.review').ns
  local removed, virt = {}, {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
    if m[4].line_hl_group == 'BB7ReviewDelete' then
      removed[#removed + 1] = m[2] + 1
    end
    for _, l in ipairs(m[4].virt_lines or {}) do
      virt[#virt + 1] = vim.trim(l[1][1])
    end
  end
  table.sort(removed)
  H.eq(removed, { 1, 2, 3 }, 'the file on disk is marked replaced')
  H.eq(virt, { 'MODEL1', 'MODEL2' }, "the model's lines are drawn")
  -- Virtual lines above line 1 show only when scrolled into view.
  H.eq(vim.fn.winsaveview().topfill, 2, "the model's lines are in view")
  local confirm = vim.fn.confirm
  vim.fn.confirm = function() return 1 end
  H.feed('gY')
  vim.fn.confirm = confirm
  H.wait(function() return H.read(proj .. '/a.txt') == 'MODEL1\nMODEL2\n' end, 5000, "gY took the model's file: " .. H.read(proj .. '/a.txt') .. vim.inspect(H.notes))
end)

test(':BB7EditInstructions from a pane opens the file in an editor window', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  H.truthy(layout.pane_of() ~= nil, 'in a pane')
  local input = layout.buf('input')
  vim.cmd('BB7EditInstructions')
  H.eq(layout.pane_of(), nil, 'not in a pane')
  H.truthy(vim.api.nvim_buf_get_name(0):find('instructions', 1, true), 'the instructions file: ' .. vim.api.nvim_buf_get_name(0))
  H.eq(vim.api.nvim_win_get_buf(layout.win('input')), input, 'the Message pane keeps its buffer')
end)

for _, kind in ipairs({ 'tab', 'float' }) do
test(':BB7 from inside a diff at 80x24 opens the normal layout (' .. kind .. ')', function()
  -- A float opened from a window takes its window options: 'diff' among them.
  require('bb7').setup({ binary = H.bin, layout = kind })
  H.project({ ['a.txt'] = 'one\ntwo\n', ['b.txt'] = 'one\nTWO\n' })
  vim.o.columns, vim.o.lines = 80, 24
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('edit a.txt | diffthis | vsplit b.txt | diffthis')
  H.truthy(vim.wo.diff, 'in a diff')
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  for _, name in ipairs({ 'chats', 'files', 'preview', 'input' }) do
    local w = layout.win(name)
    H.truthy(not vim.wo[w].diff, name .. ' is not part of a diff')
    H.truthy(not vim.wo[w].scrollbind, name .. ' is not scroll-bound')
  end
  H.truthy(vim.api.nvim_win_get_height(layout.win('preview')) >= 10, 'the preview has its height: ' .. vim.api.nvim_win_get_height(layout.win('preview')))
  H.truthy(vim.api.nvim_win_get_height(layout.win('input')) >= 4, 'the Message pane has its height')
  -- The panes show their lines, not one fold.
  for _, name in ipairs({ 'chats', 'files', 'preview', 'input' }) do
    vim.api.nvim_win_call(layout.win(name), function()
      H.eq(vim.fn.foldclosed(1), -1, 'no fold over ' .. name)
    end)
  end
end)
end
