-- The binary's messages are written for its command line and its protocol (`bb7 apply
-- --force`, `force: true`, `chat_force_unlock`, a `scoped` rollback). Shown in Neovim
-- they name what does the same here: the plugin's commands and choices.

local M = {}

-- Plain texts of the binary's messages (src/apply, src/project/lock.rs) and what the
-- plugin says instead.
local rewrites = {
  {
    "; review it hunk by hunk, or apply with `--force` (`force: true`) to let the model's change win there",
    "; :BB7Review takes it hunk by hunk, :BB7Apply! lets the model's change win there",
  },
  {
    ' (roll back with force to reset it anyway, or scoped to keep them)',
    ' ("Roll back every file" in :BB7Checkpoints resets it anyway)',
  },
  { 'chat_force_unlock takes it over', ':BB7Unlock takes it over' },
}

--- `message` with the command-line and protocol advice replaced by the plugin's.
---@param message string?
---@return string?
function M.plugin(message)
  if type(message) ~= 'string' then
    return message
  end
  for _, r in ipairs(rewrites) do
    local s, e = message:find(r[1], 1, true)
    if s then
      message = message:sub(1, s - 1) .. r[2] .. message:sub(e + 1)
    end
  end
  return message
end

-- An attachment's path is `{kind}:{name}` (docs/PROTOCOL.md, "Extension: rules files
-- and attachments"); the preview names it as the user added it.
local attachment_words = {
  diagnostics = 'diagnostics of %s',
  quickfix = 'quickfix list %s',
  git_diff = '%s',
  command_output = 'output of `%s`',
  terminal = 'terminal %s',
  text = 'text %s',
  image = 'image %s',
  mcp_resource = 'resource %s',
}

--- A context entry's path in words: a file's path as it is, an attachment's
--- `command_output:ls` as "output of `ls`".
---@param path string?
---@return string
function M.path(path)
  if type(path) ~= 'string' then
    return ''
  end
  local kind, name = path:match('^([%l_]+):(.*)$')
  local form = kind and attachment_words[kind]
  return form and form:format(name) or path
end

--- A chat event's action (`UserAddFile`) in words, for an action the plugin does not
--- know yet: its words in lower case (`user add file`, without `user`).
---@param action string
---@return string
function M.action(action)
  local words = tostring(action):gsub('(%l)(%u)', '%1 %2'):lower():gsub('^user ', '')
  return (words:gsub('^%l', string.upper))
end

return M
