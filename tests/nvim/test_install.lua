-- :BB7Install against a release folder served by Python's http.server on 127.0.0.1:
-- the archive holds a small bb7 that runs the debug binary, laid out as
-- dist-workspace.toml makes it; XDG_DATA_HOME is the test's own, so stdpath('data') is.
local test, H = ...
local L = vim.log.levels
-- Required lazily: run.lua reads this file for test names without the plugin on 'rtp'.
local install = setmetatable({}, { __index = function(_, k) return require('bb7.install')[k] end })

-- A free port: bound, read, released.
local function free_port()
  local tcp = vim.uv.new_tcp()
  tcp:bind('127.0.0.1', 0)
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

-- A release folder with bb7-<target>.tar.xz and its .sha256; returns the folder.
local function release()
  local base = vim.fn.resolve(vim.fn.tempname())
  local name = 'bb7-' .. install.target()
  vim.fn.mkdir(base .. '/stage/' .. name, 'p')
  vim.fn.mkdir(base .. '/release', 'p')
  local bin = base .. '/stage/' .. name .. '/bb7'
  vim.fn.writefile({ '#!/bin/sh', 'exec ' .. vim.fn.shellescape(H.bin) .. ' "$@"' }, bin)
  vim.uv.fs_chmod(bin, tonumber('755', 8))
  local archive = base .. '/release/' .. name .. '.tar.xz'
  local r = vim.system({ 'tar', '-cJf', archive, '-C', base .. '/stage', name }):wait()
  H.eq(r.code, 0, 'tar')
  local sum = vim.system({ 'sha256sum', '-b', archive }, { text = true }):wait().stdout:match('^(%x+)')
  vim.fn.writefile({ sum .. ' *' .. name .. '.tar.xz' }, archive .. '.sha256')
  return base .. '/release', archive
end

-- Serves `dir` on 127.0.0.1 (Python's http.server); returns the URL.
local function serve(dir)
  local port = free_port()
  -- http.server in a thread, until its stdin (a pipe from this Neovim) closes: the
  -- server ends with the test however the test ends.
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
end

local function run_install()
  local done
  vim.cmd('BB7Install!')
  H.wait(function()
    done = install.last
    return done ~= nil
  end, 60000, ':BB7Install to finish')
  return done
end

test('install: the plugin version is the crate version', function()
  local toml = table.concat(vim.fn.readfile(H.root .. '/Cargo.toml'), '\n')
  H.eq(install.version, toml:match('\nversion = "([^"]+)"'), 'Cargo.toml version')
end)

test('install: downloads the release archive, checks it, and uses it', function()
  setup_data()
  local dir = release()
  vim.g.bb7_release_url = serve(dir)
  local r = run_install()
  H.truthy(r.ok, r.msg)
  H.expect_note('downloading ' .. vim.g.bb7_release_url, L.INFO)
  H.expect_note('installed bb7', L.INFO)
  H.eq(vim.fn.executable(install.path()), 1, 'installed binary')
  H.eq(require('bb7.client').binary(), install.path(), 'the plugin runs it')
  local out = vim.system({ install.path(), '--version' }, { text = true }):wait()
  H.eq(out.code, 0, 'bb7 --version')
  H.truthy(out.stdout:find(install.version, 1, true), out.stdout)
end)

test('install: vim.g.bb7_repository points at a fork whose releases hold the archive', function()
  setup_data()
  local toml = table.concat(vim.fn.readfile(H.root .. '/Cargo.toml'), '\n')
  H.eq(install.repository, toml:match('\nrepository = "([^"]+)"'), "Cargo.toml's repository")
  local dir = release()
  -- The fork's release folder, laid out as GitHub's: REPO/releases/download/vX.Y.Z/.
  local site = vim.fn.fnamemodify(dir, ':h') .. '/site'
  local folder = site .. '/me/bb7/releases/download/v' .. install.version
  vim.fn.mkdir(vim.fn.fnamemodify(folder, ':h'), 'p')
  H.eq(vim.uv.fs_rename(dir, folder), true, 'release moved into the fork')
  vim.g.bb7_release_url = nil
  vim.g.bb7_repository = serve(site) .. '/me/bb7/'
  H.eq(install.base_url(), vim.g.bb7_repository .. 'releases/download/v' .. install.version, 'base URL')
  local r = run_install()
  H.truthy(r.ok, r.msg)
  H.expect_note('downloading ' .. install.base_url(), L.INFO)
  H.eq(vim.fn.executable(install.path()), 1, 'installed binary')
end)

test('install: a tampered archive is refused and nothing installed', function()
  setup_data()
  local dir, archive = release()
  local f = assert(io.open(archive, 'ab'))
  f:write('tampered')
  f:close()
  vim.g.bb7_release_url = serve(dir)
  local r = run_install()
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('checksum mismatch', L.ERROR)
  H.truthy(n.msg:find('nothing installed', 1, true), n.msg)
  H.eq(vim.fn.filereadable(install.path()), 0, 'nothing installed')
end)

test('install: an unreachable server is explained with the cargo command', function()
  setup_data()
  vim.g.bb7_release_url = 'http://127.0.0.1:' .. free_port()
  local r = run_install()
  H.eq(r.ok, false, r.msg)
  local n = H.expect_note('could not download ' .. vim.g.bb7_release_url, L.ERROR)
  H.truthy(n.msg:find('cargo build --release --locked', 1, true), n.msg)
  H.eq(vim.fn.filereadable(install.path()), 0, 'nothing installed')
end)

test('install: :checkhealth bb7 names the binary and warns when it is older than the plugin', function()
  local old = vim.fn.resolve(vim.fn.tempname())
  vim.fn.writefile({ '#!/bin/sh', 'echo "bb7 0.0.1"' }, old)
  vim.uv.fs_chmod(old, tonumber('755', 8))
  require('bb7').setup({ binary = old })
  H.project({})
  vim.cmd('checkhealth bb7')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.truthy(text:find('binary: bb7 at ' .. old, 1, true), 'names the path: ' .. text)
  H.truthy(text:find('0.0.1 is older than the plugin (' .. install.version .. ')', 1, true), 'warns: ' .. text)
  H.truthy(text:find(':BB7Install!', 1, true), 'says how to update: ' .. text)
  vim.cmd('bwipeout!')
  -- The current binary passes.
  require('bb7').setup({ binary = H.bin })
  vim.cmd('checkhealth bb7')
  text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.truthy(text:find('(plugin ' .. install.version .. ')', 1, true), 'version ok: ' .. text)
  H.truthy(not text:find('older than the plugin', 1, true), 'no warning: ' .. text)
end)
