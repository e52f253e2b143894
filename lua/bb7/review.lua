-- The review view: the model's pending hunks for one file, decided one by one.
--   ]h / [h   next / previous hunk
--   ga        accept the hunk under the cursor      gr  reject it (asks for a reason)
--   gA        accept all hunks of the file          gX  reject all
--   q         close
-- Accepted hunks are merged into the file on disk by the binary (your other edits
-- stay), and the file's buffer is reloaded. Conflicting hunks are marked.

local client = require('bb7.client')

local M = {}

local R = { buf = nil, path = nil, file = nil, hunk_at = {} }
M._state = R

local function bb7()
  return require('bb7')
end

local function render()
  local r = client.request_sync('review_get', { path = R.path })
  if r.type ~= 'review' or not r.files[1] then
    R.file = nil
    return false, r.message
  end
  R.file = r.files[1]
  -- Decided hunks stay in the binary's review (state accepted/rejected); this view
  -- shows what is still to decide.
  R.file.hunks = vim.tbl_filter(function(h)
    return (h.state or 'pending') == 'pending'
  end, R.file.hunks)
  local lines = { 'Review ' .. R.path .. '  [' .. R.file.status .. ']  ga accept · gr reject · gA/gX all · ]h [h · q', '' }
  R.hunk_at = {}
  for _, h in ipairs(R.file.hunks) do
    local mark = h.applies_cleanly and '' or '  !! conflicts with your edits'
    if h.oversized then
      mark = mark .. '  (oversized)'
    end
    table.insert(lines, h.header .. mark)
    local first = #lines
    for _, l in ipairs(vim.split(h.patch, '\n', { plain = true })) do
      if l ~= '' and not l:match('^@@') then
        table.insert(lines, l)
      end
    end
    for i = first, #lines do
      R.hunk_at[i] = h
    end
    table.insert(lines, '')
  end
  vim.bo[R.buf].modifiable = true
  vim.api.nvim_buf_set_lines(R.buf, 0, -1, false, lines)
  vim.bo[R.buf].modifiable = false
  return true
end

local function hunk_lines()
  local starts = {}
  for l, h in pairs(R.hunk_at) do
    if not R.hunk_at[l - 1] or R.hunk_at[l - 1] ~= h then
      table.insert(starts, l)
    end
  end
  table.sort(starts)
  return starts
end

function M.next_hunk(dir)
  local cur = vim.api.nvim_win_get_cursor(0)[1]
  local starts = hunk_lines()
  if dir > 0 then
    for _, l in ipairs(starts) do
      if l > cur then
        return vim.api.nvim_win_set_cursor(0, { l, 0 })
      end
    end
  else
    for i = #starts, 1, -1 do
      if starts[i] < cur then
        return vim.api.nvim_win_set_cursor(0, { starts[i], 0 })
      end
    end
  end
end

local function reload_file()
  local root = bb7()._state.root or vim.fn.getcwd()
  local buf = vim.fn.bufnr(root .. '/' .. R.path)
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! edit!')
    end)
  end
end

