-- The inline review (extmarks in the file buffer; ga gr gA ]h [h), :BB7Review without
-- an argument from every pane, :BB7Review!, conflicts, and :BB7Checkpoints.
local test, H = ...

local BASE = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n'
local OUT = 'ONE\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\nnine\nTEN\n'

--- Extmarks of the review in `buf`: rows with a line highlight, rows with a sign (and
--- its text), and the virtual lines by row.
local function marks(buf)
  local ns = require('bb7.review').ns
  local hl, signs, virt = {}, {}, {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local row, d = m[2], m[4]
    if d.line_hl_group then
      hl[#hl + 1] = row + 1
    end
    if d.sign_text then
      signs[row + 1] = vim.trim(d.sign_text)
    end
    if d.virt_lines then
      virt[row + 1] = vim.tbl_map(function(l) return vim.trim(l[1][1]) end, d.virt_lines)
    end
  end
  table.sort(hl)
  return hl, signs, virt
end

local function setup_review(files, outputs)
  local proj = H.project(files)
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  for rel in pairs(outputs) do
    vim.cmd('BB7Add ' .. rel)
  end
  for rel, content in pairs(outputs) do
    H.output(proj, rel, content)
  end
  return proj
end

test('inline review: extmarks at the hunks, accept and reject change the file and the marks', function()
  local proj = setup_review({ ['f.txt'] = BASE }, { ['f.txt'] = OUT })
  vim.cmd('BB7Review f.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.eq(vim.api.nvim_buf_get_name(buf), proj .. '/f.txt', 'the real file buffer')
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1], 'one', 'the buffer is the file on disk')
  local hl, signs, virt = marks(buf)
  H.eq(hl, { 1, 5, 10 }, 'removed lines highlighted')
  H.eq(signs, { [1] = '~', [5] = '~', [10] = '~' }, 'a sign per hunk')
  H.eq(virt, { [1] = { 'ONE' }, [5] = { 'FIVE' }, [10] = { 'TEN' } }, 'added lines as virtual lines')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 1, 'cursor on the first hunk')
  H.feed(']h')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 5, ']h moves to the next hunk')
  H.feed('[h')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 1, '[h moves back')

  H.feed('ga')
  H.expect_note('f.txt: applied 1')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[1], 'ONE', 'accepted hunk on disk')
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1], 'ONE', 'buffer reloaded')
  hl, signs = marks(buf)
  H.eq(hl, { 5, 10 }, 'marks of the accepted hunk gone')

  local real_input = vim.ui.input
  vim.ui.input = function(_, cb) cb('keep five') end
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  H.feed('gr')
  vim.ui.input = real_input
  H.expect_note('f.txt: rejected 1')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[5], 'five', 'rejected hunk not applied')
  hl, signs, virt = marks(buf)
  H.eq(hl, { 10 }, 'only the last hunk is left')
  H.eq(virt, { [10] = { 'TEN' } }, 'its virtual line')

  H.feed('gA')
  H.expect_note('Review of f.txt done')
  hl, signs, virt = marks(buf)
  H.eq({ #hl, vim.tbl_count(signs), vim.tbl_count(virt) }, { 0, 0, 0 }, 'no marks left')
  H.eq(vim.fn.readfile(proj .. '/f.txt'), { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'TEN' }, 'final file')
  H.eq(vim.fn.maparg('ga', 'n', false, true).buffer, nil, 'review keys removed')
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

  -- Roll back the newest checkpoint (the last accept), then the first one by force.
  local real_select = vim.ui.select
  local picks = { 1, 1 }
  vim.ui.select = function(items, _, cb) cb(items[table.remove(picks, 1)]) end
  vim.cmd('BB7Checkpoints')
  H.expect_note('Rolled back f.txt')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[10], 'ten', 'last accept rolled back')
  H.eq(vim.api.nvim_buf_get_lines(buf, 9, 10, false)[1], 'ten', 'buffer reloaded after rollback')
  H.notes = {}
  local list = require('bb7.client').request_sync('checkpoint_list', {}).checkpoints
  picks = { #list, 2 }
  vim.cmd('BB7Checkpoints')
  vim.ui.select = real_select
  H.expect_note('Rolled back f.txt')
  H.eq(vim.fn.readfile(proj .. '/f.txt')[1], 'one', 'first apply rolled back')
end)

test('inline review: insertions, deletions, a conflict with the user edit, ]h across files', function()
  local proj = setup_review({ ['a.txt'] = 'a1\na2\na3\na4\na5\na6\n', ['b.txt'] = 'b1\nb2\n' }, {
    ['a.txt'] = 'a0\na1\na2\na4\nA5\na6\n',
    ['b.txt'] = 'b1\nB2\n',
  })
  -- The user changes line 5 on disk after the snapshot: the hunk there conflicts.
  vim.fn.writefile({ 'a1', 'a2', 'a3', 'a4', 'mine', 'a6' }, proj .. '/a.txt')
  vim.cmd('BB7Review a.txt')
  local buf = vim.api.nvim_get_current_buf()
  local hl, signs, virt = marks(buf)
  H.eq(signs, { [1] = '+', [3] = '-', [5] = '!' }, 'insertion, deletion and conflict signs: ' .. vim.inspect(signs))
  H.eq(hl, { 3, 5 }, 'deleted and conflicting lines highlighted')
  H.eq(virt[1], { 'a0' }, 'insertion above the first line')
  local hint
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, require('bb7.review').ns, { 4, 0 }, { 4, -1 }, { details = true })) do
    if m[4].virt_text then
      hint = m[4].virt_text[1][1]
    end
  end
  H.truthy(hint and hint:find('conflicts with your edits', 1, true), 'conflict marked: ' .. tostring(hint))
  -- ]h from the last hunk goes on into b.txt.
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  H.feed(']h')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/b.txt', ']h crossed into the next file')
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 2, 'on its hunk')
  H.feed('[h')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/a.txt', '[h crossed back')
  -- Accepting the conflicting hunk leaves the user's line alone.
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  H.feed('ga')
  H.eq(vim.fn.readfile(proj .. '/a.txt')[5], 'mine', 'the user edit stays')
end)

