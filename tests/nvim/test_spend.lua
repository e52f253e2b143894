-- The day's spend beside the chat's total in the Preview title: every project's turns
-- of today (~/.bb7/usage.csv), as the binary sums them, after each answer.
local test, H = ...

test('spend: the Preview title shows the day beside the chat total', function()
  local _, home = H.project({})
  -- Another project spent $0.0040 today.
  vim.fn.mkdir(home .. '/.bb7', 'p')
  vim.fn.writefile({ os.date('%Y-%m-%d') .. 'T08:00:00,/elsewhere,m,1,1,0,0.004000' }, home .. '/.bb7/usage.csv')
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat Spend')
  vim.cmd('BB7')
  local function title()
    return require('bb7.ui.render').preview_title()
  end
  -- The fake's answers cost $0.0015 each.
  H.script({ text = 'First.' })
  require('bb7').send('one')
  H.wait(function() return title():find('today $0.0055', 1, true) ~= nil end, 10000, 'the day after one answer: ' .. title())
  H.truthy(not title():find('chat $', 1, true), 'no chat total after its first answer: ' .. title())
  H.notes = {}
  H.script({ text = 'Second.' })
  require('bb7').send('two')
  H.wait(function() return title():find('chat $0.0030 · today $0.0070', 1, true) ~= nil end, 10000, 'both: ' .. title())
end)
