//! Drives `bb7 acp` with the client side of the official `agent-client-protocol`
//! crate: the real binary over its stdin/stdout, an editor that records every
//! notification and request it gets and answers permissions, reads and writes as the
//! test scripts them.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, EmbeddedResource, EmbeddedResourceResource,
    FileSystemCapabilities, InitializeRequest, InitializeResponse, NewSessionRequest,
    PromptRequest, PromptResponse, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, ResourceLink,
    SelectedPermissionOutcome, SessionNotification, TextContent, TextResourceContents,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error, UntypedMessage};
use serde_json::Value;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

mod scenario;
// Each test file uses some of the shared openings, some none.
#[allow(unused_imports)]
pub use scenario::*;

/// What the editor saw.
#[derive(Default)]
pub struct Seen {
    /// Every `session/update`, as JSON, in arrival order.
    pub updates: Vec<Value>,
    /// Every `session/request_permission`, as JSON.
    pub permissions: Vec<Value>,
    /// Paths read with `fs/read_text_file`.
    pub reads: Vec<PathBuf>,
    /// `fs/write_text_file` calls: path and content.
    pub writes: Vec<(PathBuf, String)>,
    /// Methods of any other request (a terminal request would land here).
    pub other: Vec<String>,
}

/// How the editor answers.
pub struct Script {
    /// The permission option to choose (`allow`, `allow_always`, `reject`),
    /// `cancel` to answer `cancelled`, or `never` to leave the request unanswered.
    pub decision: String,
    /// Open buffers: path → text (unsaved edits); other paths read from disk.
    pub buffers: HashMap<PathBuf, String>,
    /// avante.nvim's read: the text without the file's final newline.
    pub read_drops_final_newline: bool,
    /// codecompanion.nvim's write: to disk, each `\n`-separated piece of the text as
    /// a line, so a text that ends in `\n` gains an empty last line.
    pub write_to_disk_adding_a_line: bool,
    /// Never answer `fs/read_text_file` (a stuck client).
    pub read_never_answers: bool,
    /// A client whose write saves to disk what this makes of the text (CRLF written
    /// as LF, the final newline dropped, a line break appended).
    pub write_rewrite: Option<fn(&str) -> String>,
}

/// The scripted editor.
#[derive(Clone)]
pub struct Editor {
    pub seen: Arc<Mutex<Seen>>,
    pub script: Arc<Mutex<Script>>,
    /// Offer `fs.readTextFile` and `fs.writeTextFile`.
    pub fs: bool,
}

impl Editor {
    pub fn new(fs: bool) -> Editor {
        Editor {
            seen: Arc::new(Mutex::new(Seen::default())),
            script: Arc::new(Mutex::new(Script {
                decision: "allow".into(),
                buffers: HashMap::new(),
                read_drops_final_newline: false,
                write_to_disk_adding_a_line: false,
                read_never_answers: false,
                write_rewrite: None,
            })),
            fs,
        }
    }

    /// Changes the script.
    pub fn script(&self, f: impl FnOnce(&mut Script)) {
        f(&mut self.script.lock().unwrap());
    }

    pub fn decide(&self, d: &str) {
        self.script.lock().unwrap().decision = d.into();
    }

    pub fn buffer(&self, path: &Path, text: &str) {
        self.script
            .lock()
            .unwrap()
            .buffers
            .insert(path.to_path_buf(), text.into());
    }

