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
-- Every job the test started (bb7, a second bb7, the fake model) is stopped and waited
-- for first: a stopped bb7 flushes its chats into the project as it exits (src/project/
-- flush_queue.rs), and one still doing so after the folder below is removed makes its
-- folders again, left behind in $TMPDIR (tests/nvim/run.lua fails the test then).
local jobs = {}
for _, ch in ipairs(vim.api.nvim_list_chans()) do
  if ch.stream == 'job' then
    pcall(vim.fn.jobstop, ch.id)
    table.insert(jobs, ch.id)
  end
end
-- A hang guard only: a job still running after it is one run.lua's check reports.
vim.fn.jobwait(jobs, 20000)
-- os.exit skips Neovim's own cleanup, which removes its temporary folder (where
-- tempname() put the test's projects): remove it here.
vim.fn.delete(vim.fn.fnamemodify(vim.fn.tempname(), ':h'), 'rf')
os.exit(ok and 0 or 1)
