-- :BB7Checkpoints: pick a checkpoint of the active chat, then roll it back.

local api = require('bb7.api')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

local function rollback(cp, force)
  local res, err = api.checkpoint_rollback({ checkpoint_id = cp.checkpoint_id, mode = 'hard_all', force = force or nil })
  if not res then
    return say('Failed to roll back: ' .. err.message, levels.ERROR)
  end
  for _, f in ipairs(res.files) do
    if f.restored then
      util.reload(state.loaded_buf(f.path))
      require('bb7.review').refresh(f.path)
      say('Rolled back ' .. f.path)
    elseif f.conflict then
      say(f.path .. ' not rolled back: ' .. (f.reason or 'conflict'), levels.WARN)
    end
  end
  require('bb7.ui.render').refresh()
end

--- Lists the checkpoints of `chat_id`, newest first, and rolls back the chosen one.
---@param chat_id string?
function M.pick(chat_id)
  if not chat_id then
    return
  end
  local r = api.checkpoint_list({ chat_id = chat_id })
  if not r or #r.checkpoints == 0 then
    return say('No checkpoints', levels.WARN)
  end
  local list = {}
  for i = #r.checkpoints, 1, -1 do
    table.insert(list, r.checkpoints[i])
  end
  vim.ui.select(list, {
    prompt = 'Checkpoints',
    format_item = function(c)
      local paths = vim.tbl_map(function(f)
        return f.path
      end, c.files)
      return c.created_at .. '  ' .. c.action .. '  ' .. table.concat(paths, ', ')
    end,
  }, function(cp)
    if not cp then
      return
    end
    vim.ui.select({ 'Roll back', 'Roll back, discarding later edits' }, { prompt = 'Checkpoint ' .. cp.checkpoint_id }, function(choice)
      if choice then
        rollback(cp, choice ~= 'Roll back')
      end
    end)
  end)
end

return M
