-- The commands on the model's changes: :BB7Diff, :BB7DiffLocal, :BB7Review,
-- :BB7Checkpoints and :BB7Apply. Split from bb7.commands, which re-exports them.

local api = require('bb7.api')
local state = require('bb7.state')
local util = require('bb7.util')
local config = require('bb7.config')

local M = {}
local say, levels = util.say, vim.log.levels

local render = util.lazy('bb7.ui.render')

---@param what string
---@param err bb7.Error
local function report(what, err)
  say('Failed to ' .. what .. ': ' .. (err.message or 'unknown error'), levels.ERROR)
end

local function ready()
  local commands = require('bb7.commands')
  return commands.ensure() and commands.active_chat() ~= nil
end

--- The get_file_statuses row of a whole file, or nil.
---@param path string project-relative
---@return table?
function M.status_of(path)
  local r = api.file_statuses()
  for _, f in ipairs(r and r.files or {}) do
    if f.path == path and not f.start_line then
      return f
    end
  end
end

--- The file a command is about: its argument, the Files pane row, or the current buffer.
local function target(opts)
  if opts.args and opts.args ~= '' then
    return state.relpath(opts.args)
  end
  local row = render().file_row()
  if row then
    return row.path
  end
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= '' and not name:match('^bb7://') then
    return state.relpath(name)
  end
end

--- :BB7Diff [path] — the snapshot → output diff in the preview.
---@param opts {args: string}
function M.diff(opts)
  if not ready() then
    return
  end
  local path = target(opts) or ''
  local f = M.status_of(path)
  if not f or not f.has_output then
    return say('No output for ' .. path, levels.WARN)
  end
  if config.get().diff_style == 'split' then
    return M.diff_local({ args = path })
  end
  local old = f.in_context and (api.get_context_file({ path = path }) or {}).content or ''
  local new = (api.get_output_file({ path = path }) or {}).content
  render().show_lines(util.unified(path, old, new), 'diff')
end

