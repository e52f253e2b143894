-- What a send says before its answer, in Neovim: the invisible characters of a context
-- file refreshed since its add (which named nothing) come as a warning notification
-- naming file, line and code point.
local test, H = ...
local L = vim.log.levels

test('a send names the invisible characters of a refreshed context file', function()
  local proj = H.project({ ['a.rs'] = 'fn main() {}\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add a.rs')
  H.expect_note('BB-7: Added a.rs', L.INFO)
  H.script({ text = 'Clean.' })
  require('bb7').send('read this')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'first answer')
  H.eq(H.note('invisible characters'), nil, 'a clean context gives no warning')

  -- Changed on disk and refreshed: the refresh itself names nothing.
  vim.fn.writefile({ 'fn main() {}', 'let admin = "user\u{202E}";', '' }, proj .. '/a.rs', 'b')
  require('bb7.client').request_sync('sync_context', { path = 'a.rs' })
  H.notes = {}
  H.script({ text = 'Noted.' })
  require('bb7').send('and now?')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'second answer')
  H.expect_note('a.rs:2: invisible characters: U+202E (right-to-left override)', L.WARN)
end)
