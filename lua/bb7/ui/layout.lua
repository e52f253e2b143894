-- The four panes and where they sit:
--   chats (top left) · files (bottom left) · preview (top right) · input (bottom right)
-- in a tab of their own (layout = 'tab') or floating over the editor (layout = 'float').
-- Panes have no `~` filler (fillchars eob), a title in their winbar, no tabline while
-- the tab shows, and sizes that follow the editor's (VimResized); titles and rows follow
-- a pane resized by hand (WinResized).

local config = require('bb7.config')
local state = require('bb7.state')

local M = {}

---@alias bb7.Pane 'chats'|'files'|'preview'|'input'
M.order = { 'chats', 'files', 'preview', 'input' }

local P = {
  tab = nil, ---@type integer? tab page of the 'tab' layout
  floating = false, -- the panes are floats
  bufs = {}, ---@type table<string, integer>
  wins = {}, ---@type table<string, integer>
  showtabline = nil, -- the user's value, restored when the UI tab is left
  help = nil, -- window of the ? float
  backdrop = nil, -- window under the floating panes
}

local group = vim.api.nvim_create_augroup('bb7_layout', { clear = true })

local function scratch(name, ft, modifiable)
  local b = P.bufs[name]
  if b and vim.api.nvim_buf_is_valid(b) then
    return b
  end
  b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(b, 'bb7://' .. name)
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].bufhidden = 'hide'
  vim.bo[b].swapfile = false
  vim.bo[b].filetype = ft or 'bb7'
  vim.bo[b].modifiable = modifiable or false
  P.bufs[name] = b
  return b
end

--- The buffer of a pane (created on first use).
---@param name bb7.Pane
---@return integer
function M.buf(name)
  local ft = ({ preview = config.get().chat_style, input = 'markdown' })[name]
  return scratch(name, ft, name == 'input')
end

--- The window of a pane, when it is shown.
---@param name bb7.Pane
---@return integer?
function M.win(name)
  local w = P.wins[name]
  if w and vim.api.nvim_win_is_valid(w) then
    return w
  end
end

