-- The inline review: the model's pending hunks drawn in the real file buffer with
-- extmarks, decided one by one where they are (docs/PROTOCOL.md, review_get and
-- review_apply). The buffer always holds the file as it is on disk: the lines a hunk
-- removes are highlighted and carry a sign, the lines it adds are shown as virtual
-- lines right below them; a hunk that touches your own edits is marked as a conflict.
--   ga accept the hunk under the cursor   gr reject it (asks for a reason)
--   gA / gX accept / reject every hunk     ]h / [h next / previous hunk, across files
--   gY take the model's version of a hunk that conflicts with your edits (asks first)
-- Accepted hunks are merged into the file on disk by the binary (your other edits
-- stay) and the buffer is reloaded.

local api = require('bb7.api')
local config = require('bb7.config')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

M.ns = vim.api.nvim_create_namespace('bb7_review')

---@class bb7.DrawnHunk
---@field hunk table the review_get hunk
---@field first integer first buffer row (0-based) the hunk covers
---@field last integer last buffer row (0-based)
---@field conflict boolean it touches lines changed since the snapshot
---@field above integer? its new lines are virtual lines above the first line (this many)
---@field replaces boolean? the model's new file replaces the whole file on disk (`!A`)

---@type table<integer, {path: string, file: table, hunks: bb7.DrawnHunk[]}>
local drawn = {}
--- Buffers whose hunk is being taken with gY (the write must not redraw yet).
---@type table<integer, boolean>
local taking = {}

local function define_highlights()
  local function set(name, link)
    vim.api.nvim_set_hl(0, name, { link = link, default = true })
  end
  -- DiffDelete of the default colour scheme has no background; a removed line needs one.
  local dark = vim.o.background == 'dark'
  vim.api.nvim_set_hl(0, 'BB7ReviewDelete', { bg = dark and '#4c2327' or '#ffd8d8', default = true })
  vim.api.nvim_set_hl(0, 'BB7ReviewDeleteText', { bg = dark and '#7a2f36' or '#ffb0b0', default = true })
  set('BB7ReviewAdd', 'DiffAdd')
  set('BB7ReviewAddText', 'DiffText')
  set('BB7ReviewSignAdd', 'Added')
  set('BB7ReviewSignDelete', 'Removed')
  set('BB7ReviewSignChange', 'Changed')
  set('BB7ReviewConflict', 'DiagnosticError')
  set('BB7ReviewHint', 'Comment')
end

--- Pending hunks of a review_get file (hunks without `state` are pending).
local function pending(file)
  return vim.tbl_filter(function(h)
    return h.state == nil or h.state == 'pending'
  end, file.hunks or {})
end

--- Records the hunks of `file` that the file on disk already holds (the user typed
--- them, or took them with gY) when nothing else is pending: review_apply applies such
--- hunks without writing, so the output is done and the file leaves the review.
---@return boolean settled
local function settle(path, file)
  local held = vim.tbl_filter(function(h)
    return h.on_disk
  end, file.hunks or {})
  if #held == 0 or #pending(file) > 0 then
    return false
  end
  local r = api.review_apply({ path = path, accept = {}, reject = {}, expected_disk_hash = file.disk_hash or vim.NIL })
  if r and #r.applied > 0 then
    say(path .. ' already holds the model\'s changes: recorded as applied. Review of ' .. path .. ' done')
    require('bb7.ui.render').refresh()
  end
  return r ~= nil
end

--- Files with pending hunks, in review_get order.
---@return table[]
local function pending_files()
  local r = api.review_get({})
  return vim.tbl_filter(function(f)
    return #pending(f) > 0
  end, r and r.files or {})
end

--- Maps snapshot lines to buffer lines through the user's edits since the snapshot.
--- Returns a function from a 1-based snapshot line to (buffer line, inside an edit).
local function line_map(path, buf, file)
  if file.status ~= 'M' then
    return function(l)
      return l, false
    end
  end
  local snap = api.get_context_file({ path = path })
  local text = util.buffer_text(buf)
  if not snap or snap.content == text then
    return function(l)
      return l, false
    end
  end
  local edits = vim.diff(snap.content, text, { result_type = 'indices' }) or {}
  return function(l, count)
    local shift, touched = 0, false
    local last = l + math.max(count or 1, 1) - 1
    for _, e in ipairs(edits) do
      local a, ac, bc = e[1], e[2], e[4]
      local a_end = ac == 0 and a or a + ac - 1
      if (ac == 0 and a < l) or (ac > 0 and a_end < l) then
        shift = shift + bc - ac
      elseif ac > 0 and a <= last and a_end >= l then
        touched = true
      end
    end
    return l + shift, touched
  end
end

local function split_patch(patch)
  local removed, added = {}, {}
  for _, l in ipairs(vim.split(patch or '', '\n', { plain = true })) do
    local c = l:sub(1, 1)
    if c == '-' then
      table.insert(removed, l:sub(2))
    elseif c == '+' then
      table.insert(added, l:sub(2))
    end
  end
  return removed, added
end

-- The added lines of a hunk as wrapped virtual lines, the words that changed against
-- the removed line in the same place marked; the removed line in the buffer gets its
-- changed words marked too.
local function virt_added(buf, first, removed, added)
  local lines = require('bb7.review_lines')
  local width = lines.text_width(buf)
  local tabstop = vim.bo[buf].tabstop
  local out = {}
  for i, l in ipairs(added) do
    local ranges = {}
    local old = removed[i]
    if old then
      local old_ranges
      old_ranges, ranges = lines.word_diff(old, l)
      local row = first + i - 1
      if vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] == old then
        for _, r in ipairs(old_ranges) do
          vim.api.nvim_buf_set_extmark(buf, M.ns, row, r[1] - 1, { end_col = r[2], hl_group = 'BB7ReviewDeleteText', priority = 160 })
        end
      end
    end
    vim.list_extend(out, lines.virtual(l, ranges, width, 'BB7ReviewAdd', 'BB7ReviewAddText', tabstop))
  end
  return out
