-- Registers the :BB7 commands. The plugin loads lazily: nothing starts until a
-- command runs.
if vim.g.loaded_bb7 then
  return
end
vim.g.loaded_bb7 = true

local function bb7()
  local m = require('bb7')
  if not m._setup_done then
    m._setup_done = true
    if not m._user_setup then
      m.setup({})
    end
  end
  return m
end

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, vim.tbl_extend('force', { force = true }, opts or {}))
end

local function files(arglead)
  return vim.fn.getcompletion(arglead, 'file')
end

cmd('BB7Init', function() bb7().init_project() end, { desc = 'Initialize bb7 in the current directory' })
cmd('BB7', function() bb7().toggle() end, { desc = 'Toggle the bb7 UI' })
cmd('BB7NewChat', function(o) bb7().new_chat(o.args) end, { nargs = '?', desc = 'Start a new chat' })
cmd('BB7Add', function(o) bb7().add(o, false) end, { nargs = '?', range = true, complete = files, desc = 'Add a file or section to context' })
cmd('BB7AddReadonly', function(o) bb7().add(o, true) end, { nargs = '?', range = true, complete = files, desc = 'Add a file to context, read-only' })
cmd('BB7Remove', function(o) bb7().remove(o) end, { nargs = '?', complete = files, desc = 'Remove a file from context' })
cmd('BB7Model', function() bb7().choose_model() end, { desc = 'Choose the model of the active chat' })
cmd('BB7Diff', function(o) bb7().diff(o) end, { nargs = '?', complete = files, desc = 'Show the model\'s changes to a file' })
cmd('BB7DiffLocal', function(o) bb7().diff_local(o) end, { nargs = '?', complete = files, desc = 'Diff the local file against the model\'s output' })
cmd('BB7Review', function(o) bb7().review(o) end, { nargs = '?', complete = files, desc = 'Review the model\'s changes hunk by hunk' })
cmd('BB7Checkpoints', function() bb7().checkpoints() end, { desc = 'Roll back an apply' })
cmd('BB7Search', function(o) bb7().search(o) end, { nargs = '?', desc = 'Search chats' })
cmd('BB7EditInstructions', function(o) bb7().edit_instructions(o) end, {
  nargs = '?',
  complete = function() return { 'project', 'global', 'system' } end,
  desc = 'Edit instructions',
})
cmd('BB7Send', function(o) bb7().send(o.args) end, { nargs = '+', desc = 'Send a message to the active chat' })
cmd('BB7Apply', function(o) bb7().apply(o) end, { nargs = '?', complete = files, desc = 'Apply the model\'s output' })
cmd('BB7Tools', function(o) bb7().tools(o) end, {
  nargs = '?',
  complete = function() return { 'off', 'ask', 'auto' } end,
  desc = 'Let the model read project files (off, ask, auto)',
})
cmd('BB7Cancel', function() bb7().cancel() end, { desc = 'Cancel the streaming response' })
cmd('BB7Version', function() bb7().version() end, { desc = 'Show the bb7 version' })
