//! Redaction of likely secrets in text meant to be shared (`bb7 export`): each match is
//! replaced with `[REDACTED:kind]` and counted. No maintained Rust crate ships a
//! secret-pattern list as data, so the patterns are written here; the token formats are
//! those the providers document, as collected by the gitleaks rule set
//! (github.com/gitleaks/gitleaks, `config/gitleaks.toml`), cited per rule below. Each
//! rule is deliberately anchored on a fixed prefix or a named key, so that ordinary
//! text (hashes, UUIDs, `MAX_TOKENS=4096`, `sk-` in prose) stays.

use std::sync::OnceLock;

use fancy_regex::Regex;

/// One rule: its kind (shown as `[REDACTED:kind]`) and a pattern whose capture group
/// `s` is the secret (the whole match when it has none).
struct Rule {
    kind: &'static str,
    pattern: &'static str,
}

/// The rules, applied in order (a later rule never matches inside an earlier
/// replacement: `[REDACTED:…]` matches none of them).
const RULES: &[Rule] = &[
    // PEM (RFC 7468) private keys of every type: RSA, EC, OPENSSH, ENCRYPTED, plain PKCS #8.
    Rule {
        kind: "private_key",
        pattern: r"-----BEGIN[A-Z ]{0,30} PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[A-Z ]{0,30} PRIVATE KEY(?: BLOCK)?-----",
    },
    // OpenRouter: `sk-or-v1-` and 64 hex digits (the keys its dashboard issues).
    Rule {
        kind: "openrouter_key",
        pattern: r"\bsk-or-v1-[0-9a-f]{64}\b",
    },
    // Anthropic: `sk-ant-api03-…` / `sk-ant-admin01-…` (gitleaks `anthropic-api-key`,
    // `anthropic-admin-api-key`); any later `sk-ant-` version is taken too.
    Rule {
        kind: "anthropic_key",
        pattern: r"\bsk-ant-[a-z]{3,8}\d{2}-[A-Za-z0-9_\-]{32,}",
    },
    // OpenAI: project, service-account and admin keys `sk-proj-…`, `sk-svcacct-…`,
    // `sk-admin-…`, and the older `sk-` + 48 alphanumerics, which carry the marker
    // `T3BlbkFJ` ("OpenAI" in base64) (gitleaks `openai-api-key`).
    Rule {
        kind: "openai_key",
        pattern: r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}",
    },
    Rule {
        kind: "openai_key",
        pattern: r"\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b|\bsk-[A-Za-z0-9]{48}\b",
    },
    // Any other `sk-` key of 32 or more key characters with a digit among them (other
    // OpenAI-compatible providers issue `sk-` keys of various lengths).
    Rule {
        kind: "openai_key",
        pattern: r"\bsk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{32,}",
    },
    // AWS access key ids: `AKIA` (long-term), `ASIA` (temporary) and the other
    // documented prefixes, then 16 upper-case base-32 characters (AWS IAM user guide,
    // "Unique identifier prefixes"; gitleaks `aws-access-token`).
    Rule {
        kind: "aws_access_key_id",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}\b",
    },
    // AWS secret access keys: 40 base-64 characters after a key that names them, as in
    // `~/.aws/credentials` (`aws_secret_access_key = …`) or the environment variable.
    Rule {
        kind: "aws_secret_key",
        pattern: r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?(?<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"#,
    },
    // GitHub: classic tokens `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 36 characters, and
    // fine-grained `github_pat_` tokens (GitHub docs, "About authentication to GitHub",
    // token formats; gitleaks `github-pat`, `github-fine-grained-pat`).
    Rule {
        kind: "github_token",
        pattern: r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",
    },
    Rule {
        kind: "github_token",
        pattern: r"\bgithub_pat_[A-Za-z0-9_]{50,}\b",
    },
    // Slack: bot, user, app-level, refresh and configuration tokens `xoxb-`, `xoxp-`,
    // `xoxa-`, `xoxr-`, `xoxs-` (Slack API docs, "Token types"; gitleaks `slack-*`).
    Rule {
        kind: "slack_token",
        pattern: r"\bxox[bpars]-[A-Za-z0-9\-]{10,}",
    },
    // `.env`-style lines (the dotenv format: `KEY=value`, optionally `export KEY=…`)
    // whose key ends in a word that names a secret; the value is redacted, the key
    // kept. A value that refers to a variable (`$X`, `${X}`) or is already redacted
    // stays.
    Rule {
        kind: "env_secret",
        pattern: r#"(?mi)^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*?(?:SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET_?KEY|AUTH|CREDENTIALS?|DSN)[ \t]*=[ \t]*["']?(?<s>(?!\$|\[REDACTED)[^\s"'#]+)"#,
    },
    // HTTP bearer tokens (RFC 6750 `b64token`), at least 16 characters so that prose
    // ("a bearer token") stays.
    Rule {
        kind: "bearer_token",
        pattern: r"(?i)\bbearer[ \t]+(?<s>(?!\[REDACTED)[A-Za-z0-9\-._~+/]{16,}=*)",
    },
    // User info with a password in a URL (RFC 3986 §3.2.1 deprecates it:
    // `scheme://user:password@host`).
    Rule {
        kind: "url_userinfo",
        pattern: r"(?i)\b[a-z][a-z0-9+.\-]*://(?<s>[^/\s:@]+:[^/\s@]+)@",
    },
    // Query parameters that carry credentials (OAuth 2.0 `access_token` (RFC 6750
    // §2.3), `client_secret`, API keys, signatures of presigned URLs).
    Rule {
        kind: "url_query_secret",
        pattern: r"(?i)[?&](?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret|password|passwd|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=(?<s>(?!\[REDACTED)[^&\s#]+)",
    },
];

