//! The speed bench's comparison rows: `context_add`, spawn -> `init` -> `chat_new` and
//! `send` -> first request byte, each measured for bb7 as built now, for bb7 before a
//! change (the baseline binary) and for the same-work floor (`floor.rs`, what the
//! reference BB-7 does for each action), in the same session: all three run at once and
//! take turns by short blocks, so a busy machine slows all three alike (see [`round`]).
//!
//! The baseline binary is `BB7_BASELINE_BIN` when set; else it is built once from the
//! git revision `BB7_BASELINE_REV` (default `main`; `none` skips it): the revision's
//! tree (`git archive`) is built with `cargo build --release` into
//! `target/bench-baseline/`, and the binary is kept there by commit, so later runs
//! reuse it.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::Proc;

/// One program the rows are measured for.
pub struct Subject {
    /// Column heading.
    pub name: String,
    program: PathBuf,
    args: Vec<&'static str>,
}

/// bb7 now, the baseline when there is one, and the floor (this bench binary run with
/// `--floor`).
pub fn subjects() -> Vec<Subject> {
    let mut all = vec![Subject {
        name: "bb7 now".into(),
        program: PathBuf::from(env!("CARGO_BIN_EXE_bb7")),
        args: Vec::new(),
    }];
    if let Some((program, label)) = baseline() {
        eprintln!("baseline: {label} ({})", program.display());
        all.push(Subject {
            name: "before".into(),
            program,
            args: Vec::new(),
        });
    }
    all.push(Subject {
        name: "floor".into(),
        program: std::env::current_exe().unwrap(),
        args: vec!["--floor"],
    });
    all
}

/// The baseline binary and what it is, or `None` (with the reason on stderr).
fn baseline() -> Option<(PathBuf, String)> {
    if let Some(bin) = std::env::var_os("BB7_BASELINE_BIN") {
        let bin = PathBuf::from(bin);
        return bin
            .is_file()
            .then(|| (bin.clone(), "BB7_BASELINE_BIN".to_owned()));
    }
    let rev = std::env::var("BB7_BASELINE_REV").unwrap_or_else(|_| "main".into());
    if rev == "none" {
        return None;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("git")
        .args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")])
        .current_dir(repo)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("no baseline: git does not know {rev}");
        return None;
    }
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let dir = repo.join("target/bench-baseline");
    let bin = dir.join(format!("bb7-{commit}"));
    let label = format!("{rev} at {}", &commit[..12.min(commit.len())]);
    if bin.is_file() {
        return Some((bin, label));
    }
    eprintln!("building the baseline {label} once (cargo build --release)...");
    let src = dir.join(format!("src-{commit}"));
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).ok()?;
    let extract = format!(
        "git archive --format=tar {commit} | tar -x -C '{}'",
        src.display()
    );
    // The package itself is cleaned first: cargo would take an earlier build of another
    // tree (whose sources still exist) for this one, since both are the same package.
    let cargo = |args: &[&str]| {
        Command::new("cargo")
            .args(args)
            .arg("--target-dir")
            .arg(dir.join("target"))
            .current_dir(&src)
            .status()
            .is_ok_and(|s| s.success())
    };
    let built = Command::new("sh")
        .args(["-c", &extract])
        .current_dir(repo)
        .status()
        .is_ok_and(|s| s.success())
        && cargo(&["clean", "--release", "-p", "bb7"])
        && cargo(&["build", "--release", "--bin", "bb7"])
        && std::fs::copy(dir.join("target/release/bb7"), &bin).is_ok();
    let _ = std::fs::remove_dir_all(&src);
    if !built {
        eprintln!("no baseline: building {label} failed");
        return None;
    }
    Some((bin, label))
}

