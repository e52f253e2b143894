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

/// The lines of `{state_dir}/usage.csv` logged on `day` (local time, the first column's
/// date), as (time, project root, model, cost). A missing log has none; a line whose
/// columns do not parse is skipped (the log is appended by every bb7 on the machine,
/// and read as untrusted input).
pub fn lines_on(state_dir: &Path, day: chrono::NaiveDate) -> Vec<(String, String, String, f64)> {
    let Ok(bytes) = std::fs::read(state_dir.join(FILE_NAME)) else {
        return Vec::new();
    };
    let prefix = day.format("%Y-%m-%dT").to_string();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| parse_line(l, &prefix))
        .collect()
}

/// One log line as (time, project root, model, cost) when it starts with `prefix`
/// (`2026-01-02T`, a day) and has the seven columns with a finite, non-negative cost.
pub(crate) fn parse_line(line: &str, prefix: &str) -> Option<(String, String, String, f64)> {
    if !line.starts_with(prefix) {
        return None;
    }
    let cols: Vec<&str> = line.split(',').collect();
    let cost: f64 = cols.last()?.trim().parse().ok()?;
    (cols.len() == 7 && cost.is_finite() && cost >= 0.0).then(|| {
        (
            cols[0].to_owned(),
            cols[1].to_owned(),
            cols[2].to_owned(),
            cost,
        )
    })
}

/// USD spent on `day` (local time) by every bb7 on this machine, all projects: the sum
/// of the costs [`lines_on`] that day.
pub fn spent_on(state_dir: &Path, day: chrono::NaiveDate) -> f64 {
    lines_on(state_dir, day).iter().map(|l| l.3).sum()
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

    #[test]
    fn a_day_sums_its_own_lines_and_skips_damaged_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            "2026-01-01T23:59:59,/p,m,1,1,0,0.500000\n\
             2026-01-02T00:00:01,/p,m,1,1,0,0.250000\n\
             2026-01-02T10:00:00,/q,m,1,1,0,0.125000\n\
             2026-01-02T11:00:00,/q,m,1,1,0,oops\n\
             2026-01-02T12:00:00,bad\n",
        )
        .unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 1, 2).unwrap();
        assert_eq!(spent_on(dir.path(), day), 0.375);
        assert_eq!(lines_on(dir.path(), day).len(), 2);
        let none = chrono::NaiveDate::from_ymd_opt(2026, 1, 3).unwrap();
        assert_eq!(spent_on(dir.path(), none), 0.0);
    }
}
