//! SEARCH/REPLACE blocks in the answer text, for models that write edits as text instead
//! of calling the file tools (config `edit_format: "blocks"`, docs/PROTOCOL.md, "Edits
//! as text blocks"). The format is the one aider made common:
//!
//! ````text
//! src/main.rs
//! ```rust
//! <<<<<<< SEARCH
//! exact old lines
//! =======
//! new lines
//! >>>>>>> REPLACE
//! ```
//! ````
//!
//! [`BlockStream`] reads the answer as it streams and splits it into prose, which the chat
//! keeps, and complete blocks, which become [`ProposedEdit`]s planned like tool calls.
//! Accepted as models send them: the path inside the fence, a language tag on the fence
//! (or the path as its info string), no fence, several blocks in one fence (the path
//! carries over), markers with four to twelve `<` / `=` / `>`, CRLF line ends. A block
//! the answer ends inside is refused, never half applied.

use serde::Serialize;

use super::block_paths::{MAX_PATH_LINE, names_a_file, path_in_fence_info, path_in_prose, path_of};
use super::request::{EditRequest, ProposedEdit, SrEdit};

/// One part of an answer: prose for the chat, or a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Text the chat keeps, exactly as the model wrote it.
    Prose(String),
    /// A complete block.
    Block(Block),
    /// A block that cannot be read (cut off by the end of the answer, no path, no
    /// REPLACE marker): refused with this reason.
    Broken {
        /// The block's path, when one was found.
        path: Option<String>,
        /// Why, for `diff_error` and the model's retry context.
        reason: String,
    },
}

/// One SEARCH/REPLACE block; both parts hold whole lines, each ending in `\n`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The path line as the model wrote it, decorations removed.
    pub path: String,
    /// The old lines (empty: create a new file).
    pub search: String,
    /// The new lines.
    pub replace: String,
}

/// The arguments a block is reported with (`diff_error.tool_calls[].args`), in the shape
/// of an `edit_file` / `write_file` call so clients show both alike.
#[derive(Debug, Clone, Serialize)]
pub struct BlockArgs<'a> {
    /// Target path.
    pub path: &'a str,
    /// The SEARCH part (absent for a new file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_string: Option<&'a str>,
    /// The REPLACE part (`content` of a new file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_string: Option<&'a str>,
    /// The content of a new file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<&'a str>,
}

impl Block {
    /// The tool a block stands for: `write_file` for a new file, else `edit_file`.
    pub fn tool(&self) -> &'static str {
        if self.creates() {
            "write_file"
        } else {
            "edit_file"
        }
    }

    /// Whether the SEARCH part is empty, which creates a new file.
    pub fn creates(&self) -> bool {
        self.search.trim().is_empty()
    }

    /// The arguments as reported to clients.
    pub fn args(&self) -> BlockArgs<'_> {
        if self.creates() {
            BlockArgs {
                path: &self.path,
                old_string: None,
                new_string: None,
                content: Some(&self.replace),
            }
        } else {
            BlockArgs {
                path: &self.path,
                old_string: Some(&self.search),
                new_string: Some(&self.replace),
                content: None,
            }
        }
    }

    /// One line for the user, shown while the answer streams.
    pub fn summary(&self) -> String {
        if self.creates() {
            format!("Create {}", self.path)
        } else {
            format!("Edit {}", self.path)
        }
    }

    /// The edit the plan makes of this block.
    pub fn proposed(&self) -> ProposedEdit {
        let request = if self.creates() {
            EditRequest::Create {
                path: self.path.clone(),
                content: self.replace.clone(),
            }
        } else {
            EditRequest::Edits(vec![SrEdit {
                path: self.path.clone(),
                file_id: None,
                old_string: self.search.clone(),
                new_string: self.replace.clone(),
                replace_all: false,
            }])
        };
        ProposedEdit {
            tool: self.tool().to_owned(),
            args: serde_json::to_value(self.args()).ok(),
            args_raw: None,
            request: Ok(request),
        }
    }
}

impl Piece {
    /// The edit the plan makes of a block or a broken block; `None` for prose.
    pub fn proposed(&self) -> Option<ProposedEdit> {
        match self {
            Piece::Prose(_) => None,
            Piece::Block(b) => Some(b.proposed()),
            Piece::Broken { path, reason } => Some(ProposedEdit {
                tool: "edit_file".to_owned(),
                args: path.as_deref().and_then(|p| {
                    serde_json::to_value(BlockArgs {
                        path: p,
                        old_string: None,
                        new_string: None,
                        content: None,
                    })
                    .ok()
                }),
                args_raw: None,
                request: Err(reason.clone()),
            }),
        }
    }
}

