-- Runs the plugin tests in headless Neovim against the real binary:
--   nvim --headless -u NONE -i NONE -l tests/nvim/run.lua [pattern]
-- and ends with the line "N passed, M failed".

local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
vim.opt.rtp:prepend(root)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('runtime plugin/bb7.lua')

local H = dofile(root .. '/tests/nvim/helpers.lua')
package.loaded['helpers'] = H
require('bb7').setup({ binary = H.bin })

local pattern = _G.arg and _G.arg[1]
local tests = {}
local function test(name, fn)
  table.insert(tests, { name = name, fn = fn })
end

for _, file in ipairs(vim.fn.glob(root .. '/tests/nvim/test_*.lua', false, true)) do
  local chunk = assert(loadfile(file))
  chunk(test, H)
end

local passed, failed = 0, 0
for _, t in ipairs(tests) do
  if not pattern or t.name:find(pattern, 1, true) then
    local ok, err = xpcall(t.fn, debug.traceback)
    if ok then
      passed = passed + 1
      io.stdout:write('ok   ' .. t.name .. '\n')
    else
      failed = failed + 1
      io.stdout:write('FAIL ' .. t.name .. '\n' .. tostring(err) .. '\n')
    end
  end
end
require('bb7.client').stop()
io.stdout:write(string.format('%d passed, %d failed\n', passed, failed))
os.exit(failed == 0 and 0 or 1)
