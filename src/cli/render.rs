//! What the command line prints on a terminal: colour (off when piped, under
//! `NO_COLOR` (https://no-color.org), without a capable `TERM` or with `--color
//! never`), aligned tables whose
//! header is shown only on a terminal (so scripts read bare rows), Markdown answers
//! rendered line by line, and the waiting indicator on stderr.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anstyle::Style;

use super::terminal;

/// When to colour the output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set to a non-empty value.
    #[default]
    Auto,
    /// Always, even when piped.
    Always,
    /// Never.
    Never,
}

/// Whether stdout and stderr get colour: (stdout, stderr).
static COLOR: OnceLock<(bool, bool)> = OnceLock::new();

/// Decides colour for this process once, from `choice`, `NO_COLOR` and whether each
/// stream is a terminal. Later calls change nothing.
pub fn init_color(choice: ColorChoice) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let auto = |tty: bool| tty && !no_color && capable_terminal();
    let _ = COLOR.set(match choice {
        ColorChoice::Always => (true, true),
        ColorChoice::Never => (false, false),
        ColorChoice::Auto => (
            auto(std::io::stdout().is_terminal()),
            auto(std::io::stderr().is_terminal()),
        ),
    });
}

/// Whether `TERM` names a terminal that takes escape sequences: set, and not `dumb`
/// (an editor's shell buffer, a bare `env -i`).
fn capable_terminal() -> bool {
    std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

fn color_out() -> bool {
    COLOR.get().is_some_and(|c| c.0)
}

fn color_err() -> bool {
    COLOR.get().is_some_and(|c| c.1)
}

/// Styles of the command line's output.
pub mod style {
    use anstyle::{AnsiColor, Style};

    /// Headings and table headers.
    pub const HEADING: Style = Style::new().bold();
    /// Added lines of a diff.
    pub const ADDED: Style = AnsiColor::Green.on_default();
    /// Removed lines of a diff.
    pub const REMOVED: Style = AnsiColor::Red.on_default();
    /// Hunk headers and file names of a diff.
    pub const HUNK: Style = AnsiColor::Cyan.on_default();
    /// Code in an answer.
    pub const CODE: Style = AnsiColor::Yellow.on_default();
    /// Secondary text: notes, reasoning, the waiting indicator.
    pub const DIM: Style = Style::new().dimmed();
    /// Errors and conflicts.
    pub const ERROR: Style = AnsiColor::Red.on_default().bold();
}

/// `text` in `style` when stdout is coloured.
pub fn paint(style: Style, text: &str) -> String {
    paint_if(color_out(), style, text)
}

/// `text` in `style` when stderr is coloured.
pub fn paint_err(style: Style, text: &str) -> String {
    paint_if(color_err(), style, text)
}

fn paint_if(on: bool, style: Style, text: &str) -> String {
    if on && !text.is_empty() {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
    }
}

/// A unified diff with added, removed and header lines coloured (stdout).
pub fn diff(text: &str) -> String {
    text.split_inclusive('\n').map(diff_line).collect()
}

fn diff_line(line: &str) -> String {
    let (body, nl) = match line.strip_suffix('\n') {
        Some(b) => (b, "\n"),
        None => (line, ""),
    };
    let st = if body.starts_with("+++") || body.starts_with("---") || body.starts_with("@@") {
        style::HUNK
    } else if body.starts_with('+') {
        style::ADDED
    } else if body.starts_with('-') {
        style::REMOVED
    } else {
        return line.to_owned();
    };
    format!("{}{nl}", paint(st, body))
}

/// Rows printed as aligned columns, with a header line on a terminal only.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new<const N: usize>(header: [&str; N]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per column); each cell is made safe for stdout
    /// ([`terminal::safe`]) before the table styles its header.
    pub fn row<const N: usize>(&mut self, cells: [String; N]) {
        let safe = |c: &String| terminal::safe(c, terminal::Sink::Stdout).into_owned();
        self.rows.push(cells.iter().map(safe).collect());
    }

    /// The table as text: columns two spaces apart, the last one unpadded.
    pub fn render(&self) -> String {
        let with_header = std::io::stdout().is_terminal();
        let shown: Vec<&Vec<String>> = with_header
            .then_some(&self.header)
            .into_iter()
            .chain(&self.rows)
            .collect();
        let columns = self.header.len();
        let width = |i: usize| {
            shown
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        let mut out = String::new();
        for (n, row) in shown.iter().enumerate() {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
                }
            }
            let line = line.trim_end();
            if with_header && n == 0 {
                out.push_str(&paint(style::HEADING, line));
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        out
    }
}

/// Renders a streamed Markdown answer one complete line at a time: headings bold,
/// fenced code and inline `code` coloured, diffs inside ```diff fences coloured by line.
#[derive(Default)]
pub struct Markdown {
    /// Text of the line not yet ended.
    pending: String,
    /// Inside a fence: its language (empty for none).
    fence: Option<String>,
}

impl Markdown {
    /// Takes a delta; returns the rendered complete lines it finished.
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let Some(end) = self.pending.rfind('\n') else {
            return String::new();
        };
        let done: String = self.pending.drain(..=end).collect();
        done.split_inclusive('\n')
            .map(|l| self.line(l.trim_end_matches('\n')) + "\n")
            .collect()
    }

    /// The rest of the answer (a last line without its newline), rendered.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.fence = None;
        if rest.is_empty() {
            return rest;
        }
        self.line(&rest)
    }

    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            self.fence = match self.fence {
                Some(_) => None,
                None => Some(info.trim().to_owned()),
            };
            return paint(style::DIM, line);
        }
        match self.fence.as_deref() {
            Some("diff") | Some("patch") => diff_line(line),
            Some(lang) => highlight(lang, line),
            None if trimmed.starts_with('#') => paint(style::HEADING, line),
            None => inline_code(line),
        }
    }
}

