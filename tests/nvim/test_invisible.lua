-- Invisible characters in Neovim: :BB7Add and attachments warn with file, line and
-- code points; the inline review draws a hunk's hidden characters as <U+202E> and
-- says the hunk adds them.
local test, H = ...
local L = vim.log.levels

--- The review's virtual lines in `buf`, each as its whole text, and the hints.
local function drawn(buf)
  local ns = require('bb7.review').ns
  local virt, hints = {}, {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local d = m[4]
    for _, l in ipairs(d.virt_lines or {}) do
      virt[#virt + 1] = vim.trim(table.concat(vim.tbl_map(function(c) return c[1] end, l)))
    end
    for _, c in ipairs(d.virt_text or {}) do
      hints[#hints + 1] = c[1]
    end
  end
  return virt, hints
end

test(':BB7Add warns about invisible characters, not about an emoji joiner', function()
  H.project({
    ['rules.md'] = 'be nice\nuser\u{202E} admin\n',
    ['ok.md'] = 'family \u{1F468}\u{200D}\u{1F469}\n',
  })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add ok.md')
  H.expect_note('BB-7: Added ok.md', L.INFO)
  H.eq(H.note('invisible characters'), nil, 'no warning for a ZWJ inside an emoji')
  vim.cmd('BB7Add rules.md')
  H.expect_note('BB-7: rules.md:2: invisible characters: U+202E (right-to-left override)', L.WARN)
end)

test('invisible characters in the review are drawn as <U+...>', function()
  local proj = H.project({ ['f.txt'] = 'one\ntwo\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add f.txt')
  H.output(proj, 'f.txt', 'one\ntwo\u{200B}\u{2066}\n')
  vim.cmd('BB7Review f.txt')
  local virt, hints = drawn(vim.api.nvim_get_current_buf())
  H.eq(virt, { 'two<U+200B><U+2066>' }, 'the added line with visible markers')
  local hint = table.concat(hints, '')
  H.eq(hint:find('adds invisible characters: U+200B U+2066', 1, true) ~= nil, true, 'the hint names them: ' .. hint)
end)
