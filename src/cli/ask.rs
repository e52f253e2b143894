//! `bb7 ask`: sends a message and handles its stream by message type. The answer goes
//! to stdout; reasoning (with `--thinking`), tool steps, changed files and cost go to
//! stderr. Ctrl-C sends `cancel` and waits for the partial answer to be saved; a
//! second Ctrl-C exits at once.

use std::io::IsTerminal;

use tokio::signal::unix::{Signal, SignalKind, signal};

use super::args::ToolsMode;
use super::prompt;
use super::render::{Markdown, Waiting, paint, style};
use super::session::Session;
use super::terminal;
use crate::chat::store::ChatStore;
use crate::front::client::{Failure, Res};
use crate::project::Project;
use crate::protocol::action::Action;
use crate::protocol::events::TurnMessage;
use crate::protocol::params::{self, NonEmpty, RequestId};
use crate::protocol::replies::{Ack, ChatView};

use crate::front::client::exit::INTERRUPTED;

/// Options of `bb7 ask`.
pub(super) struct AskOptions {
    /// Model for this and later turns.
    pub model: Option<String>,
    /// Show reasoning on stderr.
    pub thinking: bool,
    /// Retrieval tools to save on the chat first.
    pub tools: Option<ToolsMode>,
    /// Re-snapshot out-of-sync files first.
    pub refresh: bool,
    /// Asked in `bb7 chat`: hints name its /commands instead of shell commands.
    pub in_chat: bool,
    /// `agent_mode` to save on the chat first.
    pub mode: Option<String>,
}

/// Where the terminal output stands, so notes start on a fresh line.
#[derive(Default)]
struct Lines {
    /// stdout ends with a newline (or is empty).
    out_ended: bool,
    /// Reasoning text on stderr without its final newline.
    thinking_open: bool,
    /// Renders the answer as Markdown (`bb7 chat`); `None` prints it as it comes.
    markdown: Option<Markdown>,
    /// The answer so far, held back from a piped stdout while the turn may still drop
    /// its attempt (a local or `hybrid_auto` provider): only the answer that stands
    /// is written.
    held: Option<String>,
}

impl Lines {
    fn close_thinking(&mut self) {
        if self.thinking_open {
            eprintln!();
            self.thinking_open = false;
        }
    }

    /// Prints an answer delta (or holds it, see [`Lines::held`]).
    fn answer(&mut self, s: &Session, delta: &str) {
        self.close_thinking();
        if let Some(h) = &mut self.held {
            h.push_str(delta);
            return;
        }
        match &mut self.markdown {
            // The model's text is made safe before the renderer styles it.
            Some(md) => s.out_rendered(&md.push(&terminal::safe(delta, terminal::Sink::Stdout))),
            None => s.out(delta),
        }
        if !delta.is_empty() {
            self.out_ended = delta.ends_with('\n');
        }
    }

    /// An attempt was dropped: what it streamed is not the answer. Held text is
    /// discarded; on a terminal, a separator line on stdout names the fallback.
    fn drop_attempt(&mut self, s: &Session, provider: &str, reason: &str) {
        if let Some(h) = &mut self.held {
            h.clear();
            eprintln!("bb7: an attempt was dropped ({reason}); answering again on {provider}");
            return;
        }
        self.close_all(s);
        let line = format!("── dropped ({reason}); the answer again, from {provider} ──");
        s.out_rendered(&format!(
            "{}\n",
            paint(style::DIM, &terminal::safe(&line, terminal::Sink::Stdout))
        ));
    }

    /// The turn ended: the held answer, if any, is the one that stands.
    fn release(&mut self, s: &Session) {
        if let Some(h) = self.held.take() {
            s.out(&h);
            if !h.is_empty() {
                self.out_ended = h.ends_with('\n');
            }
        }
    }

