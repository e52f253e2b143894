-- Markdown highlighting of the preview whose cost does not grow with the chat.
--
-- Neovim's own Tree-sitter highlighter parses the buffer it is attached to again after
-- every change, so an answer streaming into a long chat re-parses the whole chat on
-- each delta (measured: 18 ms per delta at 3,000 lines against 2 ms in a new chat).
-- Here the preview is split into regions that parse alike alone and together (cut
-- before each message's heading, and at blank lines outside code blocks once a region
-- is REGION lines long), each with a parser of its own text
-- (vim.treesitter.get_string_parser), and highlights are set once as extmarks:
--   * the history (the chat as drawn) never changes until the next full draw; a
--     region is parsed, and highlighted CHUNK lines at a time, only when a window
--     shows those lines, so a 10,000-line chat costs what its visible part costs;
--   * the tail (the answer streaming in) is parsed again at most every TAIL_MS, only
--     from its last cut on (the whole lines before a cut are frozen as regions), so a
--     delta costs the same in a new chat and a long one.
-- Highlight groups, priorities and conceals follow the queries as Neovim's highlighter
-- reads them (`@capture.lang`, `priority`, `conceal` and `conceal_lines` metadata).

local M = {}

--- Lines highlighted at a time, when a window first shows them.
M.CHUNK = 100
--- Milliseconds between two parses of the streaming answer.
M.TAIL_MS = 100

local ns = vim.api.nvim_create_namespace('bb7_markdown')

---@class bb7.HlRegion
---@field first integer 0-based first buffer row
---@field last integer 0-based row after the region
---@field parser vim.treesitter.LanguageTree?
---@field text string?
---@field done table<integer, boolean> chunks highlighted

---@class bb7.HlBuf
---@field regions bb7.HlRegion[] in buffer order: the history's, then the tail's frozen ones
---@field tail_first integer? 0-based first row of the streaming answer
---@field frozen integer? 0-based row after the tail's frozen regions
---@field live bb7.HlRegion? the rest of the tail, parsed again as it grows
---@field timer uv.uv_timer_t?

local B = {} ---@type table<integer, bb7.HlBuf>
local stats = { parses = 0, chunks = 0 }

--- Lines of a region before it may end at a blank line (it always ends before a
--- message heading): a parse costs what its region's length costs.
M.REGION = 80

--- Whether the Markdown parser is available (Neovim ships it from 0.10).
---@return boolean
function M.available()
  return (pcall(vim.treesitter.language.add, 'markdown'))
end

local queries = {}
local function highlights(lang)
  if queries[lang] == nil then
    local ok, q = pcall(vim.treesitter.query.get, lang, 'highlights')
    queries[lang] = ok and q or false
  end
  return queries[lang] or nil
end

--- Where `lines` (rows `first`..) may be cut into regions that parse alike alone and
--- together: before a message heading (`## You`, `## Assistant`, `## Note`, which the
--- preview draws at the start of each message) and after a blank line once a region
--- has REGION lines, never inside a fenced code block.
---@param lines string[]
---@param first integer 0-based row of lines[1]
---@return integer[] cuts 0-based rows where a new region starts (ascending)
local function cuts(lines, first)
  local out, fence, start = {}, nil, first
  for i, l in ipairs(lines) do
    local row = first + i - 1
    local mark = l:match('^%s*(```+)') or l:match('^%s*(~~~+)')
    if fence then
      if mark and mark:sub(1, 1) == fence:sub(1, 1) and #mark >= #fence and l:match('^%s*[`~]+%s*$') then
        fence = nil
      end
    elseif mark then
      fence = mark
    elseif row > start and (l:match('^## ') or (l == '' and row - start >= M.REGION)) then
      local at = l == '' and row + 1 or row
      table.insert(out, at)
      start = at
    end
  end
  return out
end

