//! The "same-work floor" of the speed bench: a minimal stdio server that does, for
//! `init`, `chat_new`, `context_add` and `send`, only the file and network work the
//! reference BB-7 (github.com/Ammerfest/bb7.nvim, `internal/state`, `cmd/bb7`) does for
//! them, with none of bb7's guarantees: files written in place (no temporary file and
//! rename, no fsync), a lock file holding a PID (no OS lock), chat and index encoded
//! indented as the reference does, and the index repaired by listing the chats
//! directory on every update. `send` reads and hashes every snapshot, encodes the
//! request and writes it to a new connection. It runs as the bench binary itself,
//! started with `--floor`; ratios against it read as "bb7 / the reference's work".
//!
//! What the reference does per action, from its source:
//! - `init`: stat the root and `.bb7`; read and decode `chats/index.json`; reopen the
//!   chat it names (read the lock file, read and decode `chat.json`, write the lock file
//!   with the PID) and record it in the index (the index update below); read and decode
//!   `~/.config/bb7/config.json`.
//! - `chat_new`: 5 random bytes for the id; create `context/` and `output/`; write
//!   `chat.json`; update the index; remove the previous chat's lock file; read and write
//!   the new one's; record the active chat (a second index update).
//! - index update: read and decode the index, list `chats/`, stat every
//!   `chats/{id}/chat.json`, encode indented and write the index.
//! - `context_add`: create the snapshot's directory, write the snapshot, sha256 of path
//!   and content, append the entry and a context event, write `chat.json`, update the
//!   index.
//! - `send`: read the two instruction files, append the user message (write
//!   `chat.json`, update the index), then per context file read the snapshot, hash it
//!   and try its output file; list `output/`; read the system prompt override; encode
//!   the request; connect and write it.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::Digest;

/// Serves stdin until `shutdown` or its end.
pub fn serve() {
    let mut s = Floor::default();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(req) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = req["request_id"].clone();
        let action = req["action"].as_str().unwrap_or("");
        let mut reply = match action {
            "bb7_init" => s.bb7_init(&req),
            "init" => s.init(&req),
            "chat_new" => s.chat_new(),
            "context_add" => s.context_add(&req),
            "send" => s.send(&req),
            _ => json!({"type": "ok"}),
        };
        reply["request_id"] = id;
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
        if action == "shutdown" {
            break;
        }
    }
    if let Some(dir) = &s.locked {
        let _ = std::fs::remove_file(dir.join("lock"));
    }
}

#[derive(Default)]
struct Floor {
    root: PathBuf,
    chat: Option<Value>,
    locked: Option<PathBuf>,
    base_url: String,
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("2026-01-01T00:00:{:02}Z", secs % 60)
}

fn version(path: &str, content: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(path.as_bytes());
    h.update([0u8]);
    h.update(content.as_bytes());
    hex::encode(h.finalize())[..8].to_owned()
}

impl Floor {
    fn chats(&self) -> PathBuf {
        self.root.join(".bb7/chats")
    }

    fn chat_dir(&self) -> PathBuf {
        let id = self
            .chat
            .as_ref()
            .and_then(|c| c["id"].as_str())
            .unwrap_or("");
        self.chats().join(id)
    }

    fn bb7_init(&mut self, req: &Value) -> Value {
        let root = PathBuf::from(req["project_root"].as_str().unwrap_or(""));
        let _ = std::fs::metadata(&root);
        let _ = std::fs::metadata(root.join(".bb7"));
        let _ = std::fs::create_dir_all(root.join(".bb7/chats"));
        json!({"type": "ok"})
    }

    fn init(&mut self, req: &Value) -> Value {
        self.root = PathBuf::from(req["project_root"].as_str().unwrap_or(""));
        let _ = std::fs::metadata(&self.root);
        let _ = std::fs::metadata(self.root.join(".bb7"));
        let index = read_json(&self.chats().join("index.json")).unwrap_or(Value::Null);
        if let Some(id) = index["active_chat_id"].as_str() {
            let dir = self.chats().join(id);
            let _ = std::fs::read(dir.join("lock"));
            if let Some(chat) = read_json(&dir.join("chat.json")) {
                self.lock(&dir);
                self.chat = Some(chat);
                self.set_active(id);
            }
        }
        let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
        let config = read_json(&home.join(".config/bb7/config.json")).unwrap_or(Value::Null);
        self.base_url = config["base_url"].as_str().unwrap_or("").to_owned();
        json!({"type": "ok"})
    }

    fn lock(&mut self, dir: &Path) {
        if let Some(old) = self.locked.take() {
            let _ = std::fs::remove_file(old.join("lock"));
        }
        let _ = std::fs::read(dir.join("lock"));
        let _ = std::fs::write(dir.join("lock"), std::process::id().to_string());
        self.locked = Some(dir.to_path_buf());
    }