    fn close_all(&mut self, s: &Session) {
        self.close_thinking();
        if self.held.is_some() {
            return;
        }
        if let Some(md) = &mut self.markdown {
            s.out_rendered(&md.finish());
        }
        if !self.out_ended {
            s.out("\n");
            self.out_ended = true;
        }
    }
}

/// `bb7 ask [MESSAGE…]`.
pub(super) async fn ask(s: &mut Session, words: Vec<String>, o: AskOptions) -> Res<()> {
    let mut message = words.join(" ");
    if !message.trim().is_empty() {
        super::attach::attach_stdin(s).await?;
    }
    if message.trim().is_empty() {
        if prompt::interactive() {
            eprintln!("bb7: type your message, then Ctrl-D");
        }
        let mut buf = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf);
        message = buf;
    }
    if message.trim().is_empty() {
        return Err(Failure::new(
            "nothing to ask: give a message or pipe one in",
        ));
    }
    // Watched from here on (not while a message is typed on the terminal): a Ctrl-C
    // before the request goes out ends the command without sending it.
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| Failure::new(format!("cannot watch for Ctrl-C: {e}")))?;
    turn(s, message, &o, &mut sigint, None, None).await
}

/// One turn: `message` sent to the active chat (a new one when none is active), its
/// stream shown until it ends. Ctrl-C (seen on `sigint`) stops the answer and keeps
/// what came; the result is then the `aborted` failure (status 130). With `markdown`,
/// the answer is rendered line by line.
pub(super) async fn turn(
    s: &mut Session,
    message: String,
    o: &AskOptions,
    sigint: &mut Signal,
    markdown: Option<Markdown>,
    typed: Option<&mut super::chat_queue::TypeAhead>,
) -> Res<()> {
    let chat_id = s.ensure_chat().await?;
    if o.tools.is_some() || o.mode.is_some() {
        s.c.call::<Ack>(Action::SaveChatSettings(params::SaveChatSettings {
            model: None,
            reasoning_effort: None,
            tools: o.tools.map(|t| t.as_str().to_owned()),
            edit_format: None,
            agent_mode: o.mode.clone(),
        }))
        .await?;
    }
    check_sync(s, o.refresh, o.in_chat).await?;
    let early = tokio::select! {
        biased;
        _ = sigint.recv() => true,
        _ = std::future::ready(()) => false,
    };
    if early {
        return Err(aborted());
    }
    // Piped, the answer of a turn that may drop its attempt is held until it stands
    // (asked before the `send`: a reply read meanwhile would skip the stream's lines).
    let hold = markdown.is_none() && !std::io::stdout().is_terminal() && {
        let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
        chat.agent_mode != "remote"
    };
    let id =
        s.c.send(&Action::Send(params::Send {
            content: message,
            chat_id: None,
            model: o.model.clone(),
            reasoning_effort: None,
            queue: false,
        }))
        .await?;
    let lines = Lines {
        out_ended: true,
        markdown,
        held: hold.then(String::new),
        ..Lines::default()
    };
    stream(s, &id, &chat_id, o, sigint, lines, typed).await
}

/// Shows a queued `send`'s stream (request `id`, sent earlier with `queue: true`) as
/// [`turn`] shows its own, rendered with `markdown`.
pub(super) async fn follow(
    s: &mut Session,
    id: &str,
    o: &AskOptions,
    sigint: &mut Signal,
    markdown: Markdown,
    typed: Option<&mut super::chat_queue::TypeAhead>,
) -> Res<()> {
    let chat_id = s.ensure_chat().await?;
    let lines = Lines {
        out_ended: true,
        markdown: Some(markdown),
        ..Lines::default()
    };
    stream(s, id, &chat_id, o, sigint, lines, typed).await
}

