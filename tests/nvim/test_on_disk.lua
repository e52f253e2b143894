-- The same change on both sides is not a conflict: a hunk the file on disk already
-- holds (typed by the user, or taken with gY) is applied, not pending, and the review
-- records it as accepted.
local test, H = ...
local L = vim.log.levels

--- The hunk decisions in the chat's history: { {action, hunk_id, reason}, … }.
local function decisions()
  local chat = require('bb7.client').request_sync('chat_get', {})
  local out = {}
  for _, m in ipairs(chat.messages) do
    for _, p in ipairs(m.parts or {}) do
      if p.action == 'UserAcceptHunk' or p.action == 'UserRejectHunk' then
        table.insert(out, { p.action, p.hunk_id, p.reason })
      end
    end
  end
  return out
end

local function first_rows(buf)
  return vim.tbl_map(function(dh)
    return dh.first + 1
  end, require('bb7.review').hunks(buf))
end

test("on disk: gY takes a conflicting hunk and records it as accepted", function()
  local proj = H.chat_with_output({ ['a.txt'] = 'a1\na2\na3\na4\na5\na6\n' }, 'a.txt', { ['a.txt'] = 'A1\na2\na3\na4\nA5\na6\n' })
  vim.fn.writefile({ 'a1', 'a2', 'a3', 'a4', 'mine', 'a6' }, proj .. '/a.txt')
  vim.cmd('BB7Review a.txt')
  local buf = vim.api.nvim_get_current_buf()
  local id = require('bb7.review').hunks(buf)[2].hunk.hunk_id
  local real = vim.fn.confirm
  vim.fn.confirm = function() return 1 end
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  H.feed('gY')
  vim.fn.confirm = real
  H.expect_note("Took the model's version of line 5 in a.txt", L.INFO)
  H.eq(vim.fn.readfile(proj .. '/a.txt'), { 'a1', 'a2', 'a3', 'a4', 'A5', 'a6' }, "the model's line")
  H.eq(first_rows(buf), { 1 }, 'the other hunk is still pending')
  local d = decisions()
  H.eq(#d, 1, 'one decision: ' .. vim.inspect(d))
  H.eq({ d[1][1], d[1][2] }, { 'UserAcceptHunk', id }, 'recorded as accepted')
  H.truthy(d[1][3] and d[1][3]:find('by hand', 1, true), 'with the reason: ' .. tostring(d[1][3]))
  -- The snapshot holds the taken line, so the model reads it as applied.
  local snap = require('bb7.client').request_sync('get_context_file', { path = 'a.txt' })
  H.eq(snap.content, 'a1\na2\na3\na4\nA5\na6\n', 'snapshot')
end)

test('on disk: typing the model\'s change and saving takes the hunk out of the review', function()
  local proj = H.chat_with_output({ ['b.txt'] = 'b1\nb2\nb3\nb4\nb5\n' }, 'b.txt', { ['b.txt'] = 'B1\nb2\nb3\nb4\nB5\n' })
  vim.cmd('BB7Review b.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.eq(first_rows(buf), { 1, 5 }, 'two hunks drawn')
  -- The user types the model's last line themselves and saves.
  vim.api.nvim_buf_set_lines(buf, 4, 5, false, { 'B5' })
  vim.cmd('silent write')
  H.eq(first_rows(buf), { 1 }, 'the typed hunk is no longer drawn')
  local f = require('bb7.api').review_get({ path = 'b.txt' }).files[1]
  local held = vim.tbl_filter(function(h) return h.on_disk end, f.hunks)
  H.eq(#held, 1, 'review_get says the disk holds it')
  H.eq(held[1].state, 'accepted', 'and that it is not pending')
  -- Typing the other one too ends the review: both are recorded, nothing is left.
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'B1' })
  vim.cmd('silent write')
  H.expect_note('b.txt already holds the model\'s changes: recorded as applied. Review of b.txt done')
  H.eq(first_rows(buf), {}, 'nothing drawn')
  H.eq(#decisions(), 2, 'both recorded')
  for _, d in ipairs(decisions()) do
    H.eq(d[1], 'UserAcceptHunk', 'accepted')
  end
  local rows = require('bb7.client').request_sync('get_file_statuses', {}).files
  H.eq({ rows[1].status, rows[1].has_output }, { '', false }, 'no change left for b.txt')
  H.eq(vim.fn.readfile(proj .. '/b.txt'), { 'B1', 'b2', 'b3', 'b4', 'B5' }, 'the file as typed')
end)
