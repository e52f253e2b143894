//! Replies about review, checkpoints and rollback.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::apply::checkpoint::{Checkpoint, CheckpointSummary};

reply_types! {
    /// `review_get`: files with pending output and their hunks.
    Review<'a> = "review" {
        /// One entry per file.
        pub files: Cow<'a, [ReviewFile]>,
    }
}

/// One file of a `review` reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewFile {
    /// Project-relative path.
    pub path: String,
    /// The status as `get_file_statuses` gives it (`output::status_of`).
    pub status: crate::output::Status,
    /// `sha256:…` of the file on disk, `null` when it does not exist.
    pub disk_hash: Option<String>,
    /// The context version the model saw (`null` for a new file).
    pub base_version: Option<String>,
    /// The output's version; `null` when the output itself cannot be read.
    pub output_version: Option<String>,
    /// `pending`, or `partial` once some hunks are decided.
    pub review_state: ReviewState,
    /// Decided hunks first, then pending ones; none when the output cannot be read.
    pub hunks: Vec<crate::review::HunkView>,
    /// Why the file cannot be reviewed (its output over the 64 MiB read limit or not a
    /// regular file, its snapshot unreadable, the file on disk not UTF-8 text or not
    /// readable), with how to go on where bb7 knows it (reject the output with
    /// `output_delete`); absent when the file is reviewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
}

/// Whether any hunk of a file under review is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// No hunk decided yet.
    Pending,
    /// Some hunks accepted or rejected, others pending.
    Partial,
}

reply_types! {
    /// `review_apply`: what happened to each hunk.
    ReviewApplied<'a> = "review_applied" {
        /// The file.
        pub path: Cow<'a, str>,
        /// Hunks written to the file.
        pub applied: Cow<'a, [String]>,
        /// Hunks dropped from the output.
        pub rejected: Cow<'a, [String]>,
        /// Hunks still pending.
        pub pending: Cow<'a, [String]>,
        /// Accepted hunks that overlap the user's edits and were not written.
        pub conflicts: Cow<'a, [String]>,
        /// The checkpoint, when the file changed.
        pub checkpoint_id: Option<Cow<'a, str>>,
        /// The file's content now.
        pub content: Cow<'a, str>,
    }

    /// `checkpoint_list`.
    Checkpoints<'a> = "checkpoints" {
        /// Summaries (files without contents), oldest first.
        pub checkpoints: Vec<CheckpointSummary<'a>>,
    }

    /// `checkpoint_get`: one checkpoint with its files' contents, its fields at the top
    /// level of the reply.
    CheckpointView<'a> = "checkpoint" {
        /// The checkpoint.
        #[serde(flatten)]
        pub checkpoint: Cow<'a, Checkpoint>,
    }

    /// `checkpoint_diff3`: three versions of one file of a checkpoint.
    Diff3<'a> = "diff3" {
        /// Project-relative path.
        pub path: Cow<'a, str>,
        /// Before the checkpoint (`null`: the file did not exist).
        pub checkpoint_base: Option<Cow<'a, str>>,
        /// On disk now (`null`: it does not exist).
        pub current: Option<Cow<'a, str>>,
        /// What the model proposed (or, for older checkpoints, what was written).
        pub proposed: Option<Cow<'a, str>>,
    }

    /// `checkpoint_rollback`.
    RollbackResult<'a> = "rollback_result" {
        /// The checkpoint the rollback itself made (`null` when nothing changed).
        pub checkpoint_id: Option<Cow<'a, str>>,
        /// One row per file of the checkpoint.
        pub files: Cow<'a, [RollbackFile]>,
    }
}

/// One file of a `rollback_result` reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RollbackFile {
    /// Project-relative path.
    pub path: String,
    /// Written back to its state before the checkpoint.
    pub restored: bool,
    /// Left alone because it changed since (see `reason`).
    pub conflict: bool,
    /// Why a file was left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
