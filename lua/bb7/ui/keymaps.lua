-- Keys of the panes (see :help bb7-keys). Every pane: q closes the UI, g? shows this
-- list in a float (? too, except in the answer, where it searches backward as in any
-- buffer), <Tab>/<S-Tab> and gc/gf/gp/gi move between panes. No pane key is
-- one of Vim's motions or scroll keys (<C-e> <C-y> <C-f> <C-b> <C-d> <C-u> gg G …):
-- reading and moving in a pane works as in any buffer.

local api = require('bb7.api')
local config = require('bb7.config')
local util = require('bb7.util')

local M = {}

local layout = util.lazy('bb7.ui.layout')
local render = util.lazy('bb7.ui.render')
local commands = util.lazy('bb7.commands')

-- Every key, by pane, with its description: the source of both the mappings and `?`.
---@type table<string, {[1]: string, [2]: string, [3]: function}[]>
local keys = {}

local function warn_on(err)
  if err then
    util.say(err.message, vim.log.levels.WARN)
  end
end

-- `?` shows the keys where no one searches; in the answer it is Vim's backward search.
local help_key = { '?', 'the keys (as g?)', function()
  M.help()
end }

local function chat_keys()
  return {
    help_key,
    { '<CR>', 'open the chat', function()
      local c = render().chat_under_cursor()
      if c then
        commands().select_chat(c.id)
      end
    end },
    { 'a', 'add a new chat', function()
      commands().new_chat('')
    end },
    { 'r', 'rename the chat', function()
      local c = render().chat_under_cursor()
      if c then
        vim.ui.input({ prompt = 'Rename chat: ', default = c.name }, function(name)
          if name and name ~= '' then
            warn_on(select(2, api.chat_rename({ id = c.id, name = name })))
            render().refresh()
          end
        end)
      end
    end },
    { 'dd', 'delete the chat', function()
      local c = render().chat_under_cursor()
      if c and vim.fn.confirm('Delete chat "' .. c.name .. '"?', '&Yes\n&No', 2) == 1 then
        warn_on(select(2, api.chat_delete({ id = c.id })))
        render().refresh()
      end
    end },
    { 'X', 'archive the chat (:BB7Archive! brings it back)', function()
      local c = render().chat_under_cursor()
      if c then
        require('bb7.archive').archive(c)
      end
    end },
    { 'p', 'pin or unpin', function()
      local c = render().chat_under_cursor()
      if c then
        warn_on(select(2, api.chat_pin({ id = c.id, pinned = not c.pinned })))
        render().refresh()
      end
    end },
  }
end

local function file_keys()
  local function row()
    return render().file_row()
  end
  return {
    help_key,
    { 'R', 'review the file in its buffer', function()
      commands().review({ args = '' })
    end },
    { 'a', 'apply the whole file', function()
      local f = row()
      if f and commands().apply_one(f.path) then
        util.say('Applied ' .. f.path)
      end
      render().refresh()
    end },
    { 'A', 'apply every file', function()
      commands().apply({ args = '' })
    end },
    { 'd', 'diff snapshot → output', function()
      commands().diff({ args = '' })
    end },
    { 'D', 'merge by hand (diff mode)', function()
      local f = row()
      if f then
        commands().diff_local({ args = f.path })
      end
    end },
    { 'u', 'update the snapshot from disk', function()
      local f = row()
      if not f then
        return
      end
      local _, err = api.sync_context({ path = f.path })
      if err then
        util.say('Failed to update ' .. f.path .. ': ' .. err.message, vim.log.levels.ERROR)
      else
        util.say('Updated ' .. f.path)
      end
      render().refresh()
    end },
    { 'r', 'toggle read-only', function()
      local f = row()
      if f and not f.start_line then
        warn_on(select(2, api.context_set_readonly({ path = f.path, readonly = not f.readonly })))
        render().refresh()
      end
    end },
    { 'x', 'reject output / remove from context', function()
      local f = row()
      if not f then
        return
      end
      local err
      if f.has_output then
        _, err = api.output_delete({ path = f.path })
      elseif f.start_line then
        _, err = api.context_remove_section({ path = f.path, start_line = f.start_line, end_line = f.end_line })
      else
        _, err = api.context_remove({ path = f.path })
      end
      warn_on(err)
      render().refresh()
    end },
  }
end

local function preview_keys()
  return {
    { '<CR>', 'expand or fold a step, change or reasoning', function()
      pcall(vim.cmd, 'normal! za')
    end },
    { 'cf', 'fork a new chat from this message', function()
      render().fork_or_edit('fork')
    end },
    { 'ce', 'edit this message (cuts the chat there)', function()
      render().fork_or_edit('edit')
    end },
  }
end

local function send_input()
  require('bb7.ui.message').send()
end

local function input_keys()
  return {
    help_key,
    { config.get().send_key, 'send (also in insert mode)', send_input },
    { '<CR>', 'send', send_input },
    { require('bb7.queue').edit_key, 'take the last queued message back to edit', function()
      require('bb7.queue').edit_last()
    end },
  }