/// Reads request `id`'s stream until it ends; lines typed meanwhile (`typed`, in
/// `bb7 chat`) are queued as they come.
async fn stream(
    s: &mut Session,
    id: &str,
    chat_id: &str,
    o: &AskOptions,
    sigint: &mut Signal,
    mut lines: Lines,
    mut typed: Option<&mut super::chat_queue::TypeAhead>,
) -> Res<()> {
    let (id, chat_id) = (id.to_owned(), chat_id.to_owned());
    let mut cancelled = false;
    let mut waiting = Waiting::start("waiting for the model");
    let mut reasoning_shown = false;
    let mut collapsed = super::reasoning::Collapsed::default();
    // The turn's last message, read while a question waited (src/cli/approval.rs).
    let mut pending: Option<TurnMessage> = None;
    if let Some(q) = typed.as_deref_mut() {
        q.resume();
    }
    loop {
        // The line typed meanwhile, below the answer (src/cli/chat_typing.rs).
        if let Some(q) = typed.as_deref_mut() {
            q.show(&mut waiting);
        }
        let next = if let Some(m) = pending.take() {
            Some(m)
        } else {
            tokio::select! {
            m = s.c.next_stream(&id) => Some(m?),
            _ = sigint.recv() => None,
            Some(line) = super::chat_queue::next_line(typed.as_deref_mut()) => {
                // The Markdown renderer writes whole lines, so a note on stderr
                // starts on a line of its own.
                if let Some(q) = typed.as_deref_mut() {
                    q.take(s, line).await;
                }
                continue;
            }
            }
        };
        if let Some(q) = typed.as_deref_mut() {
            q.hide();
        }
        let Some(msg) = next else {
            waiting.stop();
            interrupt(s, &id, &chat_id, &mut cancelled, &mut lines).await?;
            continue;
        };
        // Keys typed once the end shows are the line editor's (Tab completes there).
        if let Some(q) = typed.as_deref_mut()
            && matches!(
                msg,
                TurnMessage::Done { .. }
                    | TurnMessage::Error { .. }
                    | TurnMessage::DiffError { .. }
            )
        {
            q.pause();
        }
        // Reasoning not shown keeps the indicator, relabelled (in `bb7 chat`, with
        // its words counted: src/cli/reasoning.rs); anything else ends it.
        match &msg {
            TurnMessage::Thinking { content, .. } if !o.thinking => {
                if o.in_chat {
                    collapsed.push(content);
                    waiting.relabel(&collapsed.label());
                } else if !reasoning_shown && waiting.active() {
                    waiting.stop();
                    waiting = Waiting::start("the model is reasoning");
                }
                reasoning_shown = true;
            }
            TurnMessage::TitleUpdated { .. } | TurnMessage::Waiting { .. } => {}
            _ => {
                waiting.stop();
                if let Some(note) = collapsed.end() {
                    lines.close_all(s);
                    eprint!("{note}");
                }
            }
        }
        match msg {
            TurnMessage::Chunk { content, .. } => lines.answer(s, &content),
            TurnMessage::Retry {
                delay_ms, reason, ..
            } => {
                lines.close_all(s);
                // f64's Display prints 1000 ms as "1" and 10 ms as "0.01".
                let secs = delay_ms as f64 / 1000.0;
                eprintln!("bb7: retrying in {secs} s ({reason})");
                waiting = Waiting::start("waiting for the model");
            }
            TurnMessage::Waiting { message, .. } => {
                // On a terminal the indicator counts the seconds; its label says why.
                if waiting.active() {
                    let label = message
                        .rsplit_once(", ")
                        .map_or(message.as_str(), |(l, _)| l);
                    waiting.relabel(label);
                } else {
                    eprintln!("bb7: {}", terminal::err(&message));
                }
            }
            TurnMessage::Notice { message, .. } => {
                lines.close_all(s);
                eprintln!("bb7: {}", terminal::err(&message));
            }
            TurnMessage::Attempt {
                provider,
                reason,
                message,
                ..
            } => {
                if let Some(m) = &message {
                    lines.close_all(s);
                    eprintln!("bb7: {}", terminal::err(m));
                }
                lines.drop_attempt(s, &provider, &reason)
            }
            TurnMessage::Thinking { content, .. } => {
                if o.thinking {
                    eprint!("{}", super::reasoning::shown(&content));
                    lines.thinking_open = !content.ends_with('\n');
                }
            }
            TurnMessage::ToolCall {
                name,
                status,
                summary,
                ..
            } => {
                // A `requested` step is followed by its approval question.
                if status != "requested" {
                    lines.close_all(s);
                    let what = if summary.is_empty() { name } else { summary };
                    eprintln!("bb7: tool {status}: {}", terminal::err(&what));
                    waiting = Waiting::start("waiting for the model");
                }
            }
            TurnMessage::ToolApproval {
                approval_id,
                payload,
                ..
            } => {
                lines.close_all(s);
                // The question reads the terminal, not the type-ahead.
                if let Some(q) = typed.as_deref_mut() {
                    q.hold(true);
                }
                let asked = super::approval::approve(s, &id, payload.description(), sigint).await;
                if let Some(q) = typed.as_deref_mut() {
                    q.hold(false);
                }
                let approved = match asked? {
                    super::approval::Asked::Answer(a) => a,
                    super::approval::Asked::Interrupted => {
                        interrupt(s, &id, &chat_id, &mut cancelled, &mut lines).await?;
                        continue;
                    }
                    super::approval::Asked::Ended(m) => {
                        pending = Some(*m);
                        continue;
                    }
                };
                if !cancelled {
                    s.c.send(&Action::ToolApprove(params::ToolApprove {
                        approval_id: NonEmpty(approval_id),
                        approved,
                    }))
                    .await?;
                }
            }
            TurnMessage::Clarification {
                question_id,
                question,
                ..
            } => {
                lines.close_all(s);
                if let Some(q) = typed.as_deref_mut() {
                    q.hold(true);
                }
                let answer = tokio::select! {
                    a = clarify(&question) => Some(a),
                    _ = sigint.recv() => None,
                };
                if let Some(q) = typed.as_deref_mut() {
                    q.hold(false);
                }
                let Some(answer) = answer else {
                    interrupt(s, &id, &chat_id, &mut cancelled, &mut lines).await?;
                    continue;
                };
                if !cancelled {
                    s.c.send(&Action::Clarify(params::Clarify {
                        question_id: NonEmpty(question_id),
                        answer,
                    }))
                    .await?;
                }
            }
            TurnMessage::TitleUpdated { .. } => {}
            TurnMessage::Done {
                changes,
                usage,
                provider,
                fallback_reason,
                truncated,
                budget_warnings,
                ..
            } => {
                lines.release(s);
                for w in &budget_warnings {
                    eprintln!("bb7: warning: {}", terminal::err(&w.message));
                }
                lines.close_all(s);
                if cancelled {
                    return Err(aborted());
                }
                if let (Some(p), Some(reason)) = (&provider, &fallback_reason) {
                    eprintln!("bb7: answered by the {p} provider after a fallback ({reason})");
                }
                for ch in &changes {
                    eprintln!("bb7: {}", terminal::err(ch.description()));
                    // What each edit matched: where, and whether exactly.
                    if let crate::protocol::events::Change::Edit { edits, .. } = ch {
                        for e in edits {
                            eprintln!("bb7:   {}", terminal::err(&e.summary()));
                        }
                    }
                }
                eprintln!("bb7: {}", usage.summary());
                if truncated {
                    return Err(Failure::new(
                        "the answer was cut at the server's token limit (finish_reason \"length\"); it is saved but incomplete",
                    )
                    .with_status(crate::front::client::exit::TRUNCATED));
                }
                return Ok(());
            }
            TurnMessage::Error { code, message, .. } => {
                lines.release(s);
                lines.close_all(s);
                if cancelled || code == crate::error::ErrorCode::Cancelled {
                    return Err(aborted());
                }
                return Err(Failure::server(Some(code), message));
            }
            TurnMessage::DiffError { errors, .. } => {
                lines.release(s);
                lines.close_all(s);
                if cancelled {
                    return Err(aborted());
                }
                return Err(Failure::new(format!(
                    "the model's edits could not be applied, nothing was written:\n  {}",
                    errors.join("\n  ")
                )));
            }
        }
    }
}

