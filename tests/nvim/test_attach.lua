-- :BB7Add forms that attach editor state: diagnostics, quickfix, gitdiff, cmd.
local test, H = ...
local L = vim.log.levels

local function entries()
  return require('bb7.client').request_sync('context_list', {}).files
end

local function content(path)
  return require('bb7.client').request_sync('get_context_file', { path = path }).content
end

test(':BB7Add diagnostics attaches the current buffer, % every buffer', function()
  H.project({ ['src/a.lua'] = 'local x = y\n', ['b.lua'] = 'return z\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local ns = vim.api.nvim_create_namespace('test')
  vim.cmd('edit b.lua')
  local b = vim.api.nvim_get_current_buf()
  vim.diagnostic.set(ns, b, { { lnum = 0, col = 7, severity = vim.diagnostic.severity.WARN, message = 'undefined global z', source = 'lua_ls' } })
  vim.cmd('edit src/a.lua')
  vim.cmd('BB7Add diagnostics')
  H.expect_note('BB-7: Nothing attached: no diagnostics in src/a.lua', L.WARN)
  vim.diagnostic.set(ns, 0, { { lnum = 0, col = 10, severity = vim.diagnostic.severity.ERROR, message = 'undefined global y', source = 'lua_ls', code = 'undefined-global' } })
  vim.cmd('BB7Add diagnostics')
  H.expect_note('BB-7: Attached diagnostics:src/a.lua', L.INFO)
  H.eq(content('diagnostics:src/a.lua'), 'src/a.lua:1:11: error: undefined global y [lua_ls undefined-global]\n', 'one buffer')
  vim.cmd('BB7Add diagnostics %')
  H.expect_note('BB-7: Attached diagnostics:all buffers', L.INFO)
  H.eq(content('diagnostics:all buffers'), 'b.lua:1:8: warning: undefined global z [lua_ls]\nsrc/a.lua:1:11: error: undefined global y [lua_ls undefined-global]\n', 'every buffer')
  local list = entries()
  H.eq(#list, 2, 'two attachments')
  H.eq(list[1].kind, 'diagnostics', 'kind')
  H.eq(list[1].readonly, true, 'read-only')
  -- Removed like a file, by its path.
  vim.cmd('BB7Remove diagnostics:src/a.lua')
  H.expect_note('BB-7: Removed diagnostics:src/a.lua', L.INFO)
  H.eq(#entries(), 1, 'one left')
end)

test(':BB7Add quickfix, gitdiff and cmd', function()
  local proj = H.project({ ['a.txt'] = 'one\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add quickfix')
  H.expect_note('BB-7: Nothing attached: the quickfix list is empty', L.WARN)
  vim.fn.setqflist({}, ' ', { title = 'make', items = { { filename = proj .. '/a.txt', lnum = 1, col = 2, text = 'bad thing', type = 'E' } } })
  vim.cmd('BB7Add quickfix')
  H.expect_note('BB-7: Attached quickfix:make', L.INFO)
  H.eq(content('quickfix:make'), 'a.txt:1:2: E: bad thing\n', 'quickfix text')

  local git = function(...)
    local r = vim.system({ 'git', '-c', 'user.name=t', '-c', 'user.email=t@t', ... }, { cwd = proj, text = true }):wait()
    H.eq(r.code, 0, 'git ' .. table.concat({ ... }, ' ') .. ': ' .. (r.stderr or ''))
  end
  git('init', '-q')
  git('add', 'a.txt')
  git('commit', '-q', '-m', 'first')
  vim.fn.writefile({ 'two' }, proj .. '/a.txt')
  vim.cmd('BB7Add gitdiff')
  H.expect_note('BB-7: Attached git_diff:git diff', L.INFO)
  local diff = content('git_diff:git diff')
  H.truthy(diff:find('-one\n+two\n', 1, true), 'the diff: ' .. diff)
  vim.cmd('BB7Add gitdiff HEAD')
  H.expect_note('BB-7: Attached git_diff:git diff HEAD', L.INFO)

  vim.cmd('BB7Add cmd echo out; echo err >&2; exit 3')
  H.expect_note('BB-7: Attached command_output:echo out; echo err >&2; exit 3 (exit 3)', L.INFO)
  H.eq(content('command_output:echo out; echo err >&2; exit 3'), 'out\nerr\n', 'stdout and stderr')
  local list = entries()
  local last = list[#list]
  H.eq(last.meta.exit_status, 3, 'exit status in meta')
  H.eq(last.meta.command, 'echo out; echo err >&2; exit 3', 'command in meta')

  -- Completion offers the forms beside files.
  local got = vim.fn.getcompletion('BB7Add ', 'cmdline')
  for _, f in ipairs({ 'diagnostics', 'quickfix', 'gitdiff', 'cmd', 'a.txt' }) do
    H.truthy(vim.tbl_contains(got, f), 'completes ' .. f .. ': ' .. vim.inspect(got))
  end
  H.eq(vim.fn.getcompletion('BB7Add diagnostics ', 'cmdline'), { '%' }, 'after diagnostics')
end)

test(':BB7EditInstructions rules names the rules files included and opens the first', function()
  local proj = H.project({ ['AGENTS.md'] = 'Use tabs.\n', ['CLAUDE.md'] = 'Use spaces.\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7EditInstructions rules')
  H.expect_note('BB-7: Rules files included: AGENTS.md', L.INFO)
  H.eq(vim.api.nvim_buf_get_name(0), proj .. '/AGENTS.md', 'the rules file opened')
  vim.fn.delete(proj .. '/AGENTS.md')
  vim.fn.delete(proj .. '/CLAUDE.md')
  H.notes = {}
  vim.cmd('BB7EditInstructions rules')
  H.expect_note('BB-7: No rules file is included', L.WARN)
end)

test(':BB7Add on an image file adds it as an image the binary reads', function()
  local proj = H.project({})
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  local f = assert(io.open(proj .. '/shot.png', 'wb'))
  f:write('\137PNG\r\n\26\n\0\0\0\rIHDR\0\0\0\2\0\0\0\2\8\6\0\0\0')
  f:close()
  vim.cmd('BB7Add shot.png')
  H.expect_note('BB-7: Added image:shot.png', L.INFO)
  local e = entries()[1]
  H.eq(e.path, 'image:shot.png', 'path')
  H.eq(e.kind, 'image', 'kind')
  H.eq(e.meta.width, 2, 'width from the file')
end)

test('an attachment is a row of the Files pane', function()
  H.project({ ['a.txt'] = 'one\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add cmd echo hi')
  H.expect_note('BB-7: Attached command_output:echo hi (exit 0)', L.INFO)
  vim.cmd('BB7')
  H.wait(function()
    return table.concat(H.pane('files'), '\n'):find('output:echo hi', 1, true) ~= nil
  end, 5000, 'the attachment listed in Files: ' .. table.concat(H.pane('files'), '\n'))
end)