/// Reads lines up to the end of the stream answering `p`'s last request.
fn finish_stream(p: &mut Proc) {
    let id = format!("\"request_id\":\"b{}\"", p.next);
    loop {
        let mut line = String::new();
        if p.stdout.read_line(&mut line).unwrap() == 0 {
            return;
        }
        if line.contains(&id)
            && ["\"done\"", "\"error\"", "\"diff_error\""]
                .iter()
                .any(|t| line.contains(t))
        {
            return;
        }
    }
}

/// The medians of one subject.
#[derive(Default)]
struct Samples {
    add: Vec<Duration>,
    start_one: Vec<Duration>,
    start_many: Vec<Duration>,
    first_byte: Vec<Duration>,
}

/// Which samples a row shows.
type Pick = fn(&mut Samples) -> &mut Vec<Duration>;

/// The workload of the rows, for every subject: `files` context files of `file`'s
/// text added one by one, then 3 sends; spawn -> init -> chat_new in that project and
/// in a copy of a project of 2,000 chats made by `make_chats`, `rounds` times.
pub struct Workload<'a> {
    /// Where scratch projects go.
    pub dir: &'a Path,
    /// The fake endpoint's base URL.
    pub url: &'a str,
    /// When each request's first byte reached the endpoint.
    pub first_bytes: &'a mpsc::Receiver<Instant>,
    /// Context files per round.
    pub files: usize,
    /// The text of context file `i`.
    pub file: &'a dyn Fn(usize) -> String,
    /// Writes `n` chats of `m` messages into a project.
    pub make_chats: &'a dyn Fn(&Path, usize, usize),
    /// Rounds.
    pub rounds: usize,
}

