//! `bb7 chat`: an interactive session on a terminal over the same in-process server
//! as the one-shot commands. Lines are read with history (rustyline); a line that
//! ends with `\` or leaves a ``` fence open continues on the next one. Plain text is a
//! question to the model, streamed and rendered as Markdown; `/commands` run the
//! one-shot commands' code. Ctrl-C stops an answer and keeps the session; Ctrl-D (or
//! `/quit`) ends it.

use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Config, Editor};
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::ask::{self, AskOptions};
use super::context;
use super::info;
use super::render::{Markdown, paint, paint_err, style};
use super::review;
use super::session::Session;
use super::terminal;
use crate::front::client::{Failure, Res};
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{Ack, ChatView, TokenEstimate};

/// What `/help` prints: one line per command.
const HELP: &str = "\
Type a question and press Enter; end a line with \\ (or open a ``` fence)
to go on on the next line. Ctrl-C stops an answer, Ctrl-D or /quit leaves,
Ctrl-Z suspends (fg resumes).

  /add PATH…        add files, directories, globs or path:start:end sections
  /drop PATH        take a file out of the context
  /refresh          re-read context files changed on disk
  /files, /status   the context and pending files with their statuses
  /diff [PATH]      the model's pending changes
  /review           the pending hunks; then /review accept|reject|take ID…
                    or /review all
  /apply [PATH]     merge the pending changes into your files (--force: over
                    your conflicting edits)
  /undo             roll back the last apply (again: the one before it)
  /model [NAME]     show or switch the chat's model
  /mode [MODE]      show or switch the provider: local, remote or hybrid_auto
  /tokens           what the next question costs: tokens and price
  /thinking on|off  show the model's reasoning as it streams, or (default)
                    count it in one dimmed line
  /new [NAME]       start a new chat
  /chats [ID]       list the chats, or switch to one (a unique prefix will do)
  /archive [ID]     archive a chat (default: this one); /unarchive ID
                    lists it again
  /fork [N]         a new chat branched before your N-th question (default:
                    the last); works on a chat held elsewhere, shown read-only
  /run CMD          run CMD and attach its output and exit status
  /test CMD         run CMD and attach its output only when it fails
  /rules            the rules files (AGENTS.md, …) the model is given
  /mcp              MCP resources and prompts (then Tab completes them);
                    /add mcp:SERVER:URI, /mcp:SERVER:PROMPT name=value …
  /help             this text

A question typed while an answer streams shows below it (next> …), is queued
on Enter and answered after it; /queue lists them, /unqueue [N] drops.
";

/// `bb7 chat`.
pub(super) async fn chat(s: &mut Session, model: Option<String>) -> Res<()> {
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| Failure::new(format!("cannot watch for Ctrl-C: {e}")))?;
    s.in_chat = true;
    super::chat_suspend::watch();
    let id = s.ensure_chat().await?;
    if let Some(m) = model {
        set_model(s, &m).await?;
    }
    let current: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
    eprintln!(
        "{}",
        paint_err(
            style::DIM,
            &format!(
                "bb7 chat {id} with {} — /help for commands, Ctrl-D to leave",
                terminal::err(&current.model)
            )
        )
    );
    let mut editor = LineReader::new();
    editor.show_peer_changes(&mut s.c);
    loop {
        let prompt = super::chat_prompt::prompt_line(s).await;
        // A line typed as an answer ended runs first, shown after the prompt as if typed there.
        let line = if s.typed_ahead.is_empty() {
            match editor.read(prompt, &mut s.typed_draft).await {
                Input::Line(l) => l,
                Input::Interrupted => continue,
                Input::Suspended => {
                    eprintln!();
                    super::chat_suspend::stop();
                    continue;
                }
                Input::End => break,
            }
        } else {
            let l = s.typed_ahead.remove(0);
            eprintln!("{}{}", prompt.painted, terminal::err(&l));
            l
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        // A guest whose holder quit (Kakoune's :bb7-chat beside a pane that closed, an
        // editor restarted) takes the chat over before the line goes anywhere: the
        // typed line is never lost to a closed socket.
        let left = s.c.holder_left();
        if left.is_some() || (s.guest && s.c.closed()) {
            if let Err(f) = s.rejoin(&id, left.as_deref() == Some("switched")).await {
                eprintln!(
                    "{}",
                    paint_err(style::ERROR, &format!("bb7: {}", terminal::err(&f.message)))
                );
                // Kept in the line editor, to send again.
                s.typed_draft = line.clone();
                continue;
            }
            editor.show_peer_changes(&mut s.c);
        }
        // MCP lines (`/mcp`, `/mcp:SERVER:PROMPT`, `/add mcp:…`): src/cli/mcp.rs.
        let mut text = text.to_owned();
        if let Some((done, rest)) = super::mcp::chat_line(s, &text).await {
            let sent = match done {
                Ok(super::mcp::ChatLine::Send(t)) => question(s, t, &mut sigint).await,
                Ok(super::mcp::ChatLine::Completions(c)) => {
                    editor.set_mcp(c);
                    Ok(())
                }
                Ok(super::mcp::ChatLine::Nothing) => Ok(()),
                Err(f) => Err(f),
            };
            if let Err(f) = sent {
                eprintln!(
                    "{}",
                    paint_err(style::ERROR, &format!("bb7: {}", terminal::err(&f.message)))
                );
            }
            if rest.is_empty() {
                continue;
            }
            text = rest;
        }
        let text = text.as_str();
        let result = match text.strip_prefix('/') {
            Some(cmd) => match command(s, cmd).await {
                Ok(Flow::Quit) => break,
                Ok(Flow::Go) => Ok(()),
                Err(f) => Err(f),
            },
            None => question(s, text.to_owned(), &mut sigint).await,
        };
        if let Err(f) = result {
            eprintln!(
                "{}",
                paint_err(style::ERROR, &format!("bb7: {}", terminal::err(&f.message)))
            );
        }
    }
    Ok(())
}