local function region_parser(buf, r)
  if not r.parser then
    local lines = vim.api.nvim_buf_get_lines(buf, r.first, r.last, false)
    r.text = table.concat(lines, '\n') .. '\n'
    local ok, p = pcall(vim.treesitter.get_string_parser, r.text, 'markdown')
    if not ok then
      return nil
    end
    r.parser = p
    stats.parses = stats.parses + 1
  end
  return r.parser
end

-- Sets the highlights of chunk `c` of region `r` (rows relative to the region).
local function fill_chunk(buf, r, c)
  local parser = region_parser(buf, r)
  r.done[c] = true
  if not parser then
    return
  end
  local count = r.last - r.first
  local s = c * M.CHUNK
  local e = math.min(s + M.CHUNK, count)
  if s >= e then
    return
  end
  stats.chunks = stats.chunks + 1
  local ok = pcall(parser.parse, parser, { s, e })
  if not ok then
    return
  end
  parser:for_each_tree(function(tree, ltree)
    local q = highlights(ltree:lang())
    if not q then
      return
    end
    local lang = ltree:lang()
    for id, node, metadata in q:iter_captures(tree:root(), r.text, s, e) do
      local name = q.captures[id]
      local range = vim.treesitter.get_range(node, r.text, metadata[id])
      local sr, sc, er, ec = range[1], range[2], range[4], range[5]
      -- A capture starting in a chunk already highlighted was set with that chunk.
      local from_here = sr >= s or not r.done[math.floor(sr / M.CHUNK)]
      if from_here and sr < count and name:sub(1, 1) ~= '_' and name ~= 'spell' and name ~= 'nospell' then
        local conceal = metadata.conceal or (metadata[id] and metadata[id].conceal)
        local priority = tonumber(metadata.priority or (metadata[id] and metadata[id].priority)) or vim.hl.priorities.treesitter
        if er >= count then
          er, ec = count - 1, #(vim.api.nvim_buf_get_lines(buf, r.first + count - 1, r.first + count, false)[1] or '')
        end
        pcall(vim.api.nvim_buf_set_extmark, buf, ns, r.first + sr, sc, {
          end_row = r.first + er,
          end_col = ec,
          hl_group = '@' .. name .. '.' .. lang,
          priority = priority,
          conceal = conceal,
        })
        if metadata.conceal_lines or (metadata[id] and metadata[id].conceal_lines) then
          pcall(vim.api.nvim_buf_set_extmark, buf, ns, r.first + sr, 0, { end_row = r.first + er, conceal_lines = '' })
        end
      end
    end
  end)
end

local function fill_region(buf, r, top, bot)
  if r.last > r.first and bot >= r.first and top < r.last then
    local c1 = math.floor((math.max(top, r.first) - r.first) / M.CHUNK)
    local c2 = math.floor((math.min(bot, r.last - 1) - r.first) / M.CHUNK)
    for c = c1, c2 do
      if not r.done[c] then
        fill_chunk(buf, r, c)
      end
    end
  end
end

-- The index of the last region starting at or before `row`.
local function find(regions, row)
  local lo, hi = 1, #regions
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if regions[mid].first <= row then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

-- Highlights what rows [top, bot] (0-based) of `buf` show and is not yet highlighted.
local function fill(buf, top, bot)
  local hb = B[buf]
  if not hb then
    return
  end
  local rs = hb.regions
  if #rs > 0 then
    for i = find(rs, top), #rs do
      if rs[i].first > bot then
        break
      end
      fill_region(buf, rs[i], top, bot)
    end
  end
  if hb.live then
    fill_region(buf, hb.live, top, bot)
  end
end

local provider_set = false
local function ensure_provider()
  if provider_set then
    return
  end
  provider_set = true
  vim.api.nvim_set_decoration_provider(ns, {
    on_win = function(_, _, buf, top, bot)
      if B[buf] then
        fill(buf, top, bot)
      end
      return false
    end,
  })
end

local function clear(buf, from)
  if vim.api.nvim_buf_is_valid(buf) then
    vim.api.nvim_buf_clear_namespace(buf, ns, from, -1)
  end
