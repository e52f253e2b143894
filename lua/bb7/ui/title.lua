-- The preview pane's title: the chat's name, its model, what a streaming answer is
-- doing, and the tokens, cached share and cost of the chat's last answer with the
-- chat's running total, shortened part by part to fit a narrow pane.

local state = require('bb7.state')
local util = require('bb7.util')

local M = {}

--- Tokens and cost of the chat's last answer that reported them.
---@param chat table? a chat_get reply
---@return table? usage
local function last_usage(chat)
  local messages = chat and chat.messages or {}
  for i = #messages, 1, -1 do
    if messages[i].usage then
      return messages[i].usage
    end
  end
end

--- The last answer's tokens, cached share, cost and provider when known, e.g.
--- `12.3k tok, 85% cached, $0.01, local`.
---@param u table usage
---@return string
local function usage_text(u, short)
  local est = require('bb7.ui.estimate')
  local total = u.total_tokens or ((u.prompt_tokens or 0) + (u.completion_tokens or 0))
  local s = est.tokens(total) .. ' tok'
  if not short and (u.cached_tokens or 0) > 0 and (u.prompt_tokens or 0) > 0 then
    s = s .. string.format(', %d%% cached', math.floor(100 * u.cached_tokens / u.prompt_tokens + 0.5))
  end
  s = s .. ', ' .. est.cost(u.cost or 0)
  return (u.provider and not short) and (s .. ', ' .. u.provider) or s
end

--- The preview's title: chat name, model, a spinner while an answer streams into this
--- chat (`waiting N s` until its first token, `retrying in N s (HTTP 429)` while a
--- retry waits), tokens, cached share and
--- cost of the chat's last answer, and the chat's total cost (from the turns this
--- Neovim saw). With `width`, what fits it (see below); without, the whole title.
---@param width integer? display cells
---@return string
function M.preview(width)
  local chat = state.chat()
  local name = ' ' .. (chat and chat.name or 'bb7')
  local model = chat and chat.model or nil
  -- While it streams, what the answer is doing comes right after the model.
  local status
  local live = chat and state.chat_stream(chat.id)
  if live then
    local r = live.retry
    if r then
      local secs = math.max(0, math.ceil((r.at - vim.uv.now()) / 1000))
      status = require('bb7').spinner() .. string.format(' retrying in %d s', secs) .. (r.reason and (' (' .. r.reason .. ')') or '')
    elseif live.started and #(live.pieces or {}) == 0 then
      -- Until the first token: how long it has waited (a slow server, a long prompt).
      status = require('bb7').spinner() .. string.format(' waiting %d s', math.floor((vim.uv.now() - live.started) / 1000))
    else
      status = require('bb7').spinner() .. ' answering'
    end
  end
  local seen, totals
  if chat then
    seen, totals = state.chat_usage(chat.id)
  end
  local u = last_usage(chat) or seen
  local total
  -- The chat's running total, when it has cost more than this answer.
  if u and totals and (totals.cost or 0) > (u.cost or 0) + 1e-9 then
    total = 'chat ' .. require('bb7.ui.estimate').cost(totals.cost)
  end
  -- The day's spend (every project) beside it: lua/bb7/spend.lua.
  local today = require('bb7.spend').text()
  if today then
    total = total and (total .. ' · ' .. today) or today
  end
  local function join(n, m, usage, t)
    local parts = { n }
    for _, x in ipairs({ m or false, status or false, usage or false, t or false }) do
      if x then
        table.insert(parts, x)
      end
    end
    return table.concat(parts, ' · ')
  end
  width = width or math.huge
  local usage = u and usage_text(u) or nil
  -- A narrow pane gives up, in turn: the model (:BB7Model shows it), the chat total,
  -- the end of the chat's name, then the cached share and provider; the cost stays.
  local tries = {
    function() return join(name, model, usage, total) end,
    function() return join(name, nil, usage, total) end,
    function() return join(name, nil, usage, nil) end,
    function()
      local rest = vim.fn.strdisplaywidth(join('', nil, usage, nil))
      return join(util.truncate(name, math.max(width - rest, 12)), nil, usage, nil)
    end,
    function()
      local short = u and usage_text(u, true) or nil
      local rest = vim.fn.strdisplaywidth(join('', nil, short, nil))
      return join(util.truncate(name, math.max(width - rest, 12)), nil, short, nil)
    end,
  }
  local title
  for _, try in ipairs(tries) do
    title = try()
    if vim.fn.strdisplaywidth(title) <= width then
      return title
    end
  end
  return title
end

return M
