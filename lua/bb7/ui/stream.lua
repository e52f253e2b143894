-- Drawing turns as they stream. A stream belongs to its chat: what it has drawn so
-- far is kept with it (`pieces`), and it is appended to the preview only while its
-- chat is the one shown; switching away leaves it streaming in the background (its
-- spinner in the Chats pane), switching back draws the chat and the answer so far
-- and goes on live. At the end the chat is drawn again from the binary (reasoning
-- folded, changes as one line), the view where the user left it: at the end when it
-- followed the answer, else on the lines it showed.

local state = require('bb7.state')

local M = {}

local shown = nil ---@type bb7.Stream? the stream drawn at the end of the preview
local spinner = nil ---@type uv.uv_timer_t?
local last_second = 0

local layout = require('bb7.util').lazy('bb7.ui.layout')
local render = require('bb7.util').lazy('bb7.ui.render')

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
  require('bb7.ui.rule').mark(b, last - 1, -1)
  if shown and shown.first_line then
    -- From the answer's `## Assistant` line on: the rest of the preview stays as drawn.
    require('bb7.ui.highlight').tail(b, shown.first_line - 2)
  end
end

-- Whether the preview window `w` shows the last line of its buffer: the user follows
-- the answer as it grows (a view scrolled away from the end is left where it is).
local function at_tail(w)
  local b = vim.api.nvim_win_get_buf(w)
  return vim.fn.line('w$', w) >= vim.api.nvim_buf_line_count(b)
end

local function to_tail(w)
  local b = vim.api.nvim_win_get_buf(w)
  pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(b), 0 })
  vim.api.nvim_win_call(w, function()
    vim.cmd('normal! zb')
  end)
end

-- Adds to the stream's drawing, and to the preview when it is the one shown; a view
-- at the end of the preview stays at the end.
local function emit(st, text, prefix)
  table.insert(st.pieces, { text, prefix })
  if shown == st and layout().visible() then
    local w = layout().win('preview')
    local follow = w and at_tail(w)
    append(text, prefix)
    if follow then
      pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(layout().buf('preview')), 0 })
    end
  end
end

local function stop_spinner()
  if spinner then
    spinner:stop()
    spinner:close()
    spinner = nil
  end
end

-- One timer while any turn runs: the preview's title and the Chats pane spin.
local function start_spinner()
  if spinner then
    return
  end
  spinner = vim.uv.new_timer()
  spinner:start(0, 100, vim.schedule_wrap(function()
    if not state.streaming() then
      return stop_spinner()
    end
    -- The statusline counts the seconds until the first token (require('bb7').status()).
    local second = math.floor(vim.uv.now() / 1000)
    if second ~= last_second then
      last_second = second
      vim.cmd('redrawstatus!')
    end
    if layout().visible() then
      render().render_titles()
      render().draw_chats()
    end
  end))
end

--- Draws `st` (the answer so far) at the end of the preview, which already shows its
--- chat; nil: the preview shows no stream.
---@param st bb7.Stream?
function M.show(st)
  shown = st
  local w = layout().win('preview')
  if w then
    -- Everything stays open while it streams; folds come back with the final redraw.
    vim.wo[w].foldenable = st == nil
  end
  if not st then
    return
  end
  local b = layout().buf('preview')
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, -1, -1, false, { '## Assistant', '' })
  vim.bo[b].modifiable = false
  -- The answer's first line: what a dropped attempt clears from.
  st.first_line = vim.api.nvim_buf_line_count(b)
  for _, p in ipairs(st.pieces) do
    append(p[1], p[2])
  end
  require('bb7.ui.highlight').tail(b, st.first_line - 2)
end

--- A turn started: its chat is drawn with the question and an empty answer.
---@param st bb7.Stream
function M.start(st)
  st.block = nil
  st.pieces = st.pieces or {}
  -- The title spins even when the UI opens only later in the turn.
  start_spinner()
  if layout().visible() then
    render().refresh({ scroll = true })
  end
end

--- A stream message (reasoning, text or a tool step) arrived.
---@param st bb7.Stream
---@param msg table
function M.delta(st, msg)
  if msg.type == 'thinking' then
    if st.block ~= 'thinking' then
      emit(st, '▸ Reasoning\n', '│ ')
      st.block = 'thinking'
    end
    emit(st, msg.content, '│ ')
  elseif msg.type == 'tool_call' then
    if msg.status ~= 'requested' then
      emit(st, '\n· ' .. (msg.summary or msg.name) .. (msg.status == 'denied' and ' (denied)' or '') .. '\n')
      -- The user's answer to a clarifying question, under the question.
      local answer = msg.name == 'clarify_user' and state.answer(st.chat_id, type(msg.arguments) == 'table' and msg.arguments.question or nil)
      if answer then
        emit(st, '  → ' .. answer .. '\n')
      end
      st.block = 'tool'
    end
  elseif msg.type == 'chunk' then
    if st.block ~= 'text' then
      if st.block == 'thinking' then
        emit(st, '\n\n')
      end
      st.block = 'text'
    end
    emit(st, msg.content)
  elseif msg.type == 'attempt' then
    -- The attempt so far was dropped (a local retry or the fallback): its text and
    -- reasoning are not the answer; the next attempt streams from the start.
    st.pieces, st.block = {}, nil
    if shown == st and st.first_line and layout().visible() then
      local b = layout().buf('preview')
      vim.bo[b].modifiable = true
      vim.api.nvim_buf_set_lines(b, st.first_line - 1, -1, false, { '' })
      vim.bo[b].modifiable = false
      require('bb7.ui.highlight').tail(b, st.first_line - 2, true)
    end
    if msg.provider or msg.reason then
      local note = '↻ retrying' .. (msg.provider and (' on ' .. msg.provider) or '') .. (msg.reason and (': ' .. msg.reason) or '')
      emit(st, note .. '\n\n')
    end
  end
end

--- The turn ended (`done`, `error` or `diff_error`): the chat is drawn again. When it
--- is the one shown, a view that followed the answer's end stays at the end, and a view
--- the user scrolled away keeps its place (the lines above the answer do not change).
---@param st bb7.Stream?
function M.finish(st, _)
  local was_shown = st ~= nil and shown == st
  if was_shown then
    shown = nil
  end
  if not state.streaming() then
    stop_spinner()
  end
  local w = was_shown and layout().visible() and layout().win('preview') or nil
  local view = w and { follow = at_tail(w), saved = vim.api.nvim_win_call(w, vim.fn.winsaveview) }
  render().refresh({ scroll = was_shown and not view })
  if view and vim.api.nvim_win_is_valid(w) then
    if view.follow then
      to_tail(w)
    else
      vim.api.nvim_win_call(w, function()
        vim.fn.winrestview(view.saved)
      end)
    end
  end
end

return M
