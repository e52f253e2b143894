//! The request loop's side of the holder socket (`server::guests`): the listener kept
//! on the active chat, a guest's line answered by the session's own dispatch, and the
//! `peer_change` notes that tell this process's client what a guest did
//! (docs/PROTOCOL.md, "One chat, many front-ends").

use crate::chat::ChatKey;
use crate::error::{Error, ErrorCode};
use crate::protocol::Request;
use crate::protocol::events::PeerChange;
use crate::protocol::outbox::{from_peer_id, guest_id, guest_route, holder_peer_id, peer_id};

use super::guests::{self, GuestEvent, Hub, Listener, Policy};
use super::session::{Ctx, Session};

/// The loop's holder state: the socket of the active chat and the guests' turns that
/// still run.
pub(super) struct Holder {
    hub: Hub,
    listener: Option<Listener>,
    /// `send` requests of guests (their ids inside the server), the chat and the
    /// guest's PID, until their turn ends.
    turns: Vec<(String, ChatKey, Option<u32>)>,
    /// `send` requests of this process's own client on the served chat, shown to
    /// watchers (`watch`) until their turn ends.
    own_turns: Vec<(String, ChatKey)>,
    /// `send` requests queued behind a running turn of the served chat (`queued`):
    /// the chat, and the guest's connection and PID (`None`: this process's own
    /// client's), until they start or are dropped.
    queued: Vec<(String, ChatKey, Option<Guest>)>,
}

/// A guest: its connection number and, when the socket tells it, its PID.
type Guest = (u64, Option<u32>);

impl Holder {
    /// A holder that binds its sockets with `hub`.
    pub(super) fn new(hub: Hub) -> Holder {
        Holder {
            hub,
            listener: None,
            turns: Vec::new(),
            own_turns: Vec::new(),
            queued: Vec::new(),
        }
    }

    /// Keeps the socket on the session's active chat: bound when a chat became active
    /// (its lock is held), dropped (and its file removed) when it was let go. A socket
    /// that cannot be bound only means guests find no holder (exit status 4).
    pub(super) fn follow(&mut self, session: &Session) {
        let active = session.active_chat();
        let same = self.listener.as_ref().map(|l| &l.chat) == active.as_ref().map(|(k, _)| k);
        if same && self.listener.as_ref().is_none_or(Listener::in_place) {
            return;
        }
        // Watchers of the chat let go are told so (not when another process took it
        // over: they follow that one's socket anew); a new chat is watched afresh.
        if let Some(old) = self.listener.take()
            && old.in_place()
        {
            super::viewer::holder_left(&self.hub.outbox, &old.chat, "switched");
        }
        self.hub.outbox.unwatch_all();
        if let Some((key, dir)) = active {
            match guests::bind(&dir, key, &self.hub) {
                Ok(l) => self.listener = Some(l),
                Err(e) => tracing::info!(error = %e, "holder socket not bound"),
            }
        }
    }

    /// Tells the client of each guest turn that ended (`peer_change` with status
    /// `done`).
    pub(super) fn turns_ended(&mut self, session: &Session, ctx: &Ctx) {
        self.turns.retain(|(id, chat, pid)| {
            if session.is_in_flight(id) {
                return true;
            }
            ctx.outbox.mirror(id, false);
            ctx.outbox.watch_turn(id, None);
            let conn = guest_route(id).map(|(c, _)| c);
            note(ctx, chat, "send", "done", (conn, *pid), Some(id.as_str()));
            false
        });
        self.own_turns.retain(|(id, chat)| {
            if session.is_in_flight(id) {
                return true;
            }
            ctx.outbox.watch_turn(id, None);
            super::viewer::note_own(ctx, chat, "send", "done", Some(id));
            false
        });
        self.queued_started(session, ctx);
    }

