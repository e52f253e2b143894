//! `/export [md|json] [redact|no-redact]`: the session's chat written to a file under
//! the project's `.bb7/exports/` to share, as `bb7 export` writes it (docs/PROTOCOL.md,
//! "Extension: export and import"): Markdown as `bb7 show` renders it (the default) or
//! the JSON document `bb7 import` reads back. Over ACP the export is redacted by
//! default in both formats (likely secrets become `[REDACTED:kind]`,
//! `crate::text::redact`): it is made to leave the machine, and the editor's user may
//! not see what the chat holds before sharing it. The answer names the file as a link.

use agent_client_protocol::Error as RpcError;

use super::state::{Sess, rpc};
use crate::chat::store::ChatStore;
use crate::front::Client;
use crate::project::Project;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::ChatView;

/// How `/export` is used, for an argument it does not know.
const USAGE: &str =
    "Usage: /export [md|json] [redact|no-redact] (Markdown and redacted by default)";

/// Runs `/export` with `args`; the answer for the user.
pub(super) async fn export(sess: &Sess, c: &mut Client, args: &[&str]) -> Result<String, RpcError> {
    let mut json = false;
    let mut redact = true;
    for a in args {
        match a.to_ascii_lowercase().as_str() {
            "md" | "markdown" => json = false,
            "json" => json = true,
            "redact" => redact = true,
            "no-redact" | "noredact" | "--no-redact" => redact = false,
            _ => return Ok(format!("Not exported: unknown argument {a}. {USAGE}")),
        }
    }
    let text = if json {
        // The chat as its directory holds it: deferred writes first.
        crate::project::flush_queue::flush_now();
        let root = sess
            .root
            .canonicalize()
            .unwrap_or_else(|_| sess.root.clone());
        let store = ChatStore::new(Project { root }.state_dir(), false);
        match crate::front::export::json(&store, &sess.id) {
            Ok(t) => t,
            Err(why) => return Ok(format!("Not exported: {why}")),
        }
    } else {
        let chat: ChatView = c
            .call(Action::ChatGet(params::NoParams {}))
            .await
            .map_err(rpc)?;
        crate::front::markdown::markdown(&chat)
    };
    let (text, note) = if redact {
        let (t, n) = crate::text::redact::redact(&text);
        (
            t,
            format!("redacted {n} likely secret(s) as [REDACTED:kind]"),
        )
    } else {
        (
            text,
            "not redacted: it holds the chat's text as it is".to_owned(),
        )
    };
    let ext = if json { "json" } else { "md" };
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    // Two exports in one second keep both files.
    let (rel, abs) = (1..)
        .map(|n| match n {
            1 => format!(".bb7/exports/{}-{stamp}.{ext}", sess.id),
            n => format!(".bb7/exports/{}-{stamp}-{n}.{ext}", sess.id),
        })
        .map(|rel| {
            let abs = sess.abs(&rel);
            (rel, abs)
        })
        .find(|(_, abs)| !abs.exists())
        .expect("an unused name");
    // bb7's state: private (0600), as every file under `.bb7/`.
    if let Err(e) = crate::project::fsutil::write_atomic(&abs, text.as_bytes()) {
        return Ok(format!("Not exported: cannot write {rel}: {}", e.message));
    }
    let what = if json {
        "as JSON (`bb7 import` reads it back)"
    } else {
        "as Markdown"
    };
    Ok(format!(
        "Exported this chat {what} to [{rel}]({}): {note}.",
        file_url(&abs)
    ))
}

/// A `file://` URL of `abs`, each byte outside RFC 3986's unreserved set and `/`
/// percent-encoded, so a Markdown link to it holds no space or parenthesis.
fn file_url(abs: &std::path::Path) -> String {
    let mut url = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                url.push(b as char)
            }
            _ => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_urls_escape_what_breaks_a_link() {
        assert_eq!(
            super::file_url(std::path::Path::new("/p/a b/(x)é.md")),
            "file:///p/a%20b/%28x%29%C3%A9.md"
        );
    }
}
