//! What a send tells the user before the answer streams, as `notice` stream messages
//! (docs/PROTOCOL.md "Notices of a send"): the external context entries the prompt
//! leaves out because the user never added them in this project (README "Security":
//! external context), and the invisible characters (`text::invisible`) in what the
//! request carries — the context files and the instruction files. A check at add time
//! misses a file added by an older bb7, a snapshot refreshed since, or a chat that came
//! with a clone; the send is the last moment the user can still stop it.

use super::Session;
use crate::chat::model::Chat;
use crate::chat::store::ChatStore;
use crate::context::ChatFiles;
use crate::project::external_grants::ExternalGrants;
use crate::prompt::assemble::Instructions;
use crate::protocol::events::TurnMessage;
use crate::protocol::outbox::Outbox;
use crate::text::invisible::{self, InvisibleWarning, MAX_WARNINGS};

/// `kind` of the notice naming external entries left out of the request.
pub(super) const KIND_EXTERNAL: &str = "external_left_out";
/// `kind` of the notice naming invisible characters in what the request carries.
pub(super) const KIND_INVISIBLE: &str = "invisible";
/// `kind` of the notice saying the chat's prompt ledger was not used: a text in it is
/// not the snapshot bb7 holds for its version (`prompt::ledger_snapshots`).
pub(super) const KIND_LEDGER: &str = "ledger_refused";

impl Session {
    /// The external entries of `chat` the prompt leaves out (paths, in context order):
    /// external, not in a global chat, and absent from the user's record of adds in
    /// this project (`project::external_grants`).
    pub(super) fn left_out_external(&self, store: &ChatStore, chat: &Chat) -> Vec<String> {
        if store.global || !chat.context_files.iter().any(|cf| cf.external) {
            return Vec::new();
        }
        let grants = self.dirs.as_ref().map(|d| ExternalGrants::load(&d.state));
        let root = self.root.as_deref();
        let mut out: Vec<String> = Vec::new();
        for cf in chat.context_files.iter().filter(|cf| cf.external) {
            let granted = matches!((&grants, root), (Some(g), Some(r)) if g.allows(r, &cf.path));
            if !granted && !out.contains(&cf.path) {
                out.push(cf.path.clone());
            }
        }
        out
    }

    /// Emits the send's notices on the stream of `request_id`, each once: the
    /// external entries left out of it, then the invisible characters of the context
    /// entries it carries (`chat` as the send found it) and of `instructions`. A
    /// snapshot that cannot be read is skipped here: the prompt itself was built
    /// from it already.
    pub(super) fn send_notices(
        &self,
        store: &ChatStore,
        chat: &Chat,
        instructions: &[Instructions],
        outbox: &Outbox,
        request_id: &str,
    ) {
        let left_out = self.left_out_external(store, chat);
        if !left_out.is_empty() {
            let notice = TurnMessage::Notice {
                kind: KIND_EXTERNAL.to_owned(),
                message: left_out_message(&left_out),
                chat_id: chat.id.clone(),
            };
            outbox.emit(&notice, Some(request_id));
        }
        let refused = store
            .cache_path(&chat.id, crate::prompt::ledger::FILE_NAME)
            .ok()
            .and_then(|p| crate::prompt::ledger_snapshots::take_refused(&p));
        if let Some(refusal) = refused {
            let notice = TurnMessage::Notice {
                kind: KIND_LEDGER.to_owned(),
                message: ledger_message(&refusal),
                chat_id: chat.id.clone(),
            };
            outbox.emit(&notice, Some(request_id));
        }
        let journal = store
            .chat_dir(&chat.id)
            .ok()
            .and_then(|d| crate::chat::journal_skips::take(&d));
        if let Some(note) = journal {
            let notice = TurnMessage::Notice {
                kind: note.kind.to_owned(),
                message: note.message,
                chat_id: chat.id.clone(),
            };
            outbox.emit(&notice, Some(request_id));
        }
        let warnings = carried_warnings(store, chat, &left_out, instructions);
        if !warnings.is_empty() {
            let notice = TurnMessage::Notice {
                kind: KIND_INVISIBLE.to_owned(),
                message: invisible_message(&warnings),
                chat_id: chat.id.clone(),
            };
            outbox.emit(&notice, Some(request_id));
        }
    }
}