--- Which pane `buf` is (default: the current buffer), or nil.
---@param buf integer?
---@return bb7.Pane?
function M.pane_of(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  for name, b in pairs(P.bufs) do
    if b == buf then
      return name
    end
  end
end

---@return boolean
function M.visible()
  if P.floating then
    return M.win('preview') ~= nil
  end
  return P.tab ~= nil and vim.api.nvim_tabpage_is_valid(P.tab)
end

---@param name bb7.Pane
function M.focus(name)
  local w = M.win(name)
  if w then
    vim.api.nvim_set_current_win(w)
  end
end

--- Sets the title (winbar) of a pane, cut at the right with `…` to the pane's width;
--- `%` in `text` is shown literally.
---@param name bb7.Pane
---@param text string
function M.set_title(name, text)
  local w = M.win(name)
  if w then
    text = require('bb7.util').truncate(text, vim.api.nvim_win_get_width(w))
    vim.wo[w].winbar = '%#BB7Title#' .. text:gsub('%%', '%%%%') .. '%#BB7TitleFill#'
  end
end

-- Sizes from the editor's: the left column a quarter of the width (24..40 columns),
-- the input a fifth of the height (4..10 lines).
local function sizes()
  local cols, lines = vim.o.columns, vim.o.lines - vim.o.cmdheight
  local left = math.max(24, math.min(40, math.floor(cols / 4)))
  local input = math.max(4, math.min(10, math.floor(lines / 5)))
  return left, input, lines
end

local function style(name, w)
  local wo = vim.wo[w]
  -- A window split from a diff (:BB7 from inside one) inherits 'diff' and its binds:
  -- the panes would be diffed against each other and folded to a line.
  wo.diff = false
  wo.scrollbind = false
  wo.cursorbind = false
  wo.foldmethod = 'manual'
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  -- A blank fold column is the panes' left margin.
  wo.foldcolumn = '1'
  wo.wrap = name == 'preview' or name == 'input'
  if name == 'preview' then
    require('bb7.ui.rule').window(w)
  end
  wo.linebreak = true
  wo.cursorline = name == 'chats' or name == 'files'
  -- Markdown markup the highlighting already shows (code fences, link targets) is hidden.
  wo.conceallevel = name == 'preview' and 2 or 0
  wo.fillchars = 'eob: ,fold: ,foldopen: ,foldclose: ,foldsep: '
  wo.winfixwidth = name == 'chats' or name == 'files'
  wo.winfixheight = name == 'input'
  -- A thin rule instead of the raw `bb7://chats 1,1 All` statusline.
  wo.statusline = '%#WinSeparator#%{repeat("─", winwidth(0))}'
  wo.winhighlight = 'Normal:BB7Normal,WinBar:BB7Title,WinBarNC:BB7Title'
end

local function resize()
  if not M.visible() then
    return
  end
  local left, input, lines = sizes()
  if P.floating then
    M.float_geometry()
    return require('bb7.ui.render').refresh()
  end
  for _, n in ipairs({ 'chats', 'files' }) do
    if M.win(n) then
      vim.api.nvim_win_set_width(M.win(n), left)
    end
  end
  if M.win('input') then
    vim.api.nvim_win_set_height(M.win('input'), input)
  end
  if M.win('chats') then
    vim.api.nvim_win_set_height(M.win('chats'), math.floor((lines - 2) / 2))
  end
  -- Titles and rows are cut to the new widths.
  require('bb7.ui.render').refresh()
end

local function float_config()
  local left, input, lines = sizes()
  -- Narrow editors give the panes every cell; wide ones keep a margin.
  local W = vim.o.columns <= 100 and vim.o.columns or math.floor(vim.o.columns * 0.92)
  local H = lines <= 30 and lines or math.floor(lines * 0.88)
  local row0 = math.floor((lines - H) / 2)
  local col0 = math.floor((vim.o.columns - W) / 2)
  local top = math.floor((H - 4) / 2)
  local function cfg(row, col, w, h)
    return { relative = 'editor', row = row, col = col, width = math.max(w, 10), height = math.max(h, 1), border = 'rounded', style = 'minimal', zindex = 45 }
  end
  return {
    chats = cfg(row0, col0, left, top),
    files = cfg(row0 + top + 2, col0, left, H - top - 4),
    preview = cfg(row0, col0 + left + 2, W - left - 4, H - input - 4),
    input = cfg(row0 + H - input - 2, col0 + left + 2, W - left - 4, input),
  }
end

-- The backdrop: one blank float under the panes over the whole editor, so no part of
-- the editor shows between or around them.
local function backdrop_config()
  return { relative = 'editor', row = 0, col = 0, width = vim.o.columns, height = math.max(vim.o.lines - vim.o.cmdheight, 1), style = 'minimal', focusable = false, zindex = 44 }
end

--- Places the floating panes for the editor's current size.
function M.float_geometry()
  local cfgs = float_config()
  for name, c in pairs(cfgs) do
    if M.win(name) then
      vim.api.nvim_win_set_config(M.win(name), c)
    end
  end
  if P.backdrop and vim.api.nvim_win_is_valid(P.backdrop) then
    vim.api.nvim_win_set_config(P.backdrop, backdrop_config())
  end
end

--- The window under the floating panes (nil in the tab layout).
---@return integer?
function M.backdrop()
  if P.backdrop and vim.api.nvim_win_is_valid(P.backdrop) then
    return P.backdrop
  end
end

local function open_tab()
  local preview = M.buf('preview')
  vim.cmd('tabnew')
  P.tab = vim.api.nvim_get_current_tabpage()
  local empty = vim.api.nvim_get_current_buf()
  P.wins.preview = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.preview, preview)
  if vim.api.nvim_buf_is_valid(empty) and empty ~= preview then
    pcall(vim.api.nvim_buf_delete, empty, { force = true })
  end
  vim.cmd('belowright split')
  P.wins.input = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.input, M.buf('input'))
  vim.api.nvim_set_current_win(P.wins.preview)
  vim.cmd('topleft vsplit')
  P.wins.chats = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.chats, M.buf('chats'))
  vim.cmd('belowright split')
  P.wins.files = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(P.wins.files, M.buf('files'))
  P.showtabline = P.showtabline or vim.o.showtabline
  M.apply_tabline()
