-- One function per protocol action (docs/PROTOCOL.md). Each waits for the reply and
-- returns it, or nil and a `bb7.Error`; callers decide by `code`, never by the text of
-- `message`. Streaming and fire-and-forget actions take callbacks.

local client = require('bb7.client')

local M = {}

---@class bb7.Error
---@field code string? the reply's `code` (`not_found`, `conflict`, `busy`, …), or
---  `not_running` / `timeout` / `exited` from the client
---@field message string for the user
---@field data table? the reply's `data` (e.g. `holder_pid` of a `locked` error)

--- Sends `action` and waits for its reply.
---@param action string
---@param fields table?
---@param timeout integer? milliseconds (default 5000)
---@return table? reply
---@return bb7.Error? err
function M.call(action, fields, timeout)
  local r = client.request_sync(action, fields or {}, timeout)
  if r.type == 'error' or r.type == 'diff_error' then
    local message = r.message or table.concat(r.errors or {}, '; ')
    return nil, { code = r.code, message = require('bb7.words').plugin(message), data = r.data }
  end
  return r, nil
end

--- Sends `action` without waiting; `on_reply(reply, err)` gets the outcome.
---@param action string
---@param fields table?
---@param on_reply fun(reply: table?, err: bb7.Error?)?
function M.notify(action, fields, on_reply)
  client.request(action, fields or {}, function(r)
    if not on_reply then
      return
    end
    if r.type == 'error' then
      on_reply(nil, { code = r.code, message = require('bb7.words').plugin(r.message or '?') })
    else
      on_reply(r, nil)
    end
  end)
end

---@alias bb7.Action fun(fields: table?): table?, bb7.Error? the reply, or nil and the error

---@param name string
---@return bb7.Action
local function action(name)
  return function(fields)
    return M.call(name, fields)
  end
end

--- Makes `M[name]` a `bb7.Action` for each name: the actions that take their fields as
--- given and need nothing else.
---@param names string[]
local function define(names)
  for _, name in ipairs(names) do
    M[name] = action(name)
  end
end

-- Project and session.
---@param root string
---@return table? reply `{global_only?}`
---@return bb7.Error? err
function M.init(root)
  return M.call('init', { project_root = root })
end
---@param root string
---@return table? reply
---@return bb7.Error? err code `conflict` when already initialized
function M.bb7_init(root)
  return M.call('bb7_init', { project_root = root })
end
define({ 'version', 'prepare_instructions' })

-- Chats (fields as in docs/PROTOCOL.md "Base: chats").
define({
  'chat_new', 'chat_list', 'chat_select', 'chat_get', 'chat_active', 'chat_rename', 'chat_delete',
  'chat_pin', 'chat_edit', 'fork_chat', 'search_chats', 'save_chat_settings',
})

-- Context and output.
define({
  'context_add', 'context_add_section', 'context_remove', 'context_remove_section',
  'context_set_readonly', 'context_list', 'sync_context', 'get_context_file', 'get_output_file',
  'output_delete', 'get_diff_paths', 'diff_local_done', 'apply_file',
})

--- File statuses with hashes instead of texts (cheap to redraw often).
---@return table? reply `{files = [...]}`
---@return bb7.Error? err
function M.file_statuses()
  return M.call('get_file_statuses', { contents = false })
end

-- Review and checkpoints.
define({ 'review_get', 'review_apply', 'checkpoint_list', 'checkpoint_rollback' })

--- Starts a turn. `on_event(msg)` gets every stream message before the final one,
--- `on_final(msg)` the `done`, `error` or `diff_error`.
---@param fields table `{content, chat_id?, model?}`
---@param on_final fun(msg: table)
---@param on_event fun(msg: table)
---@return string? request_id nil when the binary cannot start
function M.send(fields, on_final, on_event)
  return client.request('send', fields, on_final, on_event)
end

---@param rid string request id of the turn
function M.cancel(rid)
  M.notify('cancel', { target_request_id = rid })
end

---@param approval_id string
---@param approved boolean
function M.tool_approve(approval_id, approved)
  M.notify('tool_approve', { approval_id = approval_id, approved = approved })
end

---@param question_id string
---@param answer string
function M.clarify(question_id, answer)
  M.notify('clarify', { question_id = question_id, answer = answer })
end

---@param draft string
function M.save_draft(draft)
  M.notify('save_draft', { draft = draft })
end

--- Tokens and expected cost of sending `input_text` to the active chat now, without
--- waiting: `{total, cached_tokens, expected_cost?, potential_savings, …}`.
---@param input_text string the unsent draft
---@param on_reply fun(reply: table?, err: bb7.Error?)
function M.estimate_tokens(input_text, on_reply)
  M.notify('estimate_tokens', { input_text = input_text }, on_reply)
end

---@param on_reply fun(reply: table?, err: bb7.Error?)
function M.get_models(on_reply)
  M.notify('get_models', {}, on_reply)
end

return M
