//! A command's session: the pipe to the in-process server, the project root and the
//! directory paths are typed from, and the active chat as the commands need it (a
//! held chat is an error naming its holder, never a new chat).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::terminal;
use crate::chat::store::ChatStore;
use crate::error::ErrorCode;
use crate::front::client::{Client, Failure, Res};
use crate::front::root;
use crate::project::Project;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{Ack, ChatActive, Created, FileStatusList, Selected};

/// A command's connection to the server and where it writes.
pub(crate) struct Session {
    /// The protocol session.
    pub(super) c: Client,
    /// The project root.
    pub(super) root: PathBuf,
    /// Where relative paths start.
    pub(super) cwd: PathBuf,
    /// The requests go to another process that holds the chat (its holder socket).
    pub(super) guest: bool,
    /// The command only reads: a held chat whose holder does not answer is read
    /// without its lock instead of failing.
    pub(super) reads_only: bool,
    /// Run by `bb7 chat`: hints name its /commands instead of shell commands.
    pub(super) in_chat: bool,
    /// `bb7 chat`: lines typed as an answer ended, not yet run (they run before the
    /// line editor reads again).
    pub(super) typed_ahead: Vec<String>,
    /// `bb7 chat`: a line typed during an answer and not sent (no Enter): the next
    /// answer's type-ahead or the line editor starts with it (src/cli/chat_typing.rs).
    pub(super) typed_draft: String,
    /// The PID of the process this session is a guest of (its chat's lock), when known:
    /// after it quits, the chat is selected again once that process let the lock go.
    pub(super) holder_pid: Option<u32>,
    /// `bb7 chat`: the model's reasoning is shown whole, not counted in one line
    /// (`/thinking on`, `--thinking`; src/cli/reasoning.rs).
    pub(super) show_thinking: bool,
}

impl Session {
    /// The command a hint names: `shell` (`bb7 apply --force`) from a shell, `slash`
    /// (`/apply --force`) in `bb7 chat`.
    pub(super) fn cmd<'a>(&self, shell: &'a str, slash: &'a str) -> &'a str {
        if self.in_chat { slash } else { shell }
    }

    /// Writes the model's text `s` to stdout now (answers stream): without terminal
    /// control characters on a terminal, printable text byte for byte and controls
    /// escaped anywhere else (see
    /// [`terminal::text`]).
    pub(super) fn out(&self, s: &str) {
        let s = terminal::text(s, terminal::Sink::Stdout);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }

    /// Writes output that [`super::render`] styled to stdout now, as it is: every piece
    /// of data in it was made safe ([`terminal::safe`]) before it was styled, so the
    /// styling's own escapes are the only ones.
    pub(super) fn out_rendered(&self, s: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }

