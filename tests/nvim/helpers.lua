-- Helpers for the plugin tests: a temporary project and HOME per test, the fake model
-- server (examples/fake_openai), captured notifications, waiting on the event loop.

local H = {}

H.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
H.bin = vim.env.BB7_BIN or (H.root .. '/target/debug/bb7')
H.fake_bin = vim.env.BB7_FAKE or (H.root .. '/target/debug/examples/fake_openai')
H.notes = {}

local real_notify = vim.notify
--- Neovim's own vim.notify (the tests capture notifications in H.notes instead).
H.real_notify = real_notify
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = msg, level = level or vim.log.levels.INFO })
  if vim.env.BB7_TEST_VERBOSE then
    real_notify(msg, level)
  end
end

function H.fail(msg)
  error(msg, 2)
end

function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(string.format('%s: expected %s, got %s', what or 'value', vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.truthy(v, what)
  if not v then
    error((what or 'condition') .. ' is false', 2)
  end
end

--- Waits until `cond()` is true (pumping the event loop) or fails after `ms`, or after
--- the hang guard of 60 s when `ms` is shorter: a wait is a hang guard, never a speed
--- bound, and a loaded 2-core machine can take seconds for what takes milliseconds
--- (tests/nvim/run.lua gives a whole test 300 s).
function H.wait(cond, ms, what)
  local ok = vim.wait(math.max(ms or 0, 60000), cond, 10)
  if not ok then
    error('timed out waiting for ' .. (what or 'condition'), 2)
  end
end

--- The last notification whose text contains `needle`, or nil.
function H.note(needle)
  for i = #H.notes, 1, -1 do
    if H.notes[i].msg:find(needle, 1, true) then
      return H.notes[i]
    end
  end
end

function H.expect_note(needle, level)
  local n = H.note(needle)
  if not n then
    error('no notification containing "' .. needle .. '"; got: ' .. vim.inspect(vim.tbl_map(function(x) return x.msg end, H.notes)), 2)
  end
  if level and n.level ~= level then
    error('notification "' .. n.msg .. '" has level ' .. tostring(n.level) .. ', expected ' .. level, 2)
  end
  return n
end

local fake = nil

--- Starts the fake model server once; returns its base URL and script directory.
function H.fake()
  if fake then
    return fake
  end
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local url
  local job = vim.fn.jobstart({ H.fake_bin, dir }, {
    on_stdout = function(_, data)
      for _, l in ipairs(data) do
        if l:match('^http') then
          url = l
        end
      end
    end,
  })
  H.truthy(job > 0, 'fake model server started')
  H.wait(function() return url ~= nil end, 20000, 'fake model URL')
  fake = { url = url, dir = dir, job = job, n = 0 }
  return fake
end

--- Queues a scripted model response (see examples/fake_openai.rs).
function H.script(tbl)
  local f = H.fake()
  f.n = f.n + 1
  vim.fn.writefile({ vim.json.encode(tbl) }, string.format('%s/%04d.json', f.dir, f.n))
end

--- Lets go an answer scripted with `hold_after = N, hold_until = name` (see
--- examples/fake_openai.rs): it stalls after its first N words until this is called,
--- so a test sees it mid-stream however long the machine takes to get there.
function H.release(name)
  vim.fn.writefile({}, H.fake().dir .. '/' .. name)
end

--- Request bodies the fake received, in order. Only whole lines: the fake may be
--- writing the next one while this reads.
function H.requests()
  local f = io.open(H.fake().dir .. '/requests.jsonl', 'rb')
  if not f then
    return {}
  end
  local text = f:read('*a')
  f:close()
  local out = {}
  for line in text:gmatch('([^\n]*)\n') do
    table.insert(out, vim.json.decode(line))
  end
  return out
end

--- A fresh project (files: { [rel] = content }) as the current directory, with a HOME
--- whose config points bb7 at the fake model. Each test runs in its own Neovim, so
--- the plugin and the binary start fresh without any reset here.
function H.project(files, config)
  local base = vim.fn.resolve(vim.fn.tempname())
  local home, proj = base .. '/home', base .. '/project'
  vim.fn.mkdir(home .. '/.config/bb7', 'p')
  vim.fn.mkdir(proj, 'p')
  for rel, content in pairs(files or {}) do
    local p = proj .. '/' .. rel
    vim.fn.mkdir(vim.fn.fnamemodify(p, ':h'), 'p')
    vim.fn.writefile(vim.split(content, '\n', { plain = true }), p, 'b')
  end
  local cfg = vim.tbl_extend('force', { base_url = H.fake().url, api_key = 'test-key', default_model = 'fake/model' }, config or {})
  vim.fn.writefile({ vim.json.encode(cfg) }, home .. '/.config/bb7/config.json')
  vim.env.HOME = home
  vim.env.XDG_CONFIG_HOME = home .. '/.config'
  vim.cmd('cd ' .. vim.fn.fnameescape(proj))
  H.notes = {}
  return proj, home
end

function H.read(path)
  return table.concat(vim.fn.readfile(path, 'b'), '\n')
end

--- Lines of a bb7 pane buffer.
function H.pane(name)
  local b = require('bb7.ui.layout').buf(name)
  return vim.api.nvim_buf_get_lines(b, 0, -1, false)
end


--- Writes `content` as the model's output of `rel` in the active chat (as a turn would).
function H.output(proj, rel, content)
  local id = require('bb7').active_chat()
  local out = proj .. '/.bb7/chats/' .. id .. '/output/' .. rel
  vim.fn.mkdir(vim.fn.fnamemodify(out, ':h'), 'p')
  vim.fn.writefile(vim.split(content, '\n', { plain = true }), out, 'b')
end

--- A project with `files`, initialized, a new chat with `add` in its context and the
--- model's `outputs` ({ [rel] = content }) in that chat, as after a turn. Returns the
--- project folder.
function H.chat_with_output(files, add, outputs)
  local proj = H.project(files)
  vim.cmd('BB7Init')
  vim.cmd('BB7NewChat')
  vim.cmd('BB7Add ' .. add)
  for rel, content in pairs(outputs) do
    H.output(proj, rel, content)
  end
  return proj
end

--- The highlight groups of the preview's Markdown highlighting on 0-based `row`.
function H.hl_groups(buf, row)
  local ns = vim.api.nvim_get_namespaces()['bb7_markdown']
  local marks = vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true, overlap = true })
  return vim.tbl_map(function(m) return m[4].hl_group end, marks)
