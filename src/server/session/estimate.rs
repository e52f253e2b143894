//! `estimate_tokens` off the request loop (invariant 15 in docs/ARCHITECTURE.md). The
//! handler takes what an estimate reads from the session (a copy of the chat, the system
//! text, the instruction files) into a [`Job`]; a blocking thread lays the next request
//! out as a send would and counts it, and answers with the request's id. Laying out
//! reads every context file and the prompt ledger (about 20 ms for 8 MB), so its
//! results are kept ([`LayoutCache`]) and reused while nothing they were made from
//! changed: the chat (its messages and context entries), the system text, and each
//! snapshot, output and the ledger as the file system describes them (size, mtime,
//! inode). A client asking again as the user types then pays for the draft only.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::chat::model::Chat;
use crate::chat::store::ChatStore;
use crate::context::ChatFiles;
use crate::error::{Error, ErrorCode, Result};
use crate::output;
use crate::prompt::assemble::{self, Instructions, Prompt};
use crate::prompt::cache::Pricing;
use crate::prompt::files::next_request;
use crate::prompt::ledger;
use crate::protocol::outbox::Outbox;
use crate::protocol::replies::{FileEstimate, TokenEstimate};
use crate::tokens;

/// Everything an estimate reads, copied out of the session on the request loop.
pub(super) struct Job {
    /// The chat's store.
    pub store: ChatStore,
    /// A copy of the chat as it was when the request arrived.
    pub chat: Chat,
    /// The project root.
    pub root: PathBuf,
    /// The system prompt alone (`system_prompt` of the reply).
    pub system_base: String,
    /// The instruction files (`instructions`).
    pub instructions: Vec<Instructions>,
    /// The system text of the next request, instruction files included.
    pub system: String,
    /// The unsent draft.
    pub input: String,
    /// The saved model list (`~/.bb7/models.json`), for the prices.
    pub models: Option<PathBuf>,
    /// Whether the model is sent cache breakpoints (cache writes are billed); `None`
    /// when the config's `prompt_cache` is invalid (no cost then).
    pub cache_writes: Option<bool>,
    /// The model's context window, when known (`Session::context_window_of`).
    pub window: Option<u64>,
    /// The user's state directory (`~/.bb7`), for today's spend; `None` without one.
    pub state: Option<PathBuf>,
    /// USD the chat's answers cost so far (`Session::chat_spent`).
    pub chat_cost: f64,
}

/// What laying out the next request gave, without the draft: the laid-out context
/// part of an estimate.
#[derive(Debug, Clone)]
struct Layout {
    /// Tokens of every file version the request carries.
    context_files: usize,
    /// Tokens a new chat with the same context would not send.
    potential_savings: usize,
    /// Bytes the chat's previous request sent exactly so.
    reused_bytes: usize,
    /// Bytes of the request before the new message.
    before_message: usize,
    /// The file summary shown with the new message.
    summary: String,
}

/// The layout of the chat estimated last, with the fingerprint of what it was made
/// from. One entry: an editor shows one chat at a time. Estimates run one at a time
/// under its lock, so a burst of them reads the context once.
#[derive(Default)]
pub(super) struct LayoutCache {
    entry: Mutex<Option<(u64, Arc<Layout>)>>,
    /// Estimates spawned and not yet answered, each holding a copy of its chat.
    waiting: AtomicUsize,
}

/// How many estimates may wait at once; beyond that a request is answered `busy`
/// at once, so a client that floods `estimate_tokens` cannot pile up copies of the
/// chat (or blocking threads). An editor asks again as the user types, one at a time.
pub(super) const MAX_WAITING: usize = 8;

impl LayoutCache {
    /// Errors with code `busy` when [`MAX_WAITING`] estimates are waiting.
    pub(super) fn admit(&self) -> Result<()> {
        if self.waiting.load(Ordering::Acquire) >= MAX_WAITING {
            return Err(Error::new(
                ErrorCode::Busy,
                "Too many token estimates are waiting; ask again when one is answered",
            ));
        }
        Ok(())
    }
}

