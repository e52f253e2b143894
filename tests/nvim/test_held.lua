-- A chat held by another bb7 process: the Chats pane says so, <CR> opens it read-only,
-- and cf on one of its user messages forks it into a chat of this Neovim.
local test, H = ...

local function layout()
  return require('bb7.ui.layout')
end

test('a held chat is listed as held, opens read-only on <CR>, and cf forks it', function()
  local proj = H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Held one')
  local held = require('bb7').active_chat()
  H.script({ text = 'First answer.' })
  require('bb7').send('first question')
  H.wait(function() return H.note('Response received') ~= nil end, 20000, 'answer')
  vim.cmd('BB7NewChat Mine')
  -- Another bb7 process opens the first chat and keeps it.
  local other = H.hold_elsewhere(proj, held).job
  vim.cmd('BB7')
  require('bb7.ui.render').refresh()
  local row
  for i, l in ipairs(H.pane('chats')) do
    if l:find('Held one', 1, true) then
      row = i
      H.truthy(l:find('Held one (held)', 1, true), 'listed as held: ' .. l)
    end
  end
  H.truthy(row, 'listed: ' .. vim.inspect(H.pane('chats')))
  layout().focus('chats')
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  H.feed('<CR>')
  H.expect_note('shown read-only: cf on one of your messages forks it', vim.log.levels.WARN)
  local active = require('bb7.api').chat_active()
  H.eq(active.id, held, 'the held chat is shown')
  H.eq(active.read_only, true, 'read-only')
  local preview = H.pane('preview')
  H.truthy(vim.tbl_contains(preview, 'First answer.'), 'its messages shown: ' .. vim.inspect(preview))

  vim.api.nvim_set_current_win(layout().win('preview'))
  for i, l in ipairs(preview) do
    if l == 'first question' then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  H.feed('cf')
  H.eq(vim.api.nvim_buf_get_lines(layout().buf('input'), 0, -1, false), { 'first question' }, 'fork draft in the input')
  active = require('bb7.api').chat_active()
  H.truthy(active.id ~= held, 'the fork is active')
  H.eq(active.read_only, nil, 'and this Neovim holds it')
  vim.fn.jobstop(other)
end)
