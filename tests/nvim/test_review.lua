-- The review view (]h [h ga gr gA) and :BB7Checkpoints rollback.
local test, H = ...

local BASE = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n'
local OUT = 'ONE\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\nnine\nTEN\n'

local function feed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

test('review keys accept and reject hunks, then a checkpoint rolls back', function()
  local proj = H.project({ ['f.txt'] = BASE:sub(1, -2) })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('edit f.txt')
  vim.cmd('BB7Add')
  local id = require('bb7').active_chat()
  local out = proj .. '/.bb7/chats/' .. id .. '/output/f.txt'
  vim.fn.mkdir(vim.fn.fnamemodify(out, ':h'), 'p')
  vim.fn.writefile(vim.split(OUT:sub(1, -2), '\n'), out)

  vim.cmd('BB7Review f.txt')
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  H.truthy(lines[1]:find('Review f.txt', 1, true), 'title: ' .. lines[1])
  H.eq(lines[3], '@@ -1,1 +1,1 @@', 'first hunk header')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 3, 'cursor on the first hunk')
  feed(']h')
  H.eq(vim.api.nvim_get_current_line(), '@@ -5,1 +5,1 @@', ']h moves to the next hunk')
  feed('[h')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 3, '[h moves back')

  -- Accept the first hunk: the file on disk and its buffer change.
  feed('ga')
  H.expect_note('f.txt: applied 1')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[1], 'ONE', 'first line on disk')
  local fbuf = vim.fn.bufnr(proj .. '/f.txt')
  H.eq(vim.api.nvim_buf_get_lines(fbuf, 0, 1, false)[1], 'ONE', 'buffer reloaded')

  -- Reject the next one with a reason.
  local real_input = vim.ui.input
  vim.ui.input = function(_, cb) cb('keep five') end
  H.eq(vim.api.nvim_get_current_line(), '@@ -5,1 +5,1 @@', 'cursor on the remaining first hunk')
  feed('gr')
  vim.ui.input = real_input
  H.expect_note('f.txt: rejected 1')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[5], 'five', 'rejected hunk not applied')

  -- Accept the rest: the review closes.
  feed('gA')
  H.expect_note('Review of f.txt done')
  H.eq(vim.fn.readfile(proj .. '/f.txt'), { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'TEN' }, 'final file')
  local chat = require('bb7.client').request_sync('chat_get', {})
  local reasons = {}
  for _, m in ipairs(chat.messages) do
    for _, p in ipairs(m.parts) do
      if p.action == 'UserRejectHunk' then
        table.insert(reasons, p.reason)
      end
    end
  end
  H.eq(reasons, { 'keep five' }, 'reject reason recorded')

  -- Roll back the newest checkpoint (the last accept), then the first one.
  local real_select = vim.ui.select
  local picks = { 1, 1 }
  vim.ui.select = function(items, _, cb) cb(items[table.remove(picks, 1)]) end
  vim.cmd('BB7Checkpoints')
  H.expect_note('Rolled back f.txt')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[10], 'ten', 'last accept rolled back')
  H.eq(vim.api.nvim_buf_get_lines(fbuf, 9, 10, false)[1], 'ten', 'buffer reloaded after rollback')
  -- The oldest checkpoint changed line 1; the file changed since, so force is needed.
  H.notes = {}
  local list = require('bb7.client').request_sync('checkpoint_list', {}).checkpoints
  picks = { #list, 2 }
  vim.cmd('BB7Checkpoints')
  vim.ui.select = real_select
  H.expect_note('Rolled back f.txt')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[1], 'one', 'first apply rolled back')
end)

test(':BB7DiffLocal merges by hand, :BB7Apply {path} applies one file', function()
  local proj = H.project({ ['m.txt'] = 'a\nb\n', ['n.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add m.txt')
  vim.cmd('BB7Add n.txt')
  local id = require('bb7').active_chat()
  local out = proj .. '/.bb7/chats/' .. id .. '/output/'
  vim.fn.mkdir(out, 'p')
  vim.fn.writefile({ 'A', 'B' }, out .. 'm.txt')
  vim.fn.writefile({ 'X' }, out .. 'n.txt')

  local tabs = #vim.api.nvim_list_tabpages()
  vim.cmd('BB7DiffLocal m.txt')
  H.eq(#vim.api.nvim_list_tabpages(), tabs + 1, 'a diff tab')
  H.eq(#vim.api.nvim_tabpage_list_wins(0), 2, 'two windows')
  H.truthy(vim.wo.diff, 'diff mode')
  -- Take the first line from the output by hand, write, and finish with q.
  vim.cmd('wincmd h')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/m.txt', 'local file on the left')
  vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'A' })
  vim.cmd('write')
  vim.api.nvim_feedkeys('q', 'x', false)
  H.expect_note('Merged m.txt: partial')
  H.eq(#vim.api.nvim_list_tabpages(), tabs, 'diff tab closed')

  vim.cmd('BB7Apply n.txt')
  H.expect_note('BB-7: Applied n.txt')
  H.eq(vim.fn.readfile(proj .. '/n.txt'), { 'X' }, 'n.txt applied')
  H.eq(vim.fn.readfile(proj .. '/m.txt'), { 'A', 'b' }, 'm.txt untouched by the single apply')
  vim.cmd('BB7Apply n.txt')
  H.expect_note('BB-7: No output to apply')
end)

test(':BB7Tools: reads are approved through vim.ui.select and shown in the preview', function()
  H.project({ ['README.md'] = 'Project readme\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Tools ask')
  H.expect_note('BB-7: Tools: ask')
  H.script({ tool_calls = { { name = 'read_file', args = { path = 'README.md' } } } })
  H.script({ text = 'The readme says hello.' })
  local asked
  local real = vim.ui.select
  vim.ui.select = function(items, opts, cb)
    asked = opts.prompt
    cb(items[1])
  end
  vim.cmd('BB7')
  require('bb7').send('what does the readme say?')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  vim.ui.select = real
  H.eq(asked, 'BB-7: Read README.md?', 'approval prompt')
  local preview = H.pane('preview')
  H.truthy(vim.tbl_contains(preview, '· Read README.md lines 1-1'), 'tool step shown: ' .. vim.inspect(preview))
  H.truthy(vim.tbl_contains(preview, 'The readme says hello.'), 'answer shown')
  H.notes = {}
  vim.cmd('BB7Tools')
  H.expect_note('BB-7: Tools: ask')
  vim.cmd('BB7Tools sometimes')
  H.expect_note('Failed to set tools')
end)
