-- bb7 for Neovim: setup(), the statusline component and the public entry points.
-- The commands live in bb7.commands, the panes in bb7.ui.*, the inline review in
-- bb7.review; see :help bb7.

local client = require('bb7.client')
local config = require('bb7.config')
local state = require('bb7.state')
local util = require('bb7.util')

local M = {}

local did_setup = false

--- Configures the plugin. Bad options are reported (one notification) and replaced by
--- their defaults; the plugin keeps working.
---@param opts bb7.Config|table|nil
---@return string[] problems one sentence per rejected option (empty when all are good)
function M.setup(opts)
  local problems = config.apply(opts)
  client.setup({ binary = config.get().binary })
  if did_setup then
    return problems
  end
  did_setup = true
  client.set_on_exit(function(code)
    state.reset()
    if code ~= 0 and not state.exiting() then
      vim.schedule(function()
        util.say('bb7 exited (status ' .. code .. '); the next command restarts it', vim.log.levels.WARN)
      end)
    end
  end)
  client.on('title_updated', function()
    require('bb7.ui.render').refresh()
  end)
  -- Another bb7 process (a shell command, an editor wrapper) acted on the chat this one
  -- holds, through its holder socket: show it as after our own request.
  client.on('peer_change', function(msg)
    if msg.peer_request_id and msg.status == 'started' then
      require('bb7.turn').follow_peer(msg.peer_request_id, msg.chat_id)
      return
    end
    vim.cmd('silent! checktime')
    require('bb7.ui.render').refresh()
  end)
  -- The holder of a chat shown read-only let it go (lua/bb7/held.lua).
  require('bb7.held').setup()
  -- A peer's turn whose first message came before its note.
  client.on_peer(function(rid, chat_id)
    require('bb7.turn').follow_peer(rid, chat_id)
  end)
  -- The Files pane's statuses compare your files with the snapshots and the model's
  -- output: a file written, or changed outside Neovim (seen on focus or by :checktime),
  -- is drawn again.
  vim.api.nvim_create_autocmd({ 'FocusGained', 'BufWritePost', 'FileChangedShellPost' }, {
    group = vim.api.nvim_create_augroup('bb7_files_changed', { clear = true }),
    callback = function()
      vim.schedule(function()
        require('bb7.ui.render').refresh_files()
      end)
    end,
  })
  -- :BB7Add in a pane adds the file the user was in last.
  vim.api.nvim_create_autocmd('BufEnter', {
    group = vim.api.nvim_create_augroup('bb7_last_file', { clear = true }),
    callback = function(ev)
      if require('bb7.commands').is_file_buffer(ev.buf) then
        state.set_last_file_buf(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = vim.api.nvim_create_augroup('bb7_exit', { clear = true }),
    callback = function()
      state.set_exiting()
      client.stop()
    end,
  })
  return problems
end

--- Runs setup({}) unless the user already called setup().
function M.ensure_setup()
  if not did_setup then
    M.setup({})
  end
end

--- The current configuration (read-only by convention).
---@return bb7.Config
function M.config()
  return config.get()
end

local frames = { '⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏' }

--- A spinner frame that moves ten times a second.
---@return string
function M.spinner()
  return frames[(math.floor(vim.uv.now() / 100) % #frames) + 1]
end

--- Statusline component (lualine, or `%{v:lua.require'bb7'.status()}`):
--- `bb7 ⠋` while a reply streams (`bb7 ⠋ 12s` while it waits for its first token),
--- `bb7 •` when a reply arrived while the UI was
--- hidden, else ''; `queued (N)` while messages wait for the answer; followed by the context gauge (`~48k/200k (24%)`, with `!` from
--- 80% and `FULL` at 100%) when the active chat's window is known.
---@return string
function M.status()
  local s = ''
  if state.streaming() then
    s = 'bb7 ' .. M.spinner()
    -- Until the first token, how long it has waited (as `bb7 ask` shows it).
    for _, rid in ipairs(state.stream_ids()) do
      local st = state.stream(rid)
      if st and st.started and #(st.pieces or {}) == 0 then
        s = s .. ' ' .. math.floor((vim.uv.now() - st.started) / 1000) .. 's'
        break
      end
    end
  elseif state.unread() then
    s = 'bb7 •'
  end
  -- Messages waiting for the active chat's answer to end (lua/bb7/queue.lua).
  local queued = #require('bb7.queue').items()
  if queued > 0 then
    s = (s == '' and 'bb7 ' or s .. ' ') .. 'queued (' .. queued .. ')'
  end
  local gauge, level = require('bb7.ui.estimate').gauge()
  if gauge then
    gauge = gauge .. (level == 'full' and ' FULL' or level == 'warning' and ' !' or '')
    s = (s == '' and 'bb7 ' or s .. ' ') .. gauge
  end
  return s
end

--- Older name of status().
M.statusline = M.status

--- Sends `text` to the active chat (as :BB7Send); while its answer streams, `text`
--- is queued (:help bb7-queue).
---@param text string
---@return string? request_id 'queued' when queued
function M.send(text)
  M.ensure_setup()
  return require('bb7.commands').send(text)
end

--- The active chat's id, or nil.
---@return string?
function M.active_chat()
  return require('bb7.commands').active_chat(true)
end

--- Opens the UI.
function M.open()
  M.ensure_setup()
  if require('bb7.commands').ensure() then
    require('bb7.ui.layout').open()
  end
end

--- Closes the UI.
function M.close()
  require('bb7.ui.layout').close()
end

return M