end

--- Presses keys as a user would (mappings apply).
function H.feed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end


--- Another bb7 process in `proj` (a second front-end, as a second editor would be) that
--- opens chat `chat_id` and keeps it; returns once it holds it. `o.job` is its job id,
--- `o.request(req)` sends it a request, `o.answered(id, kind)` tells whether it wrote a
--- whole message line for request `id` (of type `kind`, when given).
function H.hold_elsewhere(proj, chat_id)
  local lines, partial = {}, ''
  local o = {}
  o.job = vim.fn.jobstart({ H.bin }, {
    cwd = proj,
    -- A callback's first item continues the last one of the call before (:help
    -- channel-lines): a line cut between two reads is joined before it is searched.
    on_stdout = function(_, data)
      data[1] = partial .. data[1]
      partial = table.remove(data)
      vim.list_extend(lines, data)
    end,
  })
  function o.request(req)
    vim.fn.chansend(o.job, vim.json.encode(req) .. '\n')
  end
  function o.answered(id, kind)
    for _, l in ipairs(lines) do
      if l:find('"request_id":"' .. id .. '"', 1, true) and (not kind or l:find('"type":"' .. kind .. '"', 1, true)) then
        return true
      end
    end
    return false
  end
  o.request({ action = 'init', project_root = proj, request_id = 'o1' })
  o.request({ action = 'chat_select', id = chat_id, request_id = 'o2' })
  H.wait(function() return o.answered('o2') end, 10000, 'the other process holds the chat')
  return o
end

--- Whether Neovim streams a turn of another process (a `peer:` stream) that has text.
function H.peer_streaming()
  local state = require('bb7.state')
  for _, rid in ipairs(state.stream_ids()) do
    local st = state.stream(rid)
    if st.peer and st.text ~= '' then
      return true
    end
  end
  return false
end

return H