/// The notice for the external entries left out: each path and the reason.
fn left_out_message(paths: &[String]) -> String {
    let (noun, verb) = if paths.len() == 1 {
        ("entry", "is")
    } else {
        ("entries", "are")
    };
    format!(
        "External context {noun} {} {verb} left out of this send: not added in this \
         project on this machine (a copied or cloned chat can list files outside the \
         project); add {} again to send {}",
        paths.join(", "),
        if paths.len() == 1 { "it" } else { "them" },
        if paths.len() == 1 { "it" } else { "them" },
    )
}

/// The notice for a refused ledger: what differed, and why it was checked so.
fn ledger_message(r: &crate::prompt::ledger_snapshots::Refusal) -> String {
    let what = r.paths.join(", ");
    if r.unrecorded {
        format!(
            "The chat's saved prompt (prompt.json) was not used: it is not the one bb7 \
             last wrote for this chat on this machine (~/.bb7/prompt_ledgers.json; a \
             copied or cloned chat, a hand edit), and its text of {what} is not one bb7 \
             still holds; this send shows the snapshots instead (one uncached request)"
        )
    } else {
        format!(
            "The chat's saved prompt (prompt.json) was not used: its text of {what} is not \
             the snapshot bb7 holds for that version (edited by hand, or planted with the \
             chat); this send shows the snapshots instead"
        )
    }
}

/// The notice for invisible characters: `path:line: code points` for each line, at
/// most [`MAX_WARNINGS`], and how many more were not named.
fn invisible_message(warnings: &[InvisibleWarning]) -> String {
    let named: Vec<&str> = warnings
        .iter()
        .take(MAX_WARNINGS)
        .map(|w| w.message.as_str())
        .collect();
    let more = warnings.len().saturating_sub(MAX_WARNINGS);
    let tail = if more > 0 {
        format!("; and {more} more lines")
    } else {
        String::new()
    };
    format!(
        "This send carries invisible characters the model reads and you may not see: {}{tail}",
        named.join("; ")
    )
}

/// The warnings of every text the send carries: the context entries of `chat` other
/// than `left_out` (sections numbered as their file), then the instruction files.
fn carried_warnings(
    store: &ChatStore,
    chat: &Chat,
    left_out: &[String],
    instructions: &[Instructions],
) -> Vec<InvisibleWarning> {
    let files = ChatFiles::new(store, &chat.id);
    let mut out = Vec::new();
    for cf in &chat.context_files {
        if out.len() > MAX_WARNINGS {
            break;
        }
        let is_image = cf
            .kind
            .is_some_and(|k| k == crate::chat::model::AttachKind::Image);
        if is_image || (cf.external && left_out.contains(&cf.path)) {
            continue;
        }
        // The content hash from the file's stamp, so a snapshot an earlier send
        // checked is neither read nor scanned again (`send_scans`).
        let sha = files
            .snapshot_path(cf)
            .ok()
            .and_then(|p| crate::filecache::file_facts(store.base(), &p, false).ok())
            .flatten()
            .map(|f| f.sha256);
        let read = || files.read_snapshot(cf).ok();
        let Some(found) = super::send_scans::found_in(sha.as_deref(), read) else {
            continue;
        };
        let first = cf.start_line.map_or(1, |s| usize::try_from(s).unwrap_or(1));
        out.extend(invisible::warnings_for(&cf.path, &found, |l| l + first - 1));
    }
    for i in instructions {
        out.extend(invisible::warnings(&i.source, &i.text));
    }
    out
}
