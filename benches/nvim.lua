-- The plugin's speed against a chat's length: per-delta cost and key-echo latency of
-- an answer streaming into chats of about 100, 1,000, 5,000 and 10,000 preview lines,
-- each as a ratio against a fresh chat measured in the same run (a shared machine's
-- absolute times say little; the ratios say whether the cost grows with the chat).
--   nvim --headless -u NONE -i NONE -l benches/nvim.lua   (scripts/bench-nvim)
-- The binary is not involved: the protocol calls answer from a scripted chat, so what
-- is measured is the plugin's drawing and Neovim's highlighting and redraw.

local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.rtp:prepend(root)
vim.opt.swapfile = false


local DELTAS = tonumber(vim.env.BB7_BENCH_DELTAS or '') or 150
-- Milliseconds between two deltas, as a model streams them.
local GAP_MS = 10

-- The scripted chat the fake protocol calls answer with.
local current = nil
local fake_api = setmetatable({
  chat_get = function()
    return current
  end,
  chat_list = function()
    return { chats = current and { { id = current.id, name = current.name } } or {} }
  end,
  file_statuses = function()
    return { files = {} }
  end,
  estimate_tokens = function() end,
  notify = function() end,
}, {
  __index = function()
    return function()
      return {}
    end
  end,
})
package.loaded['bb7.api'] = fake_api

local state = require('bb7.state')
local layout = require('bb7.ui.layout')
local stream = require('bb7.ui.stream')
local render = require('bb7.ui.render')

-- One exchange: a question and a Markdown answer (prose, a list, a code block), about
-- 40 preview lines.
local function exchange(i)
  local answer = {
    ('Here is how **step %d** works, with `inline code` and a [link](https://example.com).'):format(i),
    '',
    '- first point, with *emphasis*',
    '- second point',
    '  - nested point',
    '',
    '```lua',
  }
  for k = 1, 12 do
    table.insert(answer, ('local value_%d = compute(%d, "text %d") -- a comment'):format(k, i, k))
  end
  vim.list_extend(answer, { '```', '', '> A quoted remark.', '', '### A heading', '' })
  for k = 1, 8 do
    table.insert(answer, ('Paragraph line %d of answer %d goes on for a while to wrap at eighty columns, as prose does.'):format(k, i))
  end
  return {
    { role = 'user', parts = { { type = 'text', content = ('Question %d: how does this work?'):format(i) } } },
    { role = 'assistant', parts = {
      { type = 'thinking', content = 'First I look at the question.\nThen at the code.' },
      { type = 'text', content = table.concat(answer, '\n') },
    } },
  }
end

local function chat_of(lines)
  local messages = {}
  local i = 0
  while #messages * 20 < lines do
    i = i + 1
    vim.list_extend(messages, exchange(i))
  end
  return { id = 'bench' .. lines, name = 'bench ' .. lines, messages = messages, draft = '' }
end

local function now()
  return vim.uv.hrtime() / 1e6
end

local function mean(xs)
  local sum = 0
  for _, x in ipairs(xs) do
    sum = sum + x
  end
  return sum / #xs
end

-- The 95th percentile: the slow keys a user notices, not the one worst hiccup.
local function p95(xs)
  table.sort(xs)
  return xs[math.max(1, math.ceil(#xs * 0.95))]
end

-- The deltas of an answer: words, newlines now and then, a code block midway.
local function delta_text(k)
  if k % 40 == 20 then
    return '\n```rust\nfn main() {}\n'
  elseif k % 40 == 30 then
    return '\n```\n'
  elseif k % 8 == 0 then
    return ' word\n'
  end
  return ' word' .. k
end

local function measure(lines)
  current = chat_of(lines)
  local t0 = now()
  render.refresh({ scroll = true })
  vim.cmd('redraw')
  local switch = now() - t0
  local shown = vim.api.nvim_buf_line_count(layout.buf('preview'))
  local st = { rid = 'r' .. lines, chat_id = current.id, text = '', thinking = '', pieces = {} }
  state.add_stream(st.rid, st)
  stream.start(st)
  vim.cmd('redraw')
  local input = layout.buf('input')
  local per_delta, echo = {}, {}
  local hl = require('bb7.ui.highlight')
  local before = hl.stats()
  for k = 1, DELTAS do
    -- The network's pause between two deltas: timers fall due meanwhile.
    vim.uv.sleep(GAP_MS)
    local t1 = now()
    stream.delta(st, { type = 'chunk', content = delta_text(k) })
    -- What falls due runs now, as it would before the next key is read.
    vim.wait(0)
    vim.cmd('redraw')
    local t2 = now()
    -- A key typed right then: what the user waits for before it shows.
    vim.api.nvim_buf_set_text(input, 0, 0, 0, 0, { 'a' })
    vim.cmd('redraw')
    local t3 = now()
    table.insert(per_delta, t2 - t1)
    table.insert(echo, t3 - t1)
  end
  local after = hl.stats()
  state.end_stream(st.rid)
  stream.finish(st, { type = 'done' })
  vim.cmd('redraw')
  vim.api.nvim_buf_set_lines(input, 0, -1, false, {})
  return { lines = shown, delta = mean(per_delta), echo = p95(echo), switch = switch, parses = after.parses - before.parses }
end

require('bb7').setup({})
layout.open()
vim.cmd('redraw')
local sizes = vim.env.BB7_BENCH_SIZES and vim.tbl_map(tonumber, vim.split(vim.env.BB7_BENCH_SIZES, ",")) or { 0, 100, 1000, 5000, 10000 }
-- A first run loads the parsers and queries; it is not counted.
measure(0)
local results = {}
for _, n in ipairs(sizes) do
  table.insert(results, measure(n))
end
local base = results[1]
io.stdout:write(('bb7 Neovim preview, %d deltas %d ms apart per chat; fresh chat: delta %.2f ms (mean), key echo %.2f ms (p95)\n'):format(DELTAS, GAP_MS, base.delta, base.echo))
io.stdout:write(('%-14s %14s %14s %14s %10s\n'):format('preview lines', 'delta × fresh', 'echo × fresh', 'delta / echo', 'switch'))
for i = 2, #results do
  local r = results[i]
  io.stdout:write(('%-14d %14.2f %14.2f %8.2f/%.2f ms %7.1f ms\n'):format(r.lines, r.delta / base.delta, r.echo / base.echo, r.delta, r.echo, r.switch))
end
vim.cmd('qa!')
