-- The main job, end to end, on a copy of this repository's src/ tree: :BB7Init,
-- :BB7NewChat, :BB7Add of two files (one as a section), a question, a streamed answer
-- with reasoning and an edit_file call, status M, the diff, :BB7Apply, and checks that
-- the file changed exactly as the edit says and its buffer reloaded.
--
-- Against the fake model the edit is scripted; with OPENROUTER_API_KEY set, the same
-- steps run against OpenRouter and the check is that the applied file equals the
-- model's output.
--
-- run(H, log) returns a table of what it saw; it raises on the first failure.

return function(H, log)
  log = log or function() end
  local real = (vim.env.OPENROUTER_API_KEY or '') ~= ''
  local config = real and { base_url = 'https://openrouter.ai/api/v1', api_key = vim.NIL, default_model = vim.env.BB7_MODEL or 'anthropic/claude-sonnet-4' } or {}
  local proj = H.project({}, config)
  vim.fn.system({ 'cp', '-r', H.root .. '/src', proj .. '/src' })
  H.truthy(vim.v.shell_error == 0, 'copied src/')
  log('project: ' .. proj .. (real and ' (OpenRouter)' or ' (fake model)'))

  vim.cmd('BB7Init')
  H.expect_note('BB-7: Initialized in ')
  vim.cmd('BB7NewChat')
  H.expect_note('BB-7: New chat')
  local target = 'src/tokens.rs'
  vim.cmd('edit ' .. target)
  vim.cmd('BB7Add')
  H.expect_note('BB-7: Added ' .. target)
  vim.cmd('edit src/error.rs')
  vim.cmd('1,12BB7Add')
  H.expect_note('BB-7: Added src/error.rs:1-12')
  log('context: ' .. target .. ', src/error.rs:1-12')

  local before = H.read(proj .. '/' .. target)
  local old_line
  for line in before:gmatch('[^\n]+') do
    if line:match('^pub fn ') then
      old_line = line
      break
    end
  end
  H.truthy(old_line, 'a pub fn line in ' .. target)
  local new_text = '/// Used by the token estimates of every request.\n' .. old_line
  if not real then
    H.script({
      thinking = 'The user wants a doc line above the first public function.',
      text = 'I added a doc line above `' .. old_line .. '`.',
      tool_calls = {
        { name = 'edit_file', args = { path = target, edits = { { old_string = old_line, new_string = new_text } } } },
      },
      chunk_delay_ms = 5,
    })
  end

  vim.cmd('BB7')
  local question = 'In ' .. target .. ', add the doc comment line "/// Used by the token estimates of every request." directly above the line `' .. old_line .. '`. Change nothing else; use edit_file.'
  local rid = require('bb7').send(question)
  H.truthy(rid, 'send started')
  H.wait(function() return H.note('Response received') ~= nil or H.note('Failed') ~= nil or H.note('could not be applied') ~= nil end, real and 180000 or 20000, 'the response')
  H.expect_note('Response received: 1 file changed')
  local preview = table.concat(H.pane('preview'), '\n')
  if not real then
    H.truthy(preview:find('I added a doc line', 1, true), 'streamed text in the preview: ' .. preview)
    H.truthy(preview:find('│ The user wants', 1, true), 'reasoning in the preview')
  end
  log('answer streamed; preview has ' .. #H.pane('preview') .. ' lines')

  local files = table.concat(H.pane('files'), '\n')
  H.truthy(files:find('M   ' .. target, 1, true), 'status M in the files pane: ' .. files)
  H.truthy(files:find('S   src/error.rs:1-12', 1, true), 'section status S')
  log('files pane:\n' .. files)

  vim.cmd('BB7Diff ' .. target)
  local diff = H.pane('preview')
  H.truthy(vim.tbl_contains(diff, '+/// Used by the token estimates of every request.'), 'diff shows the added line: ' .. table.concat(diff, '\n'))
  log('diff:\n' .. table.concat(diff, '\n'))

  local output = require('bb7.client').request_sync('get_output_file', { path = target }).content
  vim.cmd('BB7Apply')
  H.expect_note('BB-7: Applied 1 file')
  local after = H.read(proj .. '/' .. target)
  if real then
    H.eq(after, output:gsub('\n$', ''), 'applied file equals the model output')
  else
    local want = before:gsub(vim.pesc(old_line), (new_text:gsub('%%', '%%%%')), 1)
    H.eq(after, want, 'file changed exactly as the edit says')
  end
  local buf = vim.fn.bufnr(proj .. '/' .. target)
  H.eq(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'), after:gsub('\n$', ''), 'buffer reloaded')
  local files_after = table.concat(H.pane('files'), '\n')
  H.truthy(files_after:find('    ' .. target, 1, true), 'status cleared after apply: ' .. files_after)
  log('applied; ' .. target .. ' on disk now has the new line')
  return { project = proj, diff = diff }
end