    /// Follows each queued `send` that started as a turn (its `started` note went out
    /// as it started: [`started_note`]); forgets those that will not run.
    fn queued_started(&mut self, session: &Session, ctx: &Ctx) {
        for (id, chat, guest) in std::mem::take(&mut self.queued) {
            if session.is_in_flight(&id) {
                match guest {
                    Some((_, pid)) => self.turns.push((id, chat, pid)),
                    None => self.own_turns.push((id, chat)),
                }
            } else if session.is_queued(&id) {
                self.queued.push((id, chat, guest));
            } else {
                // Cancelled while it waited, or refused when it was to start.
                ctx.outbox.queued_dropped(&id);
                ctx.outbox.mirror(&id, false);
                ctx.outbox.watch_turn(&id, None);
            }
        }
    }

    /// Before this process's own client's request `req` is handled: a `send` on the
    /// served chat is shown to watchers from its first message.
    pub(super) fn before_own(&self, req: &Request, ctx: &Ctx) {
        if req.action == "send"
            && self.served_by(req).is_some()
            && let Some(id) = &req.request_id
        {
            ctx.outbox.watch_turn(id, Some(holder_peer_id(Some(id))));
        }
    }

    /// After this process's own client's request `req` was handled (`ok`: it
    /// succeeded): watchers hear of a turn that started, and of a change to the
    /// served chat, as the holder's client hears of a guest's.
    pub(super) fn after_own(&mut self, req: &Request, ok: bool, session: &Session, ctx: &Ctx) {
        let Some(chat) = self.served_by(req) else {
            return;
        };
        if req.action == "send" {
            let Some(id) = req.request_id.clone() else {
                return;
            };
            if ok && session.is_in_flight(&id) {
                super::viewer::note_own(ctx, &chat, "send", "started", Some(&id));
                self.own_turns.push((id, chat));
            } else if ok && session.is_queued(&id) {
                // Shown to watchers when it starts, after the answer it waits for.
                ctx.outbox.queued_waits(&id, started_note(&chat, &id, None));
                self.queued.push((id, chat, None));
            } else {
                ctx.outbox.watch_turn(&id, None);
            }
        } else if ok && guests::policy(&req.action) == Policy::Change {
            super::viewer::note_own(ctx, &chat, &req.action, "done", None);
        }
    }

    /// The served chat, when request `req` acts on it (it names no other chat).
    fn served_by(&self, req: &Request) -> Option<ChatKey> {
        let chat = &self.listener.as_ref()?.chat;
        let named_id = if req.action.starts_with("chat_") {
            req.fields.get("id")
        } else {
            None
        };
        let other = [named_id, req.fields.get("chat_id")]
            .into_iter()
            .flatten()
            .any(|n| n.as_str() != Some(chat.id.as_str()));
        (!other).then(|| chat.clone())
    }

    /// Lets the listener go (before the session releases the lock) and closes its
    /// guests' connections, so none keeps the process from exiting.
    pub(super) fn close(&mut self) {
        if let Some(l) = self.listener.take() {
            // Said before the connections close, when the writers get to it; a
            // watcher that sees its connection close first says the same itself.
            if l.in_place() {
                super::viewer::holder_left(&self.hub.outbox, &l.chat, "quit");
            }
            l.end_guests();
        }
    }

