-- Driver for scripts/demo: runs the main job (tests/nvim/main_job.lua) in headless
-- Neovim and prints each step. Uses the fake model, or OpenRouter when
-- OPENROUTER_API_KEY is set.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.rtp:prepend(root)
vim.opt.swapfile = false
vim.cmd('runtime plugin/bb7.lua')
local H = dofile(root .. '/tests/nvim/helpers.lua')
require('bb7').setup({ binary = H.bin })
local function log(msg)
  io.stdout:write(msg .. '\n')
end
local ok, err = xpcall(function()
  dofile(root .. '/tests/nvim/main_job.lua')(H, log)
end, debug.traceback)
require('bb7.client').stop()
if ok then
  log('main job: OK')
  os.exit(0)
end
log('main job FAILED: ' .. tostring(err))
os.exit(1)