    /// The updates of session `sid` so far, their `sessionUpdate` kinds.
    pub fn kinds(&self, sid: &str) -> Vec<String> {
        self.updates(sid)
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// The `update` objects of session `sid`.
    pub fn updates(&self, sid: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .updates
            .iter()
            .filter(|n| n["sessionId"] == sid)
            .map(|n| n["update"].clone())
            .collect()
    }

    /// The text of every update of `kind` in session `sid`, joined.
    pub fn text(&self, sid: &str, kind: &str) -> String {
        self.updates(sid)
            .iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }

    pub fn clear(&self) {
        let mut s = self.seen.lock().unwrap();
        s.updates.clear();
        s.permissions.clear();
        s.reads.clear();
        s.writes.clear();
    }
}

/// Runs `bb7 acp` with `home` and `cwd`, connects `editor` to it, initializes, and runs
/// `body` with the connection; the process ends with the connection. Fails when the
/// agent sent the editor any request the editor did not offer (a terminal request).
pub async fn run<F>(home: &Path, cwd: &Path, editor: &Editor, body: F) -> Result<(), Error>
where
    F: AsyncFnOnce(ConnectionTo<Agent>, InitializeResponse) -> Result<(), Error>,
{
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_bb7"))
        .arg("acp")
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start bb7 acp");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (stdin, stdout) = tee(stdin, stdout);
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let (e1, e2, e3, e4, e5) = (
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
    );
    let fs = editor.fs;
    let result = Client
        .v1()
        .name("test-editor")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                e1.seen
                    .lock()
                    .unwrap()
                    .updates
                    .push(serde_json::to_value(&n).unwrap());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder, _cx| {
                e2.seen
                    .lock()
                    .unwrap()
                    .permissions
                    .push(serde_json::to_value(&r).unwrap());
                let d = e2.script.lock().unwrap().decision.clone();
                if d == "never" {
                    // A stuck client: the responder stays unanswered for good.
                    std::mem::forget(responder);
                    return Ok(());
                }
                let outcome = if d == "cancel" {
                    RequestPermissionOutcome::Cancelled
                } else {
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(d))
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: ReadTextFileRequest, responder, _cx| {
                e3.seen.lock().unwrap().reads.push(r.path.clone());
                let (buf, drop_nl, stuck) = {
                    let s = e3.script.lock().unwrap();
                    (
                        s.buffers.get(&r.path).cloned(),
                        s.read_drops_final_newline,
                        s.read_never_answers,
                    )
                };
                if stuck {
                    // Keep the responder unanswered for good.
                    std::mem::forget(responder);
                    return Ok(());
                }
                match buf.or_else(|| std::fs::read_to_string(&r.path).ok()) {
                    Some(mut t) => {
                        if drop_nl && t.ends_with('\n') {
                            t.pop();
                        }
                        responder.respond(ReadTextFileResponse::new(t))
                    }
                    None => responder.respond_with_error(Error::new(-32002, "no such file")),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: WriteTextFileRequest, responder, _cx| {
                e4.seen
                    .lock()
                    .unwrap()
                    .writes
                    .push((r.path.clone(), r.content.clone()));
                let mut script = e4.script.lock().unwrap();
                if let Some(rewrite) = script.write_rewrite {
                    std::fs::write(&r.path, rewrite(&r.content)).unwrap();
                } else if script.write_to_disk_adding_a_line {
                    let lines: Vec<&str> = r.content.split('\n').collect();
                    let mut text = lines.join("\n");
                    text.push('\n');
                    std::fs::write(&r.path, text).unwrap();
                } else {
                    // The editor's buffer takes the text; the user saves it later.
                    script.buffers.insert(r.path.clone(), r.content.clone());
                }
                drop(script);
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: UntypedMessage, responder, _cx| {
                e5.seen.lock().unwrap().other.push(r.method.clone());
                responder.respond_with_error(Error::method_not_found())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx| {
            let caps = ClientCapabilities::new().fs(FileSystemCapabilities::new()
                .read_text_file(fs)
                .write_text_file(fs));
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
                .block_task()
                .await?;
            body(cx, init).await
        })
        .await;
    // The connection closed bb7's stdin: it exits and lets its chats go.
    if tokio::time::timeout(crate::common::TIMEOUT, child.wait())
        .await
        .is_err()
    {
        panic!("bb7 acp did not exit when its stdin closed");
    }
    let other = editor.seen.lock().unwrap().other.clone();
    assert!(
        other.is_empty(),
        "requests the editor did not offer: {other:?}"
    );
    result
}

/// The agent's pipes, passed through; with `BB7_ACP_DUMP=<file>` every line each way
/// is appended to that file (`> ` to the agent, `< ` from it), for checking the wire
/// against the published schema by hand.
fn tee(
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dump = std::env::var_os("BB7_ACP_DUMP").map(PathBuf::from);
    let log = move |dir: &str, line: &str| {
        if let Some(p) = &dump {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
            {
                let _ = writeln!(f, "{dir} {line}");
            }
        }
    };
    let log2 = log.clone();
    let (client_in, to_agent) = tokio::io::duplex(1 << 16);
    let (mut from_agent, client_out) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let mut lines = BufReader::new(to_agent).lines();
        let mut stdin = stdin;
        while let Ok(Some(line)) = lines.next_line().await {
            log("> ", &line);
            if stdin
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            log2("< ", &line);
            if from_agent
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    });
    (client_in, client_out)
}

/// `session/new` in `cwd`; the session id.
pub async fn new_session(cx: &ConnectionTo<Agent>, cwd: &Path) -> Result<String, Error> {
    let r = cx
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?;
    Ok(r.session_id.0.to_string())
}

/// `session/prompt` with `blocks`.
pub async fn prompt(
    cx: &ConnectionTo<Agent>,
    sid: &str,
    blocks: Vec<ContentBlock>,
) -> Result<PromptResponse, Error> {
    cx.send_request(PromptRequest::new(sid.to_owned(), blocks))
        .block_task()
        .await
}

pub fn say(t: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(t))
}

pub fn file_uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// An embedded `resource` block with `text` for `uri`.
pub fn resource(uri: &str, text: &str) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource::new(
        EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(text, uri)),
    ))
}

/// An embedded `resource` block with `text` for `uri` of MIME type `mime`.
pub fn typed_resource(uri: &str, mime: &str, text: &str) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource::new(
        EmbeddedResourceResource::TextResourceContents(
            TextResourceContents::new(text, uri).mime_type(mime.to_owned()),
        ),
    ))
}

/// A `resource_link` block for `uri`.
pub fn link(uri: &str, name: &str) -> ContentBlock {
    ContentBlock::ResourceLink(ResourceLink::new(name, uri))
}

/// The stop reason of a prompt's answer as its wire string.
pub fn stop(r: &PromptResponse) -> String {
    serde_json::to_value(r).unwrap()["stopReason"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A multi-threaded runtime for a test that drives the client side.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The session updates `ed` recorded for session `sid` of kind `kind`
/// (`sessionUpdate`, e.g. `tool_call`), in order.
pub fn of_kind(ed: &Editor, sid: &str, kind: &str) -> Vec<Value> {
    ed.updates(sid)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// Waits (polling every 10 ms) until `f` holds. The poll count is the harness's hang
/// guard (at least `common::TIMEOUT` of polling), never a speed bound: what is awaited
/// takes milliseconds, and no clock is read.
pub async fn until(f: impl Fn() -> bool) {
    let polls = crate::common::TIMEOUT.as_millis() / 10;
    for _ in 0..polls {
        if f() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("still waiting after {polls} polls");
}
