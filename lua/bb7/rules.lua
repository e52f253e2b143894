-- The project's rules files (AGENTS.md, CLAUDE.md, …) that bb7 includes as
-- instructions (docs/PROTOCOL.md, "Extension: rules files and attachments"), as the
-- binary reports them in chat_get's instructions_info.rules_files.

local api = require('bb7.api')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}

--- The rules files the active chat's requests include, in order (empty when none or
--- when there is no active chat).
---@return string[]
function M.used()
  local chat = api.chat_get()
  local info = chat and chat.instructions_info or {}
  return info.rules_files or {}
end

--- :BB7EditInstructions rules — names the rules files included and opens the first.
function M.edit()
  local used = M.used()
  if #used == 0 then
    return util.say('No rules file is included (config rules_files; default AGENTS.md, CLAUDE.md, …)', vim.log.levels.WARN)
  end
  vim.api.nvim_set_current_win(require('bb7.ui.layout').editor_window())
  vim.cmd('edit ' .. vim.fn.fnameescape(state.root() .. '/' .. used[1]))
  util.say('Rules files included: ' .. table.concat(used, ', '))
end

return M