/// One question: the turn of `bb7 ask`, rendered, with Ctrl-C ending only the answer.
async fn question(s: &mut Session, text: String, sigint: &mut Signal) -> Res<()> {
    // A Ctrl-C typed at the prompt was read as a key; one that came while a command
    // ran must not stop the next answer before it starts.
    while tokio::select! {
        biased;
        _ = sigint.recv() => true,
        _ = std::future::ready(()) => false,
    } {}
    let opts = AskOptions {
        model: None,
        thinking: s.show_thinking,
        tools: None,
        refresh: false,
        in_chat: true,
        mode: None,
    };
    // Lines typed while it streams are queued: src/cli/chat_queue.rs.
    let mut typed = super::chat_queue::TypeAhead::start(std::mem::take(&mut s.typed_draft));
    let first = ask::turn(
        s,
        text,
        &opts,
        sigint,
        Some(Markdown::default()),
        typed.as_mut(),
    );
    let done = first.await;
    let done = match typed {
        Some(mut t) => {
            let done = super::chat_answers::answer_queued(s, &mut t, &opts, sigint, done).await;
            t.finish(s);
            done
        }
        None => done,
    };
    match done {
        // `turn` said that it stopped and that the partial answer is kept.
        Err(f) if f.status == crate::front::client::exit::INTERRUPTED => Ok(()),
        other => other,
    }
}

/// Commands whose arguments are paths: they are split as a POSIX shell splits words
/// (`a\ b`, `"a b"` and `'a b'` are one name), the forms Tab completion inserts.
const PATH_COMMANDS: [&str; 5] = ["add", "drop", "remove", "diff", "apply"];

/// The words of a path command's arguments. Errors: an unclosed quote.
fn path_args(rest: &str) -> Res<Vec<String>> {
    shlex::split(rest).ok_or_else(|| {
        Failure::new(format!(
            "unclosed quote in {}: quote a name with spaces as \"my file.txt\" or my\\ file.txt",
            terminal::err(rest)
        ))
    })
}

/// After a command: go on, or leave the session.
enum Flow {
    Go,
    Quit,
}

