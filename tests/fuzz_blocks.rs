//! The block parser never panics and never loses prose, whatever the answer text: a
//! seeded run of answers built from block markers, fences, paths, line endings and
//! multi-byte characters, cut into deltas at arbitrary character boundaries.

use bb7::edit::blocks::{BlockStream, Piece, split};

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "<<<<<<< SEARCH",
    "<<<<<<<SEARCH",
    "<<<<<< SEARCH",
    "=======",
    "========",
    ">>>>>>> REPLACE",
    ">>>>>> REPLACE",
    "```",
    "```rust",
    "```diff",
    "src/main.rs",
    "**src/lib.rs**",
    "`a.py`",
    "# File: x.go",
    "// ... existing code ...",
    "...",
    "fn main() {}",
    "    let x = 1;",
    "\tx := 2",
    "héllo wörld ✓ 日本",
    "",
    " ",
    "\r",
];

fn answer(rng: &mut Rng) -> String {
    let mut out = String::new();
    for _ in 0..rng.below(40) {
        out.push_str(PIECES[rng.below(PIECES.len())]);
        out.push_str(if rng.below(5) == 0 { "\r\n" } else { "\n" });
    }
    if rng.below(3) == 0 {
        out.pop();
    }
    out
}

/// Adjacent prose pieces joined, so the two ways of reading can be compared.
fn normalized(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces {
        match (out.last_mut(), p) {
            (Some(Piece::Prose(prev)), Piece::Prose(more)) => prev.push_str(&more),
            (_, Piece::Prose(t)) if t.is_empty() => {}
            (_, p) => out.push(p),
        }
    }
    out
}

#[test]
fn any_answer_parses_without_panicking_in_any_deltas() {
    for seed in 1..4000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let text = answer(&mut rng);
        let whole = split(&text);
        let mut stream = BlockStream::new();
        let mut rest = text.as_str();
        let mut pieces = Vec::new();
        while !rest.is_empty() {
            let mut cut = (1 + rng.below(12)).min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            pieces.extend(stream.push(&rest[..cut]));
            rest = &rest[cut..];
        }
        pieces.extend(stream.finish());
        // Prose may arrive in more pieces while streaming; its text and the blocks
        // must be the same as when the whole answer is read at once.
        assert_eq!(
            normalized(pieces),
            normalized(whole),
            "seed {seed}: streamed and whole parses differ for {text:?}"
        );
    }
}

/// `bb7 chat` renders whatever the model streams: Markdown with fences, quotes and
/// multi-byte text, cut anywhere, never panics the terminal renderer.
#[test]
fn any_answer_renders_on_the_terminal_without_panicking() {
    let extra = [
        "```rust",
        "```diff",
        "+ added",
        "- removed",
        "**bold",
        "`code",
        "'a",
        "\"str\\\"",
        "## Head",
        "x**y**z",
        "é\"ü'",
        "\t\u{1b}[31m",
    ];
    for seed in 1..2000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
        let mut text = answer(&mut rng);
        for _ in 0..rng.below(10) {
            text.push_str(extra[rng.below(extra.len())]);
            text.push('\n');
        }
        let mut md = bb7::cli::render::Markdown::default();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let mut cut = (1 + rng.below(9)).min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            md.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        md.finish();
    }
}
