-- The one mirror of the session the binary holds. Every other module reads and writes
-- the session through these functions; the binary stays the source of truth, so this
-- holds only what must survive between two replies (streams, the last usage, the
-- unread mark, the project root) and the last `chat_get`.

local M = {}

---@class bb7.Stream
---@field rid string request id of the `send`
---@field chat_id string? chat the turn runs in
---@field text string answer text so far
---@field thinking string reasoning so far
---@field block string? kind of the last block drawn ('text', 'thinking', 'tool')
---@field first_line integer? preview line where the answer so far starts (while it is shown)
---@field pieces {[1]: string, [2]: string?}[] what the preview shows of the answer so far: text and line prefix, in order
---@field retry {at: integer, reason: string?}? a retry is due at `at` (vim.uv.now() ms), after `reason` (e.g. `HTTP 429`)
---@field started integer? when it was sent (vim.uv.now() ms)
---@field peer boolean? started by another bb7 process on the held chat (`rid` is its `peer:` id)

---@class bb7.Session
---@field initialized boolean? nil: not asked yet; false: no .bb7/ (global-only); true
---@field root string? project root sent with `init`
---@field streams table<string, bb7.Stream> running turns by request id
---@field unread boolean a reply arrived while the UI was hidden
---@field usage table? `usage` of the last `done` (tokens, cost)
---@field chat_usages table<string, {usage: table?, chat_usage: table?}> by chat id: `usage` of its last finished turn and `chat_usage`, the chat's running totals
---@field chat table? the last `chat_get` reply
---@field changes table<string, table[]> `done.changes` by chat id, newest turn last
---@field answers table<string, table<string, string>> by chat id: the user's answer to each clarifying question, shown while the answer streams (the saved chat keeps it with the step)
---@field exiting boolean Neovim is quitting: an exit of the binary is expected
---@field last_file_buf integer? the last file buffer entered (what :BB7Add in a pane adds)
local S = {
  initialized = nil,
  root = nil,
  streams = {},
  unread = false,
  usage = nil,
  chat_usages = {},
  chat = nil,
  changes = {},
  answers = {},
  exiting = false,
}

--- A getter and a setter of state field `name`.
---@param name string
---@return fun(): any, fun(v: any)
local function field(name)
  return function()
    return S[name]
  end, function(v)
    S[name] = v
  end
end

--- Forgets everything learnt from a binary that exited.
function M.reset()
  S.initialized = nil
  S.streams = {}
end

--- Getter and setter of `initialized` (boolean? initialized nil until `init` was answered).
M.initialized, M.set_initialized = field('initialized')

---@return string root the project root (the current directory until `init`)
function M.root()
  return S.root or vim.fn.getcwd()
end

---@param root string
function M.set_root(root)
  S.root = root
end

--- Absolute path of a project-relative `path` (absolute paths pass through).
---@param path string
---@return string
function M.abs(path)
  if path:sub(1, 1) == '/' then
    return path
  end
  return (M.root():gsub('/$', '')) .. '/' .. path
end

