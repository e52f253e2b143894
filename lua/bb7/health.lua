-- :checkhealth bb7 — the binary, its version, the config file and the API key's
-- presence (never its value).

local M = {}

function M.check()
  local h = vim.health
  h.start('bb7')
  local client = require('bb7.client')
  local bin = client.binary()
  if vim.fn.executable(bin) == 1 then
    h.ok('binary: ' .. vim.fn.exepath(bin))
    local out = vim.fn.system({ bin, '--version' })
    if vim.v.shell_error == 0 then
      h.ok('version: ' .. vim.trim(out))
    else
      h.error('`' .. bin .. ' --version` failed: ' .. vim.trim(out))
    end
  else
    h.error('bb7 binary not found: ' .. bin, { 'Build it with `cargo build --release`', "or set require('bb7').setup({ binary = '/path/to/bb7' })" })
  end
  local dir = (vim.env.XDG_CONFIG_HOME or (vim.env.HOME .. '/.config')) .. '/bb7'
  local cfg_path = dir .. '/config.json'
  local cfg = {}
  if vim.fn.filereadable(cfg_path) == 1 then
    local ok, parsed = pcall(vim.json.decode, table.concat(vim.fn.readfile(cfg_path), '\n'))
    if ok and type(parsed) == 'table' then
      cfg = parsed
      h.ok('config: ' .. cfg_path)
    else
      h.error('config is not valid JSON: ' .. cfg_path)
    end
  else
    h.info('no config file (' .. cfg_path .. '); defaults are used')
  end
  local base = cfg.base_url or 'https://openrouter.ai/api/v1'
  h.info('model API: ' .. base)
  if (vim.env.OPENROUTER_API_KEY or '') ~= '' then
    h.ok('API key: set (OPENROUTER_API_KEY)')
  elseif type(cfg.api_key) == 'string' and cfg.api_key ~= '' then
    h.ok('API key: set (config.json)')
  elseif base:find('openrouter.ai', 1, true) then
    h.warn('API key: missing', { 'Set OPENROUTER_API_KEY or api_key in ' .. cfg_path })
  else
    h.ok('API key: not needed for ' .. base)
  end
end

return M
