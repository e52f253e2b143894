-- Invisible characters (zero-width, bidi controls, Unicode Tags) as the plugin shows
-- them. The binary decides what is flagged and names it (docs/PROTOCOL.md "Extension:
-- invisible characters"): `invisible_warnings` on an add or attach, `invisible` on a
-- review hunk. Here a warning becomes a notification, and a hunk's added lines show
-- each flagged character as `<U+202E>`, so what is approved is what is seen.
local M = {}

--- Notifies each warning of an add/attach reply (`reply.invisible_warnings`), at WARN.
---@param reply table|nil
function M.warn(reply)
  for _, w in ipairs((reply and reply.invisible_warnings) or {}) do
    require('bb7.util').say(w.message, vim.log.levels.WARN)
  end
end

--- `line` with every code point of `points` (`{ 'U+202E', … }`) written as `<U+202E>`.
---@param line string
---@param points string[]|nil
---@return string
function M.visible(line, points)
  for _, p in ipairs(points or {}) do
    local n = tonumber(p:sub(3), 16)
    if n then
      line = line:gsub(vim.pesc(vim.fn.nr2char(n)), '<' .. p .. '>')
    end
  end
  return line
end

return M
