//! Test harness: runs the real `bb7` binary over stdio with a temporary HOME and
//! project, and matches replies to requests by `request_id`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A temporary user home and project directory.
pub struct Env {
    pub _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let home = base.join("home");
        let project = base.join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Env {
            _tmp: tmp,
            home,
            project,
        }
    }

    /// Writes a project file and adds it to the active chat's context.
    pub fn add(&self, b: &mut Bb7, rel: &str, content: &str) {
        self.write(rel, content);
        b.ok(json!({"action": "context_add", "path": rel, "content": content}));
    }

    /// The model's output copy of `rel` in chat `id`, if there is one.
    pub fn output(&self, id: &str, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.chat_dir(id).join("output").join(rel)).ok()
    }

    /// Writes a project file (creating directories).
    pub fn write(&self, rel: &str, content: &str) {
        let p = self.project.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.join(rel)).unwrap()
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home.join(".config/bb7")
    }

    pub fn write_config(&self, config: Value) {
        std::fs::create_dir_all(self.config_dir()).unwrap();
        std::fs::write(self.config_dir().join("config.json"), config.to_string()).unwrap();
    }

    pub fn chat_dir(&self, id: &str) -> PathBuf {
        self.project.join(".bb7/chats").join(id)
    }

    pub fn chat_json(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.chat_dir(id).join("chat.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Chat `id`'s messages from its `chat.json` as (role, the text of its text parts).
    pub fn history(&self, id: &str) -> Vec<(String, String)> {
        self.chat_json(id)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let text: String = m["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["type"] == "text")
                    .filter_map(|p| p["content"].as_str().or(p["text"].as_str()))
                    .collect();
                (m["role"].as_str().unwrap_or("").to_owned(), text)
            })
            .collect()
    }

    /// Plants a model output file, as a model turn would write it.
    pub fn plant_output(&self, chat: &str, rel: &str, content: &str) {
        let p = self.chat_dir(chat).join("output").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn spawn(&self) -> Bb7 {
        Bb7::spawn(&self.home, &self.project, &[])
    }

    /// Starts bb7, runs `bb7_init` and `chat_new`; returns the process and chat id.
    pub fn with_chat(&self) -> (Bb7, String) {
        let mut b = self.spawn();
        let id = self.init_chat(&mut b);
        (b, id)
    }

    /// Runs `bb7_init` and `chat_new` in a running bb7 (one started another way than
    /// [`Env::spawn`]); returns the chat id.
    pub fn init_chat(&self, b: &mut Bb7) -> String {
        b.ok(json!({"action": "bb7_init", "project_root": self.project}));
        let r = b.ok(json!({"action": "chat_new"}));
        r["id"].as_str().unwrap().to_owned()
    }
}

/// A fresh environment whose config points bb7 at a new fake model server
/// (`api_key` "k", `default_model` "fake/model", fast retries); `extra` keys override.
pub fn fake_env(extra: Value) -> (Env, fake_model::FakeModel) {
    let env = Env::new();
    let fake = fake_model::FakeModel::start();
    let mut config = json!({"api_key": "k", "base_url": fake.url, "default_model": "fake/model",
                            "retry_backoff_ms": 10});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            config[k] = v;
        }
    }
    env.write_config(config);
    (env, fake)
}

/// A running bb7 process.
pub struct Bb7 {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Messages received while waiting for something else.
    pub backlog: Vec<Value>,
}

/// How long a test waits for a message before it calls bb7 hung. A hang guard, not a
/// speed bound: generous enough that a loaded 2-core machine never reaches it while bb7
/// works (speed is measured by the benches).
pub const TIMEOUT: Duration = Duration::from_secs(120);

impl Bb7 {
    pub fn spawn(home: &Path, cwd: &Path, env: &[(&str, &str)]) -> Bb7 {
        Bb7::spawn_via(&[], home, cwd, env)
    }

