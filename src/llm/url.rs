//! What a base URL may be trusted with, and how it is shown. A key sent over plain
//! HTTP to another machine can be read by anyone on the way (RFC 6750, section 5.3:
//! bearer tokens need TLS), and a URL's user info or query may itself hold a key
//! (`?key=…`), so a URL is never echoed whole into an error, a chat or a log.

use reqwest::Url;

/// `url` without what may hold a secret: the user info, the query and the fragment
/// become `…` markers, so a reader sees that something was there. A string that is
/// not a URL is cut at its first `?` or `#`.
pub fn redacted(url: &str) -> String {
    let Ok(mut parsed) = Url::parse(url) else {
        let cut = url.find(['?', '#']).unwrap_or(url.len());
        return url[..cut].to_owned();
    };
    let had_user = !parsed.username().is_empty() || parsed.password().is_some();
    let had_query = parsed.query().is_some() || parsed.fragment().is_some();
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_query(None);
    parsed.set_fragment(None);
    let mut shown = parsed.to_string();
    if had_user && let Some(at) = shown.find("://") {
        shown.insert_str(at + 3, "…@");
    }
    if had_query {
        shown.push_str("?…");
    }
    shown
}

/// Replaces every occurrence of `url` in `text` by its [`redacted`] form (error texts
/// of the HTTP client quote the URL they tried).
pub fn redact_in(text: &str, url: &str) -> String {
    if url.is_empty() {
        return text.to_owned();
    }
    text.replace(url, &redacted(url))
}

/// Whether `url` names this machine: `localhost`, `127.0.0.0/8` or `::1`. `false` for
/// a string that is not a URL.
pub fn is_loopback(url: &str) -> bool {
    let Ok(url) = Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Why a request to `base_url` would expose a credential: it is plain `http://` to a
/// host other than this machine, and it carries a key (the configured one, or user
/// info or a query in the URL itself). `None` when it is safe: `https`, a loopback
/// host (`localhost`, `127.0.0.0/8`, `::1`), or nothing secret to send.
pub fn cleartext_risk(base_url: &str, has_key: bool) -> Option<String> {
    let url = Url::parse(base_url).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    let in_url = !url.username().is_empty() || url.password().is_some() || url.query().is_some();
    if !has_key && !in_url {
        return None;
    }
    (!is_loopback(base_url)).then(|| {
        format!(
            "the API key would cross the network in cleartext: {} is plain http to another machine",
            redacted(base_url)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_urls_are_never_shown() {
        assert_eq!(
            redacted("https://u:p@example.com/v1?key=abc#x"),
            "https://…@example.com/v1?…"
        );
        assert_eq!(
            redacted("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(redacted("not a url?key=abc"), "not a url");
        let msg = "error sending request for url (http://h/v1/chat?key=abc)";
        assert!(!redact_in(msg, "http://h/v1/chat?key=abc").contains("abc"));
    }

    #[test]
    fn a_key_over_plain_http_leaves_only_for_loopback() {
        assert!(cleartext_risk("http://example.com/v1", true).is_some());
        assert!(cleartext_risk("http://10.0.0.2/v1?key=abc", false).is_some());
        assert!(cleartext_risk("http://example.com/v1", false).is_none());
        assert!(cleartext_risk("https://example.com/v1", true).is_none());
        for local in [
            "http://localhost:1234/v1",
            "http://127.0.0.2/v1",
            "http://[::1]/v1",
        ] {
            assert!(cleartext_risk(local, true).is_none(), "{local}");
        }
    }
}
