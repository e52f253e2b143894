-- Archiving chats (`chat_archive`, docs/PROTOCOL.md "Base: chats"): an archived chat
-- leaves the Chats pane and stays searchable (:BB7Search) and on disk; `:BB7Archive!`
-- brings one back.

local api = require('bb7.api')
local util = require('bb7.util')

local M = {}
local say, levels = util.say, vim.log.levels

local function redraw()
  require('bb7.ui.render').refresh()
end

--- Archives `chat` ({id, name}); says so, or why not. The active chat's draft is
--- kept first: archiving it moves bb7 on to another chat (the newest listed, else a
--- new one), which the panes then show with its own draft.
---@param chat {id: string, name: string?}
function M.archive(chat)
  if chat.id == require('bb7').active_chat() then
    require('bb7.ui.message').save()
  end
  local r, err = api.call('chat_archive', { id = chat.id, archived = true })
  if err then
    return say('Failed to archive the chat: ' .. err.message, levels.ERROR)
  end
  local now = ''
  if r and r.active_id then
    local shown = api.chat_get()
    local name = shown and shown.id == r.active_id and shown.name or r.active_id
    now = r.active_new and ('; now on a new chat, "' .. name .. '"') or ('; now on "' .. name .. '"')
  end
  say('Archived "' .. (chat.name or chat.id) .. '" (:BB7Archive! brings it back)' .. now)
  redraw()
end

--- Picks an archived chat and brings it back into the list.
function M.restore()
  local r = api.chat_list({ include_archived = true })
  local archived = vim.tbl_filter(function(c)
    return c.archived
  end, r and r.chats or {})
  if #archived == 0 then
    return say('No archived chats', levels.WARN)
  end
  vim.ui.select(archived, {
    prompt = 'Bring back which chat?',
    format_item = function(c)
      return c.name or c.id
    end,
  }, function(c)
    if not c then
      return
    end
    local _, err = api.call('chat_archive', { id = c.id, archived = false })
    if err then
      return say('Failed to bring the chat back: ' .. err.message, levels.ERROR)
    end
    say('Brought back "' .. (c.name or c.id) .. '"')
    redraw()
  end)
end

--- :BB7Archive[!] — archives the chat under the cursor in the Chats pane, else the
--- active chat; with ! picks an archived chat to bring back.
---@param opts {bang: boolean?}
function M.command(opts)
  if not require('bb7.commands').ensure() then
    return
  end
  if opts.bang then
    return M.restore()
  end
  local row = require('bb7.ui.layout').pane_of() == 'chats' and require('bb7.ui.render').chat_under_cursor() or nil
  if row then
    return M.archive(row)
  end
  local r = api.chat_get()
  if not r or not r.id then
    return say('No active chat', levels.WARN)
  end
  M.archive({ id = r.id, name = r.name })
end

return M
