//! `~/.bb7/usage.csv`: one line per completed model turn, appended, never rewritten.
//! The reference plugin sums the last field of the lines that start with today's
//! local date for its "Today:" cost, so the format is fixed (docs/PROTOCOL.md):
//! `local-time,project_root,model,prompt_tokens,completion_tokens,cached_tokens,cost`
//! with the time as `2006-01-02T15:04:05` and the cost with six decimals.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// File name of the log inside the user's state directory (`~/.bb7`).
pub const FILE_NAME: &str = "usage.csv";

/// What one turn cost.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageLine<'a> {
    /// Project root of the session; empty in global-only mode.
    pub project_root: &'a str,
    /// Model of the turn.
    pub model: &'a str,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    /// Cost in USD.
    pub cost: f64,
}

impl UsageLine<'_> {
    /// The CSV line (without the newline) for a turn that ended at `time`. Commas
    /// and line breaks in the root or model would break the columns the plugin
    /// reads, so they become spaces.
    pub fn render(&self, time: chrono::NaiveDateTime) -> String {
        let clean = |s: &str| s.replace([',', '\n', '\r'], " ");
        format!(
            "{},{},{},{},{},{},{:.6}",
            time.format("%Y-%m-%dT%H:%M:%S"),
            clean(self.project_root),
            clean(self.model),
            self.prompt_tokens,
            self.completion_tokens,
            self.cached_tokens,
            self.cost
        )
    }
}

/// Appends `line` with the current local time to `{state_dir}/usage.csv`. A turn
/// with no tokens or no cost is not logged (it cost nothing to count).
pub fn append(state_dir: &Path, line: &UsageLine) -> Result<()> {
    let no_tokens = line.prompt_tokens == 0 && line.completion_tokens == 0;
    if no_tokens || line.cost <= 0.0 || !line.cost.is_finite() {
        return Ok(());
    }
    std::fs::create_dir_all(state_dir).map_err(|e| Error::io("Cannot write usage.csv", e))?;
    let mut text = line.render(chrono::Local::now().naive_local());
    text.push('\n');
    // One write of a short line in append mode keeps lines whole when two bb7
    // processes finish turns at once.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(state_dir.join(FILE_NAME))
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Error::io("Cannot write usage.csv", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_reference_columns() {
        let line = UsageLine {
            project_root: "/p,q",
            model: "a/b",
            prompt_tokens: 100,
            completion_tokens: 20,
            cached_tokens: 3,
            cost: 0.0015,
        };
        let t = chrono::NaiveDate::from_ymd_opt(2026, 1, 2)
            .unwrap()
            .and_hms_opt(3, 4, 5)
            .unwrap();
        assert_eq!(
            line.render(t),
            "2026-01-02T03:04:05,/p q,a/b,100,20,3,0.001500"
        );
    }
}
