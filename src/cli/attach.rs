//! Attachments from the command line (docs/PROTOCOL.md, "Extension: rules files and
//! attachments"): `bb7 add --run CMD`, `--git-diff [REV]` and `--diagnostics FILE`,
//! stdin piped into `bb7 ask`, `/run`, `/test` and `/rules` in `bb7 chat`. Each
//! attachment is one `context_attach`; the server keeps it like a section.

use std::io::IsTerminal;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};

use super::session::Session;
use super::terminal;
use crate::front::client::{Failure, Res};
use crate::protocol::action::Action;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{Attached, CustomizationInfo};

/// Attaches `content` as `kind` named `name` to the active chat (a new one when none
/// is active) and says so on stderr: `bb7: attached command_output:cargo test (exit
/// 101)`.
pub(super) async fn attach(
    s: &mut Session,
    kind: &str,
    name: &str,
    content: String,
    meta: Option<Map<String, Value>>,
) -> Res<()> {
    s.ensure_chat().await?;
    let exit = meta
        .as_ref()
        .and_then(|m| m.get("exit_status"))
        .map(|v| format!(" (exit {v})"))
        .unwrap_or_default();
    let r: Attached =
        s.c.call(Action::ContextAttach(params::ContextAttach {
            kind: NonEmpty(kind.to_owned()),
            name: NonEmpty(name.to_owned()),
            content,
            meta,
        }))
        .await?;
    let cut = if r.truncated {
        format!(", cut to 64 KiB of {} bytes", r.bytes)
    } else {
        String::new()
    };
    eprintln!("bb7: attached {}{exit}{cut}", terminal::err(&r.path));
    super::invisible::warn(&r.invisible_warnings);
    Ok(())
}

