//! The holder socket: the process that holds a chat's lock (invariant 7 in
//! docs/ARCHITECTURE.md) listens on a Unix domain socket in the chat's folder
//! (`chats/{id}/holder.sock`, mode 0600), and another bb7 process that finds the chat
//! held sends its protocol lines there instead of failing (docs/PROTOCOL.md, "One
//! chat, many front-ends"). Each connection is a *guest*: its lines join the holder's
//! request loop, in arrival order with the holder's own, and are answered by the same
//! `Session` and dispatch; the messages of its requests go back on its connection
//! (`protocol::outbox::GUEST_ID_PREFIX`). This file knows sockets and the guest
//! policy (which actions a guest may send), not the session.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use super::lines::{Line, LineCutter};
use crate::chat::ChatKey;
use crate::protocol::head::request_id_at_start;
use crate::protocol::outbox::{Outbox, guest_id};

pub mod budget;

/// The socket's file name inside the chat's folder.
pub const SOCKET_NAME: &str = "holder.sock";

/// What the connections tell the request loop.
pub enum GuestEvent {
    /// One request line of guest `conn`, which connected to the socket of `chat`.
    Line {
        /// The connection number (its messages' route in the outbox).
        conn: u64,
        /// The chat whose socket it connected to.
        chat: ChatKey,
        /// The guest's PID, as the kernel tells it.
        pid: Option<u32>,
        /// The line (at most `protocol::MAX_LINE_BYTES`), or, when it was longer, the
        /// request id its start named.
        bytes: Result<Vec<u8>, Option<String>>,
        /// The line's bytes against the guest's budgets, until the line is dropped.
        charge: budget::Charge,
    },
    /// Guest `conn` closed its connection: its route goes, its turns are cancelled.
    Closed {
        /// The connection number.
        conn: u64,
    },
}

/// What binding a listener needs from the loop: where guest lines go, and the outbox
/// that routes their answers.
#[derive(Clone)]
pub struct Hub {
    /// The request loop's guest channel.
    pub tx: mpsc::Sender<GuestEvent>,
    /// The one outbox.
    pub outbox: Outbox,
}

/// A listening holder socket. Dropping it stops accepting and removes the socket file
/// (when it is still this listener's: a process that took the chat over has bound its
/// own in its place).
pub struct Listener {
    /// The chat it serves.
    pub chat: ChatKey,
    path: PathBuf,
    ino: u64,
    task: tokio::task::JoinHandle<()>,
    /// Ends the connections of the guests it admitted ([`Listener::end_guests`]).
    guests: tokio_util::sync::CancellationToken,
}

