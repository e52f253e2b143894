//! A running sum of one day's lines of `~/.bb7/usage.csv`, so that checking
//! `max_cost_per_day` before every send does not re-read a log that only grows
//! (docs/PROTOCOL.md, "Extension: budgets"). The index keeps how far it has read and
//! the day's sum so far; a later call reads only the bytes appended since (by this or
//! any other bb7 process), and reads the whole file again when it shrank, was replaced
//! (another file at the path) or the day changed. A line still being written (no
//! newline yet) is left for the next call, so a half-written cost is never counted.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::usage_log::{FILE_NAME, parse_line};

/// The day's sum of one log file and where reading stopped.
#[derive(Debug, Clone, Default)]
pub struct DaySpend {
    /// The day summed; `None` before the first read.
    day: Option<chrono::NaiveDate>,
    /// Bytes read: up to and including the last complete line's newline.
    offset: u64,
    /// USD of the day's lines in those bytes.
    sum: f64,
    /// The file read (device and inode on Unix), to notice a replaced log.
    identity: Option<(u64, u64)>,
}

impl DaySpend {
    /// USD spent on `day` (local time) according to the log at `path`, reading only
    /// what was appended since the previous call on the same day. A missing or
    /// unreadable log counts 0 (as [`super::usage_log::spent_on`]).
    pub fn spent(&mut self, path: &Path, day: chrono::NaiveDate) -> f64 {
        let Ok(mut file) = std::fs::File::open(path) else {
            *self = DaySpend::default();
            return 0.0;
        };
        let Ok(meta) = file.metadata() else {
            return self.sum;
        };
        let identity = identity(&meta);
        if self.day != Some(day) || meta.len() < self.offset || identity != self.identity {
            *self = DaySpend {
                day: Some(day),
                identity,
                ..DaySpend::default()
            };
        }
        if meta.len() == self.offset {
            return self.sum;
        }
        let mut appended = Vec::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err()
            || file.read_to_end(&mut appended).is_err()
        {
            return self.sum;
        }
        let Some(end) = appended.iter().rposition(|b| *b == b'\n') else {
            return self.sum;
        };
        let prefix = day.format("%Y-%m-%dT").to_string();
        let whole = String::from_utf8_lossy(&appended[..=end]);
        for line in whole.lines() {
            if let Some(l) = parse_line(line, &prefix) {
                self.sum += l.3;
            }
        }
        self.offset += end as u64 + 1;
        self.sum
    }
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// USD spent on `day` by every bb7 on this machine, from `{state_dir}/usage.csv`, with
/// one [`DaySpend`] per log kept for the life of the process (the server's sends and
/// estimates, on any thread).
pub fn spent_on(state_dir: &Path, day: chrono::NaiveDate) -> f64 {
    static INDEX: OnceLock<Mutex<HashMap<PathBuf, DaySpend>>> = OnceLock::new();
    let path = state_dir.join(FILE_NAME);
    let mut index = INDEX
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    index.entry(path.clone()).or_default().spent(&path, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn day(d: u32) -> chrono::NaiveDate {
        chrono::NaiveDate::from_ymd_opt(2026, 1, d).unwrap()
    }

    #[test]
    fn appended_lines_are_added_and_a_half_written_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut idx = DaySpend::default();
        assert_eq!(idx.spent(&path, day(2)), 0.0, "no log yet");
        append(&path, "2026-01-01T23:00:00,/p,m,1,1,0,0.500000\n");
        append(&path, "2026-01-02T01:00:00,/p,m,1,1,0,0.250000\n");
        assert_eq!(idx.spent(&path, day(2)), 0.25);
        let read = idx.offset;
        append(&path, "2026-01-02T02:00:00,/q,m,1,1,0,0.12");
        assert_eq!(idx.spent(&path, day(2)), 0.25, "the cost is not whole yet");
        assert_eq!(idx.offset, read);
        append(&path, "5000\n2026-01-02T03:00:00,/q,m,1,1,0,oops\n");
        assert_eq!(idx.spent(&path, day(2)), 0.375);
        assert_eq!(
            idx.offset,
            std::fs::metadata(&path).unwrap().len(),
            "only what was appended is read"
        );
        assert_eq!(
            idx.spent(&path, day(2)),
            crate::project::usage_log::spent_on(dir.path(), day(2)),
            "the same figure as reading the whole log"
        );
    }

    #[test]
    fn a_shrunk_or_replaced_log_or_a_new_day_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut idx = DaySpend::default();
        append(&path, "2026-01-02T01:00:00,/p,m,1,1,0,0.250000\n");
        append(&path, "2026-01-02T02:00:00,/p,m,1,1,0,0.250000\n");
        assert_eq!(idx.spent(&path, day(2)), 0.5);
        std::fs::write(&path, "2026-01-02T05:00:00,/p,m,1,1,0,0.125000\n").unwrap();
        assert_eq!(idx.spent(&path, day(2)), 0.125, "shrunk");
        let other = dir.path().join("new.csv");
        std::fs::write(
            &other,
            "2026-01-02T05:00:00,/p,m,1,1,0,0.375000\n2026-01-03T00:00:01,/p,m,1,1,0,1.000000\n",
        )
        .unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(idx.spent(&path, day(2)), 0.375, "replaced, longer");
        assert_eq!(idx.spent(&path, day(3)), 1.0, "the next day");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(idx.spent(&path, day(3)), 0.0, "removed");
    }
}
