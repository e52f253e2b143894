-- Drawing a turn as it streams: the question and the growing answer are appended to
-- the preview without redrawing the rest; the preview's title spins until the end,
-- when the chat is drawn again from the binary (reasoning folded, changes as one line).

local M = {}

local current = nil ---@type bb7.Stream?
local spinner = nil ---@type uv.uv_timer_t?

local function layout()
  return require('bb7.ui.layout')
end
local function render()
  return require('bb7.ui.render')
end

local function append(text, prefix)
  local b = layout().buf('preview')
  vim.bo[b].modifiable = true
  local last = vim.api.nvim_buf_line_count(b)
  local tail = vim.api.nvim_buf_get_lines(b, last - 1, last, false)[1] or ''
  local pieces = vim.split(text, '\n', { plain = true })
  pieces[1] = tail .. pieces[1]
  for i = 2, #pieces do
    pieces[i] = (prefix or '') .. pieces[i]
  end
  vim.api.nvim_buf_set_lines(b, last - 1, last, false, pieces)
  vim.bo[b].modifiable = false
  local w = layout().win('preview')
  if w and vim.api.nvim_get_current_win() ~= w then
    pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(b), 0 })
  end
end

local function stop_spinner()
  if spinner then
    spinner:stop()
    spinner:close()
    spinner = nil
  end
end

--- A turn started: shows the question and an empty answer.
---@param st bb7.Stream
---@param text string the question
function M.start(st, text)
  current = st
  st.block = nil
  -- The title spins even when the UI opens only later in the turn.
  stop_spinner()
  spinner = vim.uv.new_timer()
  spinner:start(0, 100, vim.schedule_wrap(function()
    if layout().visible() then
      layout().set_title('preview', render().preview_title())
    end
  end))
  if not layout().visible() then
    return
  end
  render().render_preview()
  render().set_streaming(true)
  local b = layout().buf('preview')
  local w = layout().win('preview')
  if w then
    -- Everything stays open while it streams; folds come back with the final redraw.
    vim.wo[w].foldenable = false
  end
  vim.bo[b].modifiable = true
  local lines = { '## You' }
  vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
  vim.list_extend(lines, { '', '## Assistant', '' })
  vim.api.nvim_buf_set_lines(b, -1, -1, false, lines)
  vim.bo[b].modifiable = false
end

--- A stream message (reasoning, text or a tool step) arrived.
---@param st bb7.Stream
---@param msg table
function M.delta(st, msg)
  if not layout().visible() or current ~= st then
    return
  end
  if msg.type == 'thinking' then
    if st.block ~= 'thinking' then
      append('▸ Reasoning\n', '│ ')
      st.block = 'thinking'
    end
    append(msg.content, '│ ')
  elseif msg.type == 'tool_call' then
    if msg.status ~= 'requested' then
      append('\n· ' .. (msg.summary or msg.name) .. (msg.status == 'denied' and ' (denied)' or '') .. '\n')
      st.block = 'tool'
    end
  elseif msg.type == 'chunk' then
    if st.block ~= 'text' then
      if st.block == 'thinking' then
        append('\n\n')
      end
      st.block = 'text'
    end
    append(msg.content)
  end
end

--- The turn ended (`done`, `error` or `diff_error`): the chat is drawn again.
---@param st bb7.Stream?
function M.finish(st, _)
  stop_spinner()
  if current == st then
    current = nil
    render().set_streaming(false)
  end
  local w = layout().win('preview')
  if w then
    vim.wo[w].foldenable = true
  end
  render().refresh()
end

return M