/// Runs `/NAME ARGS…`.
async fn command(s: &mut Session, line: &str) -> Res<Flow> {
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or("");
    let mut args: Vec<String> = words.map(str::to_owned).collect();
    if PATH_COMMANDS.contains(&name) {
        args = path_args(line.trim_start()[name.len()..].trim())?;
    }
    let first = args.first().cloned();
    match name {
        "quit" | "exit" | "q" => return Ok(Flow::Quit),
        "help" | "h" | "?" => print!("{HELP}"),
        "add" if !args.is_empty() => {
            let files = context::expand(s, &args)?;
            context::add(s, &files, false).await?
        }
        "drop" | "remove" if args.len() == 1 => context::remove(s, &args[0]).await?,
        "refresh" => {
            s.active().await?;
            ask::check_sync(s, true, true).await?;
        }
        "files" | "status" => context::status(s).await?,
        "diff" => context::diff(s, first).await?,
        "review" => review_command(s, &args).await?,
        "apply" => {
            let force = args.iter().any(|a| a == "--force" || a == "-f");
            let paths: Vec<&String> = args
                .iter()
                .filter(|a| *a != "--force" && *a != "-f")
                .collect();
            if paths.len() > 1 {
                return Err(Failure::new("use /apply [--force] [PATH]"));
            }
            context::apply(s, paths.first().map(|p| p.to_string()), force).await?
        }
        "undo" => review::undo(s, false).await?,
        "model" => match first {
            Some(m) => set_model(s, &m).await?,
            None => {
                let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
                println!("{}", terminal::safe(&chat.model, terminal::Sink::Stdout));
            }
        },
        "mode" => match first {
            Some(m) => set_mode(s, &m).await?,
            None => {
                let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
                println!(
                    "{}",
                    terminal::safe(&chat.agent_mode, terminal::Sink::Stdout)
                );
            }
        },
        "tokens" => tokens(s).await?,
        // Questions queue only while an answer streams (src/cli/chat_queue.rs).
        "queue" | "unqueue" => eprintln!("bb7: nothing is queued"),
        "thinking" => super::reasoning::command(s, first.as_deref())?,
        "run" | "test" if !args.is_empty() => {
            // The command as typed, spaces and quotes kept.
            let cmd = line.trim_start()[name.len()..].trim();
            super::attach::add_run(s, cmd, name == "test").await?
        }
        "rules" => super::attach::rules(s).await?,
        "new" => {
            let name = (!args.is_empty()).then(|| args.join(" "));
            info::new_chat(s, name).await?;
        }
        "fork" => super::fork::fork(s, first.as_deref()).await?,
        "archive" => {
            let which = (!args.is_empty()).then(|| args.join(" "));
            super::archive::set(s, which.as_deref(), true).await?
        }
        "unarchive" if !args.is_empty() => {
            super::archive::set(s, Some(&args.join(" ")), false).await?
        }
        "chats" => match first {
            Some(_) => {
                let id = info::resolve_chat(s, &args.join(" ")).await?;
                s.select(&id).await?;
                eprintln!("bb7: switched to chat {id}");
            }
            None => info::chats(s).await?,
        },
        _ => {
            return Err(Failure::new(format!(
                "unknown command or missing argument: /{line} (/help lists them)"
            )));
        }
    }
    Ok(Flow::Go)
}

/// `/review`, `/review all`, `/review accept ID…`, `/review reject ID…`,
/// `/review take ID…` (after a confirmation).
async fn review_command(s: &mut Session, args: &[String]) -> Res<()> {
    let ids = args.get(1..).unwrap_or_default().to_vec();
    let mut d = review::Decisions::default();
    match args.first().map(String::as_str) {
        None => {}
        Some("all") => d.all = true,
        Some("accept") if !ids.is_empty() => d.accept = ids,
        Some("reject") if !ids.is_empty() => d.reject = ids,
        Some("take") if !ids.is_empty() => {
            d.take = ids;
            d.confirm_take = true;
        }
        _ => {
            return Err(Failure::new(
                "use /review, /review all, /review accept ID…, /review reject ID…, or \
                 /review take ID… (the model's version over your overlapping edits)",
            ));
        }
    }
    review::review(s, None, d).await
}

/// Switches the active chat's `agent_mode` (the server refuses an unknown one).
async fn set_mode(s: &mut Session, mode: &str) -> Res<()> {
    s.c.call::<Ack>(Action::SaveChatSettings(params::SaveChatSettings {
        model: None,
        reasoning_effort: None,
        tools: None,
        edit_format: None,
        agent_mode: Some(mode.to_owned()),
    }))
    .await?;
    eprintln!("bb7: mode {mode}");
    Ok(())
}

/// Switches the active chat to model `name`, warning when the models list does not
/// know it.
async fn set_model(s: &mut Session, name: &str) -> Res<()> {
    info::warn_unknown_model(s, name).await;
    s.c.call::<Ack>(Action::SaveChatSettings(params::SaveChatSettings {
        model: Some(name.to_owned()),
        reasoning_effort: None,
        tools: None,
        edit_format: None,
        agent_mode: None,
    }))
    .await?;
    eprintln!("bb7: model {name}");
    Ok(())
}

