//! What bb7 keeps of an MCP server's answers, as its own serde types (the wire shapes
//! of docs/PROTOCOL.md "MCP resources and prompts"), and the rules that turn a
//! resource's contents into something attachable: text, or an image; any other
//! binary blob is refused naming its MIME type (a model reads neither PDFs nor
//! archives as base64).

use base64::Engine as _;
use rmcp::model::{self, ResourceContents, Role};
use serde::{Deserialize, Serialize};

/// One resource a server lists (`resources/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceInfo {
    /// Its URI, what `mcp_resource_attach` takes.
    pub uri: String,
    /// The server's name for it.
    pub name: String,
    /// A title for people, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// `annotations.audience` is only `user`: shown to the user, never sent to the
    /// model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_only: bool,
}

/// One resource template a server lists (`resources/templates/list`): a URI with
/// `{variables}` (RFC 6570) the user fills in before attaching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateInfo {
    /// The URI template.
    pub uri_template: String,
    /// The server's name for it.
    pub name: String,
    /// What it is, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it yields, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArg {
    /// Its name (`name=value` on a `/mcp:` command line).
    pub name: String,
    /// What it is, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt cannot be rendered without it.
    #[serde(default)]
    pub required: bool,
}

/// One prompt a server lists (`prompts/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptInfo {
    /// The server that serves it.
    pub server: String,
    /// Its name.
    pub name: String,
    /// What it does, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Vec<PromptArg>,
}

/// What a resource read gave, ready to attach.
#[derive(Debug, Clone, PartialEq)]
pub enum Contents {
    /// Text (UTF-8), with its MIME type.
    Text {
        /// The URI the server gave these contents.
        uri: String,
        /// `text/plain` when the server said none.
        mime: String,
        /// The text, control characters other than tab and newline replaced.
        text: String,
    },
    /// An image (PNG, JPEG, GIF or WebP by its MIME type), its bytes.
    Image {
        /// The URI the server gave these contents.
        uri: String,
        /// `image/png`, …
        mime: String,
        /// The decoded bytes.
        bytes: Vec<u8>,
    },
}

/// The MIME types whose blobs are read as UTF-8 text: `text/*` and the structured
/// text formats (JSON, XML, YAML, JavaScript, TOML, `+json`/`+xml` suffixes).
fn is_textual(mime: &str) -> bool {
    let m = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    m.starts_with("text/")
        || m.ends_with("+json")
        || m.ends_with("+xml")
        || matches!(
            m.as_str(),
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/javascript"
                | "application/toml"
                | "application/x-sh"
        )
}

/// The four image types a model takes (as `context::image` does for files).
fn image_mime(mime: &str) -> Option<&'static str> {
    match mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    }
}

/// `text` with every control character other than tab and newline (a terminal's
/// escape sequences, a carriage return that rewrites a line) replaced by U+FFFD: the
/// text is shown in terminals and editors and comes from a program bb7 does not
/// control.
pub fn clean(text: &str) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return text.to_owned();
    }
    text.replace("\r\n", "\n")
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// One read result as [`Contents`]. Errors (a message naming the URI): a blob that
/// is not base64, not UTF-8 text of a textual type, or of a binary type (named).
pub fn from_read(c: ResourceContents) -> Result<Contents, String> {
    match c {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => Ok(Contents::Text {
            uri,
            mime: mime_type.unwrap_or_else(|| "text/plain".into()),
            text: clean(&text),
        }),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => {
            let mime = mime_type.unwrap_or_else(|| "application/octet-stream".into());
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob.trim())
                .map_err(|_| format!("{uri}: its blob is not base64"))?;
            if let Some(image) = image_mime(&mime) {
                return Ok(Contents::Image {
                    uri,
                    mime: image.into(),
                    bytes,
                });
            }
            if is_textual(&mime) {
                let text = String::from_utf8(bytes)
                    .map_err(|_| format!("{uri}: its {mime} blob is not UTF-8 text"))?;
                return Ok(Contents::Text {
                    uri,
                    mime,
                    text: clean(&text),
                });
            }
            Err(format!(
                "{uri} is binary ({mime}): bb7 attaches text and PNG, JPEG, GIF or WebP images only"
            ))
        }
        _ => Err("a resource content of a kind bb7 does not know".into()),
    }
}

