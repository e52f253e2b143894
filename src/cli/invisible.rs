//! Invisible characters as the command line shows them: the warnings of an add or an
//! attach on stderr (the detection and its rule: `text::invisible`).

use super::terminal;
use crate::text::invisible::InvisibleWarning;

/// Prints each warning as `bb7: warning: a.rs:3: invisible characters: U+202E (…)`,
/// made safe for the terminal like every other path bb7 prints.
pub(super) fn warn(warnings: &[InvisibleWarning]) {
    for w in warnings {
        eprintln!("bb7: warning: {}", terminal::err(&w.message));
    }
}