end

-- Regions of rows [first, last) cut at `at`, appended to `out`.
local function add_regions(out, first, last, at)
  local s = first
  for _, c in ipairs(at) do
    if c > s and c < last then
      table.insert(out, { first = s, last = c, done = {} })
      s = c
    end
  end
  if last > s then
    table.insert(out, { first = s, last = last, done = {} })
  end
end

--- The preview `buf` was drawn anew: rows [0, `rows`) are its history, highlighted
--- lazily; there is no tail. Any other Tree-sitter highlighter on the buffer (a
--- FileType autocommand of the user's) is stopped, and the syntax file is off, since
--- they would parse the whole buffer on each change.
---@param buf integer
---@param rows integer
function M.history(buf, rows)
  ensure_provider()
  M.stop(buf)
  if vim.treesitter.highlighter.active[buf] then
    pcall(vim.treesitter.stop, buf)
  end
  if vim.bo[buf].syntax ~= '' then
    vim.bo[buf].syntax = ''
  end
  local regions = {}
  add_regions(regions, 0, rows, cuts(vim.api.nvim_buf_get_lines(buf, 0, rows, false), 0))
  B[buf] = { regions = regions }
end

-- Parses the tail again: what grew since the last time becomes frozen regions up to
-- its last cut; the rest is the live region, highlighted as windows show it.
local function retail(buf)
  local hb = B[buf]
  if not hb or not hb.tail_first or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local count = vim.api.nvim_buf_line_count(buf)
  if (hb.frozen or hb.tail_first) > count then
    -- The tail was cut (a dropped attempt) without a reset: start it again.
    M.tail(buf, math.min(hb.tail_first, count), true)
    hb.frozen = nil
  end
  local from = hb.frozen or hb.tail_first
  clear(buf, from)
  local at = cuts(vim.api.nvim_buf_get_lines(buf, from, count, false), from)
  -- Lines before a cut are whole (the last line may still grow; a cut is never after it).
  local keep = {}
  for _, c in ipairs(at) do
    if c < count then
      table.insert(keep, c)
    end
  end
  if #keep > 0 then
    add_regions(hb.regions, from, keep[#keep], keep)
    hb.frozen = keep[#keep]
  end
  hb.live = { first = hb.frozen or hb.tail_first, last = count, done = {} }
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    fill(buf, vim.fn.line('w0', w) - 1, vim.fn.line('w$', w) - 1)
  end
end

--- Rows from `first` (0-based) to the end of `buf` are a streaming answer: they are
--- highlighted again at most every TAIL_MS (call this after each change of them);
--- `reset`: the answer was cleared (a dropped attempt) and starts again at `first`.
---@param buf integer
---@param first integer
---@param reset boolean?
function M.tail(buf, first, reset)
  local hb = B[buf]
  if not hb then
    return
  end
  if reset or hb.tail_first ~= first then
    clear(buf, first)
    for i = #hb.regions, 1, -1 do
      if hb.regions[i].first >= first then
        table.remove(hb.regions, i)
      end
    end
    hb.tail_first, hb.frozen, hb.live = first, nil, nil
  end
  if hb.timer then
    return
  end
  hb.timer = vim.uv.new_timer()
  hb.timer:start(M.TAIL_MS, 0, vim.schedule_wrap(function()
    if not hb.timer then
      return -- stopped meanwhile
    end
    hb.timer:close()
    hb.timer = nil
    retail(buf)
  end))
end

--- No highlighting of `buf` from here (it shows something else, e.g. a diff).
---@param buf integer
function M.stop(buf)
  local hb = B[buf]
  if hb and hb.timer then
    hb.timer:stop()
    hb.timer:close()
    hb.timer = nil
  end
  B[buf] = nil
  clear(buf, 0)
end

--- For tests and the benchmark: parsers built and chunks highlighted so far.
---@return {parses: integer, chunks: integer}
function M.stats()
  return vim.deepcopy(stats)
end

return M
