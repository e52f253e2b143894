-- Taking the model's version of one hunk that conflicts with the user's edits (the
-- review's `take` key). The binary keeps such a hunk pending (it touches lines the user
-- changed), so the plugin writes it: the lines of the file that the hunk and the
-- user's overlapping edits cover are replaced by the model's version of them, after a
-- confirmation naming those lines, and the file is written. The file on disk then
-- holds the hunk, which the binary treats as applied (docs/PROTOCOL.md, `on_disk`):
-- review_apply records it as accepted, with a reason saying it was taken by hand, so
-- it leaves the review and the model reads what happened.

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}

local function lines_of(text)
  local l = vim.split(text, '\n', { plain = true })
  if l[#l] == '' then
    table.remove(l)
  end
  return l
end

--- Where the hunk lands in the buffer and what replaces it.
---@param snapshot string the text the model saw
---@param current string the buffer's text
---@param hunk table a review_get hunk
---@param added string[] its added lines
---@return integer first 1-based buffer line of the region
---@return integer count lines of the region
---@return string[] replacement the model's version of the region
function M.region(snapshot, current, hunk, added)
  local snap = lines_of(snapshot)
  -- The hunk's snapshot lines; an insertion is the empty range after old_start.
  local h1 = hunk.old_lines > 0 and hunk.old_start or hunk.old_start + 1
  local h2 = h1 + hunk.old_lines - 1
  local u1, u2 = h1, h2
  local edits = vim.diff(snapshot, current, { result_type = 'indices' }) or {}
  local grow = 0
  local shift = 0
  for _, e in ipairs(edits) do
    local a, ac, bc = e[1], e[2], e[4]
    -- An insertion after line a covers the gap between a and a + 1.
    local e1, e2 = ac == 0 and a + 1 or a, ac == 0 and a or a + ac - 1
    if e2 < u1 then
      shift = shift + bc - ac
    elseif e1 <= u2 then
      u1, u2 = math.min(u1, e1), math.max(u2, e2)
      grow = grow + bc - ac
    end
  end
  local replacement = {}
  for l = u1, h1 - 1 do
    table.insert(replacement, snap[l])
  end
  vim.list_extend(replacement, added)
  for l = h2 + 1, u2 do
    table.insert(replacement, snap[l])
  end
  return u1 + shift, (u2 - u1 + 1) + grow, replacement
end

--- Asks, then takes the model's version of `dh` (a drawn hunk) in `buf`.
---@param buf integer
---@param path string project-relative
---@param dh table the drawn hunk ({hunk, first, last, conflict})
---@param added string[] the hunk's added lines
---@param on_done fun(): boolean redraws the review; whether hunks are left
function M.take(buf, path, dh, added, on_done)
  local snap = api.get_context_file({ path = path })
  if not snap then
    return util.say('No snapshot of ' .. path, vim.log.levels.ERROR)
  end
  local first, count, replacement = M.region(snap.content, util.buffer_text(buf), dh.hunk, added)
  local where = count == 0 and ('after line ' .. (first - 1)) or count == 1 and ('line ' .. first) or ('lines ' .. first .. '-' .. (first + count - 1))
  local question = string.format("Replace %s of %s (your edit there) with the model's version?", where, path)
  if vim.fn.confirm(question, '&Yes\n&No', 2) ~= 1 then
    return
  end
  vim.api.nvim_buf_set_lines(buf, first - 1, first - 1 + count, false, replacement)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent write')
  end)
  local r = api.review_get({ path = path })
  local file = r and r.files and r.files[1]
  local _, err = api.review_apply({
    path = path,
    accept = { dh.hunk.hunk_id },
    reject = {},
    reasons = { [dh.hunk.hunk_id] = "taken by hand: the model's version replaced my conflicting edit in the file" },
    expected_disk_hash = file and file.disk_hash or vim.NIL,
  })
  local pending = on_done()
  if err then
    util.say("Wrote the model's version, but the review did not record it: " .. err.message, vim.log.levels.WARN)
  else
    util.say("Took the model's version of " .. where .. ' in ' .. path .. (pending and '' or ('. Review of ' .. path .. ' done')))
  end
end

return M