end

--- No tabline in the UI tab, and the UI tab does not count when the user's setting
--- ('showtabline' 1) shows the tabline only for two tabs or more.
function M.apply_tabline()
  if not P.tab or not P.showtabline then
    return
  end
  if not vim.api.nvim_tabpage_is_valid(P.tab) then
    vim.o.showtabline = P.showtabline
    return
  end
  if vim.api.nvim_get_current_tabpage() == P.tab then
    vim.o.showtabline = 0
  elseif P.showtabline == 1 then
    vim.o.showtabline = #vim.api.nvim_list_tabpages() > 2 and 1 or 0
  else
    vim.o.showtabline = P.showtabline
  end
end

local function open_float()
  P.floating = true
  local back = vim.api.nvim_create_buf(false, true)
  vim.bo[back].bufhidden = 'wipe'
  P.backdrop = vim.api.nvim_open_win(back, false, backdrop_config())
  vim.wo[P.backdrop].winhighlight = 'Normal:BB7Normal,EndOfBuffer:BB7Normal'
  vim.wo[P.backdrop].fillchars = 'eob: '
  local cfgs = float_config()
  for _, name in ipairs(M.order) do
    P.wins[name] = vim.api.nvim_open_win(M.buf(name), false, cfgs[name])
  end
end

local function define_highlights()
  local set = function(name, link)
    vim.api.nvim_set_hl(0, name, { link = link, default = true })
  end
  set('BB7Normal', 'Normal')
  set('BB7Title', 'Title')
  set('BB7TitleFill', 'WinBar')
  set('BB7Step', 'Special')
end

--- Opens the UI (or goes to it) and draws it.
--- Shows a chat that fits the preview from its first line: while another tab is shown
--- (a :BB7DiffLocal tab), the tabline takes a row from every tab, and a window that
--- shrinks scrolls to keep its cursor in view ('splitkeep' "cursor"), so the preview
--- came back with its first lines scrolled away and empty rows below.
local function settle_preview()
  local w = M.win('preview')
  if not w or P.floating then
    return
  end
  local ok, h = pcall(vim.api.nvim_win_text_height, w, {})
  if not ok or h.all > vim.api.nvim_win_get_height(w) then
    return
  end
  vim.api.nvim_win_call(w, function()
    -- The cursor goes to the top too: left on the last line, the next height change
    -- would scroll again to keep it where it was.
    if vim.fn.winsaveview().topline > 1 then
      vim.fn.winrestview({ topline = 1, lnum = 1, col = 0 })
    end
  end)
end