    /// Answers one guest event with the session, as the holder's own requests are.
    pub(super) fn on_event(&mut self, session: &mut Session, ev: GuestEvent, ctx: &Ctx) {
        // The line's bytes count against its guest's budget until it is answered.
        let (conn, chat, pid, bytes, _charge) = match ev {
            GuestEvent::Closed { conn } => {
                ctx.outbox.remove_guest(conn);
                session.cancel_where(|id| guest_route(id).is_some_and(|(c, _)| c == conn));
                return;
            }
            GuestEvent::Line {
                conn,
                chat,
                pid,
                bytes,
                charge,
            } => (conn, chat, pid, bytes, charge),
        };
        let bytes = match bytes {
            Ok(b) => b,
            Err(own) => {
                let e = super::lines::too_long();
                ctx.outbox
                    .send_error(&e, Some(&guest_id(conn, own.as_deref())));
                return;
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let mut req = match Request::parse(&bytes) {
            Ok(r) => r,
            Err(bad) => {
                let id = guest_id(conn, bad.request_id.as_deref());
                ctx.outbox.send_error(&bad.error, Some(&id));
                return;
            }
        };
        let id = guest_id(conn, req.request_id.as_deref());
        req.request_id = Some(id.clone());
        // A watcher (a process showing the chat read-only) cancels a turn it was shown
        // by the id it saw it under.
        if req.action == "cancel"
            && ctx.outbox.is_watcher(conn)
            && let Some(inside) = super::viewer::watched_target(&req)
        {
            if let Some(obj) = req.fields.as_object_mut() {
                obj.insert(
                    "target_request_id".into(),
                    serde_json::Value::String(inside),
                );
            }
            match session.handle(&req, ctx) {
                Ok((reply, _)) => {
                    if let Some(reply) = reply {
                        ctx.outbox.send(reply, Some(&id));
                    }
                }
                Err(e) => ctx.outbox.send_error(&e, Some(&id)),
            }
            return;
        }
        let policy = guests::policy(&req.action);
        if let Err(e) = admit(session, &mut req, conn, &chat, policy) {
            ctx.outbox.send_error(&e, Some(&id));
            return;
        }
        if policy == Policy::Leave {
            ctx.outbox.send(crate::protocol::ok(), Some(&id));
            ctx.outbox.remove_guest(conn);
            return;
        }
        // A viewer of the chat (a process that shows it read-only) follows its turns.
        if req.action == "watch" {
            ctx.outbox.watch(conn);
            ctx.outbox.send(crate::protocol::ok(), Some(&id));
            return;
        }
        // The guest's chat is the holder's active chat (checked by `admit`): selecting
        // it is answered without touching the session, so no option of it (`read_only`,
        // a scope) can make the holder let its lock go.
        if req.action == "chat_select" {
            ctx.outbox.send(crate::protocol::ok(), Some(&id));
            return;
        }
        // A guest's turn is shown live to the holder's own client: its messages are
        // copied from the start, and the copy stops at once if the send is refused.
        let send = req.action == "send";
        if send {
            ctx.outbox.mirror(&id, true);
            ctx.outbox.watch_turn(&id, peer_id(&id));
        }
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.handle(&req, ctx)))
                .unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorCode::Internal,
                        format!("Internal error while handling {}", req.action),
                    ))
                });
        let queued = send && result.is_ok() && session.is_queued(&id);
        if queued {
            // Shown when it starts, after the answer it waits for.
            ctx.outbox
                .queued_waits(&id, started_note(&chat, &id, Some((conn, pid))));
            self.queued
                .push((id.clone(), chat.clone(), Some((conn, pid))));
        } else if send && !(result.is_ok() && session.is_in_flight(&id)) {
            ctx.outbox.mirror(&id, false);
            ctx.outbox.watch_turn(&id, None);
        }
        match result {
            Ok((reply, _)) => {
                if let Some(reply) = reply {
                    ctx.outbox.send(reply, Some(&id));
                }
                if policy == Policy::Change {
                    if req.action == "send" && session.is_in_flight(&id) {
                        note(ctx, &chat, "send", "started", (Some(conn), pid), Some(&id));
                        self.turns.push((id, chat, pid));
                    } else if !queued {
                        note(ctx, &chat, &req.action, "done", (Some(conn), pid), None);
                    }
                }
            }
            Err(e) => ctx.outbox.send_error(&e, Some(&id)),
        }
        self.follow(session);
    }
}

