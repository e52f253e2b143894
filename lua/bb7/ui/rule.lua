-- The `│ ` rule before each line of the model's reasoning in the preview. Long lines
-- wrap; a wrapped line's continuation would lose the rule and read as the answer. The
-- continuation is indented by the rule's width ('breakindent' with 'formatlistpat'
-- matching the rule) and the rule is drawn there as virtual text repeated on every
-- screen line of the line (`virt_text_repeat_linebreak`, Neovim 0.10).

local M = {}

local ns = vim.api.nvim_create_namespace('bb7_reasoning_rule')
local RULE = '│ '
local repeats = vim.fn.has('nvim-0.10') == 1

--- Sets the preview window `w` to indent a reasoning line's continuations.
---@param w integer
function M.window(w)
  vim.wo[w].breakindent = true
  vim.wo[w].breakindentopt = 'list:-1'
end

--- Marks the reasoning lines among rows `first` (0-based) to `last` (exclusive, -1:
--- the end) of the preview buffer `b`.
---@param b integer
---@param first integer
---@param last integer
function M.mark(b, first, last)
  if not repeats then
    return
  end
  -- Only the rule's lines: a bulleted list of the answer keeps its usual wrapping.
  vim.bo[b].formatlistpat = '^' .. RULE
  vim.api.nvim_buf_clear_namespace(b, ns, first, last)
  local lines = vim.api.nvim_buf_get_lines(b, first, last, false)
  for i, l in ipairs(lines) do
    if l:sub(1, #RULE) == RULE then
      vim.api.nvim_buf_set_extmark(b, ns, first + i - 1, 0, {
        virt_text = { { '│', 'Comment' } },
        virt_text_win_col = 0,
        virt_text_repeat_linebreak = true,
      })
    end
  end
end

return M
