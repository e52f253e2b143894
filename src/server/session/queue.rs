//! Messages queued while their chat streams (docs/PROTOCOL.md, "Extension: queue while
//! streaming"): a `send` with `queue: true` during a turn of the same chat is answered
//! `queued` and started, under its own request id, when that turn ends. When the turn
//! ended in an error (or was cancelled, or its edits failed) the queue waits, with a
//! note, for the user to see it: the next turn of that chat that ends well starts it,
//! and `cancel` with a queued request's id drops that message.

use super::{Call, Ctx, Session, chat_key};
use crate::chat::ChatKey;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::params;
use crate::protocol::replies::Queued;

/// What the message waits for after an answer that did not end well.
const WAIT_NOTE: &str = "The answer before it ended in an error or was cancelled: this message waits. It is sent after the chat's next answer that ends well; cancel it with its request id.";

impl Session {
    /// Queues `args` when it asks to be queued and its chat streams; `Ok(true)` when
    /// it was (the `queued` reply is sent). Errors: the chat named cannot be found.
    pub(super) fn queue_send(&mut self, args: &params::Send, call: &Call<'_>) -> Result<bool> {
        if !args.queue {
            return Ok(false);
        }
        let key = match (
            args.chat_id.as_deref().filter(|c| !c.is_empty()),
            &self.active,
        ) {
            (None, Some(a)) => chat_key(&a.store, &a.chat.id),
            (None, None) => return Ok(false),
            (Some(id), _) => chat_key(&self.find_store(id)?, id),
        };
        if !self.is_busy(&key) {
            return Ok(false);
        }
        let rid = call.request_id.unwrap_or_default().to_owned();
        let queue = self.queues.chats.entry(key.clone()).or_default();
        queue.push_back((args.clone(), rid.clone()));
        let reply = Queued {
            position: queue.len(),
            chat_id: key.id.clone(),
            note: None,
        };
        call.ctx.outbox.emit(&reply, Some(&rid));
        Ok(true)
    }

    /// After a background result: starts the next queued message of every chat that
    /// no longer streams, or, when its last answer did not end well, tells the queued
    /// messages that they wait.
    pub(in crate::server) fn start_queued(&mut self, ctx: &Ctx) {
        let idle: Vec<ChatKey> = self
            .queues
            .chats
            .keys()
            .filter(|k| !self.is_busy(k))
            .cloned()
            .collect();
        for key in idle {
            let ended_badly = self.last_answer_failed(&key);
            if ended_badly {
                if self.queues.waiting.insert(key.clone()) {
                    let queue = self.queues.chats.get(&key).cloned().unwrap_or_default();
                    for (i, (_, rid)) in queue.iter().enumerate() {
                        let reply = Queued {
                            position: i + 1,
                            chat_id: key.id.clone(),
                            note: Some(WAIT_NOTE.to_owned()),
                        };
                        ctx.outbox.emit(&reply, Some(rid));
                    }
                }
                continue;
            }
            self.queues.waiting.remove(&key);
            let Some(queue) = self.queues.chats.get_mut(&key) else {
                continue;
            };
            let Some((mut args, rid)) = queue.pop_front() else {
                continue;
            };
            if queue.is_empty() {
                self.queues.chats.remove(&key);
            }
            args.queue = false;
            args.chat_id = Some(key.id.clone());
            let call = Call {
                ctx,
                request_id: Some(&rid),
            };
            // Watchers of a held chat see the queued turn from its first message.
            ctx.outbox.queued_starts(&rid);
            if let Err(e) = self.send(args, &call) {
                ctx.outbox.send_error(&e, Some(&rid));
            }
        }
    }

    /// `cancel` of a queued message: drops it and ends its request with the error a
    /// cancelled send ends with. `false` when `rid` is not queued.
    pub(super) fn cancel_queued(&mut self, rid: &str) -> bool {
        let mut found = false;
        for queue in self.queues.chats.values_mut() {
            let before = queue.len();
            queue.retain(|(_, r)| r != rid);
            found |= queue.len() != before;
        }
        self.queues.chats.retain(|_, q| !q.is_empty());
        if found && let Some(outbox) = &self.outbox {
            outbox.queued_dropped(rid);
            let e = Error::new(ErrorCode::Cancelled, "Response aborted by user.");
            outbox.send_error(&e, Some(rid));
        }
        found
    }

    /// Whether `send` request `rid` waits in a chat's queue.
    pub(in crate::server) fn is_queued(&self, rid: &str) -> bool {
        self.queues
            .chats
            .values()
            .any(|q| q.iter().any(|(_, r)| r == rid))
    }

    /// Whether the chat's last turn ended in an error, a cancel or edits that could
    /// not be applied: its last message is the system note such an end adds, or an
    /// answer with a `diff_error`.
    fn last_answer_failed(&self, key: &ChatKey) -> bool {
        let loaded;
        let chat = match &self.active {
            Some(a) if a.chat.id == key.id && a.store.global == key.global => &a.chat,
            _ => match self.store_for(key).and_then(|s| s.load(&key.id)) {
                Ok(c) => {
                    loaded = c;
                    &loaded
                }
                Err(_) => return true,
            },
        };
        chat.messages
            .last()
            .is_none_or(|m| m.role == "system" || m.diff_error.is_some())
    }
}
