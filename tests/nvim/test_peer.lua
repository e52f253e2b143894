-- One chat, many front-ends: with the chat open in Neovim, a `bb7` command in a shell
-- beside it is served by Neovim's bb7 (its holder socket), and the panes and buffers
-- show what the command did (`peer_change`).
local test, H = ...

test('a bb7 command beside Neovim is served by it and shows in the panes', function()
  local proj = H.project({ ['a.txt'] = 'alpha\n', ['b.txt'] = 'bee\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.txt')
  vim.cmd('BB7')
  local files = function()
    return table.concat(H.pane('files'), '\n')
  end
  H.truthy(not files():find('b.txt', 1, true), 'b.txt not in the Files pane yet')
  local r = vim.system({ H.bin, 'add', 'b.txt' }, { cwd = proj, text = true }):wait(30000)
  H.eq(r.code, 0, 'bb7 add beside Neovim: ' .. (r.stderr or ''))
  H.wait(function() return files():find('b.txt', 1, true) ~= nil end, 10000, 'b.txt in the Files pane')
end)
