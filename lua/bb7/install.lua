-- :BB7Install — gets the bb7 binary without Rust: downloads the release archive of this
-- plugin's own version for the running platform (the names dist-workspace.toml makes:
-- bb7-<target>.tar.xz and its .sha256), checks the sha256, unpacks it into
-- stdpath('data')/bb7/ and uses it. Everything runs through vim.system callbacks, so the
-- editor never waits on the network.

local M = {}

--- The plugin's version: the release whose archive is fetched (Cargo.toml's version;
--- tests/nvim/test_install.lua checks they agree).
M.version = '0.1.0'

--- The repository whose GitHub releases hold the archives: Cargo.toml's `repository`
--- (tests/repository_url.rs keeps the two equal); vim.g.bb7_repository overrides it
--- for a fork.
M.repository = 'https://github.com/bb7-dev/bb7'
local TIMEOUT = '30' -- seconds curl may take to connect

local function say(msg, level)
  vim.notify('BB-7: ' .. msg, level or vim.log.levels.INFO)
end

local function root()
  return vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h:h:h')
end

--- The command that builds bb7 from this checkout instead.
function M.build_command()
  return 'cd ' .. root() .. ' && cargo build --release --locked'
end

--- The release target of this machine, or nil when no archive is built for it.
---@return string?
function M.target()
  local u = vim.uv.os_uname()
  local arch = ({ x86_64 = 'x86_64', amd64 = 'x86_64', aarch64 = 'aarch64', arm64 = 'aarch64' })[u.machine]
  if not arch then
    return nil
  end
  if u.sysname == 'Linux' then
    return arch .. '-unknown-linux-musl'
  elseif u.sysname == 'Darwin' then
    return arch .. '-apple-darwin'
  end
  return nil
end

--- Where :BB7Install puts the binary.
function M.path()
  return vim.fn.stdpath('data') .. '/bb7/bb7'
end

--- The folder holding the release's archives: vim.g.bb7_release_url (a mirror, or a
--- local server in tests), else the GitHub release of M.version in vim.g.bb7_repository
--- (a fork) or M.repository.
function M.base_url()
  local repo = (vim.g.bb7_repository or M.repository):gsub('/+$', '')
  local url = vim.g.bb7_release_url or (repo .. '/releases/download/v' .. M.version)
  return (url:gsub('/+$', ''))
end

-- Runs curl asynchronously; cb(err) on the main loop.
local function curl(url, out, cb)
  vim.system({ 'curl', '-fsSL', '--connect-timeout', TIMEOUT, '--max-time', '600', '-o', out, url }, { text = true }, function(r)
    vim.schedule(function()
      if r.code ~= 0 then
        cb(vim.trim(r.stderr or '') ~= '' and vim.trim(r.stderr) or ('curl exited with ' .. r.code))
      else
        cb(nil)
      end
    end)
  end)
end

-- The file's sha256 in hex, through sha256sum (Linux) or shasum (macOS): Vimscript's
-- sha256() takes no bytes with NUL in them. cb(hex or nil, err) on the main loop.
local function sha256_file(path, cb)
  local cmd = vim.fn.executable('sha256sum') == 1 and { 'sha256sum', '-b', path } or { 'shasum', '-a', '256', '-b', path }
  if vim.fn.executable(cmd[1]) ~= 1 then
    return cb(nil, 'neither sha256sum nor shasum is installed')
  end
  vim.system(cmd, { text = true }, function(r)
    vim.schedule(function()
      local hex = r.code == 0 and (r.stdout or ''):match('^(%x+)') or nil
      cb(hex and hex:lower(), hex and nil or vim.trim(r.stderr or ''))
    end)
  end)
end

-- The version `bin --version` prints ("bb7 X.Y.Z"), or nil; cb on the main loop.
local function version_of(bin, cb)
  local ok = pcall(vim.system, { bin, '--version' }, { text = true, timeout = 10000 }, function(r)
    vim.schedule(function()
      cb(r.code == 0 and (r.stdout or ''):match('(%d+%.%d+%.%d+)') or nil)
    end)
  end)
  if not ok then
    cb(nil)
  end
end

local checked = {}

