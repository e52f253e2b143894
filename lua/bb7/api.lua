-- One function per protocol action (docs/PROTOCOL.md). Each waits for the reply and
-- returns it, or nil and a `bb7.Error`; callers decide by `code`, never by the text of
-- `message`. Streaming and fire-and-forget actions take callbacks.

local client = require('bb7.client')

local M = {}

---@class bb7.Error
---@field code string? the reply's `code` (`not_found`, `conflict`, `busy`, …), or
---  `not_running` / `timeout` / `exited` from the client
---@field message string for the user

--- Sends `action` and waits for its reply.
---@param action string
---@param fields table?
---@param timeout integer? milliseconds (default 5000)
---@return table? reply
---@return bb7.Error? err
function M.call(action, fields, timeout)
  local r = client.request_sync(action, fields or {}, timeout)
  if r.type == 'error' or r.type == 'diff_error' then
    return nil, { code = r.code, message = r.message or table.concat(r.errors or {}, '; ') }
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
      on_reply(nil, { code = r.code, message = r.message or '?' })
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
---@type bb7.Action
M.version = action('version')
---@type bb7.Action
M.prepare_instructions = action('prepare_instructions')

-- Chats (fields as in docs/PROTOCOL.md "Base: chats").
---@type bb7.Action
M.chat_new = action('chat_new')
---@type bb7.Action
M.chat_list = action('chat_list')
---@type bb7.Action
M.chat_select = action('chat_select')
---@type bb7.Action
M.chat_get = action('chat_get')
---@type bb7.Action
M.chat_active = action('chat_active')
---@type bb7.Action
M.chat_rename = action('chat_rename')
---@type bb7.Action
M.chat_delete = action('chat_delete')
---@type bb7.Action
M.chat_pin = action('chat_pin')
---@type bb7.Action
M.chat_edit = action('chat_edit')
---@type bb7.Action
M.fork_chat = action('fork_chat')
---@type bb7.Action
M.search_chats = action('search_chats')
---@type bb7.Action
M.save_chat_settings = action('save_chat_settings')

-- Context and output.
---@type bb7.Action
M.context_add = action('context_add')
---@type bb7.Action
M.context_add_section = action('context_add_section')
---@type bb7.Action
M.context_remove = action('context_remove')
---@type bb7.Action
M.context_remove_section = action('context_remove_section')
---@type bb7.Action
M.context_set_readonly = action('context_set_readonly')
---@type bb7.Action
M.context_list = action('context_list')
---@type bb7.Action
M.sync_context = action('sync_context')
---@type bb7.Action
M.get_context_file = action('get_context_file')
---@type bb7.Action
M.get_output_file = action('get_output_file')
---@type bb7.Action
M.output_delete = action('output_delete')
---@type bb7.Action
M.get_diff_paths = action('get_diff_paths')
---@type bb7.Action
M.diff_local_done = action('diff_local_done')
---@type bb7.Action
M.apply_file = action('apply_file')

--- File statuses with hashes instead of texts (cheap to redraw often).
---@return table? reply `{files = [...]}`
---@return bb7.Error? err
function M.file_statuses()
  return M.call('get_file_statuses', { contents = false })
end

-- Review and checkpoints.
---@type bb7.Action
M.review_get = action('review_get')
---@type bb7.Action
M.review_apply = action('review_apply')
---@type bb7.Action
M.checkpoint_list = action('checkpoint_list')
---@type bb7.Action
M.checkpoint_rollback = action('checkpoint_rollback')

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