/// Words that are keywords in the common languages of answers (Rust, Python, C, Go,
/// JavaScript, Lua, shell); a word-level highlight, not a parser.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "case", "class", "const", "continue", "def", "do", "elif",
    "else", "end", "enum", "export", "false", "fn", "for", "from", "func", "function", "if",
    "impl", "import", "in", "let", "local", "loop", "match", "mod", "mut", "nil", "None", "null",
    "pub", "return", "self", "Self", "static", "struct", "then", "trait", "true", "type", "use",
    "var", "where", "while",
];

/// One line of a fenced code block: keywords bold, strings and numbers coloured,
/// a trailing comment dimmed.
fn highlight(lang: &str, line: &str) -> String {
    if !color_out() {
        return line.to_owned();
    }
    let hash_comments = matches!(
        lang,
        "python" | "py" | "sh" | "bash" | "shell" | "toml" | "yaml" | "ruby" | "rb"
    );
    let lua_comments = matches!(lang, "lua" | "sql");
    let mut out = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let comment = rest.starts_with("//")
            || (hash_comments && c == '#')
            || (lua_comments && rest.starts_with("--"));
        if comment {
            out.push_str(&paint(style::DIM, rest));
            return out;
        }
        // Rust's `'a` is a lifetime, not a string.
        let quote = c == '"' || (c == '\'' && !matches!(lang, "rust" | "rs"));
        let len = if quote {
            // A string up to its closing quote (escapes skipped), or the line's end.
            let mut end = rest.len();
            let mut escaped = false;
            for (i, ch) in rest.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if ch == '\\' {
                    escaped = true;
                } else if ch == c {
                    end = i + 1;
                    break;
                }
            }
            out.push_str(&paint(style::ADDED, &rest[..end]));
            end
        } else if c.is_alphanumeric() || c == '_' {
            let end = rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            if KEYWORDS.contains(&word) {
                out.push_str(&paint(style::HEADING, word));
            } else if c.is_ascii_digit() {
                out.push_str(&paint(style::CODE, word));
            } else {
                out.push_str(word);
            }
            end
        } else {
            out.push(c);
            c.len_utf8()
        };
        rest = &rest[len..];
    }
    out
}

