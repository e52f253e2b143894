-- Commands and the state machine of the reference plugin, with its exact messages and levels.
local test, H = ...
local L = vim.log.levels

test('state machine messages before and after :BB7Init', function()
  local proj = H.project({ ['a.txt'] = 'alpha\n' })
  vim.cmd('edit a.txt')
  vim.cmd('BB7Add')
  H.expect_note('BB-7: Not initialized. Run :BB7Init', L.WARN)
  H.notes = {}
  vim.cmd('BB7')
  H.expect_note('BB-7: Not initialized. Run :BB7Init', L.WARN)
  vim.cmd('BB7Init')
  local note = H.expect_note('BB-7: Initialized in ', L.INFO)
  H.truthy(note.msg:find('add .bb7/ to .gitignore', 1, true), 'the .gitignore hint: ' .. note.msg)
  H.truthy(vim.fn.strdisplaywidth(note.msg) <= vim.v.echospace, 'fits the command line: ' .. note.msg)
  H.truthy(vim.fn.isdirectory(proj .. '/.bb7/chats') == 1, '.bb7/chats exists')
  vim.cmd('BB7Init')
  H.expect_note('BB-7: Already initialized', L.INFO)
  -- With .bb7/ in .gitignore there is nothing to hint.
  vim.fn.delete(proj .. '/.bb7', 'rf')
  vim.fn.writefile({ 'target/', '.bb7/' }, proj .. '/.gitignore')
  H.notes = {}
  vim.cmd('BB7Init')
  H.expect_note('BB-7: Initialized in ' .. proj, L.INFO)
  H.truthy(not H.note('.gitignore'), 'no hint')
  H.notes = {}
  vim.cmd('BB7Add')
  H.expect_note('BB-7: No active chat', L.WARN)
  H.notes = {}
  vim.cmd('BB7Remove')
  H.expect_note('BB-7: No active chat', L.WARN)
end)

test('add, add again, add a section, read-only, remove', function()
  H.project({ ['src/a.lua'] = 'local a = 1\nlocal b = 2\nlocal c = 3\nreturn a\n', ['b.txt'] = 'bee\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('edit src/a.lua')
  vim.cmd('BB7Add')
  H.expect_note('BB-7: Added src/a.lua', L.INFO)
  vim.cmd('BB7Add')
  H.expect_note('BB-7: Context file already exists', L.WARN)
  vim.cmd('2,3BB7Add')
  H.expect_note('BB-7: Added src/a.lua:2-3', L.INFO)
  vim.cmd('BB7AddReadonly b.txt')
  H.expect_note('BB-7: Added b.txt', L.INFO)
  vim.cmd('BB7Add src/a.lua:1:2')
  H.expect_note('BB-7: Added src/a.lua:1-2', L.INFO)
  local client = require('bb7.client')
  local list = client.request_sync('context_list', {})
  H.eq(#list.files, 4, 'context entries')
  H.eq(list.files[2].start_line, 2, 'section start')
  H.eq(list.files[3].readonly, true, 'b.txt read-only')
  local sec = client.request_sync('get_context_file', { path = 'src/a.lua', start_line = 2, end_line = 3 })
  H.eq(sec.content, 'local b = 2\nlocal c = 3\n', 'section content')
  -- The buffer's unsaved text is what gets added.
  vim.cmd('edit b.txt')
  vim.cmd('BB7Remove')
  H.expect_note('BB-7: Removed b.txt', L.INFO)
  vim.cmd('BB7Remove')
  H.expect_note('BB-7: File not in context', L.WARN)
end)

test('version, instructions, search, model', function()
  local proj = H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Version')
  H.expect_note('BB-7: bb7 0.', L.INFO)
  vim.cmd('BB7EditInstructions')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/.bb7/instructions', 'instructions buffer')
  -- Model choice through vim.ui.select.
  local real = vim.ui.select
  vim.ui.select = function(items, _, cb)
    cb(items[2])
  end
  vim.cmd('BB7Model')
  H.wait(function() return H.note('Model set to') ~= nil end, 10000, 'model set')
  H.expect_note('BB-7: Model set to fake/other', L.INFO)
  H.eq(require('bb7.client').request_sync('chat_get', {}).model, 'fake/other', 'chat model')
  -- Search picks a chat.
  require('bb7.client').request_sync('chat_rename', { id = require('bb7').active_chat(), name = 'Parser work' })
  local picked
  vim.ui.select = function(items, _, cb)
    picked = items[1]
    cb(items[1])
  end
  vim.cmd('BB7Search parser')
  vim.ui.select = real
  H.eq(picked.name, 'Parser work', 'search result')
  vim.cmd('BB7Search zebra')
  H.expect_note('BB-7: No chats match zebra', L.WARN)
end)

test('send without the UI, cancel, and failures are reported', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  -- Held after its first word (never let go): the cancel always finds it running.
  H.script({ text = 'slow answer that goes on', hold_after = 1, hold_until = 'never' })
  local rid = require('bb7').send('tell me a story')
  H.truthy(require('bb7').statusline() ~= '', 'streaming statusline')
  local state = require('bb7.state')
  H.wait(function() return state.stream(rid) and state.stream(rid).text ~= '' end, 5000, 'first chunk')
  vim.cmd('BB7Cancel')
  H.wait(function() return H.note('Cancelled') ~= nil end, 10000, 'cancel')
  H.eq(require('bb7').statusline(), 'bb7 •', 'unread marker')
  H.script({ status = 401, message = 'No auth credentials found' })
  vim.cmd('BB7Send hello')
  H.wait(function() return H.note('Failed to get a response') ~= nil end, 10000, 'error note')
  H.expect_note('API key', L.ERROR)
end)
