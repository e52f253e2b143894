//! Replies about context and output files: contents, statuses, applies, estimates.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chat::model::ContextFile;
use crate::output::FileStatus;
use crate::text::invisible::InvisibleWarning;

reply_types! {
    /// `context_list`.
    ContextList<'a> = "context_list" {
        /// The chat's context entries.
        pub files: Cow<'a, [ContextFile]>,
    }

    /// `get_context_file`, `get_output_file`.
    FileContent<'a> = "file_content" {
        /// The path asked for.
        pub path: Cow<'a, str>,
        /// The snapshot or output text.
        pub content: Cow<'a, str>,
    }

    /// `context_attach`: the attachment stored.
    Attached<'a> = "attached" {
        /// Its context path, `{kind}:{name}` (what `context_remove` and
        /// `get_context_file` take).
        pub path: Cow<'a, str>,
        /// Its file id.
        pub version: Cow<'a, str>,
        /// Bytes of the text sent (LF line ends).
        pub bytes: usize,
        /// The text was longer than the cap (64 KiB) and was cut, with a note where.
        pub truncated: bool,
        /// Lines of the text holding invisible characters (zero-width, bidi
        /// controls, Tags), named for the user: docs/PROTOCOL.md "Invisible characters".
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub invisible_warnings: Vec<InvisibleWarning>,
    }

    /// `context_add`, `context_add_section`, `context_update`: the snapshot stored
    /// (`{"type":"ok"}`, with warnings when the text hides characters).
    #[derive(Default)]
    Added = "ok" {
        /// Lines of the text holding invisible characters (zero-width, bidi
        /// controls, Tags), named for the user: docs/PROTOCOL.md "Invisible characters".
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub invisible_warnings: Vec<InvisibleWarning>,
    }

    /// `get_diff_paths`.
    DiffPaths<'a> = "diff_paths" {
        /// The path asked for.
        pub path: Cow<'a, str>,
        /// The output copy, absolute.
        pub output_path: Cow<'a, Path>,
        /// The user's file, absolute.
        pub local_path: Cow<'a, Path>,
    }

    /// `diff_local_done`: how much of the output the local file now holds.
    MergedByHand<'a> = "ok" {
        /// `none`, `full` or `partial`.
        pub outcome: Cow<'a, str>,
    }

    /// `apply_file`, `apply_file_as`: what was written.
    Applied<'a> = "ok" {
        /// The file written.
        pub path: Cow<'a, str>,
        /// Its content (LF line ends, the disk file's final newline).
        pub content: Cow<'a, str>,
        /// The checkpoint of this apply (`null` when nothing changed on disk).
        pub checkpoint_id: Option<Cow<'a, str>>,
    }

    /// `get_file_statuses`: one row per context entry and per output file.
    FileStatusList<'a> = "file_statuses" {
        /// The rows (docs/PROTOCOL.md lists the fields).
        pub files: Cow<'a, [FileStatus]>,
    }

    /// `estimate_tokens`: the parts of the next request.
    TokenEstimate<'a> = "token_estimate" {
        /// The sum of the parts.
        pub total: usize,
        /// Context files.
        pub context_files: usize,
        /// Earlier messages.
        pub history: usize,
        /// Instruction files.
        pub instructions: usize,
        /// The system prompt.
        pub system_prompt: usize,
        /// The unsent draft.
        pub input_text: usize,
        /// Per context file.
        pub files: Cow<'a, [FileEstimate]>,
        /// Tokens of file versions the request still carries although a later version
        /// replaced them (a new chat with the same context would not send them).
        pub potential_savings: usize,
        /// Of `total`, the tokens a warm prompt cache serves (what the chat's previous
        /// request sent exactly so).
        #[serde(default)]
        pub cached_tokens: usize,
        /// Expected input cost of the next send in USD with the cache taken into
        /// account; `null` when the model's price is unknown.
        #[serde(default)]
        pub expected_cost: Option<f64>,
        /// USD spent today (local time, every project: `~/.bb7/usage.csv`); `null`
        /// without a user state directory (docs/PROTOCOL.md, "Extension: budgets").
        #[serde(default)]
        pub spent_today: Option<f64>,
        /// USD the chat's answers cost so far (`done`'s `chat_usage.cost`), for the
        /// same display.
        #[serde(default)]
        pub chat_cost: f64,
        /// The model's context window in tokens (`null`: unknown; docs/PROTOCOL.md,
        /// "Extension: context gauge").
        #[serde(default)]
        pub context_window: Option<u64>,
        /// `total` as a whole percent of `context_window`, rounded down; `null` when
        /// the window is unknown.
        #[serde(default)]
        pub context_percent: Option<u64>,
        /// The gauge as every front-end shows it: `~48k/200k (24%)` or
        /// `~48k (window unknown)`.
        #[serde(default)]
        pub context_gauge: String,
        /// `ok`, `warning` (from 80%), `full` (100%: a send is refused) or `unknown`.
        #[serde(default)]
        pub context_level: crate::tokens::gauge::Level,
    }
}

/// One file of an `estimate_tokens` reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEstimate {
    /// The context entry's path.
    pub path: String,
    /// Tokens of what is sent for it.
    pub tokens: usize,
    /// Whether it has pending output.
    pub has_output: bool,
    /// Tokens of the snapshot, when output is pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_tokens: Option<usize>,
    /// Tokens of the output, when pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<usize>,
    /// A section's first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// A section's last line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
}