--- Sends a decision; `accept`/`reject` are lists of ids or "all".
function M.decide(accept, reject, reasons)
  if not R.file then
    return
  end
  local root = bb7()._state.root or vim.fn.getcwd()
  local buf = vim.fn.bufnr(root .. '/' .. R.path)
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
    return bb7().say('Save or discard your changes to ' .. R.path .. ' first', vim.log.levels.WARN)
  end
  local r = client.request_sync('review_apply', {
    path = R.path,
    accept = accept,
    reject = reject,
    reasons = reasons,
    expected_disk_hash = R.file.disk_hash or vim.NIL,
  })
  if r.type == 'error' then
    bb7().say('Failed to apply: ' .. (r.message or '?'), vim.log.levels.ERROR)
    render()
    return
  end
  reload_file()
  local parts = {}
  if #r.applied > 0 then
    table.insert(parts, 'applied ' .. #r.applied)
  end
  if #r.rejected > 0 then
    table.insert(parts, 'rejected ' .. #r.rejected)
  end
  if #r.conflicts > 0 then
    table.insert(parts, #r.conflicts .. ' in conflict')
  end
  bb7().say(R.path .. ': ' .. (#parts > 0 and table.concat(parts, ', ') or 'nothing changed'), #r.conflicts > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
  local ok = render()
  if not ok or #R.file.hunks == 0 then
    bb7().say('Review of ' .. R.path .. ' done')
    M.close()
  end
  require('bb7.ui').refresh()
end

local function current_hunk()
  return R.hunk_at[vim.api.nvim_win_get_cursor(0)[1]]
end

function M.close()
  if R.buf and vim.api.nvim_buf_is_valid(R.buf) then
    pcall(vim.api.nvim_buf_delete, R.buf, { force = true })
  end
  R.buf = nil
end

--- Opens the review of `path` (project-relative) in the current window.
function M.open(path)
  R.path = path
  if not (R.buf and vim.api.nvim_buf_is_valid(R.buf)) then
    R.buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(R.buf, 'bb7://review')
    vim.bo[R.buf].buftype = 'nofile'
    vim.bo[R.buf].bufhidden = 'wipe'
    vim.bo[R.buf].filetype = 'diff'
    local function map(lhs, fn, desc)
      vim.keymap.set('n', lhs, fn, { buffer = R.buf, nowait = true, silent = true, desc = 'bb7 review: ' .. desc })
    end
    map(']h', function() M.next_hunk(1) end, 'next hunk')
    map('[h', function() M.next_hunk(-1) end, 'previous hunk')
    map('ga', function()
      local h = current_hunk()
      if h then
        M.decide({ h.hunk_id }, {})
      end
    end, 'accept hunk')
    map('gr', function()
      local h = current_hunk()
      if not h then
        return
      end
      vim.ui.input({ prompt = 'Reason (optional): ' }, function(reason)
        if reason == nil then
          return
        end
        M.decide({}, { h.hunk_id }, reason ~= '' and { [h.hunk_id] = reason } or nil)
      end)
    end, 'reject hunk')
    map('gA', function() M.decide('all', {}) end, 'accept all')
    map('gX', function() M.decide({}, 'all') end, 'reject all')
    map('q', M.close, 'close')
  end
  local ok, err = render()
  if not ok then
    M.close()
    return bb7().say('No pending changes for ' .. path .. (err and (': ' .. err) or ''), vim.log.levels.WARN)
  end
  vim.api.nvim_win_set_buf(0, R.buf)
  local starts = hunk_lines()
  if starts[1] then
    vim.api.nvim_win_set_cursor(0, { starts[1], 0 })
  end
end

--- :BB7Checkpoints — pick a checkpoint of the active chat, then roll it back.
function M.checkpoints()
  local chat = bb7().active_chat()
  if not chat then
    return
  end
  local r = client.request_sync('checkpoint_list', { chat_id = chat })
  if r.type ~= 'checkpoints' or #r.checkpoints == 0 then
    return bb7().say('No checkpoints', vim.log.levels.WARN)
  end
  local list = {}
  for i = #r.checkpoints, 1, -1 do
    table.insert(list, r.checkpoints[i])
  end
  vim.ui.select(list, {
    prompt = 'Checkpoints',
    format_item = function(c)
      local paths = vim.tbl_map(function(f) return f.path end, c.files)
      return c.created_at .. '  ' .. c.action .. '  ' .. table.concat(paths, ', ')
    end,
  }, function(cp)
    if not cp then
      return
    end
    vim.ui.select({ 'Roll back', 'Roll back, discarding later edits' }, { prompt = 'Checkpoint ' .. cp.checkpoint_id }, function(choice)
      if not choice then
        return
      end
      local res = client.request_sync('checkpoint_rollback', {
        checkpoint_id = cp.checkpoint_id,
        mode = 'hard_all',
        force = choice ~= 'Roll back' or nil,
      })
      if res.type == 'error' then
        return bb7().say('Failed to roll back: ' .. res.message, vim.log.levels.ERROR)
      end
      local root = bb7()._state.root or vim.fn.getcwd()
      for _, f in ipairs(res.files) do
        if f.restored then
          local buf = vim.fn.bufnr(root .. '/' .. f.path)
          if buf > 0 and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
            vim.api.nvim_buf_call(buf, function() vim.cmd('silent! edit!') end)
          end
          bb7().say('Rolled back ' .. f.path)
        elseif f.conflict then
          bb7().say(f.path .. ' not rolled back: ' .. (f.reason or 'conflict'), vim.log.levels.WARN)
        end
      end
      require('bb7.ui').refresh()
    end)
  end)
end

return M