/// Whether `audience` names the user alone (MCP `Annotations.audience`).
pub fn user_only(a: Option<&model::Annotations>) -> bool {
    a.and_then(|a| a.audience.as_deref())
        .is_some_and(|aud| !aud.is_empty() && aud.iter().all(|r| *r == Role::User))
}

impl ResourceInfo {
    /// From the SDK's listing, its texts cleaned.
    pub fn from_model(r: model::Resource) -> ResourceInfo {
        ResourceInfo {
            user_only: user_only(r.annotations.as_ref()),
            uri: r.uri,
            name: clean(&r.name),
            title: r.title.as_deref().map(clean),
            description: r.description.as_deref().map(clean),
            mime: r.mime_type,
        }
    }
}

impl TemplateInfo {
    /// From the SDK's listing, its texts cleaned.
    pub fn from_model(t: model::ResourceTemplate) -> TemplateInfo {
        TemplateInfo {
            uri_template: t.uri_template,
            name: clean(&t.name),
            description: t.description.as_deref().map(clean),
            mime: t.mime_type,
        }
    }
}

impl PromptInfo {
    /// From the SDK's listing of `server`, its texts cleaned.
    pub fn from_model(server: &str, p: model::Prompt) -> PromptInfo {
        PromptInfo {
            server: server.to_owned(),
            name: p.name,
            description: p.description.as_deref().map(clean),
            arguments: p
                .arguments
                .unwrap_or_default()
                .into_iter()
                .map(|a| PromptArg {
                    name: a.name,
                    description: a.description.as_deref().map(clean),
                    required: a.required.unwrap_or(false),
                })
                .collect(),
        }
    }
}

/// A rendered prompt (`prompts/get`): its messages' text as one user message, and
/// the resources embedded in it.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The text of every text message, in order, separated by blank lines (an
    /// assistant message is quoted as such).
    pub text: String,
    /// Embedded resources and images.
    pub resources: Vec<Contents>,
    /// Embedded contents that could not be kept, each with why.
    pub skipped: Vec<String>,
}

/// Renders `prompts/get`'s messages (see [`Rendered`]).
pub fn render(server: &str, messages: Vec<model::PromptMessage>) -> Rendered {
    let mut out = Rendered::default();
    let mut n = 0;
    for m in messages {
        match m.content {
            model::ContentBlock::Text(t) => {
                if !out.text.is_empty() {
                    out.text.push_str("\n\n");
                }
                if m.role == Role::Assistant {
                    out.text.push_str("(assistant) ");
                }
                out.text.push_str(&clean(&t.text));
            }
            model::ContentBlock::Resource(r) => match from_read(r.resource) {
                Ok(c) => out.resources.push(c),
                Err(e) => out.skipped.push(e),
            },
            model::ContentBlock::Image(i) => {
                n += 1;
                let decoded = base64::engine::general_purpose::STANDARD.decode(i.data.trim());
                match (decoded, image_mime(&i.mime_type)) {
                    (Ok(bytes), Some(mime)) => out.resources.push(Contents::Image {
                        uri: format!("prompt-image-{n}"),
                        mime: mime.into(),
                        bytes,
                    }),
                    _ => out
                        .skipped
                        .push(format!("an image of {server}'s prompt ({})", i.mime_type)),
                }
            }
            model::ContentBlock::ResourceLink(r) => {
                if !out.text.is_empty() {
                    out.text.push_str("\n\n");
                }
                out.text.push_str(&format!("[resource {}]", clean(&r.uri)));
            }
            _ => out.skipped.push("audio (bb7 sends no audio)".into()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_text_images_and_binaries() {
        let blob = |mime: &str, bytes: &[u8]| {
            ResourceContents::blob(
                base64::engine::general_purpose::STANDARD.encode(bytes),
                "x://a",
            )
            .with_mime_type(mime)
        };
        assert!(
            matches!(from_read(blob("text/plain", b"hi")), Ok(Contents::Text { text, .. }) if text == "hi")
        );
        assert!(matches!(
            from_read(blob("image/png", b"\x89PNG")),
            Ok(Contents::Image { .. })
        ));
        let e = from_read(blob("application/pdf", b"%PDF")).unwrap_err();
        assert!(e.contains("application/pdf"), "{e}");
        assert!(
            from_read(blob("text/plain", b"\xff\xfe"))
                .unwrap_err()
                .contains("UTF-8")
        );
        assert_eq!(clean("a\x1b[31mred\r\n"), "a\u{FFFD}[31mred\n");
    }
}
