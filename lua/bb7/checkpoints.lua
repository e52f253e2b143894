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
  local restored, refused = {}, {}
  for _, f in ipairs(res.files) do
    if f.restored then
      util.reload(state.loaded_buf(f.path))
      require('bb7.review').refresh(f.path)
      table.insert(restored, f.path)
    elseif f.conflict then
      table.insert(refused, f.path .. ' (' .. (require('bb7.words').plugin(f.reason) or 'conflict') .. ')')
    end
  end
  -- One message for the whole rollback.
  local parts = {}
  if #restored > 0 then
    table.insert(parts, 'Rolled back ' .. table.concat(restored, ', '))
  end
  if #refused > 0 then
    table.insert(parts, 'not rolled back: ' .. table.concat(refused, ', '))
  end
  if #parts == 0 then
    table.insert(parts, 'Nothing to roll back')
  end
  say(table.concat(parts, '; '), #refused > 0 and levels.WARN or levels.INFO)
  require('bb7.ui.render').refresh()
end

--- `created_at` (RFC 3339 in UTC, `2026-11-24T13:03:11Z`) in local time,
--- `2026-11-24 14:03:11`; the text itself when it does not parse.
---@param created_at string
---@return string
function M.local_time(created_at)
  local y, mo, d, h, mi, sec = created_at:match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)')
  if not y then
    return created_at
  end
  local fields = { year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h), min = tonumber(mi), sec = tonumber(sec), isdst = false }
  -- os.time reads the fields as local time; the offset of local time from UTC at that
  -- moment turns them into the UTC instant they are.
  local as_local = os.time(fields)
  local offset = os.time(os.date('*t', as_local)) - os.time(os.date('!*t', as_local))
  return os.date('%Y-%m-%d %H:%M:%S', as_local + offset)
end

-- What each checkpoint's `action` did, as the list says it.
local action_words = {
  apply = 'applied', apply_file = 'applied', apply_file_as = 'saved as',
  review_apply = 'reviewed', rollback = 'rolled back',
}

--- One line of the list: local time, what was done, and the files; `undone`: the
--- local time of the rollback that undid it.
---@param cp table a checkpoint_list entry
---@param undone string?
---@return string
function M.describe(cp, undone)
  local paths = vim.tbl_map(function(f)
    return f.path
  end, cp.files or {})
  local line = string.format('%s  %s  %s', M.local_time(cp.created_at), action_words[cp.action] or cp.action, table.concat(paths, ', '))
  return undone and (line .. '  (rolled back at ' .. undone .. ')') or line
end

--- The checkpoints of `list` that a later rollback undid (its `rolls_back`), by id:
--- the local time of that rollback.
---@param list table[]
---@return table<string, string>
local function undone_by(list)
  local undone = {}
  for _, cp in ipairs(list) do
    if cp.action == 'rollback' and cp.rolls_back then
      undone[cp.rolls_back] = M.local_time(cp.created_at):sub(12)
    end
  end
  return undone
end

--- What rolling `cp` back does, in a sentence.
---@param cp table
---@return string
function M.consequence(cp)
  local paths = vim.tbl_map(function(f)
    return f.path
  end, cp.files or {})
  return 'Roll back restores ' .. table.concat(paths, ', ') .. ' as they were before ' .. M.local_time(cp.created_at):sub(12) .. ' (a file this created is deleted)'
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
  local undone = undone_by(list)
  vim.ui.select(list, {
    prompt = 'Checkpoints (local time, newest first)',
    format_item = function(cp)
      return M.describe(cp, undone[cp.checkpoint_id])
    end,
  }, function(cp)
    if not cp then
      return
    end
    -- Rolling it back again would say nothing new (its files are as before it).
    if undone[cp.checkpoint_id] then
      return say('Already rolled back (at ' .. undone[cp.checkpoint_id] .. '); the rollback is in the list too, to undo it', levels.WARN)
    end
    local choices = {
      'Roll back the files not changed since',
      'Roll back every file, discarding later edits',
    }
    vim.ui.select(choices, { prompt = M.consequence(cp) }, function(choice)
      if choice then
        rollback(cp, choice == choices[2])
      end
    end)
  end)
end

return M
