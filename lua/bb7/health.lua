-- :checkhealth bb7 — says exactly what is missing and how to get it: Neovim's version,
-- the binary and its version, the Markdown parsers, the project's .bb7/, the config
-- file, and the API key's presence (never its value).

local M = {}

local function binary_checks(h)
  local client = require('bb7.client')
  local bin = client.binary()
  if vim.fn.executable(bin) ~= 1 then
    local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h:h:h')
    h.error('binary: not found (tried ' .. bin .. ', bb7 on $PATH, ' .. root .. '/target/release/bb7 and target/debug/bb7)', {
      'Download the release: :BB7Install (lazy.nvim: build = ":BB7Install")',
      'or build it: cd ' .. root .. ' && cargo build --release --locked',
      'or put a bb7 on $PATH',
      "or set require('bb7').setup({ binary = '/path/to/bb7' })",
    })
    return
  end
  local install = require('bb7.install')
  local path = vim.fn.exepath(bin)
  local from = path == install.path() and ':BB7Install' or (bin == 'bb7' and '$PATH' or 'setup() or the checkout')
  h.ok('binary: bb7 at ' .. path .. ' (from ' .. from .. ')')
  local out = vim.fn.system({ bin, '--version' })
  if vim.v.shell_error == 0 then
    local version = vim.trim(out):match('(%d+%.%d+%.%d+)')
    if version and vim.version.lt(version, install.version) then
      h.warn('version: ' .. version .. ' is older than the plugin (' .. install.version .. ')', {
        'Update it: :BB7Install! (downloads ' .. install.version .. '), or ' .. install.build_command(),
      })
    else
      h.ok('version: ' .. vim.trim(out) .. ' (plugin ' .. install.version .. ')')
    end
  else
    h.error('`' .. bin .. ' --version` failed: ' .. vim.trim(out), { 'Rebuild it with cargo build --release' })
  end
end

local function parser_checks(h)
  local missing = {}
  for _, lang in ipairs({ 'markdown', 'markdown_inline' }) do
    if not pcall(vim.treesitter.language.add, lang) then
      table.insert(missing, lang)
    end
  end
  if #missing == 0 then
    h.ok('Tree-sitter: markdown parsers found (answers are highlighted, code blocks in their language when its parser is installed)')
  else
    h.warn('Tree-sitter: no parser for ' .. table.concat(missing, ', ') .. '; answers use the markdown syntax file', {
      'Install them, e.g. :TSInstall markdown markdown_inline (nvim-treesitter)',
    })
  end
end

local function config_checks(h)
  local dir = (vim.env.XDG_CONFIG_HOME or (vim.env.HOME .. '/.config')) .. '/bb7'
  local cfg_path = dir .. '/config.json'
  local cfg = {}
  if vim.fn.filereadable(cfg_path) == 1 then
    local ok, parsed = pcall(vim.json.decode, table.concat(vim.fn.readfile(cfg_path), '\n'))
    if ok and type(parsed) == 'table' then
      cfg = parsed
      h.ok('config: ' .. cfg_path)
    else
      h.error('config is not valid JSON: ' .. cfg_path, { 'Fix the file, or remove it to use the defaults' })
    end
  else
    h.info('no config file (' .. cfg_path .. '); defaults are used')
  end
  local base = type(cfg.base_url) == 'string' and cfg.base_url or 'https://openrouter.ai/api/v1'
  h.info('model API: ' .. base)
  if (vim.env.OPENROUTER_API_KEY or '') ~= '' then
    h.ok('API key: set (OPENROUTER_API_KEY)')
  elseif type(cfg.api_key) == 'string' and cfg.api_key ~= '' then
    h.ok('API key: set (config.json)')
  elseif base:find('openrouter.ai', 1, true) then
    h.error('API key: missing', { 'export OPENROUTER_API_KEY=…, or set "api_key" in ' .. cfg_path })
  else
    h.ok('API key: not needed for ' .. base)
  end
end

--- Entry point of :checkhealth bb7.
function M.check()
  local h = vim.health
  h.start('bb7')
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. tostring(vim.version()))
  else
    h.error('Neovim 0.10 or newer is needed (this is ' .. tostring(vim.version()) .. ')')
  end
  binary_checks(h)
  parser_checks(h)
  if vim.fn.isdirectory(vim.fn.getcwd() .. '/.bb7') == 1 then
    h.ok('project: ' .. vim.fn.getcwd() .. '/.bb7')
  else
    h.warn('project: no .bb7/ in ' .. vim.fn.getcwd() .. ': chats, adds and sends refuse until it exists', { 'Run :BB7Init in the project root' })
  end
  config_checks(h)
end

return M