/// Where the reader is.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Outside a block.
    Prose,
    /// Inside the SEARCH part.
    Search { path: Option<String> },
    /// Inside the REPLACE part.
    Replace { path: Option<String> },
}

/// Splits a streamed answer into prose and blocks. Feed it deltas with
/// [`BlockStream::push`] and end with [`BlockStream::finish`]; both return the pieces
/// complete so far, in answer order. Prose that cannot start a block is passed on at
/// once, also mid-line; lines that may be a block's header (a path, a fence) are held
/// until the next line decides.
#[derive(Debug)]
pub struct BlockStream {
    state: State,
    /// The current unfinished line.
    partial: String,
    /// Bytes of `partial` already passed on as prose.
    sent: usize,
    /// Lines that may be the header of a block.
    held: Vec<String>,
    search: String,
    replace: String,
    /// The path of the last block, for a next block in the same fence.
    last_path: Option<String>,
    /// A block just ended: its closing fence is not prose.
    after_block: bool,
    /// The last line of prose, which may name the file of a block without a path line
    /// ("Change `src/a.rs`:").
    last_prose: String,
    /// Whether prose came after the last block: a block with no path line of its own
    /// then takes none from the block before it.
    prose_since_block: bool,
    /// A prose line before the block being read that names a file bb7 cannot read as
    /// one path (`docs/meeting notes.md` without backticks), for the refusal.
    unread_path: Option<String>,
    /// Blocks read so far (refused ones included), against [`MAX_BLOCKS`].
    blocks: usize,
}

impl Default for BlockStream {
    fn default() -> Self {
        BlockStream::new()
    }
}

/// At most this many header lines are held before they are prose.
const MAX_HELD: usize = 4;
/// The most SEARCH/REPLACE blocks one answer may hold (docs/PROTOCOL.md, "Extension:
/// edits as text blocks"). Every block is matched against its whole file, so an answer
/// of thousands would keep its chat busy for seconds; the blocks after this many are
/// refused with one failed call, and with them the answer's edits (all or nothing),
/// and the model is told to send fewer.
pub const MAX_BLOCKS: usize = 200;

impl BlockStream {
    /// A reader at the start of an answer.
    pub fn new() -> BlockStream {
        BlockStream {
            state: State::Prose,
            partial: String::new(),
            sent: 0,
            held: Vec::new(),
            search: String::new(),
            replace: String::new(),
            last_path: None,
            after_block: false,
            last_prose: String::new(),
            prose_since_block: true,
            unread_path: None,
            blocks: 0,
        }
    }

    /// Reads one delta of the answer.
    pub fn push(&mut self, delta: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut rest = delta;
        while let Some(i) = rest.find('\n') {
            let (head, tail) = rest.split_at(i + 1);
            rest = tail;
            if self.partial.is_empty() {
                self.complete(head, &mut out);
            } else {
                self.partial.push_str(head);
                let mut line = std::mem::take(&mut self.partial);
                self.complete(&line, &mut out);
                // The buffer's capacity is kept for the next line.
                line.clear();
                self.partial = line;
            }
        }
        self.partial.push_str(rest);
        if self.state == State::Prose
            && self.held.is_empty()
            && !self.partial.is_empty()
            && (self.sent > 0 || surely_prose(&self.partial))
        {
            prose(&mut out, &self.partial[self.sent..]);
            self.sent = self.partial.len();
            self.after_block = false;
        }
        out
    }

    /// Reads one whole line, of which the first `self.sent` bytes were passed on.
    fn complete(&mut self, line: &str, out: &mut Vec<Piece>) {
        let sent = std::mem::replace(&mut self.sent, 0);
        if sent > 0 {
            prose(out, &line[sent..]);
            self.note_prose(line);
        } else {
            self.line(line, out);
        }
    }

