//! `bb7 acp` driven line by line, without an SDK: the real binary over its stdin and
//! stdout, so a test can send bytes no SDK would (malformed JSON-RPC, invalid UTF-8)
//! and read every line the agent writes.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

use serde_json::{Value, json};

use crate::common;

/// A running `bb7 acp` in `env`'s project; killed and reaped when dropped.
pub struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Agent {
    pub fn start(env: &common::Env) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bb7"))
            .arg("acp")
            .current_dir(&env.project)
            .env_clear()
            .env("HOME", &env.home)
            .env("XDG_CONFIG_HOME", env.home.join(".config"))
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
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
        Agent {
            stdin: child.stdin.take().unwrap(),
            child,
            lines: rx,
        }
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends one line made of `head`, `n` copies of `fill` and `tail`, written a MiB
    /// at a time (a line over the 64 MiB limit without a 70 MB buffer).
    pub fn send_long(&mut self, head: &str, fill: u8, n: usize, tail: &str) {
        self.stdin.write_all(head.as_bytes()).unwrap();
        let chunk = vec![fill; 1 << 20];
        let mut left = n;
        while left > 0 {
            let k = left.min(chunk.len());
            self.stdin.write_all(&chunk[..k]).unwrap();
            left -= k;
        }
        self.send(tail);
    }

    pub fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message (each line must be one JSON-RPC 2.0 object).
    pub fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(common::TIMEOUT)
            .expect("a message from bb7 acp");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        v
    }

    /// Sends request `id` and returns its response (what comes before it is skipped).
    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&line.to_string());
        self.response(json!(id), &mut Vec::new())
    }

    /// The response with `id`; notifications and requests before it are collected.
    pub fn response(&mut self, id: Value, seen: &mut Vec<Value>) -> Value {
        loop {
            let v = self.next();
            if v.get("method").is_none() && v["id"] == id {
                return v;
            }
            seen.push(v);
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
