-- Small helpers shared by the modules: user messages, buffer and file text, diffs.

local M = {}

--- Tells the user `msg`, prefixed with `BB-7: ` as the reference plugin does.
---@param msg string
---@param level integer? vim.log.levels (default INFO)
function M.say(msg, level)
  vim.notify('BB-7: ' .. msg, level or vim.log.levels.INFO)
end

--- The text of a loaded buffer as it would be on disk: lines joined with "\n", and a
--- final newline only when the buffer has one ('eol'), so a file without a final
--- newline is not reported as changed.
---@param buf integer
---@return string
function M.buffer_text(buf)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  if vim.bo[buf].eol then
    text = text .. '\n'
  end
  return text
end

--- The text of a file on disk, exactly.
---@param path string absolute
---@return string? nil when unreadable
function M.file_text(path)
  local ok, lines = pcall(vim.fn.readfile, path, 'b')
  if not ok then
    return nil
  end
  return table.concat(lines, '\n')
end

--- A unified diff of `old` → `new` as lines, with ---/+++ headers for `path`.
---@param path string
---@param old string?
---@param new string?
---@return string[]
function M.unified(path, old, new)
  local d = vim.diff(old or '', new or '', { result_type = 'unified', ctxlen = 3 })
  local lines = { '--- a/' .. path, '+++ b/' .. path }
  for _, l in ipairs(vim.split(d, '\n', { plain = true })) do
    if l ~= '' then
      table.insert(lines, l)
    end
  end
  return lines
end

--- Reloads the buffer of a file an apply or rollback wrote (unless it has unsaved edits).
---@param buf integer?
function M.reload(buf)
  if buf and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! edit!')
    end)
  end
end

return M