--- Tells the user, once per binary and session, when the bb7 the plugin starts is older
--- than the plugin (its replies may lack what this plugin asks for), with how to update.
--- Runs `bin --version` in the background: the protocol's stream is left alone.
---@param bin string
function M.check_version(bin)
  if checked[bin] then
    return
  end
  checked[bin] = true
  version_of(bin, function(v)
    if v and vim.version.lt(v, M.version) then
      local path = vim.fn.exepath(bin)
      local how = path == M.path() and ':BB7Install' or ':BB7Install! (a copy for this session), or update ' .. path
      say('bb7 ' .. v .. ' at ' .. path .. ' is older than the plugin (' .. M.version .. '); update it: ' .. how .. ', or ' .. M.build_command(), vim.log.levels.WARN)
    end
  end)
end

--- Why this machine gets no archive, or nil when it gets one: Windows said plainly
--- (bb7 needs Unix domain sockets and a POSIX terminal, README "Install").
---@return string?
function M.unsupported()
  if M.target() then
    return nil
  end
  local u = vim.uv.os_uname()
  if u.sysname:find('Windows') or vim.fn.has('win32') == 1 then
    return 'bb7 does not run on Windows (it needs Unix domain sockets and a POSIX terminal); use it inside WSL'
  end
  return 'no prebuilt bb7 for ' .. u.sysname .. ' ' .. u.machine .. '; build it with: ' .. M.build_command()
end

-- In a Neovim without a UI (`nvim --headless "+Lazy! sync" +qa`, a lazy.nvim build in a
-- script) the command returns only when the install has finished: the next command may
-- be :qa, which would cut the download off.
local function wait_if_headless(is_done)
  if #vim.api.nvim_list_uis() == 0 and not is_done() then
    vim.wait(15 * 60 * 1000, is_done, 50)
  end
end