    /// Ends the answer: held lines become prose, and a block still open is refused.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.complete(&line, &mut out);
        }
        match std::mem::replace(&mut self.state, State::Prose) {
            State::Prose => {
                let held = std::mem::take(&mut self.held).concat();
                prose(&mut out, &held);
            }
            State::Search { path } | State::Replace { path } => {
                let name = path.as_deref().unwrap_or("a file");
                out.push(Piece::Broken {
                    reason: format!(
                        "the SEARCH/REPLACE block for {name} was cut off by the end of the answer (no >>>>>>> REPLACE line); nothing of it was applied. Send the whole block again"
                    ),
                    path,
                });
            }
        }
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<Piece>) {
        let bare = line.trim_end_matches(['\n', '\r']);
        match &self.state {
            State::Prose => self.prose_line(line, out),
            State::Search { path } => {
                if is_divider(bare) {
                    self.state = State::Replace { path: path.clone() };
                } else if is_replace(bare) {
                    let path = path.clone();
                    self.refuse_open_block(
                        path,
                        "has no ======= line between its SEARCH and REPLACE parts",
                        out,
                    );
                } else if is_search(bare) && self.search.is_empty() {
                    // The marker twice: the model repeated itself.
                } else {
                    self.search.push_str(bare);
                    self.search.push('\n');
                }
            }
            State::Replace { path } => {
                if is_replace(bare) {
                    let path = path.clone();
                    self.end_block(path, out);
                } else if is_search(bare) {
                    let path = path.clone();
                    out.push(Piece::Broken {
                        reason: format!(
                            "a SEARCH/REPLACE block for {} has no >>>>>>> REPLACE line before the next block; nothing of it was applied",
                            path.as_deref().unwrap_or("a file")
                        ),
                        path: path.clone(),
                    });
                    self.search.clear();
                    self.replace.clear();
                    self.state = State::Search { path };
                } else {
                    self.replace.push_str(bare);
                    self.replace.push('\n');
                }
            }
        }
    }

    /// Refuses the block being read, `why` completing "a block for PATH …".
    fn refuse_open_block(&mut self, path: Option<String>, why: &str, out: &mut Vec<Piece>) {
        self.search.clear();
        self.replace.clear();
        self.state = State::Prose;
        self.after_block = true;
        out.push(Piece::Broken {
            reason: format!(
                "the SEARCH/REPLACE block for {} {why}; nothing of it was applied",
                path.as_deref().unwrap_or("a file")
            ),
            path,
        });
    }

    fn end_block(&mut self, path: Option<String>, out: &mut Vec<Piece>) {
        // A second ======= line leaves open where SEARCH ends: never guessed.
        if self.replace.lines().any(is_divider) {
            return self.refuse_open_block(
                path,
                "holds more than one ======= line, so where its SEARCH part ends is ambiguous",
                out,
            );
        }
        let search = std::mem::take(&mut self.search);
        let replace = std::mem::take(&mut self.replace);
        self.state = State::Prose;
        self.after_block = true;
        self.prose_since_block = false;
        self.blocks += 1;
        if self.blocks > MAX_BLOCKS {
            // One refusal stands for every block past the cap.
            if self.blocks == MAX_BLOCKS + 1 {
                out.push(Piece::Broken {
                    reason: format!(
                        "this answer holds more than {MAX_BLOCKS} SEARCH/REPLACE blocks, the most bb7 plans in one answer; the blocks after the {MAX_BLOCKS}th were not read and nothing of the answer was applied. Send at most {MAX_BLOCKS} blocks, and the rest in a later answer"
                    ),
                    path,
                });
            }
            return;
        }
        match path {
            Some(path) => {
                self.last_path = Some(path.clone());
                out.push(Piece::Block(Block {
                    path,
                    search,
                    replace,
                }));
            }
            None => {
                let reason = match self.unread_path.take() {
                    Some(line) => format!(
                        "the line before a SEARCH/REPLACE block, {line:?}, does not read as one file path; nothing of the block was applied. Write the path alone on the line before the block's opening fence, in backticks when it holds spaces"
                    ),
                    None => "a SEARCH/REPLACE block has no file path: write the path alone on the line before the block's opening fence".into(),
                };
                out.push(Piece::Broken { path: None, reason })
            }
        }
    }

    fn prose_line(&mut self, line: &str, out: &mut Vec<Piece>) {
        let bare = line.trim_end_matches(['\n', '\r']);
        if is_search(bare) {
            let continuing = self.after_block;
            let path = self.take_header(out, continuing);
            self.after_block = false;
            self.search.clear();
            self.replace.clear();
            self.state = State::Search { path };
            return;
        }
        if self.after_block {
            if bare.trim().is_empty() {
                self.held.push(line.to_owned());
                return;
            }
            if fence_info(bare).is_some_and(str::is_empty) {
                // The fence that closed the block; blank lines before it go with it.
                self.held.clear();
                self.after_block = false;
                return;
            }
            self.after_block = false;
        }
        let candidate = fence_info(bare).is_some()
            || path_of(bare).is_some()
            || (bare.trim().is_empty() && !self.held.is_empty());
        if candidate && self.held.len() < MAX_HELD {
            self.held.push(line.to_owned());
            return;
        }
        let held = std::mem::take(&mut self.held);
        for l in &held {
            self.note_prose(l);
        }
        prose(out, &held.concat());
        if candidate {
            self.held.push(line.to_owned());
        } else {
            prose(out, line);
            self.note_prose(line);
        }
    }

    /// Remembers a line passed on as prose, unless it is blank.
    fn note_prose(&mut self, line: &str) {
        if !line.trim().is_empty() {
            self.prose_since_block = true;
            self.last_prose.clear();
            self.last_prose.push_str(line);
        }
    }

    /// The path of the block that starts now, from the held header lines (the last
    /// path line, else a path as the fence's info string), else a path the last line of
    /// prose names, else the last block's path when no prose came after that block;
    /// held lines before the header are prose. A block that gets no path this way is
    /// refused: a path is never guessed from an earlier block across prose.
    fn take_header(&mut self, out: &mut Vec<Piece>, continuing: bool) -> Option<String> {
        let held = std::mem::take(&mut self.held);
        let bare = |l: &String| l.trim_end_matches(['\n', '\r']).to_owned();
        let from_path = held.iter().rposition(|l| path_of(&bare(l)).is_some());
        let from_fence = held.iter().rposition(|l| {
            fence_info(&bare(l)).is_some_and(|info| path_in_fence_info(info).is_some())
        });
        self.unread_path = None;
        let (start, path) = match (from_path, from_fence) {
            (Some(i), f) if f.is_none_or(|f| i > f) => (i, path_of(&bare(&held[i]))),
            (_, Some(f)) => (f, fence_info(&bare(&held[f])).and_then(path_in_fence_info)),
            _ => {
                // The header is the fence alone (or nothing).
                let start = held
                    .iter()
                    .position(|l| fence_info(&bare(l)).is_some())
                    .unwrap_or(held.len());
                let path = if continuing || !self.prose_since_block {
                    // Right after a block (in its fence or the next one): the path
                    // carries over.
                    self.last_path.clone()
                } else {
                    let named = path_in_prose(&self.last_prose);
                    if named.is_none() && names_a_file(&self.last_prose) {
                        self.unread_path = Some(self.last_prose.trim().to_owned());
                    }
                    named
                };
                (start, path)
            }
        };
        // A fence just before the path line opens the block too.
        let start = if start > 0 && fence_info(&bare(&held[start - 1])).is_some() {
            start - 1
        } else {
            start
        };
        prose(out, &held[..start].concat());
        path
    }
}

