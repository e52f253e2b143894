-- Options of require('bb7').setup() with their defaults, and their validation: an
-- unknown option or a value of the wrong kind is reported (one notification listing
-- every problem) and the default is kept for it.

local M = {}

---@class bb7.Config
---@field binary string? path to the bb7 binary (default: bb7 on PATH, else the checkout's build)
---@field send_key string key that sends the input pane (normal and insert mode)
---@field diff_style 'unified'|'split' :BB7Diff in the preview, or side by side
---@field chat_style string filetype of the preview pane
---@field keymaps boolean set the pane and review keymaps of :help bb7-keys
---@field layout 'tab'|'float' the panes in a tab of their own, or floating over the editor
---@field review_keys table<string, string> keys of the inline review
---@field send_stale 'ask'|'refresh'|'send' a send with context files changed since they were added: ask, update them first, or send the old snapshots
---@field confirm_add_kb number :BB7Add of a file larger than this many KiB asks first, naming its tokens and cost (0: never asks)
M.defaults = {
  binary = nil,
  send_key = '<C-s>',
  diff_style = 'unified',
  chat_style = 'markdown',
  keymaps = true,
  layout = 'tab',
  review_keys = {
    accept = 'ga',
    reject = 'gr',
    accept_all = 'gA',
    reject_all = 'gX',
    next = ']h',
    prev = '[h',
    take = 'gY',
  },
  send_stale = 'ask',
  confirm_add_kb = 256,
}

-- Each option: its Lua type, and for strings the allowed values (nil: any).
local schema = {
  binary = { 'string' },
  send_key = { 'string' },
  diff_style = { 'string', { 'unified', 'split' } },
  chat_style = { 'string' },
  keymaps = { 'boolean' },
  layout = { 'string', { 'tab', 'float' } },
  review_keys = { 'table' },
  send_stale = { 'string', { 'ask', 'refresh', 'send' } },
  confirm_add_kb = { 'number' },
}

---@type bb7.Config
M.values = vim.deepcopy(M.defaults)

--- Checks `opts` against the schema.
---@param opts table
---@return table valid the options that passed
---@return string[] problems one sentence per bad option
function M.validate(opts)
  local valid, problems = {}, {}
  if type(opts) ~= 'table' then
    return valid, { 'setup() takes a table, got ' .. type(opts) }
  end
  for key, value in pairs(opts) do
    local rule = schema[key]
    if not rule then
      table.insert(problems, string.format('unknown option %q', tostring(key)))
    elseif type(value) ~= rule[1] then
      table.insert(problems, string.format('option %q must be a %s, got %s', key, rule[1], type(value)))
    elseif rule[2] and not vim.tbl_contains(rule[2], value) then
      table.insert(problems, string.format('option %q must be one of %s, got %q', key, table.concat(rule[2], ', '), value))
    elseif key == 'review_keys' then
      local keys = {}
      for name, lhs in pairs(value) do
        if M.defaults.review_keys[name] == nil then
          table.insert(problems, string.format('review_keys: unknown key %q', tostring(name)))
        elseif type(lhs) ~= 'string' or lhs == '' then
          table.insert(problems, string.format('review_keys.%s must be a non-empty string', name))
        else
          keys[name] = lhs
        end
      end
      valid[key] = keys
    else
      valid[key] = value
    end
  end
  return valid, problems
end

--- Validates `opts`, keeps the good ones over the defaults and reports the others.
---@param opts table?
---@return string[] problems empty when every option was accepted
function M.apply(opts)
  local valid, problems = M.validate(opts or {})
  M.values = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), valid)
  if #problems > 0 then
    vim.notify('BB-7: setup(): ' .. table.concat(problems, '; '), vim.log.levels.ERROR)
  end
  return problems
end

---@return bb7.Config
function M.get()
  return M.values
end

return M