impl Listener {
    /// Whether the socket file is still this listener's (a process that took the chat
    /// over meanwhile bound its own there, and removed it when it let go).
    pub fn in_place(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino)
    }

    /// Closes every guest connection it admitted, at once: each holds a share of the
    /// outbox, and the holder's output ends (and the process exits) only when all
    /// shares are gone, so a guest that neither reads nor closes would otherwise keep
    /// a holder whose client left running. A guest sees the socket close, as when
    /// the holder dies, and may take the chat over.
    pub fn end_guests(&self) {
        self.guests.cancel();
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The most guests one holder serves at once; a connection beyond them is closed at
/// once (each may buffer up to `protocol::MAX_LINE_BYTES` of an unfinished line).
pub const MAX_GUESTS: usize = 16;

/// The next connection number.
static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

/// Binds the holder socket of chat `chat` in `chat_dir` (whose lock this process
/// holds, so a socket file already there is a dead holder's and is replaced) and
/// accepts guests on it. Needs a Tokio runtime. Errors: the socket cannot be made
/// (a file system without sockets, a path too long even through `/proc`).
pub fn bind(chat_dir: &Path, chat: ChatKey, hub: &Hub) -> std::io::Result<Listener> {
    let path = chat_dir.join(SOCKET_NAME);
    // A stale socket of a holder that died: the lock is ours now. Anything else there
    // was planted (a folder would keep every guest out): it is set aside.
    clear_socket_path(&path)?;
    let listener = with_short_path(&path, |p| {
        let l = std::os::unix::net::UnixListener::bind(p)?;
        // Only this user may connect; the peer check below says the same again.
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600))?;
        l.set_nonblocking(true)?;
        Ok(l)
    })?;
    let listener = UnixListener::from_std(listener)?;
    let ino = std::fs::symlink_metadata(&path)?.ino();
    let (hub, key) = (hub.clone(), chat.clone());
    let room = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_GUESTS));
    let guests = tokio_util::sync::CancellationToken::new();
    let stop = guests.clone();
    let task = tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors (EMFILE) or another transient error: waiting
                    // keeps the loop from spinning while the holder's own work goes on.
                    tracing::info!(error = %e, "holder socket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            // Over the cap, a connection is closed at once: its descriptor and
            // buffers never pile up beside the holder's own.
            let Ok(permit) = room.clone().try_acquire_owned() else {
                drop(stream);
                continue;
            };
            let conn = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
            let (key, hub, stop) = (key.clone(), hub.clone(), stop.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = serve_guest(stream, conn, key, hub) => {}
                    _ = stop.cancelled() => {}
                }
                drop(permit);
            });
        }
    });
    Ok(Listener {
        chat,
        path,
        ino,
        task,
        guests,
    })
}