test(':BB7Review without an argument, from every pane and from a file buffer; :BB7Review!', function()
  local proj = setup_review({ ['a.txt'] = 'a\n', ['b.txt'] = 'b\n', ['c.txt'] = 'c\n' }, { ['a.txt'] = 'A\n', ['b.txt'] = 'B\n' })
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  -- Chats, preview and input panes: the first file with pending hunks.
  for _, pane in ipairs({ 'chats', 'preview', 'input' }) do
    layout.open()
    layout.focus(pane)
    vim.cmd('BB7Review')
    H.eq(vim.api.nvim_buf_get_name(0), proj .. '/a.txt', 'from the ' .. pane .. ' pane')
    H.truthy(layout.pane_of() == nil, 'not in a pane')
    H.eq(#require('bb7.review').hunks(0), 1, 'hunk drawn')
  end
  -- Files pane: the file under the cursor.
  layout.open()
  layout.focus('files')
  local files = H.pane('files')
  for i, l in ipairs(files) do
    if l:find('b.txt', 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  vim.cmd('BB7Review')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/b.txt', 'from the files pane: the file under the cursor')
  -- A file buffer with pending hunks reviews itself; one without falls back to the first.
  vim.cmd('edit ' .. proj .. '/b.txt')
  vim.cmd('BB7Review')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/b.txt', 'current buffer')
  vim.cmd('edit ' .. proj .. '/c.txt')
  vim.cmd('BB7Review')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/a.txt', 'first pending file')
  vim.cmd('BB7Review c.txt')
  H.expect_note('No pending changes for c.txt')
  -- The quickfix list holds every pending hunk.
  vim.cmd('BB7Review!')
  local qf = vim.fn.getqflist()
  H.eq(#qf, 2, 'two pending hunks')
  H.eq(vim.api.nvim_buf_get_name(qf[1].bufnr), proj .. '/a.txt', 'first entry')
  H.truthy(qf[2].text:find('@@ -1,1 +1,1 @@', 1, true), 'hunk header: ' .. qf[2].text)
  H.eq(vim.bo.buftype, 'quickfix', 'quickfix window open')
end)

test(':BB7DiffLocal merges by hand, :BB7Apply {path} applies one file', function()
  local proj = setup_review({ ['m.txt'] = 'a\nb\n', ['n.txt'] = 'x\n' }, { ['m.txt'] = 'A\nB\n', ['n.txt'] = 'X\n' })
  local tabs = #vim.api.nvim_list_tabpages()
  vim.cmd('BB7DiffLocal m.txt')
  H.eq(#vim.api.nvim_list_tabpages(), tabs + 1, 'a diff tab')
  H.eq(#vim.api.nvim_tabpage_list_wins(0), 2, 'two windows')
  H.truthy(vim.wo.diff, 'diff mode')
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
  H.eq(asked, 'BB-7: Read README.md (1 line, 15 B)?', 'approval prompt')
  local preview = H.pane('preview')
  H.truthy(vim.tbl_contains(preview, '· Read README.md lines 1-1'), 'tool step shown: ' .. vim.inspect(preview))
  H.truthy(vim.tbl_contains(preview, 'The readme says hello.'), 'answer shown')
  H.notes = {}
  vim.cmd('BB7Tools')
  H.expect_note('BB-7: Tools: ask')
  vim.cmd('BB7Tools sometimes')
  H.expect_note('Failed to set tools')
end)

test('float layout: :BB7Review from a pane closes the floats and reviews in the file', function()
  require('bb7').setup({ binary = H.bin, layout = 'float' })
  local proj = setup_review({ ['a.txt'] = 'a\n' }, { ['a.txt'] = 'A\n' })
  vim.cmd('BB7')
  local layout = require('bb7.ui.layout')
  layout.focus('preview')
  vim.cmd('BB7Review')
  H.truthy(not layout.visible(), 'floats closed')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/a.txt', 'the file')
  H.eq(vim.api.nvim_win_get_config(0).relative, '', 'in a normal window')
  H.eq(#require('bb7.review').hunks(0), 1, 'hunk drawn')
end)

test('errors by code: an apply conflict says how to go on, ! forces; decided hunks are not drawn', function()
  local proj = setup_review({ ['f.txt'] = BASE }, { ['f.txt'] = OUT })
  local api = require('bb7.api')
  local sent = {}
  local real_apply = api.apply_file
  api.apply_file = function(fields)
    table.insert(sent, fields)
    if not fields.force then
      return nil, { code = 'conflict', message = 'lines 1-1 changed on disk' }
    end
    return real_apply({ path = fields.path })
  end
  vim.cmd('BB7Apply f.txt')
  local note = H.expect_note('f.txt conflicts with your edits: lines 1-1 changed on disk', vim.log.levels.WARN)
  H.truthy(note.msg:find(':BB7Apply! f.txt', 1, true), 'says how to force: ' .. note.msg)
  H.eq(vim.fn.readfile(proj .. '/f.txt')[1], 'one', 'nothing written')
  vim.cmd('BB7Apply! f.txt')
  H.eq(sent[2].force, true, '! sends force')
  H.expect_note('BB-7: Applied f.txt')
  api.apply_file = real_apply

  -- A server that also lists decided hunks (state accepted/rejected): only pending
  -- ones are drawn.
  H.output(proj, 'f.txt', 'ONE\ntwo\nTHREE\nfour\nFIVE\nsix\nseven\neight\nnine\nTEN\n')
  require('bb7.client').request_sync('sync_context', { path = 'f.txt' })
  local real_get = api.review_get
  api.review_get = function(fields)
    local r, err = real_get(fields)
    for _, f in ipairs(r and r.files or {}) do
      table.insert(f.hunks, 1, { hunk_id = 'old', header = '@@ -2,1 +2,1 @@', old_start = 2, old_lines = 1, new_start = 2, new_lines = 1, patch = '@@ -2,1 +2,1 @@\n-two\n+TWO\n', state = 'accepted', applies_cleanly = true })
    end
    return r, err
  end
  vim.cmd('BB7Review f.txt')
  api.review_get = real_get
  local rows = vim.tbl_map(function(dh) return dh.first + 1 end, require('bb7.review').hunks(0))
  H.truthy(not vim.tbl_contains(rows, 2), 'the accepted hunk is not drawn: ' .. vim.inspect(rows))
  H.eq(rows, { 3 }, 'the pending hunk drawn')
end)

test('inline review of a new file: its lines are virtual lines, accepting creates it', function()
  local proj = H.chat_with_output({ ['a.txt'] = 'a\n' }, 'a.txt', { ['new/b.txt'] = 'first\nsecond\n' })
  vim.cmd('BB7Review')
  local buf = vim.api.nvim_get_current_buf()
  H.eq(vim.api.nvim_buf_get_name(buf), proj .. '/new/b.txt', 'the new file is reviewed')
  local _, signs, virt = marks(buf)
  H.eq(signs, { [1] = '+' }, 'one added hunk')
  H.eq(virt[1], { 'first', 'second' }, 'its lines as virtual lines')
  H.feed('ga')
  H.expect_note('Review of new/b.txt done')
  H.eq(vim.fn.readfile(proj .. '/new/b.txt'), { 'first', 'second' }, 'file created')
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'first', 'second' }, 'buffer loaded')
end)

test("a conflicting hunk: gY asks, then takes the model's version of it and only it", function()
  local proj = setup_review({ ['a.txt'] = 'a1\na2\na3\na4\na5\na6\n' }, { ['a.txt'] = 'A1\na2\na3\na4\nA5\na6\n' })
  -- The user changed line 5 on disk: that hunk conflicts, the one at line 1 does not.
  vim.fn.writefile({ 'a1', 'a2', 'a3', 'a4', 'mine', 'a6' }, proj .. '/a.txt')
  vim.cmd('BB7Review a.txt')
  local buf = vim.api.nvim_get_current_buf()
  local asked
  local real = vim.fn.confirm
  vim.fn.confirm = function(q) asked = q return 2 end
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  H.feed('gY')
  H.truthy(asked and asked:find('line 5 of a.txt', 1, true), 'asks, naming the line: ' .. tostring(asked))
  H.eq(vim.fn.readfile(proj .. '/a.txt')[5], 'mine', 'No: nothing changes')
  vim.fn.confirm = function() return 1 end
  H.feed('gY')
  vim.fn.confirm = real
  H.expect_note("Took the model's version of line 5 in a.txt")
  H.eq(vim.fn.readfile(proj .. '/a.txt'), { 'a1', 'a2', 'a3', 'a4', 'A5', 'a6' }, "the model's line, the rest untouched")
  local left = vim.tbl_map(function(dh) return dh.first + 1 end, require('bb7.review').hunks(buf))
  H.eq(left, { 1 }, 'the other hunk is still pending')
  local chat = require('bb7.client').request_sync('chat_get', {})
  local reason
  for _, m in ipairs(chat.messages) do
    for _, p in ipairs(m.parts) do
      if p.action == 'UserAcceptHunk' then
        reason = p.reason
      end
    end
  end
  H.truthy(reason and reason:find("model's version", 1, true), 'the history says what happened: ' .. tostring(reason))
end)

test('review lines: changed words marked, long added lines wrap with the background to the edge', function()
  local long = 'let total = chain.iter().map(|link| link.weight).sum::<u64>() + computed_by_walking_the_chain_from_its_head_to_its_tail_one_link_at_a_time'
  setup_review({ ['c.rs'] = 'let n = chain.len();\nlet x = 1;\n' }, { ['c.rs'] = 'let n = chain.count();\n' .. long .. '\n' })
  vim.cmd('BB7Review c.rs')
  local buf = vim.api.nvim_get_current_buf()
  local ns = require('bb7.review').ns
  local words, virt = {}, {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local d = m[4]
    if d.hl_group == 'BB7ReviewDeleteText' then
      table.insert(words, vim.api.nvim_buf_get_text(buf, m[2], m[3], d.end_row, d.end_col, {})[1])
    end
    for _, l in ipairs(d.virt_lines or {}) do
      table.insert(virt, l)
    end
  end
  H.truthy(vim.tbl_contains(words, 'len'), 'the removed word is marked: ' .. vim.inspect(words))
  local marked
  for _, chunk in ipairs(virt[1]) do
    if chunk[2] == 'BB7ReviewAddText' then
      marked = chunk[1]
    end
  end
  H.eq(marked, 'count', 'the added word is marked')
  local info = vim.fn.getwininfo(vim.api.nvim_get_current_win())[1]
  local width = info.width - info.textoff
  local text = ''
  for i = 2, #virt do
    local row = ''
    for _, chunk in ipairs(virt[i]) do
      row = row .. chunk[1]
    end
    H.eq(vim.fn.strdisplaywidth(row), width, 'virtual row ' .. i .. ' fills the width')
    text = text .. row
  end
  H.truthy(#virt > 2, 'the long line wraps: ' .. #virt .. ' rows')
  H.truthy(vim.trim(text):find('one_link_at_a_time', 1, true), 'nothing is cut off')
  -- A narrower window: the added lines are wrapped again to its width.
  vim.cmd('vsplit')
  vim.api.nvim_exec_autocmds('WinResized', {})
  info = vim.fn.getwininfo(vim.api.nvim_get_current_win())[1]
  local rows = 0
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    for _, l in ipairs(m[4].virt_lines or {}) do
      local row = ''
      for _, chunk in ipairs(l) do
        row = row .. chunk[1]
      end
      H.eq(vim.fn.strdisplaywidth(row), info.width - info.textoff, 'rewrapped to the narrower window')
      rows = rows + 1
    end
  end
  H.truthy(rows > #virt, 'more rows when narrower: ' .. rows)
end)
