-- Archiving the chat you are on (:BB7Archive, X on its row) moves the UI to the
-- newest other chat, or to a new one when none is left; the archived chat's draft
-- is kept for when it comes back.
local test, H = ...

local function layout()
  return require('bb7.ui.layout')
end

local function marked()
  for _, l in ipairs(H.pane('chats')) do
    if l:find('▸ ', 1, true) == 1 then
      return l:sub(#'▸ ' + 1)
    end
  end
end

test(':BB7Archive of the active chat shows the newest other chat, then a new one', function()
  H.project({ ['a.txt'] = 'x\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Old notes')
  local old = require('bb7').active_chat()
  vim.cmd('BB7NewChat Current work')
  local current = require('bb7').active_chat()
  vim.cmd('BB7')
  vim.api.nvim_buf_set_lines(layout().buf('input'), 0, -1, false, { 'unsent words' })
  layout().focus('preview')
  vim.cmd('BB7Archive')
  H.expect_note('BB-7: Archived "Current work" (:BB7Archive! brings it back); now on "Old notes"')
  H.eq(require('bb7').active_chat(), old, 'the other chat is active')
  H.eq(marked(), 'Old notes', 'the Chats pane marks it: ' .. vim.inspect(H.pane('chats')))
  H.truthy(not table.concat(H.pane('chats'), '\n'):find('Current work', 1, true), 'the archived chat is not listed')
  H.eq(vim.api.nvim_buf_get_lines(layout().buf('input'), 0, -1, false), { '' }, 'the Message pane holds the shown chat draft')

  -- Brought back and opened, it still has its draft.
  vim.ui.select = function(items, _, cb) cb(items[1]) end
  vim.cmd('BB7Archive!')
  require('bb7.commands').select_chat(current)
  H.eq(vim.api.nvim_buf_get_lines(layout().buf('input'), 0, -1, false), { 'unsent words' }, 'the draft kept')

  -- X on the active chat's row; then the last chat listed: a new one.
  layout().focus('preview')
  vim.cmd('BB7Archive')
  H.expect_note('now on "Old notes"')
  layout().focus('chats')
  for i, l in ipairs(H.pane('chats')) do
    if l:find('Old notes', 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  H.feed('X')
  H.expect_note('BB-7: Archived "Old notes" (:BB7Archive! brings it back); now on a new chat')
  local new = require('bb7').active_chat()
  H.truthy(new and new ~= old and new ~= current, 'a new chat is active')
  H.eq(#H.pane('chats'), 1, 'only it is listed: ' .. vim.inspect(H.pane('chats')))
  H.truthy(marked(), 'and marked')
end)
