//! An ACP session: a bb7 chat driven by its own in-process stdio server, in the
//! project that `session/new`'s `cwd` lies in (the nearest directory at or above it
//! that holds `.bb7/`; without one, `.bb7/` is created in `cwd` itself on first use).
//! Its config options are the chat's model (category `model`), its retrieval tools
//! (`off` / `ask` / `auto`), its routing (`agent_mode`) and its reasoning effort
//! (category `thought_level`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, CloseSessionRequest,
    CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, UnstructuredCommandInput,
};

use super::replay;
use super::state::{Cx, Sess, Shared, invalid, retitle, rpc};
use crate::error::ErrorCode;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{Ack, ChatView, Created, Models, Opened};

/// The retrieval tools settings a session offers (`save_chat_settings` `tools`).
const TOOLS: [(&str, &str); 3] = [
    ("off", "Off: the model sees only the context you send"),
    ("ask", "Ask: each read by the model asks you first"),
    ("auto", "Auto: the model reads project files on its own"),
];

/// The routing settings a session offers (`save_chat_settings` `agent_mode`).
const ROUTING: [(&str, &str); 3] = [
    ("remote", "Remote provider"),
    ("local", "Local provider"),
    ("hybrid_auto", "Local first, remote when it fails"),
];

/// The reasoning efforts a session offers (`save_chat_settings` `reasoning_effort`;
/// `default` clears it: the model's own).
const EFFORT: [(&str, &str); 5] = [
    ("default", "Model default"),
    ("minimal", "Minimal"),
    ("low", "Low"),
    ("medium", "Medium"),
    ("high", "High"),
];

/// The project root for `cwd`: the nearest directory at or above it that holds
/// `.bb7/`, else `cwd` itself. `cwd` must be an absolute directory.
fn project_root(cwd: &Path) -> Result<PathBuf, RpcError> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd must be an absolute path: {}",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(invalid(format!(
            "cwd is not a directory: {}",
            cwd.display()
        )));
    }
    let root = crate::front::root::discover(cwd);
    root.canonicalize()
        .map_err(|e| invalid(format!("cannot open {}: {e}", root.display())))
}

/// A server opened on the project of `cwd`, `.bb7/` created when it has none and
/// `create` is set (a session to load needs none made: it cannot be in a project
/// without one).
/// With it, init's `config_warnings` (among them what reading the chat init restored
/// found wrong with its state, told when that chat is loaded: `state_warnings`).
async fn open(cwd: &Path, create: bool) -> Result<(Client, PathBuf, Vec<String>), RpcError> {
    let root = project_root(cwd)?;
    let mut c = Client::start();
    let project_root = Some(root.to_string_lossy().into_owned());
    let init = Action::Init(params::Init {
        project_root: project_root.clone(),
    });
    let mut warnings = Vec::new();
    match c.call::<Opened>(init.clone()).await {
        Ok(o) => warnings = o.config_warnings.into_owned(),
        Err(f) if f.is(ErrorCode::NotInitialized) && !create => return Err(rpc(f)),
        Err(f) if f.is(ErrorCode::NotInitialized) => {
            match c
                .call::<Ack>(Action::Bb7Init(params::Init { project_root }))
                .await
            {
                Ok(_) => {}
                // Another session made it meanwhile.
                Err(f) if f.is(ErrorCode::Conflict) => {
                    c.call::<Opened>(init).await.map_err(rpc)?;
                }
                Err(f) => return Err(rpc(f)),
            }
        }
        Err(f) => return Err(rpc(f)),
    }
    Ok((c, root, warnings))
}

/// `session/new`: a new chat in the project of `cwd`.
pub(super) async fn new_session(
    st: &Shared,
    req: NewSessionRequest,
    cx: &Cx,
) -> Result<NewSessionResponse, RpcError> {
    let (mut c, root, _) = open(&req.cwd, true).await?;
    let created: Created = c
        .call(Action::ChatNew(params::ChatNew::default()))
        .await
        .map_err(rpc)?;
    let sess = register(st, created.id.into_owned(), root, c, cx).await;
    let options = config_options(&sess).await?;
    commands(&sess, cx);
    super::mcp::start(&sess, &req.mcp_servers, command_list(), cx).await?;
    Ok(NewSessionResponse::new(sess.id.clone()).config_options(options))
}

