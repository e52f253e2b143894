//! The speed table through the real binary: file statuses, context adds, startup, peak
//! memory, token estimates, chat search and time to the first request byte, then how
//! they grow with 20 / 200 / 2,000 context files and 200 / 2,000 / 20,000 chats.
//!
//! Every figure is printed next to a `ping` round trip measured in the same process, as
//! a ratio, so runs on different machines compare. Numbers are printed, never asserted.
//! Run with `cargo bench --bench speed` (add `-- quick` to skip the 2,000-file and
//! 20,000-chat rows, or `-- chats` for only the chat-count growth up to 20,000). State
//! goes to the system temp directory, or to `BB7_BENCH_DIR`; the table is also run on
//! `/dev/shm` (a tmpfs) when that is another directory, and both columns are printed
//! with the directory each ran in: on a disk the figures
//! include what flushing costs while requests run (bb7 flushes its own state in the
//! background, docs/ARCHITECTURE.md "Durability" 8), on a tmpfs only bb7's own cost.
//!
//! Last come the rows against baselines run in the same session (`support/versus.rs`):
//! `context_add`, spawn -> `init` -> `chat_new` and `send` -> first request byte for bb7
//! now, for bb7 before a change and for the same-work floor (`support/floor.rs`: only
//! the file and network work the reference BB-7 does for each action), with the ratios.
//! `-- versus` runs only those rows. The "before" binary is `BB7_BASELINE_BIN`, else it
//! is built once from the git revision `BB7_BASELINE_REV` (default `main`, `none` for
//! no such column) into `target/bench-baseline/`. The bench binary started with
//! `--floor` is the floor's server.

#[path = "support/floor.rs"]
mod floor;
#[path = "support/mod.rs"]
mod support;
#[path = "support/versus.rs"]
mod versus;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Bytes per context file: 200 files make 8 MB, 2,000 make 80 MB.
const FILE_BYTES: usize = 8 * 1024 * 1024 / 200;

/// A running bb7 and its pipes.
struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Proc {
    fn spawn(home: &Path) -> Proc {
        Proc::start(Path::new(env!("CARGO_BIN_EXE_bb7")), &[], home)
    }

    /// `program` with `args` (bb7 or a baseline, `versus.rs`) on `home`.
    fn start(program: &Path, args: &[&str], home: &Path) -> Proc {
        let (child, stdin, stdout) = support::spawn_program(program, args, home);
        Proc {
            child,
            stdin,
            stdout,
            next: 0,
        }
    }

    /// Sends `req` and reads lines up to its reply; returns the elapsed time and the
    /// raw reply line (parsing is left out of the timing).
    fn call(&mut self, mut req: Value) -> (Duration, String) {
        self.next += 1;
        let id = format!("b{}", self.next);
        req["request_id"] = json!(id);
        let tag = format!("\"request_id\":\"{id}\"");
        // Encoded first, then written at once: `Value`'s Display writes piece by piece,
        // a syscall each, and the encoding is the bench's time, not bb7's.
        let line = format!("{req}\n");
        let t = Instant::now();
        self.stdin.write_all(line.as_bytes()).unwrap();
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                panic!("bb7 exited while waiting for {req}");
            }
            if line.contains(&tag) {
                return (t.elapsed(), line);
            }
        }
    }

    /// Calls and checks the reply is not an error.
    fn ok(&mut self, req: Value) -> (Duration, Value) {
        let (d, line) = self.call(req.clone());
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_ne!(v["type"], "error", "{req} failed: {v}");
        (d, v)
    }

    /// Median of `n` calls.
    fn median(&mut self, req: Value, n: usize) -> Duration {
        let mut times: Vec<Duration> = (0..n).map(|_| self.call(req.clone()).0).collect();
        times.sort();
        times[n / 2]
    }

    fn ping(&mut self) -> Duration {
        self.median(json!({"action": "ping"}), 200)
    }

    /// Peak resident set size of the process so far, in MB (`VmHWM`).
    fn peak_rss_mb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(f64::NAN)
    }

    fn close(mut self) {
        let _ = self.call(json!({"action": "shutdown"}));
        let _ = self.child.wait();
    }
}

fn file_content(i: usize) -> String {
    let line = "    let value = compute(alpha, beta, gamma); // adjust the running total here\n";
    format!("// file {i}\n{}", line.repeat(FILE_BYTES / line.len()))
}

