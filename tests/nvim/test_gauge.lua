-- The context gauge: the Message title and the statusline component show the share of
-- the model's window the next send fills, as the binary words it, marked from 80%.
local test, H = ...

local function winbar(name)
  local w = require('bb7.ui.layout').win(name)
  return vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
end

test('gauge: the Message title and status() show ~N/window (P%), marked when nearly full', function()
  H.project({ ['notes.txt'] = string.rep('some words for the context\n', 200) }, { providers = { remote = { context_window = 1000000 } } })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Gauge')
  vim.cmd('BB7Add notes.txt')
  vim.cmd('BB7')
  H.wait(function() return winbar('input'):find('/1M (', 1, true) ~= nil end, 10000, 'the gauge in the title')
  local title = winbar('input')
  H.truthy(title:match('^ Message  ~[%d%.]+k?/1M %(%d+%%%)'), 'format: ' .. title)
  H.truthy(not title:find(' tok', 1, true), 'the gauge replaces the bare count: ' .. title)
  local status = require('bb7').status()
  H.truthy(status:match('^bb7 ~[%d%.]+k?/1M %(%d+%%%)$'), 'statusline: ' .. status)
end)

test('gauge: an unknown window shows the bare count and no percent', function()
  H.project({ ['notes.txt'] = 'a few words\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat NoWindow')
  vim.cmd('BB7Add notes.txt')
  vim.cmd('BB7')
  H.wait(function() return winbar('input'):find(' tok', 1, true) ~= nil end, 10000, 'the estimate in the title')
  H.truthy(not winbar('input'):find('%', 1, true), 'no percent guessed: ' .. winbar('input'))
  H.eq(require('bb7').status(), '', 'no gauge in the statusline')
end)
