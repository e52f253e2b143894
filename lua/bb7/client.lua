-- The connection to the bb7 binary: one process per Neovim instance, started with
-- jobstart(). Requests are matched to replies by request_id; a reply line split
-- across several on_stdout callbacks is reassembled; a malformed line is reported,
-- never raised; when the process exits, the next request starts a new one.

local M = {}

local state = {
  job = nil, -- job id of the running binary
  next_id = 0,
  pending = {}, -- request_id -> { on_reply = fn, on_stream = fn }
  partial = '', -- bytes of an unfinished line
  listeners = {}, -- event type -> { fn, ... } (unsolicited events, e.g. title_updated)
  on_exit = nil,
  on_peer = nil, -- fn(peer_id, chat_id): a peer's turn was seen first
  binary = nil,
  stderr = {},
}

local function notify(msg, level)
  vim.schedule(function()
    require('bb7.util').say(msg, level or vim.log.levels.ERROR)
  end)
end

local function dispatch(msg)
  local id = msg.request_id
  local handler = id and state.pending[id]
  -- A turn another bb7 process started on the chat this one holds comes with a `peer:`
  -- id, never one of ours (docs/PROTOCOL.md, "One chat, many front-ends"): it is
  -- followed from whichever of its messages comes first.
  if not handler and type(id) == 'string' and id:sub(1, 5) == 'peer:' and state.on_peer then
    state.on_peer(id, msg.chat_id)
    handler = state.pending[id]
  end
  if handler then
    local t = msg.type
    local final = t == 'done' or t == 'error' or t == 'diff_error'
    if handler.stream and not final then
      handler.stream(msg)
      return
    end
    state.pending[id] = nil
    if handler.reply then
      handler.reply(msg)
    end
    return
  end
  local listeners = state.listeners[msg.type]
  if listeners then
    for _, fn in ipairs(listeners) do
      fn(msg)
    end
  elseif msg.type == 'error' then
    notify(msg.message or 'unknown error')
  end
end

local function on_line(line)
  if line == '' then
    return
  end
  local ok, msg = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok or type(msg) ~= 'table' then
    notify('bb7 sent a line that is not JSON: ' .. line:sub(1, 80))
    return
  end
  local ok2, err = pcall(dispatch, msg)
  if not ok2 then
    notify('error while handling a message: ' .. tostring(err))
  end
end

