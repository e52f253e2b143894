-- The estimate of the next send in the Message pane's title: tokens, the part the
-- provider's prompt cache will likely serve, and the expected input cost, from
-- `estimate_tokens`. Asked again when the chat, its context or the draft changes,
-- `DELAY` ms after the last change, never blocking and with at most one request in
-- flight (a change meanwhile asks once more when the reply is in).

local state = require('bb7.state')

local M = {}

--- Milliseconds after the last change before asking.
M.DELAY = 300
-- A reply not in after this long is taken as lost (the binary exited).
local LOST_MS = 10000

local E = {
  timer = nil, ---@type uv.uv_timer_t?
  asked_at = nil, ---@type integer? when the request in flight was sent
  again = false, -- something changed while a request was in flight
  chat = nil, ---@type string? chat the shown estimate belongs to
  reply = nil, ---@type table? the last token_estimate of `chat`
  sent = 0, -- requests sent (for tests)
}

local layout = require('bb7.util').lazy('bb7.ui.layout')

--- `n` tokens, short: 950, 4.8k, 1.2M.
---@param n number
---@return string
function M.tokens(n)
  n = n or 0
  if n < 1000 then
    return tostring(math.floor(n))
  elseif n < 1e6 then
    return (string.format('%.1fk', n / 1000):gsub('%.0k$', 'k'))
  end
  return (string.format('%.1fM', n / 1e6):gsub('%.0M$', 'M'))
end

--- A cost in USD: four decimals under a cent, two from there.
---@param usd number
---@return string
function M.cost(usd)
  return string.format(usd < 0.01 and '$%.4f' or '$%.2f', usd)
end

--- The active chat's last estimate, or nil.
---@return table?
local function current()
  local chat = state.chat()
  local r = E.reply
  if not chat or E.chat ~= chat.id or not r or not r.total then
    return nil
  end
  return r
end

--- The context gauge of the active chat as the binary words it (`~48k/200k (24%)`)
--- and its level (`ok`, `warning` from 80%, `full`: a send is refused), when the
--- model's window is known; nil otherwise (an unknown window is never guessed).
---@return string? gauge
---@return string? level
function M.gauge()
  local r = current()
  if not r or type(r.context_window) ~= 'number' or type(r.context_gauge) ~= 'string' then
    return nil
  end
  return r.context_gauge, r.context_level
end

--- The estimate for the title, e.g. `~4.8k tok (4.1k cached) $0.0004`, or with a known
--- window `~48k/200k (24%) (4.1k cached) $0.0004` (`!` after it from 80%, `FULL` at
--- 100%); '' when none is known for the active chat.
---@return string
function M.text()
  local r = current()
  if not r then
    return ''
  end
  local gauge, level = M.gauge()
  local s = '~' .. M.tokens(r.total) .. ' tok'
  if gauge then
    s = gauge .. (level == 'full' and ' FULL' or level == 'warning' and ' !' or '')
  end
  if (r.cached_tokens or 0) > 0 then
    s = s .. ' (' .. M.tokens(r.cached_tokens) .. ' cached)'
  end
  if type(r.expected_cost) == 'number' then
    s = s .. ' ' .. M.cost(r.expected_cost)
  end
  return s
end

local function draw()
  if layout().visible() then
    require('bb7.ui.render').render_titles()
  end
end

local function in_flight()
  return E.asked_at ~= nil and vim.uv.now() - E.asked_at < LOST_MS
end

--- Asks now (or once the request in flight is answered).
function M.ask()
  local chat = state.chat()
  if not chat or not layout().visible() then
    return
  end
  if in_flight() then
    E.again = true
    return
  end
  E.again = false
  E.asked_at = vim.uv.now()
  E.sent = E.sent + 1
  local chat_id = chat.id
  local draft = require('bb7.ui.message').text()
  require('bb7.api').estimate_tokens(draft, function(r)
    E.asked_at = nil
    require('bb7.spend').note(r and r.spent_today)
    local now = state.chat()
    if r and now and now.id == chat_id then
      E.chat, E.reply = chat_id, r
      draw()
    end
    if E.again or not (now and now.id == chat_id) then
      M.schedule()
    end
  end)
end

--- Asks `DELAY` ms after the last call (the chat, its context or the draft changed).
function M.schedule()
  if not E.timer then
    E.timer = vim.uv.new_timer()
  end
  E.timer:stop()
  E.timer:start(M.DELAY, 0, vim.schedule_wrap(M.ask))
end

--- Follows the edits of the Message pane's buffer `buf` (once per buffer).
---@param buf integer
function M.watch(buf)
  if vim.b[buf].bb7_estimate then
    return
  end
  vim.b[buf].bb7_estimate = true
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      vim.schedule(M.schedule)
    end,
    on_detach = function()
      pcall(function()
        vim.b[buf].bb7_estimate = nil
      end)
    end,
  })
end

--- Asks before adding a file over `confirm_add_kb`, naming its size, its tokens (about
--- four bytes each) and what sending it costs at the chat model's input price.
---@param path string
---@param size integer bytes
---@return boolean add
function M.confirm_add(path, size)
  local limit = require('bb7.config').get().confirm_add_kb
  if limit <= 0 or size <= limit * 1024 then
    return true
  end
  local tokens = math.ceil(size / 4)
  local cost = ''
  local chat = state.chat() or require('bb7.api').chat_get()
  local models = chat and chat.model and require('bb7.api').call('get_models', {}, 3000)
  for _, m in ipairs(models and models.models or {}) do
    local price = m.id == chat.model and m.pricing and tonumber(m.pricing.prompt)
    if price then
      cost = string.format(', about %s per send at %s prices', M.cost(tokens * price), m.id)
    end
  end
  local question = string.format('%s is %.1f MiB: about %s tokens%s. Add it?', path, size / 1048576, M.tokens(tokens), cost)
  return vim.fn.confirm(question, '&Yes\n&No', 2) == 1
end

--- For tests: requests sent, whether one is in flight, the last reply.
---@return {sent: integer, in_flight: boolean, reply: table?}
function M.stats()
  return { sent = E.sent, in_flight = in_flight(), reply = E.reply }
end

return M
