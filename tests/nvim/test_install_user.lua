-- :BB7Install as a new user meets it: no curl, a data folder that cannot be written, a
-- half-downloaded archive, a bb7 already found (the plugin's version, an older one, the
-- one :BB7Install put there before a plugin update), Windows, and a headless Neovim
-- (`nvim --headless "+Lazy! sync" +qa`) that must not quit before the download ends.
local test, H = ...
local L = vim.log.levels
-- Required lazily: run.lua reads this file for test names without the plugin on 'rtp'.
local install = setmetatable({}, { __index = function(_, k) return require('bb7.install')[k] end })

local function free_port()
  local tcp = vim.uv.new_tcp()
  tcp:bind('127.0.0.1', 0)
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

-- A fake bb7 printing `version`, at a fresh path.
local function fake_bb7(version)
  local path = vim.fn.resolve(vim.fn.tempname())
  vim.fn.writefile({ '#!/bin/sh', 'echo "bb7 ' .. version .. '"' }, path)
  vim.uv.fs_chmod(path, tonumber('755', 8))
  return path
end

-- A release folder: bb7-<target>.tar.xz holding a bb7 that runs the debug binary, and
-- the .sha256 of `sum_of` (default: the archive itself).
local function release()
  local base = vim.fn.resolve(vim.fn.tempname())
  local name = 'bb7-' .. install.target()
  vim.fn.mkdir(base .. '/stage/' .. name, 'p')
  vim.fn.mkdir(base .. '/release', 'p')
  local bin = base .. '/stage/' .. name .. '/bb7'
  vim.fn.writefile({ '#!/bin/sh', 'exec ' .. vim.fn.shellescape(H.bin) .. ' "$@"' }, bin)
  vim.uv.fs_chmod(bin, tonumber('755', 8))
  local archive = base .. '/release/' .. name .. '.tar.xz'
  H.eq(vim.system({ 'tar', '-cJf', archive, '-C', base .. '/stage', name }):wait().code, 0, 'tar')
  local sum = vim.system({ 'sha256sum', '-b', archive }, { text = true }):wait().stdout:match('^(%x+)')
  vim.fn.writefile({ sum .. ' *' .. name .. '.tar.xz' }, archive .. '.sha256')
  return base .. '/release', archive
end

-- Serves `dir` on 127.0.0.1 until this Neovim ends (the server reads its stdin).
local function serve(dir)
  local port = free_port()
  local py = table.concat({
    'import functools, http.server, sys, threading',
    'h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])',
    's = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), h)',
    'threading.Thread(target=s.serve_forever, daemon=True).start()',
    'sys.stdin.read()',
  }, '\n')
  vim.system({ 'python3', '-c', py, dir, tostring(port) }, { stdin = true })
  local url = 'http://127.0.0.1:' .. port
  H.wait(function()
    return vim.system({ 'curl', '-fs', '-o', '/dev/null', url .. '/' }):wait().code == 0
  end, 30000, 'the release server')
  return url
end

local function setup_data()
  local data = vim.fn.resolve(vim.fn.tempname())
  vim.env.XDG_DATA_HOME = data
  H.eq(vim.fn.stdpath('data'), data .. '/nvim', 'stdpath follows XDG_DATA_HOME')
  H.notes = {}
  return data
end

-- Runs the command; in this headless Neovim it returns only once the install finished.
local function run(cmd)
  vim.cmd(cmd)
  H.truthy(install.last, cmd .. ' returned before it finished (headless)')
  return install.last
end

-- Nothing but the installed binary (if any) in stdpath('data')/bb7: no download folder left.
local function data_entries()
  local dir = vim.fn.stdpath('data') .. '/bb7'
  return vim.fn.readdir(dir, function() return 1 end)
end

test('install user: headless :BB7Install! returns once installed, leaving only the binary', function()
  setup_data()
  vim.g.bb7_release_url = serve(release())
  local r = run('BB7Install!')
  H.truthy(r.ok, r.msg)
  H.eq(data_entries(), { 'bb7' }, 'stdpath("data")/bb7')
  local out = vim.system({ install.path(), '--version' }, { text = true }):wait()
  H.truthy(out.stdout:find(install.version, 1, true), out.stdout)
end)

