-- :BB7Export [md|json] [redact|no-redact]: the active chat through `bb7 export`
-- (docs/PROTOCOL.md "Extension: export and import") into a new buffer, Markdown with
-- likely secrets replaced by [REDACTED:kind] unless `no-redact`, JSON (for
-- `bb7 import`) redacted only with `redact`. The binary runs off the main loop.

local util = require('bb7.util')
local state = require('bb7.state')

local M = {}
local say, levels = util.say, vim.log.levels

--- Completion of :BB7Export.
function M.complete()
  return { 'md', 'json', 'redact', 'no-redact' }
end

--- Runs the export with the words of `args`; `done(buf)` with the new buffer.
---@param args string
---@param done fun(buf: integer)?
function M.run(args, done)
  local format, flag = 'md', nil
  for _, w in ipairs(vim.split(vim.trim(args or ''), '%s+', { trimempty = true })) do
    if w == 'md' or w == 'json' then
      format = w
    elseif w == 'redact' or w == 'no-redact' then
      flag = '--' .. w
    else
      return say('Usage: :BB7Export [md|json] [redact|no-redact]', levels.ERROR)
    end
  end
  local chat = state.chat()
  local cmd = { require('bb7.client').binary(), 'export', '--format', format }
  if flag then
    table.insert(cmd, flag)
  end
  if chat and chat.id then
    table.insert(cmd, chat.id)
  end
  vim.system(cmd, { cwd = state.root(), text = true }, vim.schedule_wrap(function(r)
    local note = vim.trim((r.stderr or ''):gsub('bb7: ', ''))
    if r.code ~= 0 then
      return say('Export failed: ' .. note, levels.ERROR)
    end
    local buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split((r.stdout or ''):gsub('\n$', ''), '\n'))
    vim.bo[buf].filetype = format == 'json' and 'json' or 'markdown'
    vim.cmd('tabnew')
    vim.api.nvim_win_set_buf(0, buf)
    say('Exported (' .. format .. '): ' .. note .. '; :w FILE to keep it')
    if done then
      done(buf)
    end
  end))
end

return M