    /// The statuses of the active chat's files, with their contents.
    pub(super) async fn statuses(&mut self) -> Res<FileStatusList<'static>> {
        self.c
            .call(Action::GetFileStatuses(params::FileStatuses {
                contents: None,
            }))
            .await
    }

    /// A path as the user typed it, relative to the project root.
    pub(super) fn path(&self, p: &str) -> String {
        root::project_path(&self.root, &self.cwd, p)
    }

    /// The active chat's id. The project's active chat that another process holds is
    /// an error naming the holder (code `locked`), never "no active chat".
    pub(super) async fn active(&mut self) -> Res<String> {
        let a: ChatActive = self.c.call(Action::ChatActive(params::NoParams {})).await?;
        if let Some(id) = a.id {
            return Ok(id.into_owned());
        }
        // `init` leaves a held chat inactive; selecting it again brings the server's
        // own `locked` error, or the chat when its holder has let go meanwhile.
        if let Some(id) = active_in_index(&self.root) {
            match self.select(&id).await {
                Ok(()) => return Ok(id),
                Err(f) if f.is(ErrorCode::NotFound) => {}
                Err(f) => return Err(f),
            }
        }
        Err(Failure::server(
            Some(ErrorCode::NoActiveChat),
            "no active chat: run `bb7 new`, or pass --chat ID (see `bb7 chats`)",
        ))
    }

    /// Makes chat `id` active; a chat held by another process is an error that names
    /// the holder and the way out.
    pub(super) async fn select(&mut self, id: &str) -> Res<()> {
        let r = self
            .c
            .call::<Selected>(Action::ChatSelect(params::ChatSelect {
                id: params::NonEmpty(id.to_owned()),
                scope: params::Scope::default(),
                read_only: None,
            }))
            .await;
        match r {
            Ok(selected) => {
                say_state_warnings(&selected);
                Ok(())
            }
            Err(f) if f.is(ErrorCode::Locked) => {
                let pid = f.data.as_ref().and_then(|d| d.holder_pid);
                if self.join_holder(id).await {
                    return Ok(());
                }
                if (self.reads_only || self.in_chat) && self.open_read_only(id).await {
                    let who = pid.map(|p| format!(" by PID {p}")).unwrap_or_default();
                    // `bb7 chat` shows a held chat to read and to branch (`/fork`).
                    let more = if self.in_chat {
                        format!(
                            " and read-only here: /fork N branches it; `bb7 unlock --force \
                             {id}` takes it"
                        )
                    } else {
                        "; read as it is on disk".to_owned()
                    };
                    eprintln!("bb7: chat {id} is held{who}, which does not answer{more}");
                    return Ok(());
                }
                Err(held(id, pid, &f.message))
            }
            Err(f) => Err(f),
        }
    }

    /// Chat `id` is held by another process: when that process answers on the chat's
    /// holder socket, this session's requests go there from now on (the in-process
    /// server is shut down) and `true` is returned; the holder's client hears of each
    /// change (docs/PROTOCOL.md, "One chat, many front-ends").
    async fn join_holder(&mut self, id: &str) -> bool {
        if self.guest {
            return false;
        }
        let Some(dir) = project_store(&self.root).and_then(|st| st.chat_dir(id).ok()) else {
            return false;
        };
        // A stopped holder (`bb7 chat` suspended with Ctrl-Z) still has its socket
        // accepted by the kernel but never answers: past HOLDER_ANSWER it counts as a
        // holder that does not answer (reads from disk, or exit 4 naming it).
        let joined = tokio::time::timeout(HOLDER_ANSWER, async {
            let stream = match crate::server::guests::connect(&dir).await {
                Ok(s) => s,
                Err(e) => {
                    // A planted socket is ignored, and the user told what it was.
                    if e.kind() == std::io::ErrorKind::PermissionDenied {
                        eprintln!("bb7: warning: {}", terminal::err(&e.to_string()));
                    }
                    return None;
                }
            };
            let mut guest = Client::guest(stream);
            // The holder must answer, and for this chat.
            guest
                .call::<Ack>(Action::ChatSelect(params::ChatSelect {
                    id: params::NonEmpty(id.to_owned()),
                    scope: params::Scope::default(),
                    read_only: None,
                }))
                .await
                .ok()?;
            // `bb7 chat` shows the holder's own turns and is told when it lets the
            // chat go (a holder that predates `watch` refuses it: nothing is shown).
            if self.in_chat {
                let _ = guest.call::<Ack>(Action::Watch(params::NoParams {})).await;
            }
            Some(guest)
        })
        .await;
        let Ok(Some(guest)) = joined else {
            return false;
        };
        self.holder_pid = crate::project::lock::holder(&dir);
        let own = std::mem::replace(&mut self.c, guest);
        let mut own = own;
        let _ = own.call::<Ack>(Action::Shutdown(params::NoParams {})).await;
        self.guest = true;
        true
    }

    /// This session was a guest of chat `id`'s holder, or showed it read-only, and the
    /// holder quit or switched to another chat: a fresh
    /// in-process server opens the chat (taking its lock), or joins the process that
    /// holds it now. Says which on stderr (docs/PROTOCOL.md, "One chat, many
    /// front-ends").
    pub(super) async fn rejoin(&mut self, id: &str, switched: bool) -> Res<()> {
        // A holder that quit lets the lock go once it saved what its turns have.
        if let Some(dir) = project_store(&self.root).and_then(|st| st.chat_dir(id).ok()) {
            crate::server::guests::lock_let_go(&dir, self.holder_pid.take()).await;
        }
        let mut own = Client::start();
        own.call::<crate::protocol::replies::Opened>(Action::Init(params::Init {
            project_root: Some(self.root.to_string_lossy().into_owned()),
        }))
        .await?;
        self.c = own;
        self.guest = false;
        self.select(id).await?;
        let how = if self.guest {
            "is held by another bb7 process now, joined here"
        } else {
            "is held here now"
        };
        let why = if switched {
            "switched to another chat"
        } else {
            "has quit"
        };
        eprintln!("bb7: the process holding chat {id} {why}; it {how}");
        Ok(())
    }

    /// Opens chat `id` without its lock, for a command that only reads.
    async fn open_read_only(&mut self, id: &str) -> bool {
        let r = self
            .c
            .call::<Selected>(Action::ChatSelect(params::ChatSelect {
                id: params::NonEmpty(id.to_owned()),
                scope: params::Scope::default(),
                read_only: Some(true),
            }))
            .await;
        r.map(|selected| say_state_warnings(&selected)).is_ok()
    }

    /// The active chat, or a new one when none is active (never when the active chat
    /// is held elsewhere: that would split the conversation).
    pub(super) async fn ensure_chat(&mut self) -> Res<String> {
        match self.active().await {
            Ok(id) => return Ok(id),
            Err(f) if f.is(ErrorCode::NoActiveChat) => {}
            Err(f) => return Err(f),
        }
        let r: Created = self
            .c
            .call(Action::ChatNew(params::ChatNew::default()))
            .await?;
        let id = r.id.into_owned();
        eprintln!("bb7: started chat {id}");
        Ok(id)
    }
}

