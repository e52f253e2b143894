-- Today's spend, every project and every bb7 on the machine (docs/PROTOCOL.md,
-- "Extension: budgets"): the server says it in each `done` and `token_estimate` as
-- `spent_today` (USD, local day, from ~/.bb7/usage.csv). The Preview title shows it
-- beside the chat's total, so the day's budget is in view while one chat's is.

local M = {}

local today = nil

--- Keeps `usd` when the server said it (`nil` or another type: unchanged).
---@param usd any `spent_today` of a `done` or `token_estimate`
function M.note(usd)
  if type(usd) == 'number' and usd >= 0 then
    today = usd
  end
end

--- `today $0.0055`, or nil before any spend today is known (or while it is 0).
---@return string?
function M.text()
  if not today or today <= 0 then
    return nil
  end
  return 'today ' .. require('bb7.ui.estimate').cost(today)
end

return M
