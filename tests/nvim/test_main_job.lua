-- The main job end to end (tests/nvim/main_job.lua) and the UI around it.
local test, H = ...

test('main job: init, add, send, stream, diff, apply on a copy of src/', function()
  local run = dofile(H.root .. '/tests/nvim/main_job.lua')
  run(H)
  -- The request carried both files and the question.
  local reqs = H.requests()
  local body = reqs[#reqs].body
  local user = body.messages[2].content
  H.truthy(user:find('path="src/error.rs" file_id="', 1, true), 'section in the prompt')
  H.truthy(user:find('lines="1-12"', 1, true), 'section range in the prompt')
  H.truthy(user:find('mode="writable"', 1, true), 'writable files in the prompt')
end)

test('UI panes: chats, files with R and ~, fork from a message', function()
  H.project({ ['a.txt'] = 'one\n', ['b.txt'] = 'two\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat first')
  vim.cmd('edit a.txt')
  vim.cmd('BB7Add')
  vim.cmd('BB7AddReadonly b.txt')
  vim.cmd('BB7')
  local ui = require('bb7.ui.layout')
  local render = require('bb7.ui.render')
  H.truthy(ui.visible(), 'UI open')
  H.eq(#vim.api.nvim_tabpage_list_wins(0), 4, 'four panes')
  H.truthy(H.pane('chats')[1]:find('first', 1, true), 'chat listed: ' .. vim.inspect(H.pane('chats')))
  H.eq(H.pane('files'), { '    a.txt', 'R   b.txt' }, 'files pane')
  -- Edit the buffer of a.txt: out of sync (~).
  local buf = vim.fn.bufnr('a.txt')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'changed' })
  render.refresh()
  H.eq(H.pane('files')[1], '~   a.txt', 'out of sync')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'one' })

  H.script({ text = 'First answer.' })
  local input = ui.buf('input')
  vim.api.nvim_set_current_win(ui.win('input'))
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { 'first question' })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<C-s>', true, false, true), 'x', false)
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  H.eq(vim.api.nvim_buf_get_lines(input, 0, -1, false), { '' }, 'input cleared')
  local preview = H.pane('preview')
  H.truthy(vim.tbl_contains(preview, 'First answer.'), 'answer shown: ' .. vim.inspect(preview))

  -- Fork from the user message.
  vim.api.nvim_set_current_win(ui.win('preview'))
  for i, l in ipairs(preview) do
    if l == 'first question' then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  H.feed('cf')
  H.eq(vim.api.nvim_buf_get_lines(input, 0, -1, false), { 'first question' }, 'fork draft in the input')
  local chats = H.pane('chats')
  H.eq(#chats, 2, 'fork listed')
  H.truthy(table.concat(chats, '\n'):find('▸ Fork of first', 1, true), 'fork active: ' .. vim.inspect(chats))

  -- Edit in place in the original chat: it is cut before the message, which becomes
  -- the draft.
  local original
  for _, c in ipairs(require('bb7.client').request_sync('chat_list', {}).chats) do
    if c.name == 'first' then
      original = c.id
    end
  end
  require('bb7.commands').select_chat(original)
  vim.api.nvim_set_current_win(ui.win('preview'))
  for i, l in ipairs(H.pane('preview')) do
    if l == 'first question' then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  local feed_ce = 'ce'
  -- ce asks before it cuts (test_long_day.lua checks the question).
  local real_confirm = vim.fn.confirm
  vim.fn.confirm = function() return 1 end
  vim.api.nvim_feedkeys(feed_ce, 'x', false)
  vim.fn.confirm = real_confirm
  H.eq(vim.api.nvim_buf_get_lines(input, 0, -1, false), { 'first question' }, 'edit draft in the input')
  local chat = require('bb7.client').request_sync('chat_get', {})
  H.eq(chat.id, original, 'still the original chat')
  H.eq(chat.draft, 'first question', 'draft saved')
  for _, m in ipairs(chat.messages) do
    H.truthy(m.role ~= 'user', 'messages from the edited one on are gone')
  end

  vim.cmd('BB7')
  H.truthy(not ui.visible() or ui.pane_of() == nil, 'UI toggled away')
end)
