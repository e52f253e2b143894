-- Read approvals (`:BB7Tools ask`): the model asks to read a file while the user may be
-- typing in a code buffer. A prompt opened there would take the next keys typed as the
-- answer (the default vim.ui.select() reads them with inputlist()), so it is only ever
-- opened in a bb7 pane: at once when the user is in one, else when they next enter one
-- (:BB7 opens the UI there); meanwhile a notification says what waits.

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}

---@class bb7.Approval
---@field id string the `approval_id`
---@field rid string the turn's request id
---@field prompt string

local waiting = {} ---@type bb7.Approval[] in arrival order
local asking = false -- a prompt is open

local function in_pane()
  return require('bb7.ui.layout').pane_of() ~= nil
end

-- Asks the oldest approval, then the next, while the user is in a bb7 pane.
local function ask_next()
  if asking or #waiting == 0 or not in_pane() then
    return
  end
  local a = table.remove(waiting, 1)
  asking = true
  vim.ui.select({ 'Allow', 'Deny' }, { prompt = a.prompt }, function(choice)
    asking = false
    api.tool_approve(a.id, choice == 'Allow')
    vim.schedule(ask_next)
  end)
end

local group = nil

--- A `tool_approval` message of turn `rid` arrived: asked now in a bb7 pane, else when
--- the user enters one.
---@param rid string
---@param msg table
function M.request(rid, msg)
  local prompt = 'BB-7: ' .. (msg.payload and msg.payload.description or 'Allow this read') .. '?'
  table.insert(waiting, { id = msg.approval_id, rid = rid, prompt = prompt })
  if not group then
    group = vim.api.nvim_create_augroup('bb7_approval', { clear = true })
    vim.api.nvim_create_autocmd({ 'BufEnter', 'WinEnter' }, {
      group = group,
      callback = function()
        vim.schedule(ask_next)
      end,
    })
  end
  if in_pane() then
    ask_next()
  else
    util.say(prompt:sub(7) .. ' Answer in the bb7 UI (:BB7).', vim.log.levels.WARN)
  end
end

--- The turn `rid` ended: its approvals are not asked any more.
---@param rid string
function M.forget(rid)
  waiting = vim.tbl_filter(function(a)
    return a.rid ~= rid
  end, waiting)
end

--- Approvals not asked yet (for tests and the statusline).
---@return integer
function M.count()
  return #waiting
end

return M
