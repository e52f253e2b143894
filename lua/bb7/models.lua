-- :BB7Model — the model picker. OpenRouter lists some 300 models, so the list is
-- filtered before it is shown: with a picker plugin behind vim.ui.select (Telescope's
-- ui-select, fzf-lua, snacks, mini.pick, dressing) the plugin's fuzzy filter does it;
-- with Neovim's own vim.ui.select (a numbered inputlist) a filter is asked first
-- (words that must all appear in the id or name), and the matches are listed when
-- they fit the screen.

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

--- Whether vim.ui.select is Neovim's own (no picker plugin replaced it).
---@return boolean
function M.builtin_select()
  local info = debug.getinfo(vim.ui.select, 'S')
  return info ~= nil and info.source:find('vim/ui.lua', 1, true) ~= nil
end

--- One line per model: id, context window and input price per million tokens.
---@param m table a get_models row
---@return string
function M.format(m)
  return string.format('%s  (%dk, $%.2f/M in)', m.id, math.floor((m.context_length or 0) / 1000), (tonumber(m.pricing and m.pricing.prompt) or 0) * 1e6)
end

--- The models whose id or name holds every word of `filter` (any case).
---@param models table[]
---@param filter string
---@return table[]
function M.filter(models, filter)
  local words = vim.split(vim.trim(filter):lower(), '%s+', { trimempty = true })
  return vim.tbl_filter(function(m)
    local hay = (m.id .. ' ' .. (m.name or '')):lower()
    for _, w in ipairs(words) do
      if not hay:find(w, 1, true) then
        return false
      end
    end
    return true
  end, models)
end

local function set_model(choice)
  if not choice then
    return
  end
  local _, err = api.save_chat_settings({ model = choice.id })
  if err then
    return say('Failed to set the model: ' .. err.message, levels.ERROR)
  end
  require('bb7.ui.render').refresh()
  -- The chat as it would be sent to the new model: a window it does not fit (or nearly
  -- fills) is said now, with the choice, not at the next send.
  local draft = require('bb7.ui.layout').visible() and require('bb7.ui.message').text() or ''
  api.estimate_tokens(draft, function(r)
    local est = require('bb7.ui.estimate')
    local window, total = r and r.context_window, r and r.total
    if type(window) == 'number' and type(total) == 'number' and (r.context_level == 'full' or r.context_level == 'warning') then
      local how = r.context_level == 'full' and 'does not fit its window (%s): a send is refused' or 'nearly fills its window (%s)'
      return say(string.format('Model set to %s: this chat (~%s tokens) ' .. how .. '. Choose a larger model, or drop context', choice.id, est.tokens(total), est.tokens(window)), levels.WARN)
    end
    say('Model set to ' .. choice.id)
  end)
end

local function pick(models)
  vim.ui.select(models, { prompt = 'Model', format_item = M.format, kind = 'bb7_model' }, set_model)
end

-- Asks for a filter until the matches fit the screen, then lists them.
local function narrow(models, default)
  local fits = math.max(vim.o.lines - 4, 5)
  vim.ui.input({ prompt = string.format('Model (%d; type words to filter, empty: all): ', #models), default = default }, function(text)
    if text == nil then
      return
    end
    local found = M.filter(models, text)
    if #found == 0 then
      return say('No model matches "' .. text .. '"', levels.WARN)
    elseif #found == 1 then
      return set_model(found[1])
    elseif #found > fits then
      say(string.format('%d models match "%s": add a word', #found, text), levels.WARN)
      return narrow(found, text)
    end
    pick(found)
  end)
end

--- Lets the user choose the active chat's model.
function M.choose()
  api.get_models(function(r, err)
    if not r then
      return say('Failed to load models: ' .. err.message, levels.ERROR)
    end
    M.choose_from(r.models or {})
  end)
end

--- Lets the user choose one of `models` (get_models rows) for the active chat.
---@param models table[]
function M.choose_from(models)
  if #models == 0 then
    return say('No models listed', levels.WARN)
  end
  if M.builtin_select() and #models > math.max(vim.o.lines - 4, 5) then
    return narrow(models, '')
  end
  pick(models)
end

return M