-- The sha256 the release gives for `name` (at `url`): its own .sha256, else its line in
-- the release's sha256.sum (dist makes both). cb(hex) or cb(nil, why) on the main loop.
local function expected_sha256(url, name, tmp, cb)
  say('downloading ' .. url .. '.sha256')
  curl(url .. '.sha256', tmp .. '/' .. name .. '.sha256', function(err)
    if not err then
      local want = (vim.fn.readfile(tmp .. '/' .. name .. '.sha256')[1] or ''):match('^(%x+)')
      return cb(want and #want == 64 and want:lower() or nil, name .. '.sha256 holds no sha256')
    end
    local sums = url:gsub('[^/]+$', '') .. 'sha256.sum'
    curl(sums, tmp .. '/sha256.sum', function(err2)
      if err2 then
        return cb(nil, 'could not download ' .. url .. '.sha256 (' .. err .. ') nor ' .. sums .. ': cannot verify the archive')
      end
      for _, line in ipairs(vim.fn.readfile(tmp .. '/sha256.sum')) do
        local hex, file = line:match('^(%x+)%s+%*?(%S+)$')
        if file == name and #hex == 64 then
          return cb(hex:lower())
        end
      end
      cb(nil, sums .. ' names no sha256 for ' .. name)
    end)
  end)
end

--- Downloads, verifies and installs the binary. Without `force`, a bb7 that is found and
--- of the plugin's version is kept; one :BB7Install put there before (M.path()) of another
--- version is replaced (a plugin update), and any other older one is named with the way
--- to update it. Calls done(ok, message) when finished; the result is also kept in M.last
--- for :checkhealth and tests.
---@param opts {force: boolean?}?
---@param done fun(ok: boolean, msg: string)?
function M.install(opts, done)
  opts = opts or {}
  M.last = nil
  local finished = false
  local function finish(ok, msg, level)
    M.last = { ok = ok, msg = msg }
    finished = true
    say(msg, level or (ok and vim.log.levels.INFO or vim.log.levels.ERROR))
    if done then
      done(ok, msg)
    end
  end
  local client = require('bb7.client')
  local current = client.binary()
  if opts.force or vim.fn.executable(current) ~= 1 then
    M.download(opts, finish)
  else
    local path = vim.fn.exepath(current)
    version_of(current, function(v)
      if v == M.version then
        return finish(true, 'bb7 ' .. v .. ' is already there: ' .. path .. ' (:BB7Install! downloads the release anyway)')
      end
      if path == M.path() then
        say('replacing ' .. (v and ('bb7 ' .. v) or 'a bb7 whose --version fails') .. ' with ' .. M.version .. ', the plugin\'s version')
        return M.download(opts, finish)
      end
      local what = v and ('bb7 ' .. v .. ' at ' .. path) or (path .. ' (its --version failed)')
      local rel = v and vim.version.lt(v, M.version) and ' is older than the plugin (' .. M.version .. ')' or ' is not the plugin\'s version (' .. M.version .. ')'
      finish(true, what .. rel .. ' and is used; :BB7Install! downloads ' .. M.version .. ' into ' .. M.path() .. ' for this session, or update that bb7', vim.log.levels.WARN)
    end)
  end
  wait_if_headless(function()
    return finished
  end)
end

--- The download itself (see M.install); finish(ok, msg) once.
---@param opts {force: boolean?}
---@param finish fun(ok: boolean, msg: string)
function M.download(opts, finish)
  local client = require('bb7.client')
  local target = M.target()
  if not target then
    return finish(false, M.unsupported())
  end
  if vim.fn.executable('curl') ~= 1 then
    return finish(false, 'curl is needed to download bb7 (install it), or build bb7 with: ' .. M.build_command())
  end
  -- GNU tar unpacks .tar.xz through the xz program, which slim Linux systems lack.
  if vim.fn.executable('xz') ~= 1 and vim.fn.executable('tar') == 1 and vim.fn.system({ 'tar', '--version' }):find('GNU tar', 1, true) then
    return finish(false, 'xz is needed to unpack the archive (Debian, Ubuntu: apt-get install xz-utils; Fedora: dnf install xz); nothing downloaded')
  end
  -- Downloads land beside the destination: a rename from $TMPDIR would fail across
  -- file systems (a tmpfs /tmp), and a folder that cannot be written is found before the
  -- download rather than after it.
  local dest = M.path()
  local dest_dir = vim.fn.fnamemodify(dest, ':h')
  pcall(vim.fn.mkdir, dest_dir, 'p')
  local tmp = dest_dir .. '/.download-' .. vim.uv.os_getpid()
  vim.fn.delete(tmp, 'rf')
  if not pcall(vim.fn.mkdir, tmp, 'p') or vim.fn.isdirectory(tmp) ~= 1 then
    return finish(false, 'cannot write ' .. dest_dir .. ' (stdpath("data"); read-only?); nothing installed. Set XDG_DATA_HOME, or build it with: ' .. M.build_command())
  end
  local name = 'bb7-' .. target .. '.tar.xz'
  local url = M.base_url() .. '/' .. name
  local function fail(msg)
    vim.fn.delete(tmp, 'rf')
    finish(false, msg .. '; nothing installed')
  end
  say('downloading ' .. url)
  curl(url, tmp .. '/' .. name, function(err)
    if err then
      -- A 404 is no release of this version there (a plugin checkout between releases),
      -- not a network problem.
      local why = err:find('404', 1, true)
          and ('no release v' .. M.version .. ' there: a plugin between releases? Use a release tag (lazy.nvim: version = \'*\'), or build it: ')
        or 'Offline? Build it instead: '
      return fail('could not download ' .. url .. ' (' .. err .. '). ' .. why .. M.build_command())
    end
    expected_sha256(url, name, tmp, function(want, err2)
      if not want then
        return fail(err2)
      end
      sha256_file(tmp .. '/' .. name, function(got, sum_err)
        if not got then
          return fail('cannot compute the sha256 of ' .. name .. ': ' .. tostring(sum_err))
        end
        if want ~= got then
          return fail('checksum mismatch for ' .. name .. ': the release says ' .. want .. ', the download is ' .. got)
        end
        say('checksum ok; unpacking')
        vim.system({ 'tar', '-xJf', tmp .. '/' .. name, '-C', tmp }, { text = true }, function(r)
          vim.schedule(function()
            local bin = tmp .. '/bb7-' .. target .. '/bb7'
            if r.code ~= 0 or vim.fn.filereadable(bin) ~= 1 then
              return fail('could not unpack ' .. name .. ' (' .. vim.trim(r.stderr or '') .. ')')
            end
            vim.uv.fs_chmod(bin, tonumber('755', 8))
            local ok, rename_err = vim.uv.fs_rename(bin, dest)
            if not ok then
              return fail('cannot write ' .. dest .. ': ' .. tostring(rename_err))
            end
            vim.fn.delete(tmp, 'rf')
            -- Use it now, unless the user chose a binary that exists.
            if opts.force or vim.fn.executable(client.binary()) ~= 1 then
              client.stop()
              client.setup({ binary = dest })
            end
            finish(true, 'installed bb7 ' .. M.version .. ' (' .. target .. ') as ' .. dest)
          end)
        end)
      end)
    end)
  end)
end

return M
