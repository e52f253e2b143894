-- The harness itself (tests/nvim/child.lua, tests/nvim/run.lua): a job that writes into
-- the test's temporary folder while it stops, as a terminated bb7 flushes its chats, is
-- waited for before the folder is removed, so it leaves nothing in $TMPDIR.
local test, H = ...

test('harness: a job still writing as it stops is waited for before the temporary folder goes', function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  -- On SIGTERM: a pause, then a folder made under the test's temporary folder (as
  -- create_dir_all would, were the folder already removed), then exit.
  local script = 'trap \'sleep 1; mkdir -p "$1/late/state"; exit 0\' TERM; echo up; while :; do sleep 1; done'
  local up = false
  local job = vim.fn.jobstart({ 'sh', '-c', script, 'sh', dir }, {
    on_stdout = function(_, data)
      up = up or vim.tbl_contains(data, 'up')
    end,
  })
  H.truthy(job > 0, 'job started')
  H.wait(function() return up end, 10000, 'the job to trap SIGTERM')
  -- Left running: child.lua stops it and waits; run.lua fails this test on a leftover.
end)
