//! Token estimates for context and history.
//!
//! For now a fast approximation (one token per four bytes, rounded up) stands in for a
//! real tokenizer; the model-turn work replaces it with `cl100k_base` (seed 001,
//! "Token Estimation") behind the same function.

/// Estimated tokens in `text`.
pub fn count(text: &str) -> usize {
    text.len().div_ceil(4)
}