/// `session/load`: chat `sessionId` of the project of `cwd`, its history replayed as
/// `session/update` notifications before the answer.
pub(super) async fn load_session(
    st: &Shared,
    req: LoadSessionRequest,
    cx: &Cx,
) -> Result<LoadSessionResponse, RpcError> {
    let (sess, warnings) = reopen(st, req.session_id.0.to_string(), &req.cwd, cx).await?;
    replay::replay(&sess, cx).await?;
    super::state_warnings::tell(cx, &sess, &warnings);
    let options = config_options(&sess).await?;
    commands(&sess, cx);
    super::mcp::start(&sess, &req.mcp_servers, command_list(), cx).await?;
    Ok(LoadSessionResponse::new().config_options(options))
}

/// `session/resume`: as `session/load`, without the replay of the history.
pub(super) async fn resume_session(
    st: &Shared,
    req: ResumeSessionRequest,
    cx: &Cx,
) -> Result<ResumeSessionResponse, RpcError> {
    let (sess, warnings) = reopen(st, req.session_id.0.to_string(), &req.cwd, cx).await?;
    super::state_warnings::tell(cx, &sess, &warnings);
    let options = config_options(&sess).await?;
    commands(&sess, cx);
    Ok(ResumeSessionResponse::new().config_options(options))
}

/// Chat `id` of the project of `cwd` as an open session: the one open in this process
/// (loaded twice) when it is that project's, else the chat selected on a new server.
/// A project without `.bb7/`, or without the chat, is -32002 (nothing is created).
/// With it, what `chat_select` found wrong with the chat's state (`state_warnings`).
async fn reopen(
    st: &Shared,
    id: String,
    cwd: &Path,
    cx: &Cx,
) -> Result<(std::sync::Arc<Sess>, Vec<String>), RpcError> {
    let root = project_root(cwd)?;
    let open_here = st
        .sessions
        .lock()
        .await
        .get(&id)
        .filter(|s| s.root == root)
        .cloned();
    if let Some(s) = open_here {
        return Ok((s, Vec::new()));
    }
    let (mut c, root, mut warnings) = open(cwd, false).await.map_err(|e| {
        if e.code == RpcError::invalid_params().code {
            RpcError::new(-32002, format!("Session not found: {id} ({})", e.message))
                .data(serde_json::json!({ "uri": id }))
        } else {
            e
        }
    })?;
    let selected = c
        .call::<crate::protocol::replies::Selected>(Action::ChatSelect(params::ChatSelect {
            id: params::NonEmpty(id.clone()),
            scope: params::Scope::default(),
            read_only: None,
        }))
        .await
        .map_err(|f| {
            if f.is(ErrorCode::NotFound) {
                RpcError::new(-32002, f.message).data(serde_json::json!({ "uri": id }))
            } else {
                rpc(f)
            }
        })?;
    let sess = register(st, id, root, c, cx).await;
    warnings.extend(selected.state_warnings);
    Ok((sess, warnings))
}

/// `session/close`: the session's prompt is cancelled, its server let go; a chat
/// that holds no message is deleted (an editor opens one for every chat window, and
/// an empty one would stay in every list).
pub(super) async fn close_session(
    st: &Shared,
    req: CloseSessionRequest,
) -> Result<CloseSessionResponse, RpcError> {
    let sess = st.session(&req.session_id.0).await?;
    sess.cancel();
    {
        // Waits for a running prompt to end.
        let mut c = sess.conn.lock().await;
        if let Ok(chat) = c
            .call::<ChatView>(Action::ChatGet(params::NoParams {}))
            .await
            && chat.messages.is_empty()
        {
            let _ = c
                .call::<Ack>(Action::ChatDelete(params::ChatRef {
                    id: params::NonEmpty(sess.id.clone()),
                    scope: params::Scope::default(),
                }))
                .await;
        }
        // The server ends and lets the chat go (its lock, the title task).
        let _ = c.call::<Ack>(Action::Shutdown(params::NoParams {})).await;
    }
    st.sessions.lock().await.remove(&sess.id);
    Ok(CloseSessionResponse::new())
}