end

local function common_keys(i)
  local order = layout().order
  return {
    { 'q', 'close the UI', function()
      layout().close()
    end },
    { 'g?', 'this help', function()
      M.help()
    end },
    { '<Tab>', 'next pane', function()
      layout().focus(order[i % #order + 1])
    end },
    { '<S-Tab>', 'previous pane', function()
      layout().focus(order[(i - 2) % #order + 1])
    end },
    { 'gc', 'go to Chats', function()
      layout().focus('chats')
    end },
    { 'gf', 'go to Files', function()
      layout().focus('files')
    end },
    { 'gp', 'go to the answer', function()
      layout().focus('preview')
    end },
    { 'gi', 'go to Message (insert at its end)', function()
      layout().focus('input')
      local w = layout().win('input')
      if w then
        local last = vim.api.nvim_buf_line_count(layout().buf('input'))
        vim.api.nvim_win_set_cursor(w, { last, 0 })
      end
      vim.cmd('startinsert!')
    end },
    { '<C-c>', 'cancel the response (insert mode too in Message)', function()
      commands().cancel()
    end },
  }
end

local function section(lines, title, list)
  table.insert(lines, ' ' .. title)
  for _, k in ipairs(list) do
    table.insert(lines, string.format('   %-8s %s', k[1], k[2]))
  end
  table.insert(lines, '')
end

local titles = { chats = 'Chats', preview = 'Answer', files = 'Files', input = 'Message' }

--- Shows the keys of every pane in a float: two columns when they fit the editor,
--- else one. The keys of the pane it was asked from come first, so a short screen
--- shows them without scrolling.
function M.help()
  local here = layout().pane_of()
  local left, right = {}, {}
  if here and keys[here] then
    section(left, titles[here] .. ' (this pane)', keys[here])
  end
  section(left, 'Every pane', common_keys(1))
  for _, name in ipairs({ 'chats', 'preview' }) do
    if name ~= here then
      section(left, titles[name], keys[name] or {})
    end
  end
  for _, name in ipairs({ 'files', 'input' }) do
    if name ~= here then
      section(right, titles[name], keys[name] or {})
    end
  end
  local rk = config.get().review_keys
  section(right, 'Review (in the file)', {
    { rk.accept, 'accept the hunk under the cursor' },
    { rk.reject, 'reject it (asks for a reason)' },
    { rk.accept_all .. '/' .. rk.reject_all, 'accept / reject every hunk' },
    { rk.next .. '/' .. rk.prev, 'next / previous hunk, across files' },
    { rk.take, "take the model's version of a conflicting hunk" },
  })
  local width = 0
  for _, l in ipairs(left) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  local right_width = 0
  for _, l in ipairs(right) do
    right_width = math.max(right_width, vim.fn.strdisplaywidth(l))
  end
  local lines = {}
  if width + 3 + right_width + 4 > vim.o.columns then
    vim.list_extend(lines, left)
    vim.list_extend(lines, right)
    table.remove(lines)
  else
    for i = 1, math.max(#left, #right) - 1 do
      local l = left[i] or ''
      table.insert(lines, l .. string.rep(' ', width - vim.fn.strdisplaywidth(l) + 3) .. (right[i] or ''))
    end
  end
  layout().help('bb7 keys', lines)
end

--- Sets the keys of every pane buffer (once per buffer).
function M.attach()
  keys = { chats = chat_keys(), files = file_keys(), preview = preview_keys(), input = input_keys() }
  if not config.get().keymaps then
    return
  end
  for i, name in ipairs(layout().order) do
    local b = layout().buf(name)
    if not vim.b[b].bb7_keys then
      vim.b[b].bb7_keys = true
      local list = vim.list_extend(common_keys(i), keys[name])
      for _, k in ipairs(list) do
        vim.keymap.set('n', k[1], k[3], { buffer = b, nowait = true, silent = true, desc = 'bb7: ' .. k[2] })
      end
    end
  end
  local input = layout().buf('input')
  vim.keymap.set('i', config.get().send_key, send_input, { buffer = input, desc = 'bb7: send' })
  -- <C-x><C-u> completes `/mcp:SERVER:PROMPT` (lua/bb7/mcp.lua).
  vim.bo[input].completefunc = "v:lua.require'bb7.mcp'.completefunc"
  -- <C-c> cancels from insert mode too; with nothing to cancel it leaves insert mode
  -- as it would anywhere.
  vim.keymap.set('i', '<C-c>', function()
    if require('bb7.state').streaming() then
      commands().cancel()
    else
      vim.cmd('stopinsert')
    end
  end, { buffer = input, desc = 'bb7: cancel the response' })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = vim.api.nvim_create_augroup('bb7_draft', { clear = true }),
    buffer = input,
    callback = function()
      require('bb7.ui.message').save()
    end,
  })
end

return M