-- on_stdout delivers chunks: the first element continues the previous partial line
-- and the last element is the start of the next one (see :h channel-lines).
-- Complete lines are handled from the main loop (vim.schedule, in order), never inside
-- this callback: a handler that waits for another reply (request_sync) could not get
-- it while the channel's callback is still running.
local function on_stdout(_, data)
  if not data then
    return
  end
  data[1] = state.partial .. data[1]
  state.partial = data[#data]
  if #data > 1 then
    local lines = vim.list_slice(data, 1, #data - 1)
    vim.schedule(function()
      for _, line in ipairs(lines) do
        on_line(line)
      end
    end)
  end
end

--- Which binary to run: the configured path, else `bb7` on PATH, else the checkout's
--- release or debug build next to this plugin, else the one :BB7Install put in
--- stdpath('data')/bb7/.
---@param configured string?
---@return string
function M.find_binary(configured)
  if configured and configured ~= '' then
    return configured
  end
  if vim.fn.executable('bb7') == 1 then
    return 'bb7'
  end
  local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h:h:h')
  -- The checkout's builds, then the release :BB7Install downloaded (bb7.install).
  for _, p in ipairs({ root .. '/target/release/bb7', root .. '/target/debug/bb7', vim.fn.stdpath('data') .. '/bb7/bb7' }) do
    if vim.fn.executable(p) == 1 then
      return p
    end
  end
  return 'bb7'
end

--- Chooses the binary (see find_binary); takes effect at the next start.
---@param opts {binary: string?}?
function M.setup(opts)
  state.binary = M.find_binary(opts and opts.binary)
end

--- The binary that runs (or will run).
---@return string
function M.binary()
  return state.binary or M.find_binary(nil)
end

---@return boolean running the binary's process is alive
function M.running()
  return state.job ~= nil
end

--- The process id of the running binary, or nil.
---@return integer?
function M.pid()
  return state.job and vim.fn.jobpid(state.job) or nil
end

--- Called after the binary exits, with its status.
---@param fn fun(code: integer)
function M.set_on_exit(fn)
  state.on_exit = fn
end

--- Answers every request still waiting with an `exited` error carrying `message`.
---@param message string
local function fail_pending(message)
  local pending = state.pending
  state.pending = {}
  for id, h in pairs(pending) do
    if h.reply then
      pcall(h.reply, { type = 'error', code = 'exited', request_id = id, message = message })
    end
  end
end

--- Starts the binary unless it runs.
---@return boolean started false when it cannot start (the user is told)
function M.start()
  if state.job then
    return true
  end
  state.partial = ''
  state.stderr = {}
  local ok, job = pcall(vim.fn.jobstart, { M.binary() }, {
    on_stdout = on_stdout,
    on_stderr = function(_, data)
      for _, l in ipairs(data or {}) do
        if l ~= '' then
          table.insert(state.stderr, l)
        end
      end
    end,
    on_exit = function(id, code)
      -- A job stopped on purpose (M.stop) may exit after the next one started: its
      -- exit says nothing about the requests of the job that runs now.
      if state.job ~= id then
        return
      end
      state.job = nil
      fail_pending('bb7 exited (status ' .. code .. ')')
      if state.on_exit then
        pcall(state.on_exit, code)
      end
    end,
    stdout_buffered = false,
  })
  if not ok or not job or job <= 0 then
    notify('Cannot start ' .. M.binary() .. '; set binary in setup() or build it with cargo build --release')
    return false
  end
  state.job = job
  -- An older binary than the plugin is named once (bb7.install).
  pcall(require('bb7.install').check_version, M.binary())
  return true
end

--- Stops the binary; the next request starts it again.
function M.stop()
  if state.job then
    local job = state.job
    state.job = nil
    vim.fn.jobstop(job)
    fail_pending('bb7 was stopped')
  end
end

--- Sends `fields` with `action` and calls `on_reply(msg)` with the reply (an `error`
--- message on failure). For `send`, `on_stream(msg)` gets every chunk/thinking
--- message before the final `done`/`error`/`diff_error` goes to `on_reply`.
--- Returns the request id, or nil when the binary cannot be started.
---@param action string
---@param fields table?
---@param on_reply fun(msg: table)?
---@param on_stream fun(msg: table)?
---@return string? request_id
function M.request(action, fields, on_reply, on_stream)
  if not M.start() then
    if on_reply then
      on_reply({ type = 'error', code = 'not_running', message = 'bb7 is not running' })
    end
    return nil
  end
  state.next_id = state.next_id + 1
  local id = 'nv' .. state.next_id
  local req = vim.tbl_extend('force', fields or {}, { action = action })
  req.request_id = nil
  state.pending[id] = { reply = on_reply, stream = on_stream }
  -- request_id first: bb7 answers even a line it refuses whole (over its size limit)
  -- with the id it reads from the line's start (docs/PROTOCOL.md "Conventions").
  local body = vim.json.encode(req):sub(2)
  vim.fn.chansend(state.job, '{"request_id":"' .. id .. '",' .. body .. '\n')
  return id
end

--- Like request(), but waits for the reply (up to `timeout` ms, default 5000).
--- Returns the reply, or an error message table on timeout (code `timeout`).
---@param action string
---@param fields table?
---@param timeout integer? milliseconds
---@return table reply
function M.request_sync(action, fields, timeout)
  local reply
  local id = M.request(action, fields, function(msg)
    reply = msg
  end)
  if not id then
    return { type = 'error', code = 'not_running', message = 'bb7 is not running' }
  end
  vim.wait(timeout or 5000, function()
    return reply ~= nil
  end, 5)
  if reply == nil then
    state.pending[id] = nil
    return { type = 'error', code = 'timeout', message = action .. ' timed out' }
  end
  return reply
end

--- Calls `fn(peer_id, chat_id)` for the first message of a turn another bb7 process
--- started on the held chat (its `peer:` id has no handler yet); `fn` may register one
--- with follow(), which then gets that message too.
---@param fn fun(peer_id: string, chat_id: string?)
function M.on_peer(fn)
  state.on_peer = fn
end

--- Routes the messages carrying `id` (a peer's turn) as those of our own request:
--- stream messages to `on_stream`, the final one to `on_reply`.
---@param id string
---@param on_reply fun(msg: table)
---@param on_stream fun(msg: table)
function M.follow(id, on_reply, on_stream)
  state.pending[id] = { reply = on_reply, stream = on_stream }
end

--- Subscribes to an unsolicited event type (e.g. `title_updated`).
---@param event string
---@param fn fun(msg: table)
function M.on(event, fn)
  state.listeners[event] = state.listeners[event] or {}
  table.insert(state.listeners[event], fn)
end

--- Lines the binary wrote to stderr since it started (for :checkhealth).
---@return string[]
function M.stderr()
  return state.stderr
end

-- For tests: feed raw stdout chunks as jobstart would.
M._on_stdout = on_stdout

return M