/// The first Ctrl-C asks the server to stop and keep the partial answer; the second
/// ends the process at once.
async fn interrupt(
    s: &mut Session,
    id: &str,
    chat_id: &str,
    cancelled: &mut bool,
    lines: &mut Lines,
) -> Res<()> {
    if *cancelled {
        lines.release(s);
        lines.close_all(s);
        eprintln!("bb7: aborted");
        // The OS drops the chat's lock with the process; clearing the PID in the lock
        // file too leaves nothing that looks like a holder (as an orderly exit does).
        if let Ok(dir) = ChatStore::new(s.root.join(Project::STATE_DIR), false).chat_dir(chat_id)
            && let Ok(f) = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("lock"))
        {
            let _ = f.set_len(0);
        }
        std::process::exit(INTERRUPTED.into());
    }
    *cancelled = true;
    lines.close_all(s);
    eprintln!("bb7: stopping; the partial answer is kept (Ctrl-C again to quit at once)");
    s.c.send(&Action::Cancel(params::Cancel {
        target_request_id: RequestId(id.to_owned()),
    }))
    .await?;
    Ok(())
}

/// The failure of a turn stopped with Ctrl-C (status 130).
pub(super) fn aborted() -> Failure {
    Failure {
        status: INTERRUPTED,
        ..Failure::new("aborted")
    }
}

