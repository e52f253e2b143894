-- Runs the plugin tests in headless Neovim against the real binary:
--   nvim --headless -u NONE -i NONE -l tests/nvim/run.lua [pattern]
-- Every test runs in a fresh child Neovim (tests/nvim/child.lua), so no test sees
-- another's plugin state. Ends with the line "N passed, M failed".

local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
local nvim = vim.v.progpath
local pattern = _G.arg and _G.arg[1]

-- Collect the names without running anything: test files only call test(name, fn).
local tests = {}
for _, file in ipairs(vim.fn.glob(root .. '/tests/nvim/test_*.lua', false, true)) do
  local chunk = assert(loadfile(file))
  chunk(function(name)
    if not pattern or name:find(pattern, 1, true) then
      table.insert(tests, { file = file, name = name })
    end
  end, {})
end

-- Every child Neovim gets a TMPDIR of its own (in this run's temporary folder: paths
-- as short as a user's, for the tests of shortened names), so that what a test leaves
-- in it (Neovim's nvim.$USER/ folders, a grandchild's) is seen and charged to that
-- test: a leftover fails the test that left it.
-- The processes a test started that outlive its Neovim, found by the TMPDIR they
-- inherited (Linux's /proc; where there is none, none are found).
local function survivors(dir)
  local found = {}
  local needle = '\0TMPDIR=' .. dir .. '\0'
  for _, path in ipairs(vim.fn.glob('/proc/[0-9]*/environ', false, true)) do
    local f = io.open(path, 'rb')
    local text = f and f:read('*a')
    if f then
      f:close()
    end
    if text and ('\0' .. text):find(needle, 1, true) then
      table.insert(found, tonumber(path:match('^/proc/(%d+)/')))
    end
  end
  return found
end

-- Waits for what the test left running to end (a server whose stdin closed with its
-- Neovim takes a moment), counting polls; then kills what is left and names it.
local function reap(dir)
  local left = survivors(dir)
  -- 600 polls of 0.1 s: a hang guard; a loaded machine can take seconds to end them.
  for _ = 1, 600 do
    if #left == 0 then
      return nil
    end
    vim.wait(100)
    left = survivors(dir)
  end
  local names = {}
  for _, pid in ipairs(left) do
    local f = io.open('/proc/' .. pid .. '/cmdline', 'rb')
    table.insert(names, pid .. ' ' .. (f and f:read('*a'):gsub('%z', ' ') or ''))
    if f then
      f:close()
    end
    vim.uv.kill(pid, 'sigkill')
  end
  return names
end

local passed, failed = 0, 0
-- The failures again after the count, so a log cut in the middle still shows them.
local failures = {}
for _, t in ipairs(tests) do
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local r = vim.system({ nvim, '--headless', '-u', 'NONE', '-i', 'NONE', '-l', root .. '/tests/nvim/child.lua', t.file, t.name }, { text = true, env = { TMPDIR = dir } }):wait(300000)
  -- Only once nothing of the test runs are its leftovers all there to be seen.
  local running = reap(dir)
  local left = vim.fn.glob(dir .. '/nvim.*/*', false, true)
  if r.code == 0 and (r.signal or 0) == 0 and #left == 0 and not running then
    passed = passed + 1
    io.stdout:write('ok   ' .. t.name .. '\n')
  else
    failed = failed + 1
    local why = (r.signal or 0) ~= 0 and (' (killed by signal ' .. r.signal .. ')') or ''
    if running then
      why = why .. ' (left processes running, killed: ' .. table.concat(running, '; ') .. ')'
    end
    if #left > 0 then
      why = why .. ' (left temporary folders in $TMPDIR/nvim.*: ' .. table.concat(left, ' ') .. ')'
    end
    local report = 'FAIL ' .. t.name .. why .. '\n' .. (r.stdout or '') .. (r.stderr or '') .. '\n'
    io.stdout:write(report)
    table.insert(failures, report)
  end
  -- Removed whatever happened, so a run never leaves folders behind.
  vim.fn.delete(dir, 'rf')
end
vim.fn.delete(vim.fn.fnamemodify(vim.fn.tempname(), ':h'), 'rf')
io.stdout:write(string.format('%d passed, %d failed\n', passed, failed))
if #failures > 0 then
  io.stdout:write('\nThe failures again:\n' .. table.concat(failures))
end
os.exit(failed == 0 and 0 or 1)