/// How long a holder has to answer a command's first request on its socket before it
/// counts as one that does not answer (a stopped or hung process); a live holder
/// answers `chat_select` in milliseconds.
const HOLDER_ANSWER: std::time::Duration = std::time::Duration::from_secs(3);

/// The failure for chat `id` held by process `pid` (the server's `data.holder_pid`):
/// who holds it and the ways out. `server` is the server's own message, used when the
/// holder's PID is unknown.
fn held(id: &str, pid: Option<u32>, server: &str) -> Failure {
    let who = match pid {
        Some(pid) => format!("PID {pid}"),
        None => format!("another process ({})", server.trim_end_matches('.')),
    };
    // Short: editors show one line of it (Kakoune cuts it at the pane's width).
    Failure::server(
        Some(ErrorCode::Locked),
        format!(
            "chat {id} is held by {who}, which does not answer; close it there or take \
             it over: `bb7 unlock --force {id}` (or the same command with --take-over)"
        ),
    )
}

/// The project's chat store, when `root` holds `.bb7/`.
pub(super) fn project_store(root: &Path) -> Option<ChatStore> {
    let root = root.canonicalize().ok()?;
    Project::is_initialized(&root).then(|| ChatStore::new(Project { root }.state_dir(), false))
}

/// The active chat recorded in the project's index.
pub(super) fn active_in_index(root: &Path) -> Option<String> {
    project_store(root).and_then(|s| s.read_index().active_chat_id)
}

/// Prints what opening the chat found wrong with its state (a context journal skipped
/// or read only in part) on stderr, as the send's notices are (`bb7: …`).
fn say_state_warnings(selected: &Selected) {
    for w in &selected.state_warnings {
        eprintln!("bb7: {}", terminal::err(w));
    }
}