--- Relative path of `file` inside the project root, or its absolute path outside it.
---@param file string
---@return string
function M.relpath(file)
  local abs = vim.fn.fnamemodify(file, ':p')
  local root = (M.root():gsub('/$', '')) .. '/'
  if abs:sub(1, #root) == root then
    return abs:sub(#root + 1)
  end
  return abs
end

--- The loaded buffer of a project-relative path, or nil.
---@param path string
---@return integer?
function M.loaded_buf(path)
  local buf = vim.fn.bufnr(vim.fn.fnamemodify(M.abs(path), ':p'))
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    return buf
  end
end

---@param rid string
---@param stream bb7.Stream
function M.add_stream(rid, stream)
  S.streams[rid] = stream
end

---@param rid string
---@return bb7.Stream?
function M.stream(rid)
  return S.streams[rid]
end

---@param rid string
function M.end_stream(rid)
  S.streams[rid] = nil
end

---@return string[] request ids of the running turns
function M.stream_ids()
  return vim.tbl_keys(S.streams)
end

---@return boolean
function M.streaming()
  return next(S.streams) ~= nil
end

--- The turn running in `chat_id`, or nil.
---@param chat_id string
---@return bb7.Stream?
function M.chat_stream(chat_id)
  for _, st in pairs(S.streams) do
    if st.chat_id == chat_id then
      return st
    end
  end
end

--- Whether an answer streams into `chat_id`.
---@param chat_id string
---@return boolean
function M.chat_streaming(chat_id)
  return M.chat_stream(chat_id) ~= nil
end

--- Getter and setter of `unread` (boolean).
M.unread, M.set_unread = field('unread')

---@return table? usage of the last finished turn
function M.usage()
  return S.usage
end

---@param u table?
function M.set_usage(u)
  S.usage = u or S.usage
end

--- Keeps the usage of a turn of `chat_id` that finished (`done` or `diff_error`).
---@param chat_id string
---@param usage table? the answer's `usage`
---@param chat_usage table? `done.chat_usage`
function M.set_chat_usage(chat_id, usage, chat_usage)
  local prev = S.chat_usages[chat_id] or {}
  S.chat_usages[chat_id] = { usage = usage or prev.usage, chat_usage = chat_usage or prev.chat_usage }
end

--- The usage of the last turn of `chat_id` this Neovim saw finish, or nil.
---@param chat_id string
---@return table? usage
---@return table? chat_usage the chat's running totals
function M.chat_usage(chat_id)
  local u = S.chat_usages[chat_id]
  if u then
    return u.usage, u.chat_usage
  end
end

--- Getter and setter of `chat` (table? the last `chat_get` reply). A system note comes
--- as a top-level `content` without parts (the reference's form, docs/PROTOCOL.md);
--- the setter gives it a `text` part, as the preview draws parts.
local set_chat
M.chat, set_chat = field('chat')
function M.set_chat(chat)
  for _, m in ipairs(chat and chat.messages or {}) do
    if m.role == 'system' and #(m.parts or {}) == 0 and type(m.content) == 'string' then
      m.parts = { { type = 'text', content = m.content } }
    end
  end
  set_chat(chat)
end

--- Remembers the typed change payloads of a finished turn (`done.changes`).
---@param chat_id string
---@param changes table[]
function M.add_changes(chat_id, changes)
  S.changes[chat_id] = S.changes[chat_id] or {}
  for _, c in ipairs(changes or {}) do
    table.insert(S.changes[chat_id], c)
  end
end

--- The change payload of `path` in `chat_id` that wrote output version `file_id`
--- (any version when `file_id` is nil), newest first; nil when this Neovim did not
--- see the turn.
---@param chat_id string
---@param path string
---@param file_id string?
---@return table?
function M.change_for(chat_id, path, file_id)
  local list = S.changes[chat_id] or {}
  for i = #list, 1, -1 do
    local c = list[i]
    if c.path == path and (file_id == nil or c.file_id == nil or c.file_id == file_id) then
      return c
    end
  end
end

--- Records the user's answer to a clarifying question of chat `chat_id`.
---@param chat_id string
---@param question string
---@param answer string
function M.set_answer(chat_id, question, answer)
  S.answers[chat_id] = S.answers[chat_id] or {}
  S.answers[chat_id][question] = answer
end

--- The user's answer to `question` in chat `chat_id` (this session), or nil.
---@param chat_id string?
---@param question string?
---@return string?
function M.answer(chat_id, question)
  return chat_id and question and (S.answers[chat_id] or {})[question] or nil
end

--- The last buffer entered that holds a file of the user's, or nil.
--- Getter and setter of `last_file_buf` (integer?).
M.last_file_buf, M.set_last_file_buf = field('last_file_buf')

---@return boolean
function M.exiting()
  return S.exiting
end

--- Neovim is quitting: the binary's exit is expected, not reported.
function M.set_exiting()
  S.exiting = true
end

return M