/// Asks the model's question on the terminal; without one (or an empty answer) the
/// model is told there is no answer.
async fn clarify(question: &str) -> String {
    if !prompt::interactive() {
        eprintln!(
            "bb7: the model asks: {} (no terminal to answer; skipped)",
            terminal::err(question)
        );
        return "no_user_answer".into();
    }
    prompt::ask_text(format!(
        "bb7: the model asks: {}\n> ",
        terminal::err(question)
    ))
    .await
    .unwrap_or_else(|| "no_user_answer".into())
}

/// Warns about context files changed on disk since their snapshot, or re-snapshots
/// them with `refresh`; the hints name `bb7 chat`'s commands when `in_chat`.
pub(super) async fn check_sync(s: &mut Session, refresh: bool, in_chat: bool) -> Res<()> {
    let r = s.statuses().await?;
    let stale: Vec<String> = r
        .files
        .iter()
        .filter(|f| f.out_of_sync)
        .map(|f| f.path.clone())
        .collect();
    for path in stale {
        // Gone from disk (a rolled-back new file, a deleted one): neither a refresh
        // nor `bb7 add` can read it; only removing it from the context helps.
        if !s.root.join(&path).exists() {
            let drop = if in_chat { "/drop" } else { "bb7 remove" };
            eprintln!(
                "bb7: warning: {path} no longer exists on disk; the model sees its last \
                 snapshot (`{drop} {path}` takes it out of the context)"
            );
            continue;
        }
        if refresh {
            // A file that cannot be refreshed is reported, and the question still goes.
            match s
                .c
                .call::<Ack>(Action::SyncContext(params::PathOnly::new(&path)))
                .await
            {
                Ok(_) => eprintln!("bb7: refreshed {path}"),
                Err(e) => eprintln!("bb7: warning: cannot refresh {path}: {}", e.message),
            }
        } else {
            let renew = if in_chat {
                "`/refresh` re-reads it".to_owned()
            } else {
                format!("use --refresh, or `bb7 add {path}`")
            };
            eprintln!(
                "bb7: warning: {path} changed on disk since it was added; the model sees the \
                 old snapshot ({renew})"
            );
        }
    }
    Ok(())
}