/// Runs `command` with `sh -c` in `dir`, stdin closed and stderr joined to stdout as a
/// terminal shows them; returns its exit status (128 + the signal for a command a
/// signal ended) and what it printed, invalid UTF-8 replaced.
pub(super) fn run(command: &str, dir: &Path) -> Res<(i32, String)> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::new(format!("cannot run {command}: {e}")))?;
    let status = out.status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + out.status.signal().unwrap_or(0)
    });
    Ok((status, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// `bb7 add --run CMD`, `/run CMD`: runs `command` in the current directory and
/// attaches its output with its command line and exit status. With `only_failing`
/// (`/test`), a command that exits 0 attaches nothing.
pub(super) async fn add_run(s: &mut Session, command: &str, only_failing: bool) -> Res<()> {
    let command = command.trim();
    if command.is_empty() {
        return Err(Failure::new("name the command to run"));
    }
    let (status, output) = run(command, &s.cwd)?;
    if only_failing && status == 0 {
        eprintln!(
            "bb7: {} passed (exit 0); nothing attached",
            terminal::err(command)
        );
        return Ok(());
    }
    let meta = json!({"command": command, "exit_status": status});
    attach(
        s,
        "command_output",
        command,
        output,
        meta.as_object().cloned(),
    )
    .await
}

/// `bb7 add --git-diff [REV]`: `git diff [REV]` in the project root, attached as
/// `git_diff`. Errors: git fails (not a repository, a bad revision), or there is no
/// change.
pub(super) async fn add_git_diff(s: &mut Session, rev: Option<&str>) -> Res<()> {
    let mut git = Command::new("git");
    git.args(["--no-pager", "diff", "--no-color"]);
    if let Some(r) = rev {
        git.arg(r);
    }
    let out = git
        .current_dir(&s.root)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::new(format!("cannot run git: {e}")))?;
    let name = match rev {
        Some(r) => format!("git diff {r}"),
        None => "git diff".to_owned(),
    };
    if !out.status.success() {
        return Err(Failure::new(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let diff = String::from_utf8_lossy(&out.stdout).into_owned();
    if diff.is_empty() {
        return Err(Failure::new(format!("no changes: {name} is empty")));
    }
    let meta = rev.map(|r| json!({"rev": r}).as_object().cloned().unwrap_or_default());
    attach(s, "git_diff", &name, diff, meta).await
}

/// `bb7 add --diagnostics FILE.json`: attaches the diagnostics in `file` (see
/// [`diagnostics_text`]) named by the file as typed.
pub(super) async fn add_diagnostics(s: &mut Session, file: &str) -> Res<()> {
    let path = s.cwd.join(file);
    let bytes = crate::project::fsutil::read_regular(&path)
        .map_err(|e| Failure::new(format!("cannot read {file}: {e}")))?;
    let json: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::new(format!("{file} is not JSON: {e}")))?;
    let (text, count) =
        diagnostics_text(&json).map_err(|e| Failure::new(format!("{file}: {e}")))?;
    let meta = json!({"count": count}).as_object().cloned();
    attach(s, "diagnostics", file, text, meta).await
}

/// One line per diagnostic, `path:line:col: severity: message [source code]`, from a
/// JSON array of diagnostics (or an object with a `diagnostics` array). A diagnostic
/// names its file as `path`, `file`, `filename` or `uri` (`file://` is dropped), its
/// place as 1-based `line` and `col`/`column`, or as an LSP `range` (0-based
/// `range.start.line` and `.character`); `severity` is a word or LSP's number (1 error
/// … 4 hint); `message` is required. Returns the text and the number of diagnostics.
/// Errors: no diagnostics, or one without a message.
pub fn diagnostics_text(json: &Value) -> Result<(String, usize), String> {
    let list = match json {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("diagnostics") {
            Some(Value::Array(a)) => a,
            _ => return Err("expected an array of diagnostics".into()),
        },
        _ => return Err("expected an array of diagnostics".into()),
    };
    if list.is_empty() {
        return Err("no diagnostics in it".into());
    }
    let mut out = String::new();
    for (i, d) in list.iter().enumerate() {
        let text = |k: &str| d.get(k).and_then(Value::as_str);
        let num = |v: Option<&Value>| v.and_then(Value::as_u64);
        let message = text("message").ok_or(format!("diagnostic {} has no message", i + 1))?;
        let path = ["path", "file", "filename", "uri"]
            .into_iter()
            .find_map(text)
            .map(|p| p.strip_prefix("file://").unwrap_or(p))
            .unwrap_or("");
        let start = d.pointer("/range/start");
        let line = num(d.get("line"))
            .or_else(|| num(start.and_then(|s| s.get("line"))).map(|l| l + 1))
            .unwrap_or(1);
        let col = num(d.get("col"))
            .or_else(|| num(d.get("column")))
            .or_else(|| num(start.and_then(|s| s.get("character"))).map(|c| c + 1))
            .unwrap_or(1);
        let severity = match d.get("severity") {
            Some(Value::String(s)) => s.to_lowercase(),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(2) => "warning".into(),
                Some(3) => "info".into(),
                Some(4) => "hint".into(),
                _ => "error".into(),
            },
            _ => "error".into(),
        };
        let mut source: Vec<String> = text("source").map(str::to_owned).into_iter().collect();
        match d.get("code") {
            Some(Value::String(c)) => source.push(c.clone()),
            Some(Value::Number(c)) => source.push(c.to_string()),
            _ => {}
        }
        let message = message.replace('\n', " ");
        out.push_str(&format!("{path}:{line}:{col}: {severity}: {message}"));
        if !source.is_empty() {
            out.push_str(&format!(" [{}]", source.join(" ")));
        }
        out.push('\n');
    }
    Ok((out, list.len()))
}

/// `bb7 ask MESSAGE` with stdin from a pipe or a file: what was piped in is attached
/// as `text` named `stdin` before the question is sent (`cargo test 2>&1 | bb7 ask
/// "why does this fail?"`). Nothing happens for a terminal, `/dev/null` or an empty
/// input.
pub(super) async fn attach_stdin(s: &mut Session) -> Res<()> {
    if !stdin_is_data() {
        return Ok(());
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
        .map_err(|e| Failure::new(format!("cannot read stdin: {e}")))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if text.trim().is_empty() {
        return Ok(());
    }
    attach(s, "text", "stdin", text, None).await
}

/// Whether stdin is a pipe or a regular file (not a terminal, not a device such as
/// `/dev/null`, not a socket).
fn stdin_is_data() -> bool {
    use std::os::unix::fs::FileTypeExt;
    if std::io::stdin().is_terminal() {
        return false;
    }
    std::fs::metadata("/dev/stdin")
        .map(|m| m.file_type().is_fifo() || m.file_type().is_file())
        .unwrap_or(false)
}

/// `/rules` in `bb7 chat`: the rules files the chat's requests include, one per line
/// on stdout, or a note on stderr that there are none.
pub(super) async fn rules(s: &mut Session) -> Res<()> {
    let info: CustomizationInfo =
        s.c.call(Action::GetCustomizationInfo(params::NoParams {}))
            .await?;
    if info.rules_files.is_empty() {
        eprintln!(
            "bb7: no rules file is included (config rules_files; default AGENTS.md, CLAUDE.md, …)"
        );
    }
    for f in &info.rules_files {
        s.out(&format!("{f}\n"));
    }
    super::invisible::warn(&info.invisible_warnings);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_in_the_simple_and_the_lsp_shape() {
        let simple = json!([{"path": "src/a.rs", "line": 3, "col": 5, "severity": "Warning",
                             "message": "unused variable\nx", "source": "rustc", "code": "W1"}]);
        assert_eq!(
            diagnostics_text(&simple).unwrap(),
            (
                "src/a.rs:3:5: warning: unused variable x [rustc W1]\n".to_owned(),
                1
            )
        );
        let lsp = json!({"diagnostics": [{"uri": "file:///p/b.py", "severity": 1, "message": "bad",
                         "range": {"start": {"line": 0, "character": 2}}}]});
        assert_eq!(
            diagnostics_text(&lsp).unwrap().0,
            "/p/b.py:1:3: error: bad\n"
        );
        assert!(diagnostics_text(&json!([])).is_err());
        assert!(
            diagnostics_text(&json!([{"path": "a"}]))
                .unwrap_err()
                .contains("no message")
        );
        assert!(diagnostics_text(&json!("x")).is_err());
    }
}