/// Colours the `code` spans of a line of prose and makes its **strong** spans bold.
fn inline_code(line: &str) -> String {
    if !color_out() || !(line.contains('`') || line.contains("**")) {
        return line.to_owned();
    }
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&paint(style::CODE, &format!("`{part}`")));
        } else {
            out.push_str(&strong(part));
        }
    }
    // An odd number of backticks leaves the last span open: it was printed with its
    // opening backtick as code, which is what the author wrote.
    out
}

/// `**text**` spans in bold (the markers stay, so a copied answer is unchanged); an
/// unclosed marker is left as written.
fn strong(prose: &str) -> String {
    let mut out = String::new();
    let mut rest = prose;
    while let Some(open) = rest.find("**") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("**") else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&paint(style::HEADING, &format!("**{}**", &after[..close])));
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// The waiting indicator: a spinner and a label on stderr while nothing else is shown
/// (before the first token, while the model reasons). Nothing when stderr is not a
/// terminal. Dropping it clears its line.
pub struct Waiting {
    task: Option<tokio::task::JoinHandle<()>>,
    /// Set under the stderr lock, so no frame is drawn after the line is cleared.
    stopped: Arc<AtomicBool>,
    /// What it shows before the seconds; [`Waiting::relabel`] changes it.
    label: Arc<std::sync::Mutex<String>>,
    /// The line typed meanwhile in `bb7 chat`, drawn after the frame so the spinner
    /// goes on while it shows (src/cli/chat_typing.rs); [`Waiting::beside`] sets it.
    typed: Arc<std::sync::Mutex<String>>,
    /// Wakes the spinner to draw a changed typed line at once, not at its next frame.
    redraw: Arc<tokio::sync::Notify>,
}

impl Waiting {
    /// Starts showing `label` (on a terminal that takes escape sequences only).
    pub fn start(label: &str) -> Waiting {
        let stopped = Arc::new(AtomicBool::new(false));
        let shown = Arc::new(std::sync::Mutex::new(label.to_owned()));
        let typed = Arc::new(std::sync::Mutex::new(String::new()));
        let redraw = Arc::new(tokio::sync::Notify::new());
        if !std::io::stderr().is_terminal() || !capable_terminal() {
            return Waiting {
                task: None,
                stopped,
                label: shown,
                typed,
                redraw,
            };
        }
        let (label, draft, wake) = (shown.clone(), typed.clone(), redraw.clone());
        let flag = stopped.clone();
        let task = tokio::spawn(async move {
            const FRAMES: [&str; 4] = ["|", "/", "-", "\\"];
            let started = std::time::Instant::now();
            let mut i = 0usize;
            loop {
                let secs = started.elapsed().as_secs();
                let now = label.lock().map(|l| l.clone()).unwrap_or_default();
                let text = format!("{} {now} {secs}s", FRAMES[i % FRAMES.len()]);
                let columns = stderr_columns();
                let typed = draft.lock().map(|d| d.clone()).unwrap_or_default();
                // A frame wider than the terminal would wrap, and `\r` returns only to
                // the start of its last row: every frame would add a line.
                let row = if typed.is_empty() {
                    paint_err(style::DIM, &fit(&text, columns))
                } else {
                    beside(&text, &typed, columns.unwrap_or(80))
                };
                if !draw(&flag, &row) {
                    return;
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(120)) => i += 1,
                    _ = wake.notified() => {}
                }
            }
        });
        Waiting {
            task: Some(task),
            stopped,
            label: shown,
            typed,
            redraw,
        }
    }

    /// Shows `typed` (the line typed meanwhile; empty for none) after the spinner,
    /// drawn at once.
    pub(super) fn beside(&self, typed: &str) {
        if let Ok(mut d) = self.typed.lock() {
            if *d == typed {
                return;
            }
            typed.clone_into(&mut d);
        }
        self.redraw.notify_one();
    }

    /// Shows `label` from the next frame on; the seconds keep counting.
    pub fn relabel(&self, label: &str) {
        if let Ok(mut l) = self.label.lock() {
            *l = label.to_owned();
        }
    }

    /// Whether it is showing.
    pub fn active(&self) -> bool {
        self.task.is_some()
    }

    /// Stops and clears the line.
    pub fn stop(&mut self) {
        if let Some(t) = self.task.take() {
            let mut err = std::io::stderr().lock();
            self.stopped.store(true, Ordering::SeqCst);
            t.abort();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// `text` cut to fewer than `columns` characters (one column is left for the cursor).
fn fit(text: &str, columns: Option<usize>) -> String {
    match columns {
        Some(c) => text.chars().take(c.saturating_sub(1).max(1)).collect(),
        None => text.to_owned(),
    }
}

/// The width of the terminal on stderr, when it tells.
pub(super) fn stderr_columns() -> Option<usize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes a `winsize` into the one passed; fd 2 is stderr.
    let r = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_col > 0).then_some(size.ws_col as usize)
}

