-- Small helpers shared by the modules: user messages, buffer and file text, diffs.

local M = {}

-- Neovim's own vim.notify, to tell it from a notification plugin's.
local builtin_notify = vim.notify

--- `text` cut at the right to at most `width` display cells, ending in `…` when cut.
---@param text string
---@param width integer
---@return string
function M.truncate(text, width)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  if width <= 1 then
    return width == 1 and '…' or ''
  end
  local out, used = {}, 0
  for _, ch in ipairs(vim.fn.split(text, '\\zs')) do
    local w = vim.fn.strdisplaywidth(ch)
    if used + w > width - 1 then
      break
    end
    table.insert(out, ch)
    used = used + w
  end
  return table.concat(out) .. '…'
end

--- `text` cut at the left to at most `width` display cells, starting with `…` when
--- cut (for paths, whose end is the file name).
---@param text string
---@param width integer
---@return string
function M.truncate_left(text, width)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local chars = vim.fn.split(text, '\\zs')
  local out, used = {}, 0
  for i = #chars, 1, -1 do
    local w = vim.fn.strdisplaywidth(chars[i])
    if used + w > width - 1 then
      break
    end
    table.insert(out, 1, chars[i])
    used = used + w
  end
  return '…' .. table.concat(out)
end

--- A message as one line that fits the command line, so Neovim's own message area
--- shows it without a "Press ENTER" prompt.
---@param msg string
---@return string
function M.fit(msg)
  local one = msg:gsub('%s*\n%s*', ' ')
  local space = vim.v.echospace > 0 and vim.v.echospace or (vim.o.columns - 12)
  return M.truncate(one, math.max(space, 10))
end

local hl_of = {
  [vim.log.levels.ERROR] = 'ErrorMsg',
  [vim.log.levels.WARN] = 'WarningMsg',
}

-- The user's 'messagesopt' while a long message is out (restored when Neovim is idle).
local saved_mopt = nil

-- Lets a message longer than the command line go by without a "Press ENTER" prompt
-- until Neovim next waits for a key: 'messagesopt' (Neovim 0.11) with `wait:0` in place
-- of `hit-enter`. Whether it could.
local function no_hit_enter()
  if saved_mopt then
    return true
  end
  if vim.fn.exists('+messagesopt') ~= 1 then
    return false
  end
  local mopt = vim.o.messagesopt
  if not mopt:find('hit-enter', 1, true) then
    return true
  end
  saved_mopt = mopt
  vim.o.messagesopt = (mopt:gsub('hit%-enter', 'wait:0'))
  vim.api.nvim_create_autocmd('SafeState', {
    once = true,
    callback = function()
      vim.o.messagesopt = saved_mopt
      saved_mopt = nil
    end,
  })
  return true
end

--- Tells the user `msg`, prefixed with `BB-7: ` as the reference plugin does. A
--- notification plugin gets it whole. With Neovim's own message area, |:messages|
--- gets it whole too and the command line shows one line of it: the message area is
--- redrawn before each message, so two in a row do not stack, and a longer one is
--- echoed whole (into the history) with the "Press ENTER" prompt off until Neovim is
--- idle again, then replaced by its first line. Neovim 0.10 (no 'messagesopt') gets
--- the first line only.
---@param msg string
---@param level integer? vim.log.levels (default INFO)
function M.say(msg, level)
  msg = 'BB-7: ' .. msg
  level = level or vim.log.levels.INFO
  if vim.notify ~= builtin_notify then
    return vim.notify(msg, level)
  end
  local hl = hl_of[level]
  local short = M.fit(msg)
  -- An intentional redraw clears the message area and the need to wait for ENTER.
  pcall(vim.cmd, 'redraw')
  if short == msg or not no_hit_enter() then
    return vim.api.nvim_echo({ { short, hl } }, true, {})
  end
  vim.api.nvim_echo({ { msg, hl } }, true, {})
  pcall(vim.cmd, 'redraw')
  vim.api.nvim_echo({ { short, hl } }, false, {})
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

-- Valid UTF-8 sequences (RFC 3629, section 4): each lead byte range with the
-- continuation bytes it allows. Lead and continuation ranges are disjoint, so each
-- pattern matches whole sequences only.
local utf8_sequences = {
  '[\194-\223][\128-\191]',
  '\224[\160-\191][\128-\191]',
  '[\225-\236\238\239][\128-\191][\128-\191]',
  '\237[\128-\159][\128-\191]',
  '\240[\144-\191][\128-\191][\128-\191]',
  '[\241-\243][\128-\191][\128-\191][\128-\191]',
  '\244[\128-\143][\128-\191][\128-\191]',
}

--- Why `text` cannot be sent as a text file, or nil when it can: NUL bytes (a binary
--- file) or bytes that are not UTF-8. Checked before JSON encoding, which would pass
--- such bytes on to be refused by the binary.
---@param text string
---@return string? reason
function M.not_text(text)
  if text:find('\0', 1, true) then
    return 'it has NUL bytes (a binary file)'
  end
  if not text:find('[\128-\255]') then
    return nil
  end
  -- Each valid sequence becomes one ASCII byte; any byte above 127 left is invalid.
  local rest = text
  for _, p in ipairs(utf8_sequences) do
    rest = rest:gsub(p, '.')
  end
  if rest:find('[\128-\255]') then
    return 'it is not UTF-8 text'
  end
  return nil
end

--- The first `n` bytes of a file, or nil when it cannot be read.
---@param path string
---@param n integer
---@return string?
function M.file_head(path, n)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local head = f:read(n)
  f:close()
  return head or ''
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

--- A function that requires module `name` when first called: for modules that need
--- each other, so neither loads the other while it is itself loading.
---@param name string
---@return fun(): table
function M.lazy(name)
  return function()
    return require(name)
  end
end

return M