fn compiled() -> &'static [(&'static str, Regex)] {
    static RES: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    RES.get_or_init(|| {
        RULES
            .iter()
            .filter_map(|r| Regex::new(r.pattern).ok().map(|re| (r.kind, re)))
            .collect()
    })
}

/// `text` with every likely secret replaced by `[REDACTED:kind]`, and how many were
/// replaced. A pattern that fails on some input (fancy-regex's backtrack limit) leaves
/// the rest of that input to the next rules rather than failing the export.
pub fn redact(text: &str) -> (String, usize) {
    let mut out = text.to_owned();
    let mut count = 0;
    for (kind, re) in compiled() {
        let mut next = String::with_capacity(out.len());
        let mut last = 0;
        for caps in re.captures_iter(&out) {
            let Ok(caps) = caps else { break };
            let Some(m) = caps.name("s").or_else(|| caps.get(0)) else {
                continue;
            };
            next.push_str(&out[last..m.start()]);
            next.push_str(&format!("[REDACTED:{kind}]"));
            last = m.end();
            count += 1;
        }
        next.push_str(&out[last..]);
        out = next;
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real formats with fake values: (text, kind expected in its place).
    const SECRETS: &[(&str, &str)] = &[
        (
            "key sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef here",
            "openrouter_key",
        ),
        (
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYzAA",
            "anthropic_key",
        ),
        (
            "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_AbCdEfGhIjKlMnOp",
            "openai_key",
        ),
        (
            "sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJAbCdEfGhIjKlMnOpQrSt",
            "openai_key",
        ),
        ("OPENAI=sk-0123456789abcdef0123456789abcdef", "openai_key"),
        ("id AKIAIOSFODNN7EXAMPLE,", "aws_access_key_id"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_key",
        ),
        ("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "github_token"),
        (
            "github_pat_11ABCDEFG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUv",
            "github_token",
        ),
        (
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack_token",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----",
            "private_key",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "private_key",
        ),
        ("DATABASE_PASSWORD=hunter2hunter2", "env_secret"),
        (
            "export STRIPE_SECRET_KEY=\"rk_live_abc123def456\"",
            "env_secret",
        ),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.abc",
            "bearer_token",
        ),
        (
            "postgres://admin:s3cretpass@db.internal:5432/app",
            "url_userinfo",
        ),
        (
            "https://api.example.com/v1/items?page=2&api_key=abcdef123456",
            "url_query_secret",
        ),
    ];

    /// Look-alikes that must stay as they are.
    const KEEP: &[&str] = &[
        "the sk- prefix names a secret key",
        "sk-learn is a library; sk-or-v1 is a prefix",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "MAX_TOKENS=4096",
        "TOKEN_LIMIT=4096",
        "PUBLIC_KEY_PATH=/etc/ssl/cert.pem",
        "API_KEY=$OPENAI_API_KEY",
        "API_KEY=",
        "we send a bearer token in the header",
        "AKIA alone, or AKIAshort",
        "git@github.com:owner/repo.git",
        "https://example.com/path?page=2&keyword=rust",
        "https://user@example.com/",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
        "xoxo, see you",
        "ghp_short",
        "let password = input();",
        "sk-some-very-long-descriptive-name-without-digits",
    ];

    #[test]
    fn every_secret_format_is_replaced_and_counted() {
        for (text, kind) in SECRETS {
            let (out, n) = redact(text);
            assert_eq!(n, 1, "{text} -> {out}");
            assert!(
                out.contains(&format!("[REDACTED:{kind}]")),
                "{text} -> {out}"
            );
        }
    }

    #[test]
    fn look_alikes_stay() {
        for text in KEEP {
            assert_eq!(redact(text), (text.to_string(), 0), "{text}");
        }
    }

    #[test]
    fn keys_and_context_around_a_secret_stay() {
        let (out, n) = redact("A=1\nGITHUB_TOKEN=ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\nB=2\n");
        assert_eq!(out, "A=1\nGITHUB_TOKEN=[REDACTED:github_token]\nB=2\n");
        assert_eq!(n, 1);
        let (out, _) = redact("curl https://u:p4ss@h.example/x?token=abc&x=1");
        assert_eq!(
            out,
            "curl https://[REDACTED:url_userinfo]@h.example/x?token=[REDACTED:url_query_secret]&x=1"
        );
    }
}
