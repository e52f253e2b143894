-- gY (take the model's version of a conflicting hunk) for every hunk shape: the file
-- gets the model's hunk once, the review shows it applied, the chat records it, and a
-- second press changes nothing.
local test, H = ...

local BASE = { 'a1', 'a2', 'a3', 'a4', 'a5', 'a6' }

local function with(lines, changes)
  local out = vim.deepcopy(lines)
  for _, c in ipairs(changes) do
    c(out)
  end
  return out
end

-- name, the model's output, the user's edit on disk, the file after gY. A user edit
-- the hunk only borders is no conflict: it stays beside the model's hunk.
local cases = {
  { 'insert-only, the user edit on the next line',
    with(BASE, { function(l) table.insert(l, 3, 'NEW') end }),
    with(BASE, { function(l) l[3] = 'mine' end }),
    { 'a1', 'a2', 'NEW', 'a3', 'a4', 'a5', 'a6' } },
  { 'insert-only, the user edit on the line above',
    with(BASE, { function(l) table.insert(l, 4, 'NEW') end }),
    with(BASE, { function(l) l[3] = 'mine' end }),
    { 'a1', 'a2', 'mine', 'NEW', 'a4', 'a5', 'a6' } },
  { 'delete-only, the user edit below',
    with(BASE, { function(l) table.remove(l, 3) end }),
    with(BASE, { function(l) l[4] = 'mine' end }),
    { 'a1', 'a2', 'mine', 'a5', 'a6' } },
  { 'delete-only, the user edit above',
    with(BASE, { function(l) table.remove(l, 3) end }),
    with(BASE, { function(l) l[2] = 'mine' end }),
    { 'a1', 'mine', 'a4', 'a5', 'a6' } },
  { 'delete-only over the user edit',
    with(BASE, { function(l) table.remove(l, 3) end }),
    with(BASE, { function(l) l[3] = 'mine' end }),
    { 'a1', 'a2', 'a4', 'a5', 'a6' } },
  { 'replace over the user edit',
    with(BASE, { function(l) l[3] = 'A3' end }),
    with(BASE, { function(l) l[3] = 'mine' end }),
    { 'a1', 'a2', 'A3', 'a4', 'a5', 'a6' } },
  { 'replace, the user edit below',
    with(BASE, { function(l) l[2] = 'A2' end }),
    with(BASE, { function(l) l[3] = 'mine' end }),
    { 'a1', 'A2', 'mine', 'a4', 'a5', 'a6' } },
  { 'insert at the file start',
    with(BASE, { function(l) table.insert(l, 1, 'TOP') end }),
    with(BASE, { function(l) l[1] = 'mine' end }),
    { 'TOP', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6' } },
  { 'insert at the file end',
    with(BASE, { function(l) table.insert(l, 'END') end }),
    with(BASE, { function(l) l[6] = 'mine' end }),
    { 'a1', 'a2', 'a3', 'a4', 'a5', 'mine', 'END' } },
  { 'replace at the file end over the user edit',
    with(BASE, { function(l) l[6] = 'A6' end }),
    with(BASE, { function(l) l[6] = 'mine' end }),
    { 'a1', 'a2', 'a3', 'a4', 'a5', 'A6' } },
  { 'replace at the file start over the user edit',
    with(BASE, { function(l) l[1] = 'A1' end }),
    with(BASE, { function(l) l[1] = 'mine' end }),
    { 'A1', 'a2', 'a3', 'a4', 'a5', 'a6' } },
  { 'insert-only beside a line the user inserted',
    with(BASE, { function(l) table.insert(l, 3, 'NEW') end }),
    with(BASE, { function(l) table.insert(l, 3, 'typed') end }),
    { 'a1', 'a2', 'NEW', 'a3', 'a4', 'a5', 'a6' } },
}

for _, c in ipairs(cases) do
  local name, output, disk, want = c[1], c[2], c[3], c[4]
  test('gY takes the model\'s hunk exactly once: ' .. name, function()
    local proj = H.project({ ['a.txt'] = table.concat(BASE, '\n') .. '\n' })
    vim.cmd('BB7Init')
    vim.cmd('BB7NewChat')
    vim.cmd('BB7Add a.txt')
    H.output(proj, 'a.txt', table.concat(output, '\n') .. '\n')
    vim.fn.writefile(disk, proj .. '/a.txt')
    vim.cmd('BB7Review a.txt')
    local buf = vim.api.nvim_get_current_buf()
    local review = require('bb7.review')
    local hunks = review.hunks(buf)
    H.eq(#hunks, 1, 'one hunk drawn')
    local real = vim.fn.confirm
    vim.fn.confirm = function() return 1 end
    vim.api.nvim_win_set_cursor(0, { hunks[1].first + 1, 0 })
    H.feed('gY')
    H.eq(vim.fn.readfile(proj .. '/a.txt'), want, "the model's hunk, once")
    H.eq(#review.hunks(buf), 0, 'nothing left to review')
    local r = require('bb7.client').request_sync('review_get', { path = 'a.txt' })
    for _, f in ipairs(r.files or {}) do
      for _, h in ipairs(f.hunks or {}) do
        H.truthy(h.state ~= 'pending', 'no hunk pending: ' .. vim.inspect(h))
      end
    end
    local chat = require('bb7.client').request_sync('chat_get', {})
    local recorded = false
    for _, m in ipairs(chat.messages) do
      for _, p in ipairs(m.parts) do
        recorded = recorded or p.action == 'UserAcceptHunk'
      end
    end
    H.truthy(recorded, 'the chat records the accepted hunk')
    -- A second press: nothing to take, the file stays.
    vim.cmd('silent! edit!')
    vim.api.nvim_win_set_cursor(0, { math.min(hunks[1].first + 1, vim.api.nvim_buf_line_count(0)), 0 })
    H.feed('gY')
    vim.fn.confirm = real
    H.eq(vim.fn.readfile(proj .. '/a.txt'), want, 'a second gY changes nothing')
  end)
end

test('review of a new file the model wrote over an existing one (!A): no "your edits" that were never made', function()
  local proj = H.project({ ['exists.txt'] = 'mine 1\nmine 2\n' })
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  H.output(proj, 'exists.txt', 'model 1\nmodel 2\n')
  vim.cmd('BB7Review exists.txt')
  local buf = vim.api.nvim_get_current_buf()
  local hints = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, require('bb7.review').ns, 0, -1, { details = true })) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(hints, chunk[1])
    end
  end
  local text = table.concat(hints, '\n')
  H.truthy(text:find("the file on disk differs from the model's new file", 1, true), 'says what differs: ' .. text)
  H.truthy(not text:find('your edits', 1, true), 'no edits of the user: ' .. text)
  H.eq(vim.fn.bufname(buf), 'exists.txt', 'the buffer named as in the project')
end)
