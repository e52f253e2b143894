//! The files a request shows: every context entry with its snapshot, a writable
//! file's pending output in its place, and outputs of files the model created. Read on
//! two threads, since with hundreds of files the reads are most of the time before the
//! request can go out; a snapshot the chat's earlier requests already showed in its
//! version is not read at all (its text is in the prompt ledger). [`next_request`]
//! lays the request out from them and the chat's prompt ledger.

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, SnapshotRef};
use crate::chat::store::ChatStore;
use crate::context::{ChatFiles, find_file};
use crate::error::Result;
use crate::prompt::assemble::{self, ChatState, Prompt, PromptFile};
use crate::prompt::ledger::{self, Ledger};
use crate::prompt::ledger_snapshots;

/// The next request of `chat` laid out (`assemble::assemble`) with `system` as its
/// system text and `content` as the new message, and the context snapshot to record on
/// that message. Reads the context files and the chat's prompt ledger; it touches no
/// session state, so it may run off the request loop. Errors: a file that cannot be
/// read.
pub fn next_request(
    store: &ChatStore,
    chat: &Chat,
    system: &str,
    content: &str,
) -> Result<(Prompt, Vec<SnapshotRef>)> {
    let path = store.cache_path(&chat.id, ledger::FILE_NAME)?;
    // A refusal is kept for the next send's notice (`ledger_snapshots::take_refused`).
    let check = |l: &Ledger, strict: bool| {
        let files = ChatFiles::new(store, &chat.id);
        let differing = ledger_snapshots::differing(l, chat, files, strict);
        if !differing.is_empty() {
            ledger_snapshots::record_refused(&path, differing.clone(), strict);
        }
        differing
    };
    let mut ledger = Ledger::load(&path, &chat.id, &check);
    if !ledger.fits(&chat.messages, &chat.context_files) {
        ledger = Default::default();
    }
    let last_shown = ledger.last_shown(&chat.messages);
    let shown = |cf: &ContextFile| {
        last_shown.get(&(cf.path.as_str(), cf.start_line, cf.end_line))
            == Some(&cf.version.as_str())
    };
    let (mut files, snapshot) = prompt_files(chat, ChatFiles::new(store, &chat.id), &shown)?;
    if store.global {
        // A global chat belongs to no project: the model sees no writable file.
        for f in &mut files {
            f.writable = false;
        }
    }
    let prompt = assemble::assemble(ChatState {
        system,
        history: &chat.messages,
        files: &files,
        ledger: &ledger,
        current: content,
    });
    Ok((prompt, snapshot))
}

/// Files for the prompt, and the context snapshot recorded on the user message. An
/// entry without output for which `shown` is true (an earlier request showed this
/// version, so the layout takes its text from the ledger) is not read: its
/// `content` is empty. Errors: a snapshot or output that cannot be read.
pub fn prompt_files(
    chat: &Chat,
    files: ChatFiles,
    shown: &(dyn Fn(&ContextFile) -> bool + Sync),
) -> Result<(Vec<PromptFile>, Vec<SnapshotRef>)> {
    let mut out = Vec::new();
    let mut snapshot = Vec::new();
    // One directory walk tells which files have output, instead of a failed open per
    // context file.
    let outputs = files.list_outputs()?;
    let has_output: std::collections::HashSet<&str> = outputs.iter().map(String::as_str).collect();
    let writable_of = |cf: &ContextFile| !cf.readonly && !cf.external && !cf.is_section();
    let read = |cf: &ContextFile| -> Result<(String, Option<String>)> {
        let output = writable_of(cf) && has_output.contains(cf.path.as_str());
        if !output && shown(cf) {
            return Ok((String::new(), None));
        }
        let snap = files.read_snapshot(cf)?;
        let output = if output {
            files.read_output(&cf.path)?
        } else {
            None
        };
        Ok((snap, output))
    };
    // Two threads read the context: with hundreds of files the reads (open, read,
    // UTF-8 check) are most of the time before the request can go out.
    let half = chat.context_files.len().div_ceil(2);
    let (front, back) = chat.context_files.split_at(half);
    let texts: Vec<Result<(String, Option<String>)>> = std::thread::scope(|scope| {
        let other = scope.spawn(|| back.iter().map(read).collect::<Vec<_>>());
        let mut texts: Vec<_> = front.iter().map(read).collect();
        match other.join() {
            Ok(rest) => texts.extend(rest),
            Err(_) => texts.extend(back.iter().map(read)),
        }
        texts
    });
    for (cf, text) in chat.context_files.iter().zip(texts) {
        // A resource its MCP server marks for the user alone is kept and shown in the
        // context list, never sent (docs/PROTOCOL.md "MCP resources and prompts").
        if crate::context::attach::is_user_only(cf) {
            continue;
        }
        snapshot.push(SnapshotRef {
            path: cf.path.clone(),
            file_id: cf.version.clone(),
            start_line: cf.start_line,
            end_line: cf.end_line,
            kind: cf.kind,
        });
        let (snap, output) = text?;
        let writable = writable_of(cf);
        let (content, file_id, snapshot) = match output {
            Some(o) if o != snap => {
                let id = ids::file_version(&cf.path, &o);
                (o, id, Some(snap))
            }
            _ => (snap, cf.version.clone(), None),
        };
        out.push(PromptFile {
            entry: cf.clone(),
            content,
            file_id,
            pending_output: snapshot.is_some(),
            snapshot,
            writable,
        });
    }
    for rel in outputs {
        if find_file(chat, &rel).is_some() {
            continue;
        }
        let content = files.read_output(&rel)?.unwrap_or_default();
        out.push(PromptFile {
            entry: ContextFile {
                path: rel.clone(),
                readonly: false,
                external: false,
                version: ids::file_version(&rel, &content),
                start_line: None,
                end_line: None,
                kind: None,
                meta: None,
            },
            file_id: ids::file_version(&rel, &content),
            content,
            pending_output: true,
            snapshot: None,
            writable: true,
        });
    }
    Ok((out, snapshot))
}