/// Appends prose, joining it to the prose just before it.
fn prose(out: &mut Vec<Piece>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Piece::Prose(p)) = out.last_mut() {
        p.push_str(text);
    } else {
        out.push(Piece::Prose(text.to_owned()));
    }
}

/// Whether an unfinished line can no longer be a block's header: it holds a space
/// between words and starts like no header does.
fn surely_prose(partial: &str) -> bool {
    let t = partial.trim_start();
    let labelled = |w: &str| t.get(..w.len()).is_some_and(|p| p.eq_ignore_ascii_case(w));
    if t.starts_with(['`', '~', '<', '=', '>', '#', '*', '-', '/'])
        || ["file", "path"].into_iter().any(labelled)
    {
        return false;
    }
    t.trim_end().contains(char::is_whitespace) || t.len() > MAX_PATH_LINE
}

/// A marker line: `count` of `c` (four to twelve), then `word` (if any).
fn marker(line: &str, c: char, word: &str) -> bool {
    let t = line.trim();
    let rest = t.trim_start_matches(c);
    let n = t.len() - rest.len();
    if !(4..=12).contains(&n) {
        return false;
    }
    let rest = rest.trim().trim_end_matches(c).trim();
    rest.eq_ignore_ascii_case(word)
}

fn is_search(line: &str) -> bool {
    marker(line, '<', "SEARCH")
}

fn is_divider(line: &str) -> bool {
    marker(line, '=', "")
}

fn is_replace(line: &str) -> bool {
    marker(line, '>', "REPLACE")
}

/// The info string of a fence line (```` ``` ```` or `~~~`), `None` for other lines.
fn fence_info(line: &str) -> Option<&str> {
    let t = line.trim();
    ["```", "~~~"]
        .iter()
        .find_map(|f| t.strip_prefix(f))
        .map(|rest| rest.trim_start_matches(['`', '~']).trim())
}

/// Splits a whole answer at once (tests and tools that have the full text).
pub fn split(answer: &str) -> Vec<Piece> {
    let mut s = BlockStream::new();
    let mut out = s.push(answer);
    out.extend(s.finish());
    out
}

#[cfg(test)]
#[path = "blocks_tests.rs"]
mod tests;
