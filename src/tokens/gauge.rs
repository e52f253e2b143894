//! The context gauge: how much of the model's context window the next request fills,
//! shown the same way by every front-end (`~48k/200k (24%)`). The window comes from
//! the server (the models list's `context_length`, a local server's `n_ctx`, or the
//! provider's `context_window` in the config); when none is known the gauge says
//! "window unknown" and never guesses.

use serde::{Deserialize, Serialize};

/// From this share of the window (in percent) the gauge warns.
pub const WARN_PERCENT: u64 = 80;

/// How full the window is, as a client colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Under [`WARN_PERCENT`].
    #[default]
    Ok,
    /// From [`WARN_PERCENT`] to under 100%.
    Warning,
    /// 100% or more: a send is refused before it is billed.
    Full,
    /// No window is known.
    Unknown,
}

/// The next request's estimated tokens against a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauge {
    /// Estimated tokens of the next request.
    pub tokens: u64,
    /// The model's context window in tokens; `None` when unknown (a zero counts as
    /// unknown: model lists write 0 for "not reported").
    pub window: Option<u64>,
}

impl Gauge {
    /// A gauge of `tokens` against `window`.
    pub fn new(tokens: u64, window: Option<u64>) -> Self {
        Gauge {
            tokens,
            window: window.filter(|w| *w > 0),
        }
    }

    /// The share of the window in whole percent, rounded down (so 100 means the
    /// request fills the window); `None` when the window is unknown.
    pub fn percent(&self) -> Option<u64> {
        self.window
            .map(|w| (self.tokens as u128 * 100 / w as u128).min(u64::MAX as u128) as u64)
    }

    /// The colour band.
    pub fn level(&self) -> Level {
        match self.percent() {
            None => Level::Unknown,
            Some(p) if p >= 100 => Level::Full,
            Some(p) if p >= WARN_PERCENT => Level::Warning,
            Some(_) => Level::Ok,
        }
    }

    /// `~48k/200k (24%)`, or `~48k (window unknown)`.
    pub fn text(&self) -> String {
        match (self.window, self.percent()) {
            (Some(w), Some(p)) => format!("~{}/{} ({p}%)", short(self.tokens), short(w)),
            _ => format!("~{} (window unknown)", short(self.tokens)),
        }
    }
}

/// A count in the short form gauges use: `950`, `1.2k`, `48k`, `1M`, `1.5M`.
pub fn short(n: u64) -> String {
    fn one_decimal(n: u64, unit: u64, suffix: &str) -> String {
        let tenths = (n * 10 + unit / 2) / unit;
        if tenths.is_multiple_of(10) || tenths >= 100 {
            format!("{}{suffix}", (tenths + 5) / 10)
        } else {
            format!("{}.{}{suffix}", tenths / 10, tenths % 10)
        }
    }
    match n {
        0..1000 => n.to_string(),
        1000..999_500 => one_decimal(n, 1000, "k"),
        _ => one_decimal(n, 1_000_000, "M"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_reads_as_tokens_over_window_with_a_percent() {
        let g = Gauge::new(48_000, Some(200_000));
        assert_eq!(g.text(), "~48k/200k (24%)");
        assert_eq!(g.level(), Level::Ok);
        assert_eq!(Gauge::new(160_000, Some(200_000)).level(), Level::Warning);
        assert_eq!(Gauge::new(159_999, Some(200_000)).level(), Level::Ok);
        assert_eq!(Gauge::new(200_000, Some(200_000)).level(), Level::Full);
        assert_eq!(Gauge::new(1_234, Some(8_192)).text(), "~1.2k/8.2k (15%)");
        assert_eq!(
            Gauge::new(1_050_000, Some(1_000_000)).text(),
            "~1.1M/1M (105%)"
        );
    }

    #[test]
    fn an_unknown_window_is_said_never_guessed() {
        for w in [None, Some(0)] {
            let g = Gauge::new(950, w);
            assert_eq!(g.text(), "~950 (window unknown)");
            assert_eq!(g.level(), Level::Unknown);
            assert_eq!(g.percent(), None);
        }
    }
}
