-- Taking the model's version of one hunk that conflicts with the user's edits (the
-- review's `take` key). The binary keeps such a hunk pending (it touches lines the user
-- changed); after a confirmation naming the lines that the hunk and the user's
-- overlapping edits cover, review_apply's `take` has the binary replace them by the
-- model's version (docs/PROTOCOL.md, `review_apply`), records it as accepted with a
-- reason saying it was taken by hand, and puts it in the answer's checkpoint.

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

-- A missing final newline is no change (as the binary compares the texts).
local function with_nl(text)
  return text:sub(-1) == '\n' and text or (text .. '\n')
end

--- A review hunk as a 0-based half-open range of snapshot lines and its new lines.
---@param hunk table a review_get hunk
---@param added string[]
---@return {s: integer, e: integer, lines: string[], id: string}
local function model_edit(hunk, added)
  -- old_start is 1-based for a replacement, the line before the gap for an insertion.
  local s = hunk.old_lines > 0 and hunk.old_start - 1 or hunk.old_start
  return { s = s, e = s + hunk.old_lines, lines = added, id = hunk.hunk_id }
end

--- Where taking the model's version of a hunk lands in the buffer and what replaces
--- it. The region is the hunk grown by every edit that conflicts with it, directly or
--- through a chain, by the rule the binary uses to call a hunk held on disk or in
--- conflict (docs/PROTOCOL.md, `on_disk`): two edits of the snapshot conflict when their
--- line ranges overlap, or one inserts at the other's first line or inside it. The
--- user's edits in the region are replaced, and the model's hunks in it (the one
--- taken and any other it is chained to) are applied to the snapshot's lines there, so
--- the file then holds those hunks exactly, once.
---@param snapshot string the text the model saw
---@param current string the buffer's text
---@param hunk table a review_get hunk
---@param added string[] its added lines
---@param others {hunk: table, added: string[]}[]? the file's other pending hunks
---@return integer first 1-based buffer line of the region
---@return integer count lines of the region in the buffer
---@return string[] replacement the model's version of the region
---@return string[] ids the hunks the replacement holds (the taken one first)
function M.region(snapshot, current, hunk, added, others)
  local snap = lines_of(snapshot)
  local user = {}
  for _, e in ipairs(vim.diff(with_nl(snapshot), with_nl(current), { result_type = 'indices' }) or {}) do
    local a, ac, bc = e[1], e[2], e[4]
    -- vim.diff: a count of 0 means "after line a"; else the range starts at line a.
    local s = ac == 0 and a or a - 1
    table.insert(user, { s = s, e = s + ac, delta = bc - ac })
  end
  local model = { model_edit(hunk, added) }
  for _, o in ipairs(others or {}) do
    if o.hunk.hunk_id ~= hunk.hunk_id then
      table.insert(model, model_edit(o.hunk, o.added))
    end
  end
  -- The group: the hunk, the user's edits touching it, the model's hunks touching
  -- those, and so on (the binary's union of touching edits of the two sides).
  -- Two edits conflict (as the binary decides it): their ranges overlap, or one is an
  -- insertion at the other's start or strictly inside it.
  local function touch(x, y)
    if x.s < y.e and y.s < x.e then
      return true
    end
    local x_ins, y_ins = x.s == x.e, y.s == y.e
    return (x.s == y.s and (x_ins or y_ins)) or (x_ins and y.s < x.s and x.s < y.e) or (y_ins and x.s < y.s and y.s < x.e)
  end
  local in_user, in_model = {}, { [1] = true }
  local grew = true
  while grew do
    grew = false
    for i, u in ipairs(user) do
      for j, m in ipairs(model) do
        if in_model[j] ~= in_user[i] and touch(u, m) then
          in_user[i], in_model[j], grew = true, true, true
        end
      end
    end
  end
  local gs, ge = model[1].s, model[1].e
  for i, u in ipairs(user) do
    if in_user[i] then
      gs, ge = math.min(gs, u.s), math.max(ge, u.e)
    end
  end
  for j, m in ipairs(model) do
    if in_model[j] then
      gs, ge = math.min(gs, m.s), math.max(ge, m.e)
    end
  end
  local shift, grow = 0, 0
  for i, u in ipairs(user) do
    if in_user[i] then
      grow = grow + u.delta
    elseif u.e <= gs then
      shift = shift + u.delta
    end
  end
  local taken = {}
  for i, m in ipairs(model) do
    if in_model[i] then
      table.insert(taken, m)
    end
  end
  table.sort(taken, function(x, y)
    return x.s < y.s
  end)
  local replacement, pos = {}, gs
  for _, m in ipairs(taken) do
    for l = pos + 1, m.s do
      table.insert(replacement, snap[l])
    end
    vim.list_extend(replacement, m.lines)
    pos = m.e
  end
  for l = pos + 1, ge do
    table.insert(replacement, snap[l])
  end
  local ids = { hunk.hunk_id }
  for _, m in ipairs(taken) do
    if m.id ~= hunk.hunk_id then
      table.insert(ids, m.id)
    end
  end
  return gs + shift + 1, (ge - gs) + grow, replacement, ids
end

--- Asks, then takes the model's version of `dh` (a drawn hunk) in `buf`.
---@param buf integer
---@param path string project-relative
---@param dh table the drawn hunk ({hunk, first, last, conflict})
---@param added string[] the hunk's added lines
---@param on_done fun(): boolean redraws the review; whether hunks are left
function M.take(buf, path, dh, added, on_done)
  -- A new file the model wrote over one of yours (`!A`) has no snapshot: the model
  -- saw no file there, and its version replaces the whole of yours.
  local snap = dh.replaces and { content = '' } or api.get_context_file({ path = path })
  if not snap then
    return util.say('No snapshot of ' .. path, vim.log.levels.ERROR)
  end
  local others = {}
  for _, o in ipairs(dh.others or {}) do
    table.insert(others, { hunk = o.hunk, added = o.added })
  end
  local first, count, replacement, ids = M.region(snap.content, util.buffer_text(buf), dh.hunk, added, others)
  local where = count == 0 and ('after line ' .. (first - 1)) or count == 1 and ('line ' .. first) or ('lines ' .. first .. '-' .. (first + count - 1))
  local also = #ids > 1 and string.format(' (and %d more of its hunks chained to your edit there)', #ids - 1) or ''
  local question = string.format("Replace %s of %s (your edit there) with the model's version%s?", where, path, also)
  if dh.replaces then
    question = string.format("Replace the whole of %s with the model's new file?", path)
  end
  if vim.fn.confirm(question, '&Yes\n&No', 2) ~= 1 then
    return
  end
  -- The binary writes the take (review_apply's `take`), so it is in the answer's
  -- checkpoint like every accept: rolling the answer back undoes it too. Unsaved edits
  -- are the user's and saved first, so the checkpoint's "before" holds them.
  if vim.bo[buf].modified then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent write')
    end)
  end
  local r = api.review_get({ path = path })
  local file = r and r.files and r.files[1]
  local reasons = {}
  for _, id in ipairs(ids) do
    reasons[id] = "taken by hand: the model's version replaced my conflicting edit in the file"
  end
  local applied, err = api.review_apply({
    path = path,
    accept = {},
    reject = {},
    take = ids,
    reasons = reasons,
    expected_disk_hash = file and file.disk_hash or vim.NIL,
  })
  util.reload(buf)
  local pending = on_done()
  local recorded = applied and vim.tbl_contains(applied.applied or {}, dh.hunk.hunk_id)
  if err then
    util.say("Could not take the model's version of " .. where .. ' in ' .. path .. ': ' .. err.message, vim.log.levels.WARN)
  elseif not recorded then
    util.say("Could not take the model's version of " .. where .. ' in ' .. path .. ' exactly; the file is unchanged. Edit it by hand, or reject the hunk', vim.log.levels.WARN)
  else
    util.say("Took the model's version of " .. where .. ' in ' .. path .. (pending and '' or ('. Review of ' .. path .. ' done')))
  end
end

return M
