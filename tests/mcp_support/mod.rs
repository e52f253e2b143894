//! The MCP servers the MCP tests run: the npm registry's reference servers
//! (`scripts/mcp-servers` installs them into `.tools/mcp`), over stdio and over
//! Streamable HTTP, and `tests/fixtures/mcp/fault_server.js` for faults.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

/// `.tools/mcp`, installed once per test binary.
pub fn tools() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let out = Command::new("bash")
            .arg(root.join("scripts/mcp-servers"))
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/mcp-servers");
        assert!(
            out.status.success(),
            "scripts/mcp-servers failed: the MCP tests need Node.js and npm"
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

fn package(name: &str) -> String {
    tools()
        .join("node_modules/@modelcontextprotocol")
        .join(name)
        .join("dist/index.js")
        .to_string_lossy()
        .into_owned()
}

/// The `mcp_servers` entry of the everything server over stdio.
pub fn everything_stdio() -> Value {
    json!({"command": "node", "args": [package("server-everything"), "stdio"]})
}

/// The `mcp_servers` entry of the filesystem server serving `dir`.
pub fn filesystem(dir: &std::path::Path) -> Value {
    json!({"command": "node", "args": [package("server-filesystem"), dir]})
}

/// The `mcp_servers` entry of the fault server in `mode`, with `timeout_secs`.
pub fn fault(mode: &str, timeout_secs: u64) -> Value {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fault_server.js");
    json!({"command": "node", "args": [script, mode], "timeout_secs": timeout_secs})
}

/// The everything server over Streamable HTTP on a free port of 127.0.0.1; killed
/// when dropped.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpServer {
    pub fn everything() -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new("node")
            .arg(package("server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start node");
        // A hang guard, counted in polls: node takes a moment to listen.
        for _ in 0..600 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return HttpServer {
                    child,
                    url: format!("http://127.0.0.1:{port}/mcp"),
                };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the everything server did not listen on port {port}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
