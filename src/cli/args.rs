//! The subcommands of `bb7` and their arguments (`bb7 --help` shows these doc comments).

/// Retrieval tools for a chat (`bb7 ask --tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolsMode {
    /// No tools: the model sees only the context.
    Off,
    /// Ask on the terminal before each read (refused when stdin is not a terminal).
    Ask,
    /// Reads run without asking.
    Auto,
}

impl ToolsMode {
    /// The protocol's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolsMode::Off => "off",
            ToolsMode::Ask => "ask",
            ToolsMode::Auto => "auto",
        }
    }
}

/// The subcommands of `bb7`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Serve the line-delimited JSON protocol on stdin/stdout (the default when stdin
    /// is not a terminal).
    Serve,
    /// Serve the Agent Client Protocol (ACP v1) on stdin/stdout, for editors that run
    /// agents through it (Zed, JetBrains IDEs, Emacs agent-shell, codecompanion.nvim,
    /// avante.nvim); see the README.
    Acp {
        /// Ask for an OpenRouter API key on the terminal, store it in the config
        /// (mode 0600) and exit: the ACP `terminal` authentication method.
        #[arg(long)]
        login: bool,
    },
    /// Create .bb7/ (per-project state) in the current directory.
    Init,
    /// Start a chat and make it active; prints its id.
    New {
        /// Chat name.
        name: Option<String>,
    },
    /// List the project's chats (* marks the active one).
    Chats,
    /// Make a chat the project's active one, for later commands and editors: by its
    /// id, a unique start of its id, or its name.
    Use {
        /// Id, id prefix or name (see `bb7 chats`).
        #[arg(value_name = "ID|NAME")]
        which: String,
    },
    /// Archive a chat: it leaves `bb7 chats` and the editors' chat lists, and is kept
    /// whole (`bb7 unarchive` brings it back). Default: the active chat.
    Archive {
        /// Id, id prefix or name (see `bb7 chats`).
        #[arg(value_name = "ID|NAME")]
        which: Option<String>,
    },
    /// List an archived chat again.
    Unarchive {
        /// Id, id prefix or name of the archived chat.
        #[arg(value_name = "ID|NAME")]
        which: String,
    },
    /// Add files (or path:start:end sections, or mcp:SERVER:URI resources of MCP
    /// servers) to the chat's context; a file already there is refreshed from disk. --run, --git-diff and --diagnostics attach a
    /// read-only text instead (shown as KIND:NAME; `bb7 remove KIND:NAME` drops it).
    Add {
        /// Files, path:start:end for a section, or mcp:SERVER:URI.
        #[arg(required_unless_present_any = ["run", "git_diff", "diagnostics"])]
        paths: Vec<String>,
        /// The model may read but not change them.
        #[arg(long)]
        readonly: bool,
        /// Run CMD with sh in the current directory and attach what it printed
        /// (stdout and stderr) with its exit status.
        #[arg(long, value_name = "CMD")]
        run: Option<String>,
        /// Attach `git diff` (or `git diff REV`) of the project.
        #[arg(long, value_name = "REV", num_args = 0..=1, default_missing_value = "")]
        git_diff: Option<String>,
        /// Attach the diagnostics in FILE.json: an array of {path, line, col,
        /// severity, message, source?, code?} (LSP diagnostics with uri and range too).
        #[arg(long, value_name = "FILE.json")]
        diagnostics: Option<String>,
    },
    /// Remove a file from the chat's context.
    Remove {
        /// File.
        path: String,
    },
    /// Ask the model; the answer streams to stdout, notes go to stderr. Ctrl-C stops it
    /// and keeps the partial answer.
    Ask {
        /// The message; read from stdin when absent. With a message, text piped in on
        /// stdin is attached to the context first (as `text:stdin`).
        message: Vec<String>,
        /// Model to use (kept for later turns).
        #[arg(long)]
        model: Option<String>,
        /// Show the model's reasoning on stderr.
        #[arg(long)]
        thinking: bool,
        /// Retrieval tools for this chat (kept for later turns).
        #[arg(long, value_enum)]
        tools: Option<ToolsMode>,
        /// Re-snapshot context files changed on disk before sending.
        #[arg(long)]
        refresh: bool,
        /// Which provider answers (kept for later turns): local, remote or
        /// hybrid_auto (local first, remote when local fails).
        #[arg(long, value_parser = ["local", "remote", "hybrid_auto"])]
        mode: Option<String>,
    },
    /// An interactive session on the terminal: questions with history, answers
    /// rendered as Markdown, and /commands (/add, /diff, /apply, /undo, /model,
    /// /tokens, … — /help lists them). Ctrl-C stops an answer, Ctrl-D leaves.
    Chat {
        /// Model to switch the chat to first (kept for later turns).
        #[arg(long)]
        model: Option<String>,
        /// Show the model's reasoning whole as it streams (`/thinking on`); by
        /// default one dimmed line counts its words.
        #[arg(long)]
        thinking: bool,
    },
    /// Show the statuses of context and output files, one `STATUS PATH` per line.
    ///
    /// M modified by the model, A new file, !A new but a file exists there already,
    /// S a section, R read-only, ~ changed on disk since it was added (`bb7 add`
    /// refreshes it). "(already on disk)" or "(partly on disk)" after a path: your
    /// file already holds all or some of the model's change.
    Status,
    /// Show the model's pending changes as unified diffs.
    Diff {
        /// Only this file.
        path: Option<String>,
    },
    /// Merge the model's pending changes into your files (all M and A files, or one).
    /// Your own edits elsewhere in a file are kept; edits of the same lines are a
    /// conflict and the file is left alone.
    Apply {
        /// Only this file.
        path: Option<String>,
        /// Overwrite your edits when they conflict.
        #[arg(long)]
        force: bool,
    },
    /// Discard the model's pending changes to a file.
    Reject {
        /// File.
        path: String,
    },
    /// List the pending hunks with their ids, or accept and reject them.
    Review {
        /// Only this file.
        path: Option<String>,
        /// Hunk ids to merge into your files.
        #[arg(long, num_args = 1.., value_name = "ID")]
        accept: Vec<String>,
        /// Hunk ids to discard.
        #[arg(long, num_args = 1.., value_name = "ID")]
        reject: Vec<String>,
        /// Accept every pending hunk (of PATH, or of every file).
        #[arg(long, conflicts_with_all = ["accept", "reject"])]
        all: bool,
        /// Hunk ids to take even where they overlap your edits: the model's version of
        /// those lines replaces yours (the flag is the confirmation).
        #[arg(long, num_args = 1.., value_name = "ID")]
        take: Vec<String>,
    },
    /// List checkpoints, oldest first, one per line: id, time, files, (action), then
    /// the hunk ids that `rollback --scoped` takes.
    Checkpoints,
    /// Undo a checkpoint (one whole apply, however many files it wrote): restore its
    /// files, or reverse only some hunks. Merges like apply: your later edits
    /// elsewhere in a file survive; later edits of the same lines are a conflict (exit
    /// status 3). --force resets each file to its content before the checkpoint,
    /// dropping every later edit in it.
    Rollback {
        /// Checkpoint id (from `bb7 checkpoints`).
        #[arg(required_unless_present = "last", conflicts_with = "last")]
        id: Option<String>,
        /// The chat's last apply that is not undone yet; run again to undo the one
        /// before it (`/undo` in `bb7 chat`).
        #[arg(long)]
        last: bool,
        /// Reverse only these hunks, keeping later edits.
        #[arg(long, num_args = 1.., value_name = "HUNK")]
        scoped: Vec<String>,
        /// Reset the files to before the checkpoint, dropping your later edits there.
        #[arg(long)]
        force: bool,
    },
    /// Take a chat over from a process that held it and is gone (a crashed editor)
    /// and make it active here. While the holder still runs this refuses, naming its
    /// PID (exit status 4): close the chat there first. Default: the project's active
    /// chat.
    Unlock {
        /// Chat id (from `bb7 chats`).
        id: Option<String>,
        /// Take the chat even from a process that still runs. That process then
        /// refuses its next save and writes nothing more to the chat; what it had not
        /// saved stays unsaved there.
        #[arg(long)]
        force: bool,
    },
    /// List the models (id, context length, prices per million tokens).
    Models {
        /// Fetch the list again instead of using the day-old cache.
        #[arg(long)]
        refresh: bool,
        /// Forget that servers refused tool calls: each model's next turn tries them
        /// again (after a refusal bb7 asks for SEARCH/REPLACE blocks for an hour).
        #[arg(long)]
        reset_tools: bool,
    },
    /// Print the chat as Markdown.
    Show {
        /// Only the last answer.
        #[arg(long)]
        last: bool,
    },
    /// Print a chat to share: Markdown as `bb7 show` prints it (likely secrets
    /// redacted unless --no-redact), or JSON that `bb7 import` reads back (redacted
    /// only with --redact).
    Export {
        /// md (default) or json.
        #[arg(long, value_enum, default_value_t = super::export::Format::Md)]
        format: super::export::Format,
        /// Replace likely secrets (API keys, tokens, private keys, .env secrets)
        /// with [REDACTED:kind].
        #[arg(long, conflicts_with = "no_redact")]
        redact: bool,
        /// Keep the text as it is.
        #[arg(long)]
        no_redact: bool,
        /// Id, id prefix or name (default: the active chat).
        #[arg(value_name = "CHAT")]
        which: Option<String>,
    },
    /// Read a JSON export (`bb7 export --format json`) into a new chat.
    Import {
        /// The export file.
        file: std::path::PathBuf,
    },
    /// List recent chats with their cost (--today: today's turns of every project
    /// against max_cost_per_day; --chat: the active chat's answers against
    /// max_cost_per_chat).
    Log {
        /// Today's spend (local time, all projects) from ~/.bb7/usage.csv.
        #[arg(long)]
        today: bool,
        /// The active chat's spend, answer by answer: set by `bb7 log --chat` (the
        /// global `--chat` given without an id).
        #[arg(skip)]
        chat: bool,
    },
    /// MCP servers' resources and prompts: `bb7 mcp list` shows them, `bb7 add
    /// mcp:SERVER:URI` attaches a resource, `bb7 mcp allow` lets this project's own
    /// servers start.
    Mcp {
        /// What to do.
        #[command(subcommand)]
        cmd: super::mcp::McpCommand,
    },
    /// Run the eval task set per routing mode and print the metrics side by side
    /// (--replay DIR answers from recorded traces, --record DIR records them).
    Eval(super::eval::EvalArgs),
}
