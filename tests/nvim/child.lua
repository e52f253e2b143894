-- One test in a fresh Neovim: nvim --headless -u NONE -i NONE -l child.lua FILE NAME.
-- Exits 0 when the test passes; prints the error and exits 1 otherwise.

local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
vim.opt.rtp:prepend(root)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('runtime plugin/bb7.lua')

local H = dofile(root .. '/tests/nvim/helpers.lua')
package.loaded['helpers'] = H
local file, name = _G.arg[1], _G.arg[2]
local fn
assert(loadfile(file))(function(n, f)
  if n == name then
    fn = f
  end
end, H)
if not fn then
  io.stdout:write('no test named ' .. tostring(name) .. ' in ' .. tostring(file) .. '\n')
  vim.fn.delete(vim.fn.fnamemodify(vim.fn.tempname(), ':h'), 'rf')
  os.exit(1)
end
-- Tests that check setup() itself call it again with their own options.
require('bb7').setup({ binary = H.bin })
local ok, err = xpcall(fn, debug.traceback)
require('bb7.client').stop()
if not ok then
  io.stdout:write(tostring(err) .. '\n')
end
-- os.exit skips Neovim's own cleanup, which removes its temporary folder (where
-- tempname() put the test's projects): remove it here.
vim.fn.delete(vim.fn.fnamemodify(vim.fn.tempname(), ':h'), 'rf')
os.exit(ok and 0 or 1)
