-- Problems of config.json reach the editor: the binary names them in its `init`
-- reply (config_error, and config_warnings for an unknown key with the one it likely
-- means), and the plugin shows each once at WARN, however often the binary starts.
local test, H = ...
local L = vim.log.levels

local function notes_with(needle)
  return vim.tbl_filter(function(n)
    return n.msg:find(needle, 1, true) ~= nil
  end, H.notes)
end

test('config warnings: an unknown key is named with its likely meaning, once', function()
  H.project({ ['a.txt'] = 'alpha\n' }, { defualt_model = 'x/y' })
  vim.cmd('BB7Init')
  H.notes = {}
  -- The first command that needs the binary opens the project (`init`).
  require('bb7.client').stop()
  vim.cmd('BB7NewChat')
  local n = H.expect_note('unknown key defualt_model is ignored; did you mean default_model?', L.WARN)
  H.truthy(n.msg:find('config.json', 1, true), 'names the file: ' .. n.msg)
  -- The binary starts again: the same warning is not shown again.
  require('bb7.client').stop()
  vim.cmd('BB7NewChat')
  H.eq(#notes_with('defualt_model'), 1, 'shown once')
end)

test('config warnings: a clean config says nothing, a value of the wrong type is shown', function()
  local _, home = H.project({})
  vim.cmd('BB7NewChat')
  H.eq(#notes_with('config'), 0, 'no config notes')
  vim.fn.writefile({ vim.json.encode({ stream_timeout_secs = 'soon' }) }, home .. '/.config/bb7/config.json')
  require('bb7.client').stop()
  vim.cmd('BB7NewChat')
  H.expect_note('stream_timeout_secs has the wrong type', L.WARN)
end)