/// A fake model endpoint that notes when each request's first byte arrives and
/// answers with a one-chunk stream.
fn start_endpoint() -> (String, mpsc::Receiver<Instant>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/api/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                let mut head = Vec::new();
                let mut first = true;
                // Read the head, then the body by Content-Length.
                let (body_start, length) = loop {
                    let Ok(n) = conn.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    if first {
                        let _ = tx.send(Instant::now());
                        first = false;
                    }
                    head.extend_from_slice(&buf[..n]);
                    if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        let text = String::from_utf8_lossy(&head[..end]).to_lowercase();
                        let length = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, length);
                    }
                };
                let mut have = head.len() - body_start;
                while have < length {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                }
                let chunk = json!({"id": "g", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]});
                let _ = conn.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {chunk}\r\n\r\ndata: [DONE]\r\n\r\n"
                    )
                    .as_bytes(),
                );
            });
        }
    });
    (url, rx)
}

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

/// Where state goes: `BB7_BENCH_DIR`, or the system temp directory.
fn primary_dir() -> PathBuf {
    std::env::var_os("BB7_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

fn env(url: &str, dir: &Path) -> Env {
    let tmp = tempfile::tempdir_in(dir).unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(home.join(".config/bb7")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        home.join(".config/bb7/config.json"),
        json!({"api_key": "k", "base_url": url, "default_model": "m"}).to_string(),
    )
    .unwrap();
    Env {
        _tmp: tmp,
        home,
        project,
    }
}

/// Figures of one context size.
struct ContextFigures {
    files: usize,
    add: Duration,
    statuses_cold: Duration,
    statuses_warm: Duration,
    statuses_lean: Duration,
    new_process_statuses: Duration,
    estimate_warm: Duration,
    first_byte: Duration,
    peak_mb: f64,
    ping: Duration,
}

/// The context workload: add `n` files, ask statuses and estimates, send once.
fn context_workload(
    n: usize,
    url: &str,
    first_bytes: &mpsc::Receiver<Instant>,
    dir: &Path,
) -> ContextFigures {
    let e = env(url, dir);
    for i in 0..n {
        std::fs::write(e.project.join(format!("src/f{i}.rs")), file_content(i)).unwrap();
    }
    let mut p = Proc::spawn(&e.home);
    p.ok(json!({"action": "bb7_init", "project_root": e.project}));
    p.ok(json!({"action": "chat_new"}));
    let ping = p.ping();
    let mut adds = Vec::new();
    for i in 0..n {
        let (d, _) = p.ok(
            json!({"action": "context_add", "path": format!("src/f{i}.rs"),
            "content": file_content(i)}),
        );
        adds.push(d);
    }
    adds.sort();
    let add = adds[n / 2];
    let statuses = json!({"action": "get_file_statuses"});
    let (statuses_cold, _) = p.ok(statuses.clone());
    let statuses_warm = p.median(statuses, 11);
    let statuses_lean = p.median(
        json!({"action": "get_file_statuses", "contents": false}),
        11,
    );
    p.ok(json!({"action": "estimate_tokens", "input_text": "draft"}));
    let estimate_warm = p.median(
        json!({"action": "estimate_tokens", "input_text": "draft"}),
        11,
    );
    while first_bytes.try_recv().is_ok() {}
    let mut fb = Vec::new();
    for round in 0..3 {
        let t = Instant::now();
        let (_, line) = p.call(json!({"action": "send", "content": format!("hello {round}")}));
        let at = first_bytes
            .recv_timeout(Duration::from_secs(30))
            .expect("no request reached the endpoint");
        assert!(!line.contains("\"error\""), "send failed: {line}");
        fb.push(at.saturating_duration_since(t));
    }
    fb.sort();
    let peak_mb = p.peak_rss_mb();
    p.close();
    // A new process: the persisted caches make its first statuses warm too.
    let mut q = Proc::spawn(&e.home);
    q.ok(json!({"action": "init", "project_root": e.project}));
    let (new_process_statuses, _) = q.ok(json!({"action": "get_file_statuses", "contents": false}));
    q.close();
    ContextFigures {
        files: n,
        add,
        statuses_cold,
        statuses_warm,
        statuses_lean,
        new_process_statuses,
        estimate_warm,
        first_byte: fb[1],
        peak_mb,
        ping,
    }
}

/// Writes `n` chats of `messages` messages each and their index.
fn make_chats(project: &Path, n: usize, messages: usize) {
    let chats = project.join(".bb7/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let mut index = Vec::with_capacity(n);
    for c in 0..n {
        let id = format!("{c:010x}");
        let msgs: Vec<Value> = (0..messages)
            .map(|m| {
                json!({"role": if m % 2 == 0 { "user" } else { "assistant" },
                    "parts": [{"type": "text", "content": format!(
                        "Message {m} of chat {c}: please refactor the parser module so that \
                         error recovery keeps going after a bad token, and explain the change. {}",
                        if c == n / 2 && m == messages / 2 { "needle-in-haystack" } else { "" })}],
                    "timestamp": "2026-01-01T00:00:00Z"})
            })
            .collect();
        let created = format!(
            "2026-01-{:02}T{:02}:{:02}:{:02}Z",
            1 + c / 86400 % 28,
            (c / 3600) % 24,
            (c / 60) % 60,
            c % 60
        );
        let chat = json!({"version": 2, "id": id, "name": format!("Chat number {c}"),
            "created": created, "model": "m", "draft": "", "context_files": [], "messages": msgs});
        std::fs::create_dir_all(chats.join(&id)).unwrap();
        std::fs::write(
            chats.join(&id).join("chat.json"),
            serde_json::to_vec(&chat).unwrap(),
        )
        .unwrap();
        index.push(json!({"id": id, "name": format!("Chat number {c}"), "created": created}));
    }
    std::fs::write(
        chats.join("index.json"),
        json!({"version": 1, "chats": index}).to_string(),
    )
    .unwrap();
}

struct ChatFigures {
    chats: usize,
    messages: usize,
    list: Duration,
    search_hit: Duration,
    search_miss: Duration,
    startup: Duration,
    ping: Duration,
}

fn chat_workload(n: usize, messages: usize, url: &str, dir: &Path) -> ChatFigures {
    let e = env(url, dir);
    std::fs::create_dir_all(e.project.join(".bb7")).unwrap();
    make_chats(&e.project, n, messages);
    let init = json!({"action": "init", "project_root": e.project});
    // Spawn → init → chat_new → reply, in fresh processes.
    let mut starts = Vec::new();
    for _ in 0..9 {
        let t = Instant::now();
        let mut p = Proc::spawn(&e.home);
        p.ok(init.clone());
        p.ok(json!({"action": "chat_new"}));
        starts.push(t.elapsed());
        p.close();
    }
    starts.sort();
    let mut p = Proc::spawn(&e.home);
    p.ok(init);
    let ping = p.ping();
    let list = p.median(json!({"action": "chat_list"}), 11);
    let search_hit = p.median(
        json!({"action": "search_chats", "query": "needle-in-haystack"}),
        5,
    );
    let search_miss = p.median(json!({"action": "search_chats", "query": "zebra"}), 5);
    p.close();
    ChatFigures {
        chats: n,
        messages,
        list,
        search_hit,
        search_miss,
        startup: starts[starts.len() / 2],
        ping,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--floor") {
        floor::serve();
        return;
    }
    let quick = std::env::args().any(|a| a == "quick");
    let (url, first_bytes) = start_endpoint();

    let primary = primary_dir();
    let versus = versus::Workload {
        dir: &primary,
        url: &url,
        first_bytes: &first_bytes,
        files: 200,
        file: &file_content,
        make_chats: &make_chats,
        rounds: 3,
    };
    if std::env::args().any(|a| a == "versus") {
        versus::run(&versus);
        return;
    }
    if std::env::args().any(|a| a == "chats") {
        chat_growth(&[200, 2000, 20000], None, &url, &primary);
        return;
    }
    let main = context_workload(200, &url, &first_bytes, &primary);
    let chats = chat_workload(2000, 50, &url, &primary);
    // The same table on a tmpfs, beside it, when the primary directory is elsewhere.
    let shm = Path::new("/dev/shm");
    let second =
        (shm.is_dir() && primary.canonicalize().ok() != shm.canonicalize().ok()).then(|| {
            (
                context_workload(200, &url, &first_bytes, shm),
                chat_workload(2000, 50, &url, shm),
            )
        });
    println!("\nThe table: 200 context files / 8 MB; 2,000 chats x 50 messages");
    let heading = |dir: &Path| format!("state in {}", dir.display());
    println!(
        "  {:<44} {:>26} {:>26}",
        "",
        heading(&primary),
        second.as_ref().map(|_| heading(shm)).unwrap_or_default()
    );
    let both = [Some((&main, &chats)), second.as_ref().map(|(m, c)| (m, c))];
    let cell = |d: Duration, ping: Duration| {
        format!(
            "{:>10.3} ms {:>8.1}x ping",
            d.as_secs_f64() * 1e3,
            d.as_secs_f64() / ping.as_secs_f64()
        )
    };
    let row = |name: &str, pick: &dyn Fn(&ContextFigures, &ChatFigures) -> (Duration, Duration)| {
        let cells: Vec<String> = both
            .iter()
            .flatten()
            .map(|(m, c)| {
                let (d, ping) = pick(m, c);
                cell(d, ping)
            })
            .collect();
        println!("  {name:<44} {}", cells.join(" "));
    };
    let pings: Vec<String> = both
        .iter()
        .flatten()
        .map(|(m, _)| format!("{:>10.3} ms {:>13}", m.ping.as_secs_f64() * 1e3, ""))
        .collect();
    println!("  {:<44} {}", "ping round trip (baseline)", pings.join(" "));
    row("get_file_statuses, warm (with contents)", &|m, _| {
        (m.statuses_warm, m.ping)
    });
    row("get_file_statuses, warm (contents: false)", &|m, _| {
        (m.statuses_lean, m.ping)
    });
    row("get_file_statuses, cold (first call)", &|m, _| {
        (m.statuses_cold, m.ping)
    });
    row("get_file_statuses, first in a new process", &|m, _| {
        (m.new_process_statuses, m.ping)
    });
    row("context_add, per call (median of 200)", &|m, _| {
        (m.add, m.ping)
    });
    row("spawn -> init -> chat_new", &|_, c| (c.startup, c.ping));
    row("estimate_tokens, warm", &|m, _| (m.estimate_warm, m.ping));
    row("search_chats, 2,000 chats x 50 messages", &|_, c| {
        (c.search_hit, c.ping)
    });
    row("send -> first request byte, 8 MB context", &|m, _| {
        (m.first_byte, m.ping)
    });
    let peaks: Vec<String> = both
        .iter()
        .flatten()
        .map(|(m, _)| format!("{:>10.1} MB {:>13}", m.peak_mb, ""))
        .collect();
    println!(
        "  {:<44} {}",
        "peak RSS after the workload (VmHWM)",
        peaks.join(" ")
    );

    println!(
        "\nGrowth with context size (per-file figures should stay flat), state in {}",
        primary.display()
    );
    let sizes: &[usize] = if quick { &[20, 200] } else { &[20, 200, 2000] };
    let mut figures = Vec::new();
    for &n in sizes {
        figures.push(if n == 200 {
            None
        } else {
            Some(context_workload(n, &url, &first_bytes, &primary))
        });
    }
    println!(
        "  {:>6} {:>24} {:>24} {:>24} {:>22} {:>9}",
        "files", "statuses warm", "statuses lean", "add per call", "first request byte", "peak MB"
    );
    for f in figures.iter().map(|f| f.as_ref().unwrap_or(&main)) {
        let cell = |d| growth_cell(d, f.ping);
        println!(
            "  {:>6} {:>24} {:>24} {:>24} {:>22} {:>9.1}",
            f.files,
            cell(f.statuses_warm),
            cell(f.statuses_lean),
            cell(f.add),
            cell(f.first_byte),
            f.peak_mb
        );
    }

    let counts: &[usize] = if quick {
        &[200, 2000]
    } else {
        &[200, 2000, 20000]
    };
    chat_growth(counts, Some(&chats), &url, &primary);
    versus::run(&versus);
}

/// A growth-table cell: milliseconds and the ratio to `ping`.
fn growth_cell(d: Duration, ping: Duration) -> String {
    format!(
        "{:>8.3} ms {:>7.1}x",
        d.as_secs_f64() * 1e3,
        d.as_secs_f64() / ping.as_secs_f64()
    )
}

/// Prints the chat-count growth table; `table` is the 2,000-chat workload already run
/// for the main table, when there is one.
fn chat_growth(counts: &[usize], table: Option<&ChatFigures>, url: &str, primary: &Path) {
    println!(
        "\nGrowth with chat count (10 messages per chat beyond the table's 2,000 x 50), state in {}",
        primary.display()
    );
    println!(
        "  {:>6} {:>9} {:>22} {:>22} {:>22} {:>22}",
        "chats", "messages", "chat_list", "search (hit)", "search (miss)", "init -> chat_new"
    );
    for &n in counts {
        let own;
        let f = match table {
            Some(t) if n == 2000 => t,
            _ => {
                own = chat_workload(n, 10, url, primary);
                &own
            }
        };
        let cell = |d| growth_cell(d, f.ping);
        println!(
            "  {:>6} {:>9} {:>22} {:>22} {:>22} {:>22}",
            f.chats,
            f.messages,
            cell(f.list),
            cell(f.search_hit),
            cell(f.search_miss),
            cell(f.startup)
        );
    }
}