/// Draws one frame (styled already) unless stopped; false when stopped.
fn draw(stopped: &AtomicBool, text: &str) -> bool {
    let mut err = std::io::stderr().lock();
    if stopped.load(Ordering::SeqCst) {
        return false;
    }
    let _ = write!(err, "\r\x1b[2K{text}");
    let _ = err.flush();
    true
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What is written before the typed line.
pub(super) const LABEL: &str = "next> ";

/// The row of the waiting indicator while a line is typed before the answer starts:
/// the spinner's `frame`, then `next> ` and `draft`, within `columns` (one left for
/// the cursor). The typed line keeps its end and the frame gives way first, but keeps
/// a few columns so the spinner still shows it waits.
pub(super) fn beside(frame: &str, draft: &str, columns: usize) -> String {
    const GAP: &str = "  ";
    // The spinner and the start of its label.
    const FRAME_MIN: usize = 12;
    let total = columns.saturating_sub(1);
    let room = total
        .saturating_sub(FRAME_MIN + GAP.len() + LABEL.len())
        .max(8);
    let shown = tail(draft, room);
    let left = total
        .saturating_sub(GAP.len() + LABEL.len() + shown.chars().count())
        .max(1);
    let frame: String = frame.chars().take(left).collect();
    format!(
        "{}{shown}",
        paint_err(style::DIM, &format!("{frame}{GAP}{LABEL}"))
    )
}

/// `draft` made safe for the terminal, its last `room` characters (with a leading
/// `…`) when it is longer.
pub(super) fn tail(draft: &str, room: usize) -> String {
    let safe = terminal::err(draft);
    let count = safe.chars().count();
    if count > room {
        let tail: String = safe.chars().skip(count - (room - 1)).collect();
        format!("…{tail}")
    } else {
        safe.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_frame_never_fills_a_narrow_terminal() {
        let frame = "| waiting for the model 12s";
        assert_eq!(fit(frame, Some(10)), "| waiting");
        assert_eq!(fit(frame, Some(1)), "|");
        assert_eq!(fit(frame, Some(80)), frame);
        assert_eq!(fit(frame, None), frame);
    }

    #[test]
    fn markdown_is_rendered_by_complete_lines() {
        let mut md = Markdown::default();
        assert_eq!(md.push("# Ti"), "");
        assert_eq!(
            md.push("tle\n```diff\n-a\n+b\n```\nte"),
            "# Title\n```diff\n-a\n+b\n```\n"
        );
        assert_eq!(md.finish(), "te");
        assert_eq!(md.fence, None);
    }
}
