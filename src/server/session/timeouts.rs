//! A turn's time limits (`stream_timeout_secs`, `first_token_timeout_secs`) and
//! whether its provider is a server on this machine (which widens the first wait).

use std::time::Duration;

use super::Session;

/// Default seconds without stream data before a turn fails.
pub(super) const DEFAULT_STALL_SECS: u64 = 120;

/// Default of `first_token_timeout_secs`: ten minutes, for a local server reading a
/// long prompt on a slow machine.
pub(super) const DEFAULT_FIRST_TOKEN_SECS: u64 = 600;

impl Session {
    /// `stream_timeout_secs` (at least 1 s).
    pub(super) fn stall_timeout(&self) -> Duration {
        Duration::from_secs(
            self.config
                .stream_timeout_secs
                .unwrap_or(DEFAULT_STALL_SECS)
                .max(1),
        )
    }

    /// `first_token_timeout_secs`, never below the stall timeout.
    pub(super) fn first_token_timeout(&self) -> Duration {
        let secs = self
            .config
            .first_token_timeout_secs
            .unwrap_or(DEFAULT_FIRST_TOKEN_SECS)
            .max(1);
        Duration::from_secs(secs).max(self.stall_timeout())
    }

    /// Whether `role`'s provider is a server on this machine: the `local` provider, or
    /// one whose `base_url` is a loopback address.
    pub(super) fn is_local_server(&self, role: crate::llm::providers::ProviderRole) -> bool {
        role == crate::llm::providers::ProviderRole::Local
            || crate::llm::providers::Providers::from_config(&self.config)
                .get(role)
                .is_ok_and(|e| crate::llm::url::is_loopback(&e.base_url))
    }
}
