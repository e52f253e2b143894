//! `bb7 export` and `bb7 import` (docs/PROTOCOL.md, "Extension: export and import"):
//! a chat as Markdown (as `bb7 show` renders it) or as one JSON document holding its
//! `chat.json`, its context snapshots (`context/…`) and its outputs (`output/…`), which
//! `bb7 import` reads back into a new chat. Likely secrets are replaced with
//! `[REDACTED:kind]` (`crate::text::redact`): by default in Markdown, on request in
//! JSON (a redacted JSON export still imports; the secrets are gone from it).

use std::path::{Path, PathBuf};

use super::session::{Session, active_in_index, project_store};
use crate::front::client::{Failure, Res};
use crate::front::export::{Export, FORMAT};
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::ChatView;
use crate::text::redact::redact;

/// Largest export `bb7 import` reads (bytes): a chat file is capped at far less, and
/// the snapshots of a large context fit.
const IMPORT_CAP: u64 = 512 * 1024 * 1024;

/// `--format` of `bb7 export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// The chat as `bb7 show` prints it.
    #[default]
    Md,
    /// The chat, its context snapshots and outputs, for `bb7 import`.
    Json,
}

/// `bb7 export [--format md|json] [--redact|--no-redact] [CHAT]`: writes the export
/// to stdout and how many secrets were replaced to stderr. `redact`: `None` is the
/// format's default (on for Markdown, off for JSON).
pub(super) async fn export(
    s: &mut Session,
    format: Format,
    redact_it: Option<bool>,
    which: Option<String>,
) -> Res<()> {
    let previous = active_in_index(&s.root);
    let id = match &which {
        Some(w) => {
            let id = super::info::resolve_chat(s, w).await?;
            s.select(&id).await?;
            id
        }
        None => s.active().await?,
    };
    let text = match format {
        Format::Md => {
            let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
            super::info::markdown(&chat)
        }
        Format::Json => json_export(s, &id)?,
    };
    // The chat named on the command line is shown for this command only.
    if which.is_some()
        && let Some(p) = previous.filter(|p| *p != id)
    {
        let _ = s.select(&p).await;
    }
    let redact_it = redact_it.unwrap_or(format == Format::Md);
    let text = if redact_it {
        let (text, n) = redact(&text);
        eprintln!("bb7: redacted {n} likely secret(s) ([REDACTED:kind])");
        text
    } else {
        eprintln!("bb7: not redacted: the export holds the chat's text as it is");
        text
    };
    s.out(&text);
    Ok(())
}

/// The chat `id` as a JSON export (`crate::front::export`).
fn json_export(s: &Session, id: &str) -> Res<String> {
    let store = project_store(&s.root).ok_or_else(|| Failure::new("no bb7 project here"))?;
    crate::front::export::json(&store, id).map_err(Failure::new)
}

/// `bb7 import FILE`: a JSON export read back into a new chat of this project (a new
/// id; the name gets " (imported)"), made the active chat. Errors: the file is not an
/// export bb7 reads, or names a file outside `context/` and `output/`.
pub(super) async fn import(s: &mut Session, file: PathBuf) -> Res<()> {
    let path = s.cwd.join(&file);
    let bytes = crate::project::fsutil::read_regular_capped(&path, IMPORT_CAP)
        .map_err(|e| Failure::new(format!("cannot read {}: {e}", file.display())))?;
    let export: Export = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::new(format!("{} is not a bb7 export: {e}", file.display())))?;
    if export.bb7_export != FORMAT {
        return Err(Failure::new(format!(
            "{} is a bb7 export of format {}; this bb7 reads format {FORMAT}",
            file.display(),
            export.bb7_export
        )));
    }
    for rel in export.files.keys() {
        let inside = Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside || !(rel.starts_with("context/") || rel.starts_with("output/")) {
            return Err(Failure::new(format!(
                "{} names a file outside the chat's context and outputs: {rel}",
                file.display()
            )));
        }
    }
    let store = project_store(&s.root)
        .ok_or_else(|| Failure::new("no bb7 project here: run `bb7 init` first"))?;
    let io = |e: crate::error::Error| Failure::new(e.message);
    let name = format!("{} (imported)", export.chat.name);
    let (fresh, lock) = store
        .create_locked(Some(&name), &export.chat.model)
        .map_err(io)?;
    for (rel, text) in &export.files {
        let target = store.chat_path(&fresh.id, rel).map_err(io)?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Failure::new(format!("cannot write {rel}: {e}")))?;
        }
        crate::project::fsutil::write_atomic(&target, text.as_bytes()).map_err(io)?;
    }
    let mut chat = export.chat;
    chat.id = fresh.id.clone();
    chat.name = name;
    chat.created = fresh.created;
    store.save(&chat).map_err(io)?;
    crate::project::flush_queue::flush_now();
    drop(lock);
    eprintln!(
        "bb7: imported {} message(s) and {} file(s) as chat {}",
        chat.messages.len(),
        export.files.len(),
        chat.id
    );
    s.out(&format!("{}\n", chat.id));
    Ok(())
}
