-- :BB7Export: the active chat through `bb7 export` into a new buffer, secrets redacted
-- in Markdown by default, JSON on request.
local test, H = ...

local KEY = 'sk-or-v1-' .. string.rep('0123456789abcdef', 4)

test('export: :BB7Export opens the chat as Markdown with secrets redacted, json on request', function()
  H.project({ ['a.txt'] = 'hello\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Shared')
  vim.cmd('BB7Add a.txt')
  H.script({ text = 'Noted.' })
  require('bb7').send('my key is ' .. KEY)
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'answer')
  local buf
  require('bb7.export').run('', function(b) buf = b end)
  H.wait(function() return buf ~= nil end, 20000, 'the export')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  H.truthy(text:find('# Shared', 1, true), 'the chat as Markdown: ' .. text)
  H.truthy(text:find('[REDACTED:openrouter_key]', 1, true), 'redacted: ' .. text)
  H.truthy(not text:find(KEY, 1, true), 'no key left')
  H.eq(vim.bo[buf].filetype, 'markdown')
  H.truthy(H.note('redacted 1 likely secret'), 'the count is said')
  buf = nil
  vim.cmd('BB7Export json')
  H.wait(function() return vim.bo.filetype == 'json' end, 20000, 'the JSON export')
  local doc = vim.json.decode(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n'))
  H.eq(doc.files['context/a.txt'], 'hello\n')
end)