    /// The reference's index update: decode, list the directory, stat every chat, write.
    fn update_index(&self, change: impl FnOnce(&mut Value)) {
        let path = self.chats().join("index.json");
        let mut index = read_json(&path).unwrap_or_else(|| json!({"version": 1, "chats": []}));
        if let Ok(entries) = std::fs::read_dir(self.chats()) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::metadata(e.path().join("chat.json"));
                }
            }
        }
        change(&mut index);
        let _ = std::fs::write(&path, serde_json::to_vec_pretty(&index).unwrap());
    }

    fn set_active(&self, id: &str) {
        self.update_index(|idx| idx["active_chat_id"] = json!(id));
    }

    fn save_chat(&self) {
        let Some(chat) = &self.chat else { return };
        let bytes = serde_json::to_vec_pretty(chat).unwrap();
        let _ = std::fs::write(self.chat_dir().join("chat.json"), bytes);
        let (id, name) = (chat["id"].clone(), chat["name"].clone());
        self.update_index(|idx| {
            let chats = idx["chats"].as_array_mut();
            if let Some(list) = chats
                && !list.iter().any(|c| c["id"] == id)
            {
                list.push(json!({"id": id, "name": name, "created": now()}));
            }
        });
    }

    fn chat_new(&mut self) -> Value {
        let mut raw = [0u8; 5];
        let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut raw));
        let id = hex::encode(raw);
        let dir = self.chats().join(&id);
        let _ = std::fs::create_dir_all(dir.join("context"));
        let _ = std::fs::create_dir_all(dir.join("output"));
        self.chat = Some(
            json!({"id": id, "name": "Chat", "created": now(), "model": "m",
            "context_files": [], "messages": []}),
        );
        self.save_chat();
        self.lock(&dir);
        self.set_active(&id);
        json!({"type": "ok", "id": id})
    }

    fn context_add(&mut self, req: &Value) -> Value {
        let path = req["path"].as_str().unwrap_or("");
        let content = req["content"].as_str().unwrap_or("");
        let dir = self.chat_dir();
        let Some(chat) = self.chat.as_mut() else {
            return json!({"type": "error", "message": "No active chat"});
        };
        let files = chat["context_files"].as_array_mut().unwrap();
        if files.iter().any(|f| f["path"] == path) {
            return json!({"type": "error", "message": "Context file already exists"});
        }
        let snapshot = dir.join("context").join(path);
        let _ = std::fs::create_dir_all(snapshot.parent().unwrap());
        let _ = std::fs::write(&snapshot, content);
        let v = version(path, content);
        files.push(json!({"path": path, "readonly": false, "external": false, "version": v}));
        chat["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant",
            "parts": [{"type": "context_event", "action": "UserAddFile", "path": path,
                "readonly": false, "external": false, "version": v}], "timestamp": now()}));
        self.save_chat();
        json!({"type": "ok"})
    }

    fn send(&mut self, req: &Value) -> Value {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
        let _ = std::fs::read(home.join(".config/bb7/instructions.md"));
        let _ = std::fs::read(self.root.join(".bb7/instructions"));
        let dir = self.chat_dir();
        let Some(chat) = self.chat.as_mut() else {
            return json!({"type": "error", "message": "No active chat"});
        };
        let files = chat["context_files"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let refs: Vec<Value> = files
            .iter()
            .map(|f| json!({"path": f["path"], "file_id": f["version"]}))
            .collect();
        let content = req["content"].as_str().unwrap_or("");
        chat["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "model": "m",
            "parts": [{"type": "text", "content": content}], "timestamp": now(),
            "context_snapshot": refs}));
        self.save_chat();
        let mut body = String::new();
        for f in &files {
            let path = f["path"].as_str().unwrap_or("");
            let text = std::fs::read_to_string(dir.join("context").join(path)).unwrap_or_default();
            let v = version(path, &text);
            let _ = std::fs::read(dir.join("output").join(path));
            body.push_str(&format!(
                "@file id={v} path={path} mode=rw source=context\n"
            ));
            body.push_str(&text);
            body.push_str(&format!("@end file id={v}\n\n"));
        }
        let _ = std::fs::read_dir(dir.join("output"));
        let _ = std::fs::read(home.join(".config/bb7/system_prompt.txt"));
        body.push_str(&format!("@latest\n{content}\n@end latest"));
        let request = json!({"model": "m", "stream": true, "messages": [
            {"role": "system", "content": "You are a coding assistant."},
            {"role": "user", "content": body}],
            "tools": [{"type": "function", "function": {"name": "write_file",
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string"}, "content": {"type": "string"}}}}}]});
        let bytes = serde_json::to_vec(&request).unwrap();
        post(&self.base_url, &bytes);
        json!({"type": "done"})
    }
}

/// Writes one HTTP/1.1 POST of `body` to `{base_url}/chat/completions` on a new
/// connection and reads the answer to its end.
fn post(base_url: &str, body: &[u8]) {
    let rest = base_url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut conn) = std::net::TcpStream::connect(host) else {
        return;
    };
    let head = format!(
        "POST /{path}/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
}