end

--- Draws the pending hunks of `file` into `buf`.
local function draw(buf, path, file)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local map = line_map(path, buf, file)
  local count = vim.api.nvim_buf_line_count(buf)
  local list = {}
  local keys = config.get().review_keys
  local hunks = pending(file)
  for i, h in ipairs(hunks) do
    local removed, added = split_patch(h.patch)
    -- Hidden characters the hunk adds are drawn as `<U+202E>` (lua/bb7/invisible.lua).
    added = vim.tbl_map(function(l) return require('bb7.invisible').visible(l, h.invisible) end, added)
    local start, touched = map(math.max(h.old_start, 1), h.old_lines)
    -- The binary compares the file on disk; unsaved edits in the buffer only it knows.
    local conflict = h.applies_cleanly == false or (vim.bo[buf].modified and touched)
    local first, last
    local sign = #removed == 0 and '+' or #added == 0 and '-' or '~'
    local sign_hl = conflict and 'BB7ReviewConflict' or ({ ['+'] = 'BB7ReviewSignAdd', ['-'] = 'BB7ReviewSignDelete', ['~'] = 'BB7ReviewSignChange' })[sign]
    if conflict then
      sign = '!'
    end
    -- The model wrote a new file where one already was: its lines replace the whole
    -- file on disk, which is marked removed, with the model's lines above it.
    local replaces = file.status == '!A' and h.old_lines == 0 and h.old_start == 0
    if replaces then
      first, last = 0, count - 1
      for row = first, last do
        vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, { line_hl_group = 'BB7ReviewDelete', sign_text = sign, sign_hl_group = sign_hl, priority = 150 })
      end
    elseif h.old_lines > 0 then
      first = math.min(start - 1, count - 1)
      last = math.min(first + h.old_lines - 1, count - 1)
      for row = first, last do
        vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
          line_hl_group = 'BB7ReviewDelete',
          sign_text = sign,
          sign_hl_group = sign_hl,
          priority = 150,
        })
      end
    else
      -- A pure insertion after snapshot line old_start (0: before the first line).
      first = math.max(math.min((h.old_start == 0 and 1 or map(h.old_start)) - 1, count - 1), 0)
      last = first
      vim.api.nvim_buf_set_extmark(buf, M.ns, first, 0, { sign_text = sign, sign_hl_group = sign_hl, priority = 150 })
    end
    local hint = string.format('  hunk %d/%d  %s accept · %s reject', i, #hunks, keys.accept, keys.reject)
    if conflict and file.status == '!A' then
      -- The model wrote a new file where one already was (not in the chat's context):
      -- the "edits" are the file's own lines, not the user's changes.
      hint = string.format("  the file on disk differs from the model's new file · %s take the model's version · %s reject", keys.take, keys.reject)
    elseif conflict then
      hint = string.format("  conflicts with your edits · %s take the model's version · %s reject", keys.take, keys.reject)
    end
    if h.invisible and #h.invisible > 0 then
      hint = hint .. '  · adds invisible characters: ' .. table.concat(h.invisible, ' ')
    end
    local anchor_above = h.old_lines == 0 and h.old_start == 0
    local virt = #added > 0 and virt_added(buf, first, h.old_lines > 0 and removed or {}, added) or nil
    vim.api.nvim_buf_set_extmark(buf, M.ns, anchor_above and first or last, 0, {
      virt_text = { { hint, conflict and 'BB7ReviewConflict' or 'BB7ReviewHint' } },
      virt_text_pos = 'eol',
      virt_lines = virt,
      virt_lines_above = anchor_above or nil,
      priority = 150,
    })
    table.insert(list, { hunk = h, first = first, last = last, conflict = conflict, above = anchor_above and virt and #virt or nil, replaces = replaces or nil })
  end
  drawn[buf] = { path = path, file = file, hunks = list }
  return list
end

local function hunk_at_cursor(buf)
  local d = drawn[buf]
  if not d then
    return nil
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, dh in ipairs(d.hunks) do
    if row >= dh.first and row <= dh.last then
      return dh
    end
  end
end

local detach, drop_nav
-- Buffers whose review ended with ]h / [h still mapped (they lead on to other files).
local nav_kept = {} ---@type table<integer, boolean>

--- Draws the review of `path` again from the binary; ends it when nothing is pending.
---@param path string project-relative
---@return boolean any hunks left
function M.refresh(path)
  local buf = state.loaded_buf(path)
  if not buf or not drawn[buf] then
    return false
  end
  local r = api.review_get({ path = path })
  local file = r and r.files and r.files[1]
  if not file or #pending(file) == 0 then
    detach(buf)
    if file then
      settle(path, file)
    end
    -- The last file of the review: ]h / [h are the user's again.
    if #pending_files() == 0 then
      drop_nav(buf)
    end
    return false
  end
  draw(buf, path, file)
  return true
end

local function decide(buf, accept, reject, reasons)
  local d = drawn[buf]
  if not d then
    return
  end
  if vim.bo[buf].modified then
    return say('Save or discard your changes to ' .. d.path .. ' first', levels.WARN)
  end
  local r, err = api.review_apply({
    path = d.path,
    accept = accept,
    reject = reject,
    reasons = reasons,
    expected_disk_hash = d.file.disk_hash or vim.NIL,
  })
  if not r then
    if err.code == 'conflict' then
      say(d.path .. ' changed on disk; the review is drawn again', levels.WARN)
    else
      say('Failed to apply: ' .. err.message, levels.ERROR)
    end
    util.reload(buf)
    M.refresh(d.path)
    return
  end
  util.reload(buf)
  local parts = {}
  if #r.applied > 0 then
    table.insert(parts, 'applied ' .. #r.applied)
  end
  if #r.rejected > 0 then
    table.insert(parts, 'rejected ' .. #r.rejected)
  end
  if #(r.conflicts or {}) > 0 then
    table.insert(parts, #r.conflicts .. ' in conflict')
  end
  local path = d.path
  -- One message for the outcome: two in a row would ask to "Press ENTER".
  local msg = path .. ': ' .. (#parts > 0 and table.concat(parts, ', ') or 'nothing changed')
  if not M.refresh(path) then
    msg = msg .. '. Review of ' .. path .. ' done'
  end
  say(msg, #(r.conflicts or {}) > 0 and levels.WARN or levels.INFO)
  require('bb7.ui.render').refresh()
end

--- Opens `path` in the editor (outside the bb7 panes) and returns its buffer.
local function open_file(path)
  local win = require('bb7.ui.layout').editor_window()
  vim.api.nvim_set_current_win(win)
  local abs = state.abs(path)
  if vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':p') ~= vim.fn.fnamemodify(abs, ':p') then
    vim.cmd('edit ' .. vim.fn.fnameescape(vim.fn.fnamemodify(abs, ':~:.')))
  end
  return vim.api.nvim_get_current_buf()
end

local function jump(dh)
  vim.api.nvim_win_set_cursor(0, { dh.first + 1, 0 })
  if dh.above then
    -- Virtual lines above the first line show only as filler lines at the top of the
    -- window: scrolled into view, or the hunk's new lines would stay hidden.
    vim.fn.winrestview({ topline = 1, topfill = dh.above })
  end
end

--- Moves to the next (dir 1) or previous (dir -1) hunk, going on into the next file
--- with pending hunks after the last one of this buffer.
---@param dir 1|-1
function M.next_hunk(dir)
  local buf = vim.api.nvim_get_current_buf()
  local d = drawn[buf]
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if d then
    local from, to, step = 1, #d.hunks, 1
    if dir < 0 then
      from, to, step = #d.hunks, 1, -1
    end
    for i = from, to, step do
      local dh = d.hunks[i]
      if (dir > 0 and dh.first > row) or (dir < 0 and dh.first < row) then
        return jump(dh)
      end
    end
  end
  local files = pending_files()
  if #files == 0 then
    drop_nav(buf)
    return say('No pending hunks', levels.WARN)
  end
  local here = d and d.path or state.relpath(vim.api.nvim_buf_get_name(buf))
  local idx = 0
  for i, f in ipairs(files) do
    if f.path == here then
      idx = i
    end
  end
  local nxt = files[((idx - 1 + dir) % #files) + 1]
  if dir < 0 and idx == 0 then
    nxt = files[#files]
  end
  local list = M.show(nxt.path)
  if list and #list > 0 then
    jump(dir > 0 and list[1] or list[#list])
  end
end

local function attach(buf)
  if vim.b[buf].bb7_review or not config.get().keymaps then
    return
  end
  vim.b[buf].bb7_review = true
  local k = config.get().review_keys
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = 'bb7 review: ' .. desc })
  end
  map(k.accept, function()
    local dh = hunk_at_cursor(buf)
    if not dh then
      return say('No hunk under the cursor', levels.WARN)
    end
    decide(buf, { dh.hunk.hunk_id }, {})
  end, 'accept the hunk')
  map(k.reject, function()
    local dh = hunk_at_cursor(buf)
    if not dh then
      return say('No hunk under the cursor', levels.WARN)
    end
    vim.ui.input({ prompt = 'Reason (optional): ' }, function(reason)
      if reason ~= nil then
        decide(buf, {}, { dh.hunk.hunk_id }, reason ~= '' and { [dh.hunk.hunk_id] = reason } or nil)
      end
    end)
  end, 'reject the hunk')
  map(k.accept_all, function()
    decide(buf, 'all', {})
  end, 'accept every hunk')
  map(k.reject_all, function()
    decide(buf, {}, 'all')
  end, 'reject every hunk')
  map(k.take, function()
    local dh = hunk_at_cursor(buf)
    if not dh then
      return say('No hunk under the cursor', levels.WARN)
    end
    if not dh.conflict then
      return decide(buf, { dh.hunk.hunk_id }, {})
    end
    if vim.bo[buf].modified then
      return say('Save or discard your changes to ' .. drawn[buf].path .. ' first', levels.WARN)
    end
    local path = drawn[buf].path
    local _, added = split_patch(dh.hunk.patch)
    -- The other pending hunks: a take covers those chained to the same user edit.
    dh.others = {}
    for _, o in ipairs(drawn[buf].hunks) do
      local _, o_added = split_patch(o.hunk.patch)
      table.insert(dh.others, { hunk = o.hunk, added = o_added })
    end
    -- The take writes the file and then records the hunk itself; the review is
    -- drawn again after that, not on the write.
    taking[buf] = true
    local ok, err = pcall(require('bb7.review_take').take, buf, path, dh, added, function()
      local more = M.refresh(path)
      require('bb7.ui.render').refresh()
      return more
    end)
    taking[buf] = nil
    if not ok then
      error(err, 0)
    end
  end, "take the model's version of the hunk")
  map(k.next, function()
    M.next_hunk(1)
  end, 'next hunk')
  map(k.prev, function()
    M.next_hunk(-1)
  end, 'previous hunk')
  local augroup = vim.api.nvim_create_augroup('bb7_review_' .. buf, { clear = true })
  vim.api.nvim_create_autocmd('BufWritePost', {
    group = augroup,
    buffer = buf,
    callback = function()
      if drawn[buf] and not taking[buf] then
        M.refresh(drawn[buf].path)
      end
    end,
  })
  -- Added lines are wrapped at the window's width: drawn again when it changes.
  vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, {
    group = augroup,
    callback = function()
      if drawn[buf] and vim.api.nvim_buf_is_valid(buf) and vim.fn.bufwinid(buf) ~= -1 then
        draw(buf, drawn[buf].path, drawn[buf].file)
      end
    end,
  })
end

detach = function(buf)
  drawn[buf] = nil
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  if vim.b[buf].bb7_review then
    vim.b[buf].bb7_review = nil
    local k = config.get().review_keys
    -- ]h / [h stay: from a file whose review is done they go on into the next file
    -- with pending hunks (they leave once none is left).
    for _, lhs in ipairs({ k.accept, k.reject, k.accept_all, k.reject_all, k.take }) do
      pcall(vim.keymap.del, 'n', lhs, { buffer = buf })
    end
    nav_kept[buf] = true
    pcall(vim.api.nvim_del_augroup_by_name, 'bb7_review_' .. buf)
  end
end

--- Removes ]h / [h from `buf`, and from every buffer whose review ended, once no
--- review is drawn there.
drop_nav = function(buf)
  nav_kept[buf] = true
  local k = config.get().review_keys
  for b in pairs(nav_kept) do
    if not drawn[b] and vim.api.nvim_buf_is_valid(b) and not vim.b[b].bb7_review then
      for _, lhs in ipairs({ k.next, k.prev }) do
        pcall(vim.keymap.del, 'n', lhs, { buffer = b })
      end
      nav_kept[b] = nil
    end
  end
end

--- Opens `path` and draws its pending hunks.
---@param path string project-relative
---@return bb7.DrawnHunk[]? hunks nil when nothing is pending
---@return boolean? told the user was told why (an output that cannot be read)
function M.show(path)
  define_highlights()
  local r = api.review_get({ path = path })
  local file = r and r.files and r.files[1]
  if file and file.output_error then
    say(file.output_error, levels.WARN)
    return nil, true
  end
  if not file or #pending(file) == 0 then
    return nil
  end
  local buf = open_file(path)
  local list = draw(buf, path, file)
  attach(buf)
  return list
end

--- :BB7Review. `path` is the file under the cursor or the argument; without one (or
--- when it has nothing pending and was not named explicitly) the first file with
--- pending hunks is reviewed.
---@param path string?
---@param explicit boolean the user named the file
function M.start(path, explicit)
  local list, told
  if path then
    list, told = M.show(path)
  end
  if not list then
    if explicit then
      if told then
        return
      end
      return say('No pending changes for ' .. path, levels.WARN)
    end
    local files = pending_files()
    if #files == 0 then
      return say('No pending changes', levels.WARN)
    end
    path = files[1].path
    list = M.show(path)
  end
  if list and list[1] then
    jump(list[1])
    say(string.format('Reviewing %s: %d hunk%s (%s accept, %s reject, ? in the UI for keys)', path, #list, #list == 1 and '' or 's', config.get().review_keys.accept, config.get().review_keys.reject))
  end
end

--- :BB7Review! — every pending hunk of every file in the quickfix list.
function M.quickfix()
  local items = {}
  for _, f in ipairs(pending_files()) do
    -- Lines of a loaded buffer may have moved since the snapshot.
    local buf = state.loaded_buf(f.path)
    local map = buf and line_map(f.path, buf, f) or function(l)
      return l
    end
    for _, h in ipairs(pending(f)) do
      table.insert(items, {
        filename = state.abs(f.path),
        lnum = math.max(map(math.max(h.old_start, 1), h.old_lines), 1),
        text = string.format('%s +%d -%d%s', h.header, h.added or 0, h.removed or 0, h.applies_cleanly == false and ' (conflict)' or ''),
        type = h.applies_cleanly == false and 'W' or 'I',
      })
    end
  end
  if #items == 0 then
    return say('No pending changes', levels.WARN)
  end
  vim.fn.setqflist({}, ' ', { title = 'bb7: pending hunks', items = items })
  require('bb7.ui.layout').editor_window()
  vim.cmd('copen')
  say(#items .. ' pending hunk' .. (#items == 1 and '' or 's') .. ' in the quickfix list (:BB7Review in a file to decide)')
end

--- The drawn hunks of `buf` (for tests and statuslines).
---@param buf integer
---@return bb7.DrawnHunk[]
function M.hunks(buf)
  buf = buf == 0 and vim.api.nvim_get_current_buf() or buf
  return drawn[buf] and drawn[buf].hunks or {}
end

return M