--- :BB7DiffLocal [path] — the file and the output side by side in diff mode.
---@param opts {args: string}
function M.diff_local(opts)
  if not ready() then
    return
  end
  local path = target(opts) or ''
  local r, err = api.get_diff_paths({ path = path })
  if not r then
    return report('open the diff', err)
  end
  if vim.fn.filereadable(r.output_path) == 0 then
    return say('No output for ' .. path, levels.WARN)
  end
  -- q goes back where the diff was opened from (the UI's tab, the file's), not to
  -- whichever tab is next to the diff's.
  local from = vim.api.nvim_get_current_tabpage()
  vim.cmd('tabnew ' .. vim.fn.fnameescape(r.local_path))
  local tab = vim.api.nvim_get_current_tabpage()
  local local_win = vim.api.nvim_get_current_win()
  local local_buf = vim.api.nvim_get_current_buf()
  vim.cmd('rightbelow vert diffsplit ' .. vim.fn.fnameescape(r.output_path))
  local out_buf = vim.api.nvim_get_current_buf()
  -- The model's copy is what the user merges from, never into: a `do` there would edit
  -- the proposal (its file under .bb7/ is the binary's), and a modified copy would block
  -- :qa. It goes with the tab.
  vim.bo[out_buf].readonly = true
  vim.bo[out_buf].modifiable = false
  vim.bo[out_buf].bufhidden = 'wipe'
  -- The user's file is where the merge happens: `do` there takes the model's lines.
  vim.api.nvim_set_current_win(local_win)
  local function unmap()
    for _, b in ipairs({ local_buf, out_buf }) do
      if vim.api.nvim_buf_is_valid(b) then
        pcall(vim.keymap.del, 'n', 'q', { buffer = b })
      end
    end
  end
  local function done()
    if vim.bo[local_buf].modified then
      return say('Write ' .. path .. ' first (:w), then press q', levels.WARN)
    end
    local d, derr = api.diff_local_done({ path = path })
    if not d then
      report('finish the diff', derr)
    else
      say('Merged ' .. path .. ': ' .. d.outcome)
    end
    unmap()
    -- Only the diff's own tab closes: the user's file may be shown in the UI's tab too.
    if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd('tabclose ' .. vim.api.nvim_tabpage_get_number(tab))
    end
    if vim.api.nvim_tabpage_is_valid(from) then
      vim.api.nvim_set_current_tabpage(from)
    end
    render().refresh()
  end
  for _, b in ipairs({ local_buf, out_buf }) do
    -- `q` finishes the diff in its tab only; elsewhere (the user's file shown in another
    -- tab) it stays Vim's `q`.
    vim.keymap.set('n', 'q', function()
      if vim.api.nvim_get_current_tabpage() ~= tab then
        return vim.api.nvim_feedkeys('q', 'n', false)
      end
      done()
    end, { buffer = b, desc = 'bb7: finish the local diff' })
  end
  say('Merge with do (the model\'s lines into your file), write it (:w), then press q')
end

--- :BB7Review [path] reviews one file in its buffer; :BB7Review! lists every pending
--- hunk in the quickfix list.
function M.review(opts)
  if not ready() then
    return
  end
  local review = require('bb7.review')
  if opts.bang then
    return review.quickfix()
  end
  review.start(target(opts), opts.args ~= nil and opts.args ~= '')
end

--- :BB7Checkpoints — rolls back a checkpoint of the active chat.
function M.checkpoints()
  local commands = require('bb7.commands')
  if commands.ensure() then
    require('bb7.checkpoints').pick(commands.active_chat())
  end
end

--- Applies the whole output of one file.
---@param path string project-relative
---@param force boolean? overwrite the user's conflicting edits
---@param quiet boolean? return why it was not applied instead of saying it
---@return boolean applied
---@return string? why not applied (with `quiet`)
function M.apply_one(path, force, quiet)
  local function refuse(why, level)
    if not quiet then
      say(why, level)
    end
    return false, why
  end
  local buf = state.loaded_buf(path)
  if buf and vim.bo[buf].modified then
    return refuse('Save or discard your changes to ' .. path .. ' first', levels.WARN)
  end
  local _, err = api.apply_file({ path = path, force = force or nil })
  if err then
    if err.code == 'conflict' then
      -- The binary's own advice is in the plugin's words already (bb7.words).
      local how = err.message:find(':BB7Apply!', 1, true) and '' or (' (:BB7Review ' .. path .. ' takes it hunk by hunk; :BB7Apply! ' .. path .. ' overwrites)')
      return refuse(path .. ' conflicts with your edits: ' .. err.message .. how, levels.WARN)
    end
    return refuse('Failed to apply ' .. path .. ': ' .. (err.message or 'unknown error'), levels.ERROR)
  end
  util.reload(buf)
  require('bb7.review').refresh(path)
  return true
end

--- :BB7Apply[!] [path] — applies one file, or every M and A file; ! forces.
---@param opts {args: string, bang: boolean?}
function M.apply(opts)
  if not ready() then
    return
  end
  if opts.args ~= '' then
    local f = M.status_of(state.relpath(opts.args))
    if not f or not f.has_output then
      return say('No output to apply', levels.WARN)
    end
    if M.apply_one(f.path, opts.bang) then
      say('Applied ' .. f.path)
    end
    return render().refresh()
  end
  local r = api.file_statuses()
  local n, failed, skipped = 0, {}, {}
  -- Version-control and tool state is applied only when named explicitly.
  local protected = { ['.git'] = true, ['.bb7'] = true, ['.hg'] = true, ['.svn'] = true, ['.jj'] = true }
  for _, f in ipairs(r and r.files or {}) do
    if protected[f.path:match('^[^/]+')] and f.has_output then
      table.insert(skipped, f.path)
    elseif f.status == 'M' or f.status == 'A' then
      local ok, why = M.apply_one(f.path, opts.bang, true)
      if ok then
        n = n + 1
      else
        table.insert(failed, why)
      end
    elseif f.status == '!A' then
      table.insert(skipped, f.path)
    end
  end
  -- One message for the whole apply: a second one would hide a conflict said first.
  local parts = {}
  if n > 0 then
    table.insert(parts, n == 1 and 'Applied 1 file' or ('Applied ' .. n .. ' files'))
  end
  vim.list_extend(parts, failed)
  if #skipped > 0 then
    table.insert(parts, 'Not applied (the file exists locally; use :BB7DiffLocal): ' .. table.concat(skipped, ', '))
  end
  if #parts == 0 then
    say('No output to apply', levels.WARN)
  else
    say(table.concat(parts, '; '), (#failed > 0 or #skipped > 0) and levels.WARN or levels.INFO)
  end
  render().refresh()
end

return M