test('install user: no curl says so and gives the cargo command', function()
  setup_data()
  vim.g.bb7_release_url = 'http://127.0.0.1:' .. free_port()
  local path = vim.env.PATH
  vim.env.PATH = vim.fn.resolve(vim.fn.tempname())
  local ok, r = pcall(run, 'BB7Install!')
  vim.env.PATH = path
  H.truthy(ok, tostring(r))
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('curl is needed', L.ERROR)
  H.truthy(n.msg:find('cargo build --release --locked', 1, true), n.msg)
  H.eq(vim.fn.filereadable(install.path()), 0, 'nothing installed')
end)

test('install user: a data folder that cannot be written is named before any download', function()
  local data = setup_data()
  -- A file where stdpath('data') should be a folder: refused even for root.
  vim.fn.mkdir(data, 'p')
  vim.fn.writefile({ 'not a folder' }, data .. '/nvim')
  vim.g.bb7_release_url = 'http://127.0.0.1:' .. free_port()
  local r = run('BB7Install!')
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('cannot write ' .. data .. '/nvim/bb7', L.ERROR)
  H.truthy(n.msg:find('nothing installed', 1, true), n.msg)
  H.truthy(not H.note('downloading'), 'no download started')
end)

test('install user: a half-downloaded archive is refused and its folder removed', function()
  setup_data()
  local dir, archive = release()
  local f = assert(io.open(archive, 'rb'))
  local bytes = f:read('*a')
  f:close()
  f = assert(io.open(archive, 'wb'))
  f:write(bytes:sub(1, math.floor(#bytes / 2)))
  f:close()
  vim.g.bb7_release_url = serve(dir)
  local r = run('BB7Install!')
  H.eq(r.ok, false, r.msg)
  H.expect_note('checksum mismatch', L.ERROR)
  H.eq(data_entries(), {}, 'stdpath("data")/bb7 after the refusal')
end)

test('install user: a bb7 of the plugin version already found is kept, nothing downloaded', function()
  setup_data()
  vim.g.bb7_release_url = 'http://127.0.0.1:' .. free_port()
  require('bb7').setup({ binary = fake_bb7(install.version) })
  local r = run('BB7Install')
  H.truthy(r.ok, r.msg)
  H.expect_note('bb7 ' .. install.version .. ' is already there', L.INFO)
  H.truthy(not H.note('downloading'), 'no download')
end)

test('install user: an older bb7 found elsewhere is named with how to update it', function()
  setup_data()
  vim.g.bb7_release_url = 'http://127.0.0.1:' .. free_port()
  local old = fake_bb7('0.0.1')
  require('bb7').setup({ binary = old })
  local r = run('BB7Install')
  H.truthy(r.ok, r.msg)
  local n = H.expect_note('bb7 0.0.1 at ' .. old .. ' is older than the plugin (' .. install.version .. ')', L.WARN)
  H.truthy(n.msg:find(':BB7Install!', 1, true), n.msg)
  H.truthy(not H.note('downloading'), 'no download')
end)

test('install user: after a plugin update :BB7Install replaces the release it put there', function()
  setup_data()
  vim.fn.mkdir(vim.fn.fnamemodify(install.path(), ':h'), 'p')
  vim.fn.writefile({ '#!/bin/sh', 'echo "bb7 0.0.1"' }, install.path())
  vim.uv.fs_chmod(install.path(), tonumber('755', 8))
  require('bb7').setup({ binary = install.path() })
  vim.g.bb7_release_url = serve(release())
  local r = run('BB7Install')
  H.truthy(r.ok, r.msg)
  H.expect_note('replacing bb7 0.0.1 with ' .. install.version, L.INFO)
  local out = vim.system({ install.path(), '--version' }, { text = true }):wait()
  H.truthy(out.stdout:find(install.version, 1, true), out.stdout)
end)

test('install user: Windows is said to be unsupported, with WSL', function()
  setup_data()
  local uname = vim.uv.os_uname
  vim.uv.os_uname = function()
    return { sysname = 'Windows_NT', machine = 'x86_64', release = '10.0', version = '' }
  end
  local ok, r = pcall(run, 'BB7Install!')
  vim.uv.os_uname = uname
  H.truthy(ok, tostring(r))
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('bb7 does not run on Windows', L.ERROR)
  H.truthy(n.msg:find('WSL', 1, true), n.msg)
end)

test('install user: starting a bb7 older than the plugin warns once, with how to update', function()
  setup_data()
  local old = fake_bb7('0.0.1')
  require('bb7').setup({ binary = old })
  local client = require('bb7.client')
  client.start()
  H.wait(function()
    return H.note('is older than the plugin') ~= nil
  end, 30000, 'the version warning')
  local n = H.expect_note('bb7 0.0.1 at ' .. old .. ' is older than the plugin (' .. install.version .. ')', L.WARN)
  H.truthy(n.msg:find(':BB7Install!', 1, true), n.msg)
  -- The fake exits at once; a second start of the same binary says nothing new.
  H.wait(function()
    return not client.running()
  end, 30000, 'the fake bb7 to exit')
  client.start()
  local count = 0
  for _, note in ipairs(H.notes) do
    if note.msg:find('is older than the plugin', 1, true) then
      count = count + 1
    end
  end
  H.eq(count, 1, 'warnings')
end)

test('install user: a version with no release there says so, not "offline"', function()
  setup_data()
  -- A server that answers, with no archive of this version.
  local empty = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(empty, 'p')
  vim.g.bb7_release_url = serve(empty)
  local r = run('BB7Install!')
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('no release v' .. install.version .. ' there', L.ERROR)
  H.truthy(n.msg:find("version = '*'", 1, true), n.msg)
  H.truthy(not n.msg:find('Offline?', 1, true), n.msg)
end)

test("install user: without the archive's .sha256 the release's sha256.sum is read; without both nothing installs", function()
  setup_data()
  local dir, archive = release()
  local line = vim.fn.readfile(archive .. '.sha256')[1]
  vim.fn.delete(archive .. '.sha256')
  local name = vim.fn.fnamemodify(archive, ':t')
  vim.fn.writefile({ string.rep('0', 64) .. '  bb7-other.tar.xz', line:match('^(%x+)') .. '  ' .. name }, dir .. '/sha256.sum')
  vim.g.bb7_release_url = serve(dir)
  local r = run('BB7Install!')
  H.truthy(r.ok, r.msg)
  H.eq(vim.fn.executable(install.path()), 1, 'installed binary')
  vim.fn.delete(install.path())
  vim.fn.delete(dir .. '/sha256.sum')
  H.notes = {}
  r = run('BB7Install!')
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('cannot verify the archive', L.ERROR)
  H.truthy(n.msg:find('nothing installed', 1, true), n.msg)
  H.eq(vim.fn.filereadable(install.path()), 0, 'nothing installed')
  H.eq(data_entries(), {}, 'stdpath("data")/bb7')
end)

test('install user: without xz for GNU tar it says what to install, before downloading', function()
  if not vim.fn.system({ 'tar', '--version' }):find('GNU tar', 1, true) then
    return
  end
  setup_data()
  vim.g.bb7_release_url = 'http://127.0.0.1:' .. free_port()
  -- A PATH of the tools :BB7Install uses, without xz.
  local tools = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(tools, 'p')
  for _, tool in ipairs({ 'curl', 'tar', 'sha256sum', 'sh' }) do
    vim.uv.fs_symlink(vim.fn.exepath(tool), tools .. '/' .. tool)
  end
  local path = vim.env.PATH
  vim.env.PATH = tools
  local ok, r = pcall(run, 'BB7Install!')
  vim.env.PATH = path
  H.truthy(ok, tostring(r))
  H.eq(r.ok, false, r.msg)
  H.expect_note('xz is needed', L.ERROR)
  H.truthy(not H.note('downloading'), 'no download started')
end)
