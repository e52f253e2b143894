//! Retry notices on stderr for one-shot commands. The in-process server logs each
//! retry of a model request as a `tracing` event (`"retrying"` with `wait_ms` and
//! `error`); this subscriber turns exactly those events into a line such as
//! `bb7: retrying in 2 s (HTTP 429)` so a shell user knows why nothing happens yet.

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Installs the notice printer as the process's subscriber; does nothing when one is
/// already installed (the debug log).
pub fn install() {
    let _ = tracing::subscriber::set_global_default(RetryNotices);
}

/// A subscriber that prints retry events and ignores everything else.
struct RetryNotices;

#[derive(Default)]
struct Fields {
    message: String,
    wait_ms: Option<u64>,
    error: String,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "wait_ms" {
            self.wait_ms = Some(value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "error" {
            self.error = value.to_owned();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "error" => self.error = format!("{value:?}"),
            _ => {}
        }
    }
}

/// `HTTP 429` from a message like `Model API error (HTTP 429, rate limited): …`;
/// `cannot reach URL: cause` for a failed connection; else the whole message.
fn reason(error: &str) -> String {
    if let Some(i) = error.find("HTTP ") {
        let digits: String = error[i + 5..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if !digits.is_empty() {
            return format!("HTTP {digits}");
        }
    }
    // reqwest names the URL as "… for url (URL): cause"; the last cause is the useful one.
    if let Some(i) = error.find("for url (")
        && let Some(end) = error[i + 9..].find(')')
    {
        let url = &error[i + 9..i + 9 + end];
        let cause = error.rsplit(": ").next().unwrap_or("");
        return format!("cannot reach {url}: {cause}");
    }
    error.to_owned()
}

/// `2` for 2000 ms, `0.5` for 500 ms.
fn seconds(ms: u64) -> String {
    format!("{}", ms as f64 / 1000.0)
}

impl Subscriber for RetryNotices {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event()
            && metadata.target().starts_with("bb7::")
            && *metadata.level() <= Level::INFO
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::INFO)
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut f = Fields::default();
        event.record(&mut f);
        if f.message != "retrying" {
            return;
        }
        let wait = f.wait_ms.map(seconds).unwrap_or_else(|| "a few".into());
        eprintln!("bb7: retrying in {wait} s ({})", reason(&f.error));
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_status_and_the_delay() {
        assert_eq!(
            reason("Model API error (HTTP 429, rate limited): slow down"),
            "HTTP 429"
        );
        assert_eq!(
            reason("Cannot reach the model API: x"),
            "Cannot reach the model API: x"
        );
        assert_eq!(seconds(2000), "2");
        assert_eq!(seconds(20), "0.02");
        assert_eq!(seconds(1500), "1.5");
    }
}