impl Job {
    /// Runs the estimate on a blocking thread and sends its reply, or its error, with
    /// `request_id`; a bug in it answers `internal` (invariant 2).
    pub(super) fn spawn(self, cache: Arc<LayoutCache>, outbox: Outbox, request_id: Option<String>) {
        cache.waiting.fetch_add(1, Ordering::AcqRel);
        tokio::task::spawn_blocking(move || {
            let run = std::panic::AssertUnwindSafe(|| self.run(&cache));
            let reply = std::panic::catch_unwind(run).unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorCode::Internal,
                    "Internal error while estimating tokens",
                ))
            });
            cache.waiting.fetch_sub(1, Ordering::AcqRel);
            match reply {
                Ok(r) => outbox.emit(&r, request_id.as_deref()),
                Err(e) => outbox.send_error(&e, request_id.as_deref()),
            }
        });
    }

    /// The estimate. Errors: the statuses of the context files cannot be read.
    fn run(&self, cache: &LayoutCache) -> Result<TokenEstimate<'static>> {
        let system_prompt = tokens::count_memo(&self.system_base);
        let instructions: usize = self
            .instructions
            .iter()
            .map(|i| tokens::count_memo(&i.text))
            .sum();
        let history = tokens::count_memo(&assemble::history_text(&self.chat.messages));
        let files = ChatFiles::new(&self.store, &self.chat.id);
        // Counts the background counter has not made yet are made here in parallel.
        let snapshots: Vec<std::path::PathBuf> = self
            .chat
            .context_files
            .iter()
            .filter_map(|cf| files.snapshot_path(cf).ok())
            .collect();
        crate::filecache::warm_tokens(self.store.base(), &snapshots);
        // The statuses hold every count, cached per file version.
        let statuses = output::statuses(&self.chat, files, &self.root, false)?;
        let context_total: usize = statuses.iter().map(|r| r.tokens).sum();
        let rows: Vec<FileEstimate> = statuses
            .into_iter()
            .map(|r| {
                let section = r.start_line.zip(r.end_line);
                FileEstimate {
                    path: r.path,
                    tokens: r.tokens,
                    has_output: r.has_output,
                    original_tokens: r.original_tokens,
                    output_tokens: r.output_tokens,
                    start_line: section.map(|(s, _)| s),
                    end_line: section.map(|(_, e)| e),
                }
            })
            .collect();
        let input_text = tokens::count(&self.input);
        let layout = self.layout(cache);
        let context_files = layout.as_ref().map_or(context_total, |l| l.context_files);
        let total = system_prompt + instructions + history + context_files + input_text;
        // What a warm cache serves: the share of the request's bytes the previous
        // request sent exactly so.
        let cached_tokens = layout.as_ref().map_or(0, |l| {
            let bytes = l.before_message + assemble::message_bytes(&l.summary, &self.input);
            (total as f64 * l.reused_bytes as f64 / bytes.max(1) as f64).round() as usize
        });
        let expected_cost = match (&layout, self.pricing(), self.cache_writes) {
            (Some(_), Some(p), Some(writes)) => Some(p.input_cost(total, cached_tokens, writes)),
            _ => None,
        };
        let gauge = crate::tokens::gauge::Gauge::new(total as u64, self.window);
        Ok(TokenEstimate {
            total,
            context_window: gauge.window,
            context_percent: gauge.percent(),
            context_gauge: gauge.text(),
            context_level: gauge.level(),
            context_files,
            history,
            instructions,
            system_prompt,
            input_text,
            files: rows.into(),
            potential_savings: layout.as_ref().map_or(0, |l| l.potential_savings),
            cached_tokens,
            expected_cost,
            chat_cost: self.chat_cost,
            spent_today: self.state.as_deref().map(|s| {
                crate::project::usage_index::spent_on(s, chrono::Local::now().date_naive())
            }),
        })
    }

    /// The layout of the next request: the cached one while its fingerprint holds,
    /// else laid out anew. `None` when a file cannot be read (the estimate then counts
    /// the statuses).
    fn layout(&self, cache: &LayoutCache) -> Option<Arc<Layout>> {
        let mut entry = cache.entry.lock().unwrap_or_else(|p| p.into_inner());
        let print = self.fingerprint();
        if let (Some(print), Some((held, layout))) = (print, entry.as_ref())
            && print == *held
        {
            return Some(layout.clone());
        }
        let (prompt, _) = next_request(&self.store, &self.chat, &self.system, "").ok()?;
        let layout = Arc::new(measure(&prompt, self.store.base()));
        *entry = print.map(|p| (p, layout.clone()));
        Some(layout)
    }

    /// A hash of everything the layout is made from; `None` when a folder of the chat
    /// cannot be listed (nothing is cached then).
    fn fingerprint(&self) -> Option<u64> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.store.global, &self.chat.id, &self.system).hash(&mut h);
        serde_json::to_writer(HashWriter(&mut h), &self.chat.messages).ok()?;
        serde_json::to_writer(HashWriter(&mut h), &self.chat.context_files).ok()?;
        let files = ChatFiles::new(&self.store, &self.chat.id);
        for cf in &self.chat.context_files {
            stat(&files.snapshot_path(cf).ok()?, &mut h);
            if let Ok(Some(p)) = files.reference_snapshot_path(cf) {
                stat(&p, &mut h);
            }
        }
        for rel in files.list_outputs().ok()? {
            rel.hash(&mut h);
            stat(&files.output_path(&rel).ok()?, &mut h);
        }
        stat(
            &self
                .store
                .cache_path(&self.chat.id, ledger::FILE_NAME)
                .ok()?,
            &mut h,
        );
        // A ledger saved here is written by the flush thread later: the count of saves
        // changes at once.
        ledger::saves().hash(&mut h);
        Some(h.finish())
    }

    /// The model's prices from the saved model list, if it lists the model.
    fn pricing(&self) -> Option<Pricing> {
        let list = crate::llm::models::ModelsCache::load(self.models.as_deref()?)?;
        let row = list.models.iter().find(|m| m.id == self.chat.model)?;
        Pricing::from_prices(&row.pricing)
    }
}

