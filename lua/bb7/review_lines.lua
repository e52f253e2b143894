-- How a hunk's lines look in the inline review: the words a changed line changes
-- (a token diff of each removed line against the added line in the same place), and
-- the added lines as virtual lines wrapped at the window's text width with their
-- background to the right edge, so no added text is cut off.

local M = {}

-- Words, runs of blanks, and single other characters: the units a change is shown in.
local function tokens(line)
  local out, i = {}, 1
  while i <= #line do
    local s, e = line:find('^[%w_]+', i)
    if not s then
      s, e = line:find('^%s+', i)
    end
    if not s then
      -- One UTF-8 character.
      e = i + (vim.str_utf_end(line, i) or 0)
    end
    table.insert(out, { i, e })
    i = e + 1
  end
  return out
end

--- The byte ranges (1-based, inclusive) of `old` and `new` that differ, word by word.
---@param old string
---@param new string
---@return {[1]: integer, [2]: integer}[] old_ranges
---@return {[1]: integer, [2]: integer}[] new_ranges
function M.word_diff(old, new)
  local ta, tb = tokens(old), tokens(new)
  local function text(line, toks)
    -- One token per line: a line diff of these is a word diff.
    local parts = {}
    for _, t in ipairs(toks) do
      table.insert(parts, line:sub(t[1], t[2]))
    end
    return table.concat(parts, '\n') .. '\n'
  end
  local hunks = vim.diff(text(old, ta), text(new, tb), { result_type = 'indices', algorithm = 'histogram' }) or {}
  local ra, rb = {}, {}
  for _, h in ipairs(hunks) do
    local as, ac, bs, bc = h[1], h[2], h[3], h[4]
    if ac > 0 then
      table.insert(ra, { ta[as][1], ta[as + ac - 1][2] })
    end
    if bc > 0 then
      table.insert(rb, { tb[bs][1], tb[bs + bc - 1][2] })
    end
  end
  return ra, rb
end

-- `line` with its tabs expanded to spaces at `tabstop`, and the byte ranges moved with
-- them.
local function expand_tabs(line, ranges, tabstop)
  if not line:find('\t', 1, true) then
    return line, ranges
  end
  local out, col, shift = {}, 0, {}
  local added = 0
  for i = 1, #line do
    local c = line:sub(i, i)
    shift[i] = added
    if c == '\t' then
      local n = tabstop - (col % tabstop)
      table.insert(out, string.rep(' ', n))
      col = col + n
      added = added + n - 1
    else
      table.insert(out, c)
      col = col + 1
    end
  end
  local moved = {}
  for _, r in ipairs(ranges) do
    table.insert(moved, { r[1] + shift[r[1]], r[2] + (shift[r[2]] or added) })
  end
  return table.concat(out), moved
end

--- One added line as virtual lines of `width` cells: `hl` everywhere, `word_hl` on
--- the `ranges` it changes, wrapped at `width` and padded to it.
---@param line string
---@param ranges {[1]: integer, [2]: integer}[]
---@param width integer
---@param hl string
---@param word_hl string
---@param tabstop integer
---@return table[] virt_lines
function M.virtual(line, ranges, width, hl, word_hl, tabstop)
  line, ranges = expand_tabs(line, ranges, tabstop)
  width = math.max(width, 10)
  local rows, row, used = {}, {}, 0
  local function put(text, group)
    local last = row[#row]
    if last and last[2] == group then
      last[1] = last[1] .. text
    else
      table.insert(row, { text, group })
    end
  end
  local i = 1
  while i <= #line do
    local e = i + (vim.str_utf_end(line, i) or 0)
    local ch = line:sub(i, e)
    local w = vim.fn.strdisplaywidth(ch)
    if used + w > width then
      table.insert(rows, row)
      row, used = {}, 0
    end
    local group = hl
    for _, r in ipairs(ranges) do
      if i >= r[1] and i <= r[2] then
        group = word_hl
      end
    end
    put(ch, group)
    used = used + w
    i = e + 1
  end
  put(string.rep(' ', width - used), hl)
  table.insert(rows, row)
  return rows
end

--- The width virtual lines have in the window showing `buf` (its text area), else
--- the editor's.
---@param buf integer
---@return integer
function M.text_width(buf)
  local win = vim.api.nvim_get_current_buf() == buf and vim.api.nvim_get_current_win() or vim.fn.bufwinid(buf)
  if win and win > 0 then
    local info = vim.fn.getwininfo(win)[1]
    return info.width - info.textoff
  end
  return vim.o.columns
end

return M