/// Runs `w` and prints the comparison table.
pub fn run(w: &Workload<'_>) {
    let subjects = subjects();
    let mut all: Vec<Samples> = subjects.iter().map(|_| Samples::default()).collect();
    let many = tempfile::tempdir_in(w.dir).unwrap();
    (w.make_chats)(many.path(), 2000, 10);
    for _ in 0..w.rounds {
        round(w, &subjects, &mut all, many.path());
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    let rows: [(&str, Pick); 4] = [
        ("context_add, per call (40 KB files)", |s| &mut s.add),
        ("spawn -> init -> chat_new, 1 chat", |s| &mut s.start_one),
        ("spawn -> init -> chat_new, 2,000 chats", |s| {
            &mut s.start_many
        }),
        ("send -> first request byte, 8 MB context", |s| {
            &mut s.first_byte
        }),
    ];
    println!(
        "\nAgainst baselines run in the same session (state in {}; medians of {} rounds)",
        w.dir.display(),
        w.rounds
    );
    let mut head = format!("  {:<42}", "");
    for s in &subjects {
        head.push_str(&format!(" {:>11}", s.name));
    }
    for s in &subjects[1..] {
        head.push_str(&format!(" {:>13}", format!("now/{}", s.name)));
    }
    println!("{head}");
    for (name, pick) in rows {
        let m: Vec<Duration> = all.iter_mut().map(|s| median(pick(s))).collect();
        let mut line = format!("  {name:<42}");
        for d in &m {
            line.push_str(&format!(" {:>8.3} ms", d.as_secs_f64() * 1e3));
        }
        for d in &m[1..] {
            line.push_str(&format!(" {:>12.2}x", m[0].as_secs_f64() / d.as_secs_f64()));
        }
        println!("{line}");
    }
}

/// A subject's scratch HOME and project, with its config pointing at the endpoint.
struct Scratch {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    many: PathBuf,
}

fn scratch(w: &Workload<'_>, many: &Path) -> Scratch {
    let tmp = tempfile::tempdir_in(w.dir).unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(home.join(".config/bb7")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    let config = json!({"api_key": "k", "base_url": w.url, "default_model": "m"});
    std::fs::write(home.join(".config/bb7/config.json"), config.to_string()).unwrap();
    let copy = tmp.path().join("many");
    let status = Command::new("cp").arg("-a").arg(many).arg(&copy).status();
    assert!(status.is_ok_and(|s| s.success()));
    Scratch {
        home,
        project,
        many: copy,
        _tmp: tmp,
    }
}

/// Context files added per subject before the next subject's turn.
const ADD_BLOCK: usize = 25;

/// One round: every subject's process runs at once, and the subjects take turns by
/// blocks of [`ADD_BLOCK`] adds, by send and by start, so a slower stretch of a busy
/// machine falls on all of them. Before its turn a subject is left to finish what it
/// does in the background (bb7 counts tokens after adds and flushes after writes), so
/// that work is not timed as another subject's.
fn round(w: &Workload<'_>, subjects: &[Subject], all: &mut [Samples], many: &Path) {
    let dirs: Vec<Scratch> = subjects.iter().map(|_| scratch(w, many)).collect();
    let mut procs: Vec<Proc> = subjects
        .iter()
        .zip(&dirs)
        .map(|(s, d)| {
            let mut p = Proc::start(&s.program, &s.args, &d.home);
            p.ok(json!({"action": "bb7_init", "project_root": d.project}));
            p.ok(json!({"action": "init", "project_root": d.project}));
            p.ok(json!({"action": "chat_new"}));
            p
        })
        .collect();
    for block in (0..w.files).collect::<Vec<_>>().chunks(ADD_BLOCK) {
        for (p, out) in procs.iter_mut().zip(all.iter_mut()) {
            settle(p);
            for &i in block {
                let add = json!({"action": "context_add", "path": format!("src/f{i}.rs"),
                    "content": (w.file)(i)});
                out.add.push(p.ok(add).0);
            }
        }
    }
    for n in 0..3 {
        for (p, out) in procs.iter_mut().zip(all.iter_mut()) {
            settle(p);
            while w.first_bytes.try_recv().is_ok() {}
            let t = Instant::now();
            let (_, first) = p.ok(json!({"action": "send", "content": format!("hello {n}")}));
            let at = w.first_bytes.recv_timeout(Duration::from_secs(30));
            out.first_byte.push(
                at.expect("no request reached the endpoint")
                    .saturating_duration_since(t),
            );
            if first["type"] != "done" {
                finish_stream(p);
            }
        }
    }
    for p in procs {
        p.close();
    }
    for _ in 0..5 {
        for ((s, d), out) in subjects.iter().zip(&dirs).zip(all.iter_mut()) {
            out.start_one.push(start(s, &d.home, &d.project));
            out.start_many.push(start(s, &d.home, &d.many));
        }
    }
}

/// Waits (at most 20 s) until `p` has used no CPU for a while and none of its threads
/// waits for the disk (bb7 flushes its writes in the background once they pause).
fn settle(p: &Proc) {
    let pid = p.child.id();
    // utime and stime, fields 14 and 15 of a stat line (the 12th and 13th after the
    // command's closing parenthesis); the state, field 3, is 'D' while a thread waits
    // for the disk.
    let fields = |stat: &str| -> Vec<String> {
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        rest.split_whitespace().map(str::to_owned).collect()
    };
    let busy = || -> (u64, bool) {
        let f = fields(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default());
        let field = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        let waiting = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                fields(&stat).first().is_some_and(|s| s == "D")
            });
        (field(11) + field(12), waiting)
    };
    let until = Instant::now() + Duration::from_secs(20);
    let mut last = busy().0;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(60));
        let (cpu, waiting) = busy();
        if cpu == last && !waiting {
            break;
        }
        last = cpu;
    }
}

/// Spawn -> `init` -> `chat_new` in a fresh process.
fn start(s: &Subject, home: &Path, project: &Path) -> Duration {
    let t = Instant::now();
    let mut r = Proc::start(&s.program, &s.args, home);
    r.ok(json!({"action": "init", "project_root": project}));
    r.ok(json!({"action": "chat_new"}));
    let d = t.elapsed();
    r.close();
    d
}