/// Waits until process `pid`, which held the lock of the chat in `chat_dir` and closed
/// its holder socket, has let the lock go (it exits after saving what its turns have):
/// a guest or viewer that then selects the chat takes it, instead of finding it still
/// locked. Gives up after about five seconds (100 polls) or at once when `pid` is
/// unknown; the lock is then as it is.
pub async fn lock_let_go(chat_dir: &Path, pid: Option<u32>) {
    let Some(pid) = pid else { return };
    for _ in 0..100 {
        if crate::project::lock::holder(chat_dir) != Some(pid) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Connects to the holder socket in `chat_dir`, trusting only what it checks: the
/// chat's folder is a real folder owned by this user, the
/// socket is a socket (not a symlink) owned by this user, and the process on the other
/// end runs as this user (`SO_PEERCRED` on Linux, `getpeereid` elsewhere, through
/// Tokio). A cloned repository can plant a `holder.sock` symlink to another user's
/// socket; what fails a check is never sent a byte, and is logged as a warning naming
/// it. Errors: no socket (`NotFound`), no process listening on it
/// (`ConnectionRefused`: a holder that died, or one that serves no guests), a check
/// that failed (`PermissionDenied`, naming the path and why).
pub async fn connect(chat_dir: &Path) -> std::io::Result<UnixStream> {
    let path = chat_dir.join(SOCKET_NAME);
    let refuse = |why: &str| {
        let e = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("holder socket {} ignored: {why}", path.display()),
        );
        tracing::warn!(error = %e, "untrusted holder socket");
        e
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = std::fs::symlink_metadata(chat_dir)?;
    if !dir.is_dir() || dir.uid() != uid {
        return Err(refuse("its chat folder is not a folder owned by this user"));
    }
    let meta = std::fs::symlink_metadata(&path)?;
    use std::os::unix::fs::FileTypeExt;
    if !meta.file_type().is_socket() {
        return Err(refuse("it is not a socket (a symlink, a folder or a file)"));
    }
    if meta.uid() != uid {
        return Err(refuse("it belongs to another user"));
    }
    let std_stream = with_short_path(&path, |p| {
        let s = std::os::unix::net::UnixStream::connect(p)?;
        s.set_nonblocking(true)?;
        Ok(s)
    })?;
    let stream = UnixStream::from_std(std_stream)?;
    match stream.peer_cred() {
        Ok(c) if c.uid() == uid => Ok(stream),
        _ => Err(refuse("the process listening on it runs as another user")),
    }
}

/// Moves whatever non-socket sits at the socket's path (a planted folder, a file) to
/// `holder.sock.aside-{time}` so that the holder can bind; a stale socket or a symlink
/// is removed.
fn clear_socket_path(path: &Path) -> std::io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    use std::os::unix::fs::FileTypeExt;
    if meta.file_type().is_socket() || meta.file_type().is_symlink() {
        return std::fs::remove_file(path);
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let aside = path.with_file_name(format!("{SOCKET_NAME}.aside-{stamp}"));
    tracing::warn!(path = %path.display(), aside = %aside.display(), "a non-socket at the holder socket's path was set aside");
    std::fs::rename(path, aside)
}

/// How long a holder has to answer a probe ([`answers`]): its request loop never
/// does slow work (invariant 15), so a live holder answers a `ping` at once.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a process answers on the holder socket in `chat_dir` within `within`: it
/// accepts a connection and replies to a `ping`. A holder that died leaves a socket
/// nobody listens on; one that is stopped or hung is connected to (the kernel
/// accepts) but never replies.
pub async fn answers(chat_dir: &Path, within: std::time::Duration) -> bool {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let probe = async {
        let stream = connect(chat_dir).await?;
        let (read, mut write) = stream.into_split();
        let ping = crate::protocol::action::Action::Ping(crate::protocol::params::NoParams {});
        let mut line = serde_json::to_vec(&ping)?;
        line.push(b'\n');
        write.write_all(&line).await?;
        // Any line back is an answer; a reply to `ping` is short.
        let mut reply = Vec::new();
        let n = BufReader::new(read.take(4096))
            .read_until(b'\n', &mut reply)
            .await?;
        Ok::<bool, std::io::Error>(n > 0 && reply.ends_with(b"\n"))
    };
    matches!(tokio::time::timeout(within, probe).await, Ok(Ok(true)))
}

/// Runs `f` with a path to `path` that fits a socket address (108 bytes on Linux):
/// `path` itself, or, when it is longer, `/proc/self/fd/{n}/{name}` through an open
/// descriptor of its directory.
fn with_short_path<T>(
    path: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().len() < 100 {
        return f(path);
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return f(path);
    };
    let dir = std::fs::File::open(dir)?;
    use std::os::fd::AsRawFd;
    let short = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
    f(&short)
}

/// One guest: its lines to the loop, its messages back, until either side closes.
async fn serve_guest(stream: UnixStream, conn: u64, chat: ChatKey, hub: Hub) {
    let Ok(cred) = stream.peer_cred() else {
        return;
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    if cred.uid() != unsafe { libc::getuid() } {
        return;
    }
    let pid = cred.pid().and_then(|p| u32::try_from(p).ok());
    let (read, mut write) = stream.into_split();
    let (mut rx, backlog) = hub.outbox.add_guest(conn);
    let drained = backlog.clone();
    // Aborted with this future too (the holder ending its guests), closing the socket.
    let mut writer = AbortOnDrop(tokio::spawn(async move {
        while let Some(mut line) = rx.recv().await {
            let len = line.len();
            line.push('\n');
            let sent = write.write_all(line.as_bytes()).await;
            drained.written(len);
            if sent.is_err() || (rx.is_empty() && write.flush().await.is_err()) {
                break;
            }
        }
        // Nothing drains any more: the reader must not wait for room.
        drained.close();
    }));
    let mut reader = BufReader::with_capacity(1 << 16, read);
    let mut cutter = LineCutter::default();
    let mut charge = budget::Account::new(budget::GUEST_BYTES, &budget::POOL).charge();
    loop {
        // A guest that does not read its answers is not read either (invariant 14).
        backlog.room().await;
        let bytes = match next_line(&mut reader, &mut cutter, &mut charge).await {
            Ok(Line::Text(b)) => Ok(b),
            Ok(Line::TooLong(id)) => Err(id),
            Ok(Line::Eof) | Err(Stop::Io) => break,
            Err(Stop::Over(over, own)) => {
                // Its answer is written before the connection closes: the writer
                // drains what was queued once the route is gone.
                let id = guest_id(conn, own.as_deref());
                tracing::info!(conn, ?over, "a guest went over its byte budget");
                hub.outbox.send_error(&over.error(), Some(&id));
                break;
            }
        };
        let ev = GuestEvent::Line {
            conn,
            chat: chat.clone(),
            pid,
            bytes,
            charge: charge.take(),
        };
        if hub.tx.send(ev).await.is_err() {
            break;
        }
    }
    drop(cutter);
    drop(charge);
    let _ = hub.tx.send(GuestEvent::Closed { conn }).await;
    let _ = (&mut writer.0).await;
}

/// Why a guest's lines stopped.
enum Stop {
    /// Its connection failed.
    Io,
    /// It went over a byte budget, reading the line with this request id.
    Over(budget::Over, Option<String>),
}

/// The guest's next line, its bytes charged to `charge` as they are read (the
/// unfinished line counts as much as a whole one queued).
async fn next_line(
    reader: &mut BufReader<tokio::net::unix::OwnedReadHalf>,
    cutter: &mut LineCutter,
    charge: &mut budget::Charge,
) -> Result<Line, Stop> {
    use tokio::io::AsyncBufReadExt;
    loop {
        let available = reader.fill_buf().await.map_err(|_| Stop::Io)?;
        if available.is_empty() {
            return Ok(cutter.finish());
        }
        let (consumed, line) = cutter.take(available);
        reader.consume(consumed);
        match line {
            Some(Line::Text(b)) => {
                if let Err(over) = charge.set(b.len()) {
                    let head = &b[..b.len().min(crate::protocol::head::HEAD_BYTES)];
                    return Err(Stop::Over(over, request_id_at_start(head)));
                }
                return Ok(Line::Text(b));
            }
            Some(line) => {
                // Nothing of a skipped line is held: the charge only shrinks.
                let _ = charge.set(0);
                return Ok(line);
            }
            None => {
                if let Err(over) = charge.set(cutter.held()) {
                    return Err(Stop::Over(over, cutter.id_so_far()));
                }
            }
        }
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the holder does with a guest's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Served as the holder's own; it changes nothing (no `peer_change`).
    Read,
    /// Served as the holder's own; the holder's client hears of it (`peer_change`).
    Change,
    /// `shutdown`: answered `ok`, and the connection closes (the holder goes on).
    Leave,
    /// Refused: it would change the holder's session (its project, its active chat)
    /// rather than the chat.
    Refused,
}

/// The policy of action `name` for a guest.
pub fn policy(name: &str) -> Policy {
    match name {
        "shutdown" => Policy::Leave,
        "init"
        | "bb7_init"
        | "chat_new"
        | "chat_delete"
        | "chat_move"
        | "chat_force_unlock"
        | "chat_edit"
        | "fork_chat"
        | "chat_new_with_context" => Policy::Refused,
        "ping"
        | "version"
        | "chat_list"
        | "chat_get"
        | "chat_active"
        | "chat_select"
        | "search_chats"
        | "context_list"
        | "get_context_file"
        | "get_output_file"
        | "get_diff_paths"
        | "get_file_statuses"
        | "review_get"
        | "checkpoint_list"
        | "checkpoint_get"
        | "checkpoint_diff3"
        | "get_models"
        | "get_balance"
        | "estimate_tokens"
        | "estimate_text_tokens"
        | "get_customization_info" => Policy::Read,
        _ => Policy::Change,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_has_a_policy_and_session_changes_are_refused() {
        for name in crate::protocol::action::ACTION_NAMES {
            let _ = policy(name);
        }
        assert_eq!(policy("chat_new"), Policy::Refused);
        assert_eq!(policy("context_add"), Policy::Change);
        assert_eq!(policy("get_file_statuses"), Policy::Read);
        assert_eq!(policy("shutdown"), Policy::Leave);
    }
}