/// `session/delete`: `chat_delete` of the session's chat, in its project when it is
/// open in this process (closed first), else in the project of the agent's working
/// directory; an unknown chat is -32002.
pub(super) async fn delete_session(
    st: &Shared,
    req: DeleteSessionRequest,
) -> Result<DeleteSessionResponse, RpcError> {
    let id = req.session_id.0.to_string();
    let open_here = st.sessions.lock().await.remove(&id);
    let delete = Action::ChatDelete(params::ChatRef {
        id: params::NonEmpty(id.clone()),
        scope: params::Scope::default(),
    });
    let r = match open_here {
        Some(sess) => {
            sess.cancel();
            let mut c = sess.conn.lock().await;
            let r = c.call::<Ack>(delete).await;
            let _ = c.call::<Ack>(Action::Shutdown(params::NoParams {})).await;
            r
        }
        None => {
            let cwd = std::env::current_dir().map_err(|e| RpcError::new(-32603, e.to_string()))?;
            let (mut c, _, _) = open(&cwd, false).await?;
            c.call::<Ack>(delete).await
        }
    };
    match r {
        Ok(_) => Ok(DeleteSessionResponse::new()),
        Err(f) if f.is(ErrorCode::NotFound) => {
            Err(RpcError::new(-32002, f.message).data(serde_json::json!({ "uri": id })))
        }
        Err(f) => Err(rpc(f)),
    }
}

/// Keeps `c` as session `id`.
async fn register(
    st: &Shared,
    id: String,
    root: PathBuf,
    mut c: Client,
    cx: &Cx,
) -> std::sync::Arc<Sess> {
    let titles = c.titles();
    let sess = std::sync::Arc::new(Sess {
        id: id.clone(),
        root,
        conn: tokio::sync::Mutex::new(c),
        prompting: Mutex::new(None),
        allow_always: AtomicBool::new(false),
        models: Mutex::new(Vec::new()),
        model: Mutex::new(String::new()),
        title: Mutex::new(String::new()),
        tag: super::state::process_tag(),
        calls: std::sync::atomic::AtomicU64::new(0),
        message: Mutex::new(None),
        cancels: std::sync::atomic::AtomicU64::new(0),
    });
    st.sessions.lock().await.insert(id, sess.clone());
    if let Some(mut titles) = titles {
        // A title is made after the answer that asks for it: it reaches the client
        // as it is made, not with the next prompt.
        let (sess, cx) = (sess.clone(), cx.clone());
        tokio::spawn(async move {
            while let Some(t) = titles.recv().await {
                if t.chat_id == sess.id {
                    retitle(&cx, &sess, &t.title);
                }
            }
        });
    }
    sess
}

/// The slash commands a prompt understands (`available_commands_update`).
fn commands(sess: &Sess, cx: &Cx) {
    let _ = cx.send_notification(SessionNotification::new(
        sess.id.clone(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(command_list())),
    ));
}

/// bb7's own slash commands (MCP prompts join them in acp/mcp.rs).
fn command_list() -> Vec<AvailableCommand> {
    let input = |hint: &str| {
        Some(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint),
        ))
    };
    vec![
        AvailableCommand::new("add", "Add project files to the chat's context")
            .input(input("path ...")),
        AvailableCommand::new("drop", "Remove files from the chat's context")
            .input(input("path ...")),
        AvailableCommand::new("undo", "Roll back the last change bb7 applied in this chat"),
        AvailableCommand::new("tokens", "Show the tokens the next request will send"),
        AvailableCommand::new(
            "export",
            "Write this chat to a file under .bb7/exports/ to share, secrets redacted",
        )
        .input(input("[md|json] [no-redact]")),
    ]
}