function M.open()
  if M.visible() then
    if P.tab then
      vim.api.nvim_set_current_tabpage(P.tab)
      settle_preview()
    end
    return M.focus('input')
  end
  define_highlights()
  P.wins = {}
  if config.get().layout == 'float' then
    open_float()
  else
    P.floating = false
    open_tab()
  end
  for _, name in ipairs(M.order) do
    style(name, P.wins[name])
  end
  resize()
  require('bb7.ui.keymaps').attach()
  vim.api.nvim_clear_autocmds({ group = group })
  vim.api.nvim_create_autocmd('VimResized', { group = group, callback = resize })
  -- A pane resized by hand (<C-w>) keeps its size; its title and rows are cut to it.
  vim.api.nvim_create_autocmd('WinResized', {
    group = group,
    callback = function()
      if M.visible() then
        require('bb7.ui.render').refresh()
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'TabEnter', 'TabNew', 'TabClosed' }, {
    group = group,
    callback = function()
      M.apply_tabline()
      -- Once the tabline's row is given back to the panes.
      vim.schedule(function()
        if P.tab and vim.api.nvim_tabpage_is_valid(P.tab) and vim.api.nvim_get_current_tabpage() == P.tab then
          settle_preview()
        end
      end)
    end,
  })
  if P.floating then
    -- One pane closed by hand (:q) takes the others and the backdrop with it.
    vim.api.nvim_create_autocmd('WinClosed', {
      group = group,
      callback = function(ev)
        for _, name in ipairs(M.order) do
          if tostring(P.wins[name]) == ev.match then
            vim.schedule(M.close)
            return
          end
        end
      end,
    })
  end
  state.set_unread(false)
  vim.cmd('redrawstatus!')
  require('bb7.ui.render').refresh({ scroll = true })
  M.focus(state.chat() and 'input' or 'chats')
end

--- Closes every pane (and the help float).
function M.close()
  -- First, so closing the floats does not run the WinClosed handler again.
  vim.api.nvim_clear_autocmds({ group = group })
  M.close_help()
  if P.floating then
    for _, name in ipairs(M.order) do
      if M.win(name) then
        pcall(vim.api.nvim_win_close, M.win(name), true)
      end
    end
    if M.backdrop() then
      pcall(vim.api.nvim_win_close, P.backdrop, true)
    end
    P.backdrop = nil
  elseif M.visible() then
    if #vim.api.nvim_list_tabpages() == 1 then
      -- The UI is the last tab: leave an empty one behind instead of the panes.
      vim.cmd('tabnew')
    end
    vim.cmd('tabclose ' .. vim.api.nvim_tabpage_get_number(P.tab))
  end
  if P.showtabline then
    vim.o.showtabline = P.showtabline
    P.showtabline = nil
  end
  P.tab, P.floating, P.wins = nil, false, {}
  vim.api.nvim_clear_autocmds({ group = group })
end

--- Closes the UI when it has the focus, else opens it (or goes to it).
function M.toggle()
  local here = P.floating and M.pane_of() ~= nil or (P.tab and vim.api.nvim_get_current_tabpage() == P.tab)
  if M.visible() and here then
    M.close()
  else
    M.open()
  end
end

--- A window outside the UI to show a file in: the previous window of the tab the
--- user came from, else a new tab.
---@return integer win
function M.editor_window()
  if not M.visible() or (not P.floating and vim.api.nvim_get_current_tabpage() ~= P.tab and not M.pane_of()) then
    return vim.api.nvim_get_current_win()
  end
  if P.floating then
    M.close()
    return vim.api.nvim_get_current_win()
  end
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    if tab ~= P.tab then
      vim.api.nvim_set_current_tabpage(tab)
      return vim.api.nvim_get_current_win()
    end
  end
  vim.cmd('tab split')
  return vim.api.nvim_get_current_win()
end

--- Shows `lines` in a centered float with a title; q or <Esc> closes it.
---@param title string
---@param lines string[]
function M.help(title, lines)
  M.close_help()
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  vim.bo[b].bufhidden = 'wipe'
  local width = 0
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, vim.o.columns - 4)
  local height = math.min(#lines, vim.o.lines - 4)
  P.help = vim.api.nvim_open_win(b, true, {
    relative = 'editor',
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    border = 'rounded',
    style = 'minimal',
    title = ' ' .. title .. ' ',
    title_pos = 'center',
    zindex = 60,
  })
  for _, lhs in ipairs({ 'q', '<Esc>', '?' }) do
    vim.keymap.set('n', lhs, M.close_help, { buffer = b, nowait = true })
  end
end

--- Closes the ? float, if open.
function M.close_help()
  if P.help and vim.api.nvim_win_is_valid(P.help) then
    vim.api.nvim_win_close(P.help, true)
  end
  P.help = nil
end

return M