/// `/tokens`: the next request's size by part, and its prompt price when the models
/// list has one.
async fn tokens(s: &mut Session) -> Res<()> {
    s.active().await?;
    let e: TokenEstimate =
        s.c.call(Action::EstimateTokens(params::EstimateTokens {
            input_text: None,
        }))
        .await?;
    let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
    let price = info::prompt_price(s, &chat.model).await;
    let cost = match price {
        Some(p) => format!(
            ", about ${:.4} to send with {}",
            e.total as f64 * p,
            terminal::safe(&chat.model, terminal::Sink::Stdout)
        ),
        None => {
            eprintln!(
                "bb7: no price for {}: it is not in the models list (`/model` shows the \
                 chat's model; the list comes from the provider)",
                terminal::err(&chat.model)
            );
            String::new()
        }
    };
    println!("context {}", super::context::gauge_text(&e));
    println!(
        "{} tokens{cost}\n  context files {}\n  history {}\n  instructions {}\n  system prompt {}",
        paint(style::HEADING, &e.total.to_string()),
        e.context_files,
        e.history,
        e.instructions,
        e.system_prompt
    );
    Ok(())
}

/// What the line reader got.
enum Input {
    /// A line (or several, joined).
    Line(String),
    /// Ctrl-C at the prompt: the line is dropped.
    Interrupted,
    /// Ctrl-Z at the prompt: the line is kept for the next read.
    Suspended,
    /// Ctrl-D on an empty line, or the end of input.
    End,
}

/// The line editor's helper: continues the input while a line ends with `\` or a
/// ``` fence is open, and completes command names and the paths they take (Tab).
#[derive(Default)]
struct ChatHelper {
    files: rustyline::completion::FilenameCompleter,
    /// MCP resources and prompts `/mcp` loaded, for Tab.
    mcp: Vec<String>,
    /// The prompt as typed for the line editor and as shown, its gauge painted
    /// (`chat_prompt.rs`).
    prompt: Option<(String, String)>,
}

/// Command names Tab completes.
const COMMANDS: &[&str] = &[
    "/add", "/drop", "/refresh", "/files", "/status", "/diff", "/review", "/apply", "/undo",
    "/model", "/mode", "/tokens", "/run", "/test", "/rules", "/new", "/chats", "/help", "/quit",
    "/mcp", "/fork", "/archive",
];

/// Command names Tab completes that are too long for [`COMMANDS`]'s compact layout.
const LONG_COMMANDS: &[&str] = &["/unarchive", "/thinking"];

impl Validator for ChatHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        let fences = input
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        Ok(if input.ends_with('\\') || fences % 2 == 1 {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl rustyline::completion::Completer for ChatHelper {
    type Candidate = rustyline::completion::Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Self::Candidate>)> {
        let typed = &line[..pos];
        if let Some((start, found)) = super::mcp::complete(&self.mcp, typed) {
            let pairs = found
                .into_iter()
                .map(|c| rustyline::completion::Pair {
                    display: c.clone(),
                    replacement: c,
                })
                .collect();
            return Ok((start, pairs));
        }
        if typed.starts_with('/') && !typed.contains(' ') {
            let names = COMMANDS
                .iter()
                .chain(LONG_COMMANDS)
                .filter(|c| c.starts_with(typed))
                .map(|c| rustyline::completion::Pair {
                    display: (*c).to_owned(),
                    replacement: format!("{c} "),
                })
                .collect();
            return Ok((0, names));
        }
        let takes_paths = ["/add ", "/drop ", "/diff ", "/apply "]
            .iter()
            .any(|c| typed.starts_with(c));
        if takes_paths {
            return self.files.complete_path(line, pos);
        }
        Ok((pos, Vec::new()))
    }
}

impl rustyline::hint::Hinter for ChatHelper {
    type Hint = String;
}

impl rustyline::highlight::Highlighter for ChatHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> std::borrow::Cow<'b, str> {
        match &self.prompt {
            Some((plain, painted)) if plain == prompt => painted.as_str().into(),
            _ => prompt.into(),
        }
    }
}

impl rustyline::Helper for ChatHelper {}

/// The most entries the line editor keeps for Up and Ctrl-R; the file keeps every one.
const HISTORY_IN_MEMORY: usize = 10_000;

/// The line editor, run on a blocking thread (it reads the terminal synchronously),
/// with its history in `~/.bb7/chat_history`: each entry is appended to the file as
/// it is entered (one `write` on a file opened for appending), so a closed terminal
/// (SIGHUP) or a killed session loses nothing, and the file is never rewritten or
/// truncated (rustyline's own save rewrites it whole).
struct LineReader {
    editor: Option<Editor<ChatHelper, DefaultHistory>>,
    history: Option<std::path::PathBuf>,
    /// The line Ctrl-Z left, shown again by the next read.
    suspended: super::chat_suspend::Typed,
}

