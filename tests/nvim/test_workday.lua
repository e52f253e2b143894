-- A working day, second pass: attachments, review and errors as a daily user meets them.
local test, H = ...
local L = vim.log.levels

local function send_from_pane(text)
  local layout = require('bb7.ui.layout')
  vim.api.nvim_buf_set_lines(layout.buf('input'), 0, -1, false, vim.split(text, '\n'))
  layout.focus('input')
  require('bb7.ui.message').send()
end

test('attachments are context, never deleted: @ in Files, no stale warning, kept by send_stale=refresh', function()
  H.project({ ['a.txt'] = 'one\n' })
  require('bb7').setup({ binary = H.bin, send_stale = 'refresh' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add cmd echo pytest-output-here')
  H.expect_note('BB-7: Attached command_output:echo pytest-output-here (exit 0)', L.INFO)
  vim.cmd('BB7')
  require('bb7.ui.render').refresh()
  local files = table.concat(H.pane('files'), '\n')
  H.truthy(not files:find('^D ') and not files:find('\nD '), 'no D for an attachment: ' .. files)
  H.truthy(files:find('^@   .*pytest%-output%-here'), '@ marks an attachment: ' .. files)
  H.eq(#require('bb7.ui.message').stale_files(), 0, 'an attachment is never stale')
  H.script({ text = 'ok' })
  send_from_pane('why does pytest fail?')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'the answer')
  local body = vim.json.encode(H.requests()[#H.requests()].body)
  H.truthy(body:find('pytest-output-here', 1, true), 'the attachment was sent')
  H.eq(#require('bb7.client').request_sync('context_list', {}).files, 1, 'still in context')
end)

test(':BB7DiffLocal starts in your file, the model copy is not modifiable, q closes only its tab and nothing blocks :qa', function()
  local proj = H.chat_with_output({ ['m.txt'] = 'a\nb\n' }, 'm.txt', { ['m.txt'] = 'A\nb\n' })
  vim.cmd('BB7')
  local ui_tab = vim.api.nvim_get_current_tabpage()
  local tabs = #vim.api.nvim_list_tabpages()
  -- The user's file is also shown in the UI's tab.
  vim.cmd('edit m.txt')
  vim.cmd('BB7DiffLocal m.txt')
  H.truthy(vim.api.nvim_get_current_tabpage() ~= ui_tab, 'a tab of its own')
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/m.txt', 'the cursor starts in your file')
  local other
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(w) ~= vim.api.nvim_get_current_buf() then
      other = vim.api.nvim_win_get_buf(w)
    end
  end
  H.eq(vim.bo[other].modifiable, false, 'the model copy is not modifiable')
  -- do takes the model's line into the user's file.
  vim.cmd('1diffget')
  H.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { 'A', 'b' }, 'diffget into your file')
  vim.cmd('write')
  vim.api.nvim_feedkeys('q', 'x', false)
  H.expect_note('Merged m.txt: full')
  H.eq(vim.api.nvim_get_current_tabpage(), ui_tab, 'back in the UI tab')
  H.eq(#vim.api.nvim_list_tabpages(), tabs, 'the diff tab closed, the UI tab kept')
  H.truthy(require('bb7.ui.layout').win('input') ~= nil, 'the Message pane is still there')
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    H.truthy(not (vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified), 'no modified buffer: ' .. vim.api.nvim_buf_get_name(b))
  end
  -- q in the user's file elsewhere is Vim's q again.
  H.eq(vim.fn.maparg('q', 'n', false, true).buffer, nil, 'no q mapping left on the file')
end)

test('a gY take is in the checkpoint: rolling back undoes the taken hunk with the accepted one', function()
  local proj = H.project({ ['a.txt'] = 'a1\na2\na3\na4\na5\na6\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.txt')
  H.output(proj, 'a.txt', 'A1\na2\na3\na4\nA5\na6\n')
  local mine = { 'a1', 'a2', 'a3', 'a4', 'mine', 'a6' }
  vim.fn.writefile(mine, proj .. '/a.txt')
  vim.cmd('BB7Review a.txt')
  local review = require('bb7.review')
  local buf = vim.api.nvim_get_current_buf()
  local hunks = review.hunks(buf)
  H.eq(#hunks, 2, 'two hunks drawn')
  local real = vim.fn.confirm
  vim.fn.confirm = function() return 1 end
  vim.api.nvim_win_set_cursor(0, { hunks[1].first + 1, 0 })
  H.feed('ga')
  hunks = review.hunks(buf)
  vim.api.nvim_win_set_cursor(0, { hunks[1].first + 1, 0 })
  H.feed('gY')
  vim.fn.confirm = real
  H.eq(vim.fn.readfile(proj .. '/a.txt'), { 'A1', 'a2', 'a3', 'a4', 'A5', 'a6' }, 'both hunks in the file')
  local client = require('bb7.client')
  local cps = client.request_sync('checkpoint_list', {}).checkpoints
  for i = #cps, 1, -1 do
    local r = client.request_sync('checkpoint_rollback', { checkpoint_id = cps[i].checkpoint_id, mode = 'hard_all' })
    for _, f in ipairs(r.files or {}) do
      H.truthy(not f.conflict, 'no conflict rolling back: ' .. vim.inspect(f))
    end
  end
  H.eq(vim.fn.readfile(proj .. '/a.txt'), mine, 'the file as the user had it, the taken hunk undone too')
end)

-- A 5xx is tried four times (the first try and three retries), a 400 once.
for _, case in ipairs({ { 'HTTP 500', { status = 500, message = 'upstream broke' }, 4 }, { 'HTTP 400', { status = 400, message = 'bad request' }, 1 } }) do
  test('after an API error (' .. case[1] .. ') the question is handed back and not also in the chat: a retry sends it once', function()
    H.project({}, { retry_backoff_ms = 1 })
    vim.cmd('BB7Init')
    vim.cmd('BB7NewChat')
    vim.cmd('BB7')
    for _ = 1, case[3] do
      H.script(case[2])
    end
    send_from_pane('why does it fail?')
    H.wait(function() return H.note('Failed to get a response') ~= nil end, 30000, 'the error')
    local layout = require('bb7.ui.layout')
    H.wait(function() return table.concat(vim.api.nvim_buf_get_lines(layout.buf('input'), 0, -1, false), '\n') == 'why does it fail?' end, 5000, 'handed back: ' .. vim.inspect(vim.api.nvim_buf_get_lines(layout.buf('input'), 0, -1, false)) .. vim.inspect(vim.tbl_map(function(n) return n.msg end, H.notes)))
    local client = require('bb7.client')
    local users = 0
    for _, m in ipairs(client.request_sync('chat_get', {}).messages or {}) do
      users = users + (m.role == 'user' and 1 or 0)
    end
    H.eq(users, 0, 'the question is not also in the chat')
    H.script({ text = 'It works now.' })
    H.notes = {}
    send_from_pane(require('bb7.ui.message').text())
    H.wait(function() return H.note('Response received') ~= nil end, 10000, 'the retry answered')
    local msgs = H.requests()[#H.requests()].body.messages
    local asked = 0
    for _, m in ipairs(msgs) do
      if m.role == 'user' and vim.json.encode(m.content):find('why does it fail?', 1, true) then
        asked = asked + 1
      end
    end
    H.eq(asked, 1, 'the retry sends the question once')
  end)
end
