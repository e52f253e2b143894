-- A chat whose context journal bb7 skipped when it read the chat (here a directory
-- planted where chat.json names its journal) is told as a warning notification when the
-- chat opens, restored at start (init's config_warnings) or selected (chat_select's
-- state_warnings), once: the send that follows does not repeat it.
local test, H = ...
local L = vim.log.levels

-- Runs the binary in the project and waits for it: its stdout, trimmed.
local function bb7(args)
  local r = vim.system(vim.list_extend({ H.bin }, args), { text = true }):wait()
  H.eq(r.code, 0, 'bb7 ' .. table.concat(args, ' ') .. ': ' .. (r.stderr or ''))
  return vim.trim(r.stdout or '')
end

-- chat.json of chat `id` names the journal `ab`, and a directory stands there.
local function plant(proj, id)
  local dir = proj .. '/.bb7/chats/' .. id
  local text = table.concat(vim.fn.readfile(dir .. '/chat.json', 'b'), '\n')
  text = text:gsub('^{', '{"context_journal":"ab",', 1)
  vim.fn.writefile(vim.split(text, '\n', { plain = true }), dir .. '/chat.json', 'b')
  vim.fn.mkdir(dir .. '/journal-ab.jsonl', 'p')
end

local function told()
  return #vim.tbl_filter(function(n)
    return n.msg:find('context journal was skipped', 1, true) ~= nil
  end, H.notes)
end

-- A send, answered: after it, no second warning.
local function send_once()
  H.script({ text = 'Fine.' })
  require('bb7').send('hi')
  H.wait(function() return H.note('Response received') ~= nil end, 10000, 'the answer')
end

test('journal warnings: a skipped journal is told when the chat is selected, once', function()
  local proj = H.project({})
  bb7({ 'init' })
  local first = bb7({ 'new' })
  bb7({ 'new' })
  plant(proj, first)
  -- The project opens with the other chat, the active one.
  require('bb7.commands').ensure()
  H.eq(told(), 0, 'nothing to tell yet')
  require('bb7.commands').select_chat(first)
  local n = H.expect_note('context journal was skipped', L.WARN)
  H.truthy(n.msg:find('journal-ab.jsonl', 1, true), 'names the journal: ' .. n.msg)
  H.eq(told(), 1, 'told once')
  send_once()
  H.eq(told(), 1, 'not told again by the send')
end)

test('journal warnings: the chat restored at start is told by init, once', function()
  local proj = H.project({})
  bb7({ 'init' })
  local id = bb7({ 'new' })
  plant(proj, id)
  require('bb7.commands').ensure()
  H.expect_note('context journal was skipped', L.WARN)
  require('bb7.commands').select_chat(id)
  send_once()
  H.eq(told(), 1, 'told once')
end)