/// Whether guest `conn` of chat `chat` may send `req` now; rewrites the ids a
/// request names (a `cancel`'s target) into the guest's ids inside the server.
fn admit(
    session: &Session,
    req: &mut Request,
    conn: u64,
    chat: &ChatKey,
    policy: Policy,
) -> crate::error::Result<()> {
    if policy == Policy::Leave {
        return Ok(());
    }
    if policy == Policy::Refused {
        return Err(Error::new(
            ErrorCode::Locked,
            format!(
                "Chat {} is open in another bb7 process, which serves this one: `{}` would \
                 change that process's session; run it there",
                chat.id, req.action
            ),
        ));
    }
    if session.active_chat().map(|(k, _)| k).as_ref() != Some(chat) {
        return Err(Error::new(
            ErrorCode::Locked,
            format!(
                "Chat {} is no longer open in the bb7 process that held it; try again",
                chat.id
            ),
        ));
    }
    // A guest acts on the chat it was admitted to, nothing else: a chat action naming
    // another chat (`chat_rename`, `chat_pin`, `chat_archive`, …) and any `chat_id`
    // other than its own are refused.
    let named_id = if req.action.starts_with("chat_") {
        req.fields.get("id")
    } else {
        None
    };
    for named in [named_id, req.fields.get("chat_id")].into_iter().flatten() {
        if named.as_str() != Some(chat.id.as_str()) {
            return Err(Error::new(
                ErrorCode::Locked,
                format!(
                    "This connection serves chat {} only; act on other chats in their own \
                     process",
                    chat.id
                ),
            ));
        }
    }
    // Following the event trace is the holder's own session state.
    if req.action == "events_get" && req.fields.get("follow").is_some_and(|f| !f.is_null()) {
        return Err(Error::new(
            ErrorCode::Locked,
            "A guest may read a chat's events but not change the holder's event follow",
        ));
    }
    if req.action == "cancel"
        && let Some(obj) = req.fields.as_object_mut()
        && let Some(target) = obj.get("target_request_id")
    {
        let own = match target {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        obj.insert(
            "target_request_id".into(),
            serde_json::Value::String(guest_id(conn, Some(&own))),
        );
    }
    Ok(())
}

/// Lets this process's own client cancel a guest's turn it was shown: a `cancel`
/// whose `target_request_id` is a peer id (`peer:…`, from a `peer_change` note) names
/// the guest's request inside the server.
pub(super) fn own_request(req: &mut Request) {
    if req.action != "cancel" {
        return;
    }
    if let Some(obj) = req.fields.as_object_mut()
        && let Some(serde_json::Value::String(target)) = obj.get("target_request_id")
        && let Some(inside) = from_peer_id(target)
    {
        obj.insert(
            "target_request_id".into(),
            serde_json::Value::String(inside),
        );
    }
}

/// The `started` note of queued `send` request `id` on `chat`, sent as its turn starts:
/// for a guest's (`guest`: its connection and PID) to the holder's client and the
/// other watchers, for the holder client's own to the watchers.
fn started_note(
    chat: &ChatKey,
    id: &str,
    guest: Option<(u64, Option<u32>)>,
) -> Option<crate::protocol::outbox::StartedNote> {
    let (pid, peer) = match guest {
        Some((_, pid)) => (pid, peer_id(id)),
        None => (Some(std::process::id()), Some(holder_peer_id(Some(id)))),
    };
    let note = crate::protocol::Encoded::encode(&PeerChange {
        chat_id: chat.id.clone(),
        action: "send".to_owned(),
        status: "started".to_owned(),
        pid,
        peer_request_id: peer,
    })
    .ok()?;
    Some(crate::protocol::outbox::StartedNote {
        to_client: guest.map(|_| note.clone()),
        to_watchers: note,
        except: guest.map(|(conn, _)| conn),
    })
}

/// Writes a `peer_change` note on this process's own stream, and for the watchers but
/// the guest it is about (`who`: its connection and PID); `turn` is the guest's `send`
/// request (its id inside the server) whose messages are mirrored.
fn note(
    ctx: &Ctx,
    chat: &ChatKey,
    action: &str,
    status: &str,
    who: (Option<u64>, Option<u32>),
    turn: Option<&str>,
) {
    let (conn, pid) = who;
    ctx.outbox.emit(
        &PeerChange {
            chat_id: chat.id.clone(),
            action: action.to_owned(),
            status: status.to_owned(),
            pid,
            peer_request_id: turn.and_then(peer_id),
        },
        None,
    );
    super::viewer::to_watchers(
        ctx,
        &PeerChange {
            chat_id: chat.id.clone(),
            action: action.to_owned(),
            status: status.to_owned(),
            pid,
            peer_request_id: turn.and_then(peer_id),
        },
        conn,
    );
}