    /// [`Bb7::spawn`] with the binary started through `wrapper` (for example
    /// `setpriv --reuid=65534 …`, to run it as an unprivileged user).
    pub fn spawn_via(wrapper: &[&str], home: &Path, cwd: &Path, env: &[(&str, &str)]) -> Bb7 {
        let bin = env!("CARGO_BIN_EXE_bb7");
        let mut cmd = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.current_dir(cwd)
            .env_clear()
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start bb7");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Bb7 {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            next_id: 0,
            backlog: Vec::new(),
        }
    }

    /// Writes one raw line (a `\n` is added).
    pub fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request with a fresh `request_id`; returns the id.
    pub fn send(&mut self, mut req: Value) -> String {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        if req.get("request_id").is_none() {
            req["request_id"] = json!(id);
        }
        let id = match &req["request_id"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.send_raw(req.to_string().as_bytes());
        id
    }

    /// The next message line, parsed. Every line must be one JSON object.
    pub fn recv(&mut self) -> Option<Value> {
        self.recv_timeout(TIMEOUT)
    }

    pub fn recv_timeout(&mut self, t: Duration) -> Option<Value> {
        match self.lines.recv_timeout(t) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("bb7 wrote a line that is not JSON ({e}): {line}"));
                assert!(v.is_object(), "not an object: {line}");
                Some(v)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Waits for the first message with `request_id == id` (others go to the backlog).
    pub fn reply_to(&mut self, id: &str) -> Value {
        if let Some(i) = self.backlog.iter().position(|m| m["request_id"] == id) {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            match self.recv_timeout(deadline - Instant::now()) {
                Some(m) if m["request_id"] == id => return m,
                Some(m) => self.backlog.push(m),
                None => break,
            }
        }
        panic!("no reply to {id}; backlog: {:?}", self.backlog);
    }

    /// Sends a request and returns its reply.
    pub fn request(&mut self, req: Value) -> Value {
        let id = self.send(req);
        self.reply_to(&id)
    }

    /// Sends a request and asserts the reply is not an error.
    #[track_caller]
    pub fn ok(&mut self, req: Value) -> Value {
        let r = self.request(req.clone());
        assert_ne!(r["type"], "error", "request {req} failed: {r}");
        r
    }

    /// Sends a request and asserts the reply is an error; returns it.
    #[track_caller]
    pub fn err(&mut self, req: Value) -> Value {
        let r = self.request(req.clone());
        assert_eq!(r["type"], "error", "request {req} should fail: {r}");
        assert!(r["message"].as_str().is_some_and(|m| !m.is_empty()));
        r
    }

    /// Reads the `chunk`s of stream `rid` until their text is exactly `text` (panics
    /// when the stream ends first).
    pub fn wait_for_text(&mut self, rid: &str, text: &str) {
        let mut got = String::new();
        while got != text {
            let m = self.reply_to(rid);
            match m["type"].as_str() {
                Some("chunk") => got.push_str(m["content"].as_str().unwrap_or("")),
                Some("done" | "error" | "diff_error") => {
                    panic!("stream {rid} ended after {got:?}, before {text:?}: {m}")
                }
                _ => {}
            }
        }
    }

    /// Reads the stream of `rid` until its final message (`done`, `error` or
    /// `diff_error`), which is the last one returned.
    pub fn stream(&mut self, rid: &str) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let m = self.reply_to(rid);
            let end = matches!(m["type"].as_str(), Some("done" | "error" | "diff_error"));
            out.push(m);
            if end {
                return out;
            }
        }
    }

    /// Sends `content` in the active chat and returns every message of its stream.
    pub fn turn_stream(&mut self, content: &str) -> Vec<Value> {
        let rid = self.send(json!({"action": "send", "content": content}));
        self.stream(&rid)
    }

    /// Sends `content` in the active chat and returns the stream's final message.
    pub fn turn(&mut self, content: &str) -> Value {
        self.turn_stream(content).pop().unwrap_or_default()
    }

    /// Sends `req`, a turn the fake model answers with "slow ", a stall until the
    /// returned gate is opened, and "first"; returns its request id once the first
    /// chunk arrived (so the model's next queued response goes to the next request),
    /// and the gate. A gate rather than a fixed stall: on a loaded machine the test's
    /// next steps may take any time, and the turn must still be running.
    pub fn start_slow_turn(
        &mut self,
        fake: &fake_model::FakeModel,
        req: Value,
    ) -> (String, fake_model::Gate) {
        let gate = fake_model::Gate::new();
        fake.push_sse(fake_model::gated(
            &[fake_model::text("slow ")],
            &gate,
            "first",
        ));
        let rid = self.send(req);
        assert_eq!(self.reply_to(&rid)["type"], "chunk");
        (rid, gate)
    }

    /// Hands stdin to the caller (for writers on another thread).
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().unwrap()
    }

    /// Closes stdin and waits for the exit status.
    pub fn close(mut self) -> std::process::ExitStatus {
        self.stdin.take();
        wait_with_timeout(&mut self.child)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bb7 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_with_timeout(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "bb7 did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that `history` ([`Env::history`]) holds an assistant message containing
/// `answer` and ends with a system message containing `note`; returns that note.
#[track_caller]
pub fn assert_answer_then_note<'a>(
    history: &'a [(String, String)],
    answer: &str,
    note: &str,
) -> &'a str {
    assert!(
        history
            .iter()
            .any(|(r, t)| r == "assistant" && t.contains(answer)),
        "the answer {answer:?} was lost: {history:?}"
    );
    let (role, last) = history.last().expect("the chat has messages");
    assert_eq!(role, "system", "{history:?}");
    assert!(last.contains(note), "{last}");
    last
}

/// Asserts that chat `id` goes on normally after a failure: a turn whose answer writes
/// `a.txt` ends with `done` and leaves that output.
#[track_caller]
pub fn assert_a_turn_writes(b: &mut Bb7, fake: &fake_model::FakeModel, env: &Env, id: &str) {
    fake.push_sse(fake_model::response(
        "",
        "Done.",
        vec![("write_file", json!({"path": "a.txt", "content": "b\n"}))],
    ));
    assert_eq!(b.turn("again")["type"], "done");
    assert_eq!(env.output(id, "a.txt").as_deref(), Some("b\n"));
}

/// First 8 hex of sha256(path + NUL + content): a file version id (docs/PROTOCOL.md).
pub fn file_id(path: &str, content: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(path.as_bytes());
    h.update([0u8]);
    h.update(content.as_bytes());
    hex::encode(h.finalize())[..8].to_owned()
}

/// The context events of a chat.json, in order, as (action, path).
pub fn events(chat: &Value) -> Vec<(String, String)> {
    chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "context_event")
        .map(|p| {
            (
                p["action"].as_str().unwrap_or_default().to_owned(),
                p["path"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}
pub mod fake_model;
pub mod peers;
pub mod reopen;
pub mod validation;

/// The `path` of each entry of a list of files (`context_list`'s `files`, chat.json's
/// `context_files`), in order.
pub fn paths_of(files: &Value) -> Vec<String> {
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

/// The last assistant message of a chat (`chat_get`'s reply or `chat.json`).
pub fn last_assistant(chat: &Value) -> Value {
    chat["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .cloned()
        .expect("the chat has an assistant message")
}