impl LineReader {
    fn new() -> LineReader {
        // Tab completes the common start, and a second Tab lists the candidates.
        let config = Config::builder()
            .auto_add_history(false)
            .completion_type(rustyline::CompletionType::List)
            .max_history_size(HISTORY_IN_MEMORY)
            .map(|b| b.build())
            .unwrap_or_else(|_| Config::builder().auto_add_history(false).build());
        let suspended = super::chat_suspend::Typed::default();
        let editor = Editor::with_config(config).ok().map(|mut e| {
            e.set_helper(Some(ChatHelper::default()));
            super::chat_suspend::bind(&mut e, &suspended);
            e
        });
        let history = crate::project::UserDirs::from_env()
            .ok()
            .map(|d| d.state.join("chat_history"));
        let mut reader = LineReader {
            editor,
            history,
            suspended,
        };
        if let (Some(e), Some(h)) = (&mut reader.editor, &reader.history) {
            let _ = e.load_history(h);
        }
        reader
    }

    /// Shows what other bb7 processes do on this chat above the prompt
    /// (src/cli/chat_peer.rs).
    fn show_peer_changes(&mut self, c: &mut crate::front::client::Client) {
        if let Some(editor) = self.editor.as_mut() {
            super::chat_peer::show(editor, c);
        }
    }

    /// Loads the MCP names Tab completes.
    fn set_mcp(&mut self, names: Vec<String>) {
        if let Some(h) = self.editor.as_mut().and_then(|e| e.helper_mut()) {
            h.mcp = names;
        }
    }

    /// Reads one entry; a continued line comes back with its `\` line ends removed.
    /// `draft`: what the line starts with (typed during the answer, not sent), taken.
    async fn read(&mut self, prompt: super::chat_prompt::PromptLine, draft: &mut String) -> Input {
        let draft = std::mem::take(draft);
        let Some(mut editor) = self.editor.take() else {
            return Input::End;
        };
        if let Some(h) = editor.helper_mut() {
            h.prompt = Some((prompt.text.clone(), prompt.painted));
        }
        let kept = self.suspended.lock().ok().and_then(|mut k| k.take());
        let read = tokio::task::spawn_blocking(move || {
            // Text kept at Ctrl-Z comes back with its cursor; else the unsent draft.
            let got = match kept {
                Some(k) => super::chat_suspend::readline(&mut editor, &prompt.text, Some(k)),
                None => editor.readline_with_initial(&prompt.text, (&draft, "")),
            };
            (editor, got)
        })
        .await;
        // A reading thread that failed leaves nothing to read with: the session ends.
        let Ok((mut editor, got)) = read else {
            return Input::End;
        };
        let input = match got {
            Ok(line) => {
                if editor.add_history_entry(line.as_str()).unwrap_or(false)
                    && let Some(h) = &self.history
                {
                    append_history(h, &line);
                }
                Input::Line(line.replace("\\\n", "\n"))
            }
            Err(ReadlineError::Interrupted) if super::chat_suspend::kept(&self.suspended) => {
                Input::Suspended
            }
            Err(ReadlineError::Interrupted) => Input::Interrupted,
            Err(_) => Input::End,
        };
        self.editor = Some(editor);
        input
    }
}

/// Appends `entry` to the history file `path` in rustyline's format (a `#V2` first
/// line; `\` and line feeds escaped), in one `write` on a file opened for appending:
/// best effort, a failure only loses this entry.
fn append_history(path: &std::path::Path, entry: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
    else {
        return;
    };
    let mut line = String::new();
    if f.metadata().is_ok_and(|m| m.len() == 0) {
        line.push_str("#V2\n");
    }
    line.push_str(&entry.replace('\\', "\\\\").replace('\n', "\\n"));
    line.push('\n');
    let _ = f.write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn help_fits_80_columns() {
        for line in super::HELP.lines() {
            assert!(line.chars().count() < 80, "{line}");
        }
    }

    #[test]
    fn help_names_every_command() {
        for c in [
            "/add", "/drop", "/refresh", "/files", "/status", "/diff", "/review", "/apply",
            "/undo", "/model", "/mode", "/tokens", "/run", "/test", "/rules", "/new", "/chats",
            "/fork", "/help",
        ] {
            assert!(super::HELP.contains(c), "{c}");
        }
    }
}
