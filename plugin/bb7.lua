-- Registers the :BB7 commands. The plugin loads lazily: nothing starts until a
-- command runs, and setup({}) runs then unless the user called setup() already.
if vim.g.loaded_bb7 then
  return
end
vim.g.loaded_bb7 = true

require('bb7.commands').register(function()
  require('bb7').ensure_setup()
end)
