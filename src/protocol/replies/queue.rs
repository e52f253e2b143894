//! The reply to a `send` queued while its chat streams (docs/PROTOCOL.md, "Extension:
//! queue while streaming").

reply_types! {
    /// `send` with `queue: true` while a turn of the same chat runs: not final; the
    /// request's stream follows once it starts.
    Queued = "queued" {
        /// 1 for the next to start.
        pub position: usize,
        /// The chat.
        pub chat_id: String,
        /// Set when the message waits instead of starting: why, and what starts it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
    }
}