/// The session's config options as they stand: model, retrieval tools, routing.
pub(super) async fn config_options(sess: &Sess) -> Result<Vec<SessionConfigOption>, RpcError> {
    let mut c = sess.conn.lock().await;
    let chat: ChatView = c
        .call(Action::ChatGet(params::NoParams {}))
        .await
        .map_err(rpc)?;
    let known = sess.models.lock().map(|m| m.clone()).unwrap_or_default();
    let mut models = if known.is_empty() {
        fetch_models(&mut c).await
    } else {
        known
    };
    if !models.iter().any(|(id, _, _)| id == chat.model.as_ref()) {
        let name = if chat.model.is_empty() {
            "(no model configured)".to_owned()
        } else {
            chat.model.to_string()
        };
        models.insert(0, (chat.model.to_string(), name, 0));
    }
    if let Ok(mut m) = sess.models.lock() {
        m.clone_from(&models);
    }
    if let Ok(mut m) = sess.model.lock() {
        *m = chat.model.to_string();
    }
    if let Ok(mut t) = sess.title.lock() {
        *t = chat.name.to_string();
    }
    let model_opts: Vec<SessionConfigSelectOption> = models
        .iter()
        .map(|(id, name, _)| SessionConfigSelectOption::new(id.clone(), name.clone()))
        .collect();
    let select = |list: &[(&'static str, &'static str)]| -> Vec<SessionConfigSelectOption> {
        list.iter()
            .map(|(v, n)| SessionConfigSelectOption::new(*v, *n))
            .collect()
    };
    let tools = if TOOLS.iter().any(|(v, _)| *v == chat.tools) {
        chat.tools.to_string()
    } else {
        "off".to_owned()
    };
    let routing = if ROUTING.iter().any(|(v, _)| *v == chat.agent_mode) {
        chat.agent_mode.to_string()
    } else {
        "remote".to_owned()
    };
    let effort = chat
        .reasoning_effort
        .as_deref()
        .filter(|e| EFFORT.iter().any(|(v, _)| v == e))
        .unwrap_or("default")
        .to_owned();
    Ok(vec![
        SessionConfigOption::select("model", "Model", chat.model.to_string(), model_opts)
            .category(SessionConfigOptionCategory::Model)
            .description("The model that answers this chat's next prompts".to_owned()),
        SessionConfigOption::select("tools", "Retrieval tools", tools, select(&TOOLS))
            .category(SessionConfigOptionCategory::Other("_tools".into()))
            .description(
                "Read-only project tools for the model: off, ask (each read asks you) or auto"
                    .to_owned(),
            ),
        SessionConfigOption::select("agent_mode", "Routing", routing, select(&ROUTING))
            .category(SessionConfigOptionCategory::Other("_routing".into()))
            .description("Which configured provider answers".to_owned()),
        SessionConfigOption::select("reasoning_effort", "Thinking", effort, select(&EFFORT))
            .category(SessionConfigOptionCategory::ThoughtLevel)
            .description(
                "How much the model reasons before it answers (models that can)".to_owned(),
            ),
    ])
}

/// The models list (`get_models`), empty when it cannot be had within a few seconds
/// (the chat's own model is offered then).
async fn fetch_models(c: &mut Client) -> Vec<(String, String, u64)> {
    let call = c.call::<Models>(Action::GetModels(params::GetModels {
        refresh: None,
        reset_tools: None,
    }));
    match tokio::time::timeout(std::time::Duration::from_secs(5), call).await {
        Ok(Ok(m)) => m
            .models
            .iter()
            .map(|m| {
                let name = if m.name.is_empty() { &m.id } else { &m.name };
                (m.id.clone(), name.clone(), m.context_length)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `session/set_config_option`: saves the model, tools or routing on the chat and
/// answers every option as it now stands.
pub(super) async fn set_config_option(
    st: &Shared,
    req: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, RpcError> {
    let sess = st.session(&req.session_id.0).await?;
    let Some(value) = req.value.as_value_id().map(|v| v.0.to_string()) else {
        return Err(invalid("bb7's config options are selects: give a value id"));
    };
    let mut settings = params::SaveChatSettings {
        model: None,
        reasoning_effort: None,
        tools: None,
        edit_format: None,
        agent_mode: None,
    };
    match req.config_id.0.as_ref() {
        "model" => {
            if value.trim().is_empty() {
                return Err(invalid("model: give a model id"));
            }
            if let Ok(mut m) = sess.models.lock()
                && !m.iter().any(|(id, _, _)| *id == value)
            {
                m.push((value.clone(), value.clone(), 0));
            }
            settings.model = Some(value);
        }
        "tools" if TOOLS.iter().any(|(v, _)| *v == value) => settings.tools = Some(value),
        "agent_mode" if ROUTING.iter().any(|(v, _)| *v == value) => {
            settings.agent_mode = Some(value)
        }
        "reasoning_effort" if value == "default" => settings.reasoning_effort = Some(None),
        "reasoning_effort" if EFFORT.iter().any(|(v, _)| *v == value) => {
            settings.reasoning_effort = Some(Some(value))
        }
        "tools" | "agent_mode" | "reasoning_effort" => {
            return Err(invalid(format!("{} has no value {value}", req.config_id.0)));
        }
        other => return Err(invalid(format!("unknown config option: {other}"))),
    }
    sess.conn
        .lock()
        .await
        .call::<Ack>(Action::SaveChatSettings(settings))
        .await
        .map_err(rpc)?;
    Ok(SetSessionConfigOptionResponse::new(
        config_options(&sess).await?,
    ))
}