/// The layout's counts of a request laid out for an empty draft. A file shown whole
/// takes the count the file cache already holds for its text (made in the background
/// when it was added, or by the statuses just before), so no text is counted twice.
fn measure(prompt: &Prompt, base: &Path) -> Layout {
    let ledger = &prompt.ledger;
    let context_files = ledger
        .files()
        .map(|f| match (&f.diff, &f.image) {
            (_, Some(image)) => image.tokens,
            (Some(d), None) => tokens::count_memo(&d.text),
            (None, None) => {
                let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(f.text.as_bytes()));
                crate::filecache::known_tokens(base, &sha)
                    .unwrap_or_else(|| tokens::count_cached(&f.file_id, &f.text))
            }
        })
        .sum();
    let potential_savings = ledger
        .repeated()
        .into_iter()
        .map(|(carried, latest)| {
            let carried: usize = carried.iter().map(|t| tokens::count_memo(t)).sum();
            carried.saturating_sub(tokens::count_memo(latest))
        })
        .sum();
    let summary = prompt.summary().to_owned();
    Layout {
        context_files,
        potential_savings,
        reused_bytes: prompt.reused_bytes,
        before_message: prompt.total_bytes() - assemble::message_bytes(&summary, ""),
        summary,
    }
}

/// Feeds what the file system says of `path` (kind, size, mtime, inode) into `h`; a
/// path that cannot be looked at feeds the error's kind.
fn stat(path: &Path, h: &mut impl Hasher) {
    use std::os::unix::fs::MetadataExt;
    match path.symlink_metadata() {
        Ok(m) => (
            m.file_type().is_file(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ino(),
        )
            .hash(h),
        Err(e) => e.kind().hash(h),
    }
}

/// Hashes what is written to it, so a value is fingerprinted without being copied.
struct HashWriter<'a, H: Hasher>(&'a mut H);

impl<H: Hasher> std::io::Write for HashWriter<'_, H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
