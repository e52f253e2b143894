//! Images in context: `context_add` of a PNG, JPEG, GIF or WebP file makes an image
//! attachment (kind `image`, path `image:{path}`), read from disk by bb7 (a JSON
//! string cannot carry the bytes), kept as base64 in its snapshot, and sent to the
//! model as the provider's image part (docs/PROTOCOL.md, "Extension: rules files and
//! attachments"). Its size in the estimate follows Anthropic's published rule for
//! images: about width × height / 750 tokens, at most [`MAX_IMAGE_TOKENS`].

use std::path::Path;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::ChatFiles;
use super::attach::{self, Attached};
use crate::chat::ids;
use crate::chat::model::{AttachKind, Chat, ContextFile};
use crate::error::{Error, Result};

/// The largest image bb7 sends, 5 MiB: Anthropic's limit per image (OpenAI's is
/// larger), and several times a full-screen PNG screenshot.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The most tokens an image is counted as: Anthropic scales an image down to about
/// 1.15 megapixels (1,568 pixels on the long edge), about 1,600 tokens.
pub const MAX_IMAGE_TOKENS: usize = 1_600;

/// The media type an image file's name says (`.png`, `.jpg`/`.jpeg`, `.gif`,
/// `.webp`, any case), if any.
pub fn media_type_of(path: &str) -> Option<&'static str> {
    let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// The media type the bytes themselves say (their signature), if one of the four.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Width and height in pixels from the image's header, when it can be read.
pub fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| Some(u16::from_be_bytes([*bytes.get(i)?, *bytes.get(i + 1)?]) as u32);
    let le16 = |i: usize| Some(u16::from_le_bytes([*bytes.get(i)?, *bytes.get(i + 1)?]) as u32);
    let le24 = |i: usize| {
        let b = bytes.get(i..i + 3)?;
        Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    match sniff(bytes)? {
        "image/png" => png_header(bytes),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match bytes.get(12..16)? {
            b"VP8 " => Some((le16(26)? & 0x3FFF, le16(28)? & 0x3FFF)),
            b"VP8L" => {
                let b = bytes.get(21..25)?;
                let bits = u32::from_le_bytes(b.try_into().ok()?);
                Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
            }
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            _ => None,
        },
        _ => {
            // JPEG: walk the segments to the first start-of-frame marker.
            let mut i = 2;
            while i + 9 < bytes.len() {
                if bytes[i] != 0xFF {
                    return None;
                }
                let marker = bytes[i + 1];
                if marker == 0xFF {
                    i += 1;
                    continue;
                }
                let sof = (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker);
                if sof {
                    return Some((be16(i + 7)?, be16(i + 5)?));
                }
                i += 2 + be16(i + 2)? as usize;
            }
            None
        }
    }
}

/// Width and height from a PNG's IHDR chunk, which must come first and be well
/// formed (RFC 2083, 4.1.1: length 13, width and height 1..2^31, a bit depth the
/// colour type allows, compression and filter method 0, interlace 0 or 1); `None`
/// for anything else, such as noise after the signature.
fn png_header(bytes: &[u8]) -> Option<(u32, u32)> {
    let h = bytes.get(8..29)?;
    let be32 = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let (len, (w, hgt)) = (be32(0), (be32(8), be32(12)));
    let (depth, colour, compression, filter, interlace) = (h[16], h[17], h[18], h[19], h[20]);
    let depth_ok = match colour {
        0 => [1, 2, 4, 8, 16].contains(&depth),
        3 => [1, 2, 4, 8].contains(&depth),
        2 | 4 | 6 => [8, 16].contains(&depth),
        _ => false,
    };
    let dim_ok = |d: u32| d > 0 && d < 1 << 31;
    (len == 13
        && &h[4..8] == b"IHDR"
        && dim_ok(w)
        && dim_ok(hgt)
        && depth_ok
        && compression == 0
        && filter == 0
        && interlace <= 1)
        .then_some((w, hgt))
}

/// Tokens an image of `size` is counted as: width × height / 750, rounded up, at most
/// [`MAX_IMAGE_TOKENS`]; the most when the size is unknown.
pub fn tokens(size: Option<(u32, u32)>) -> usize {
    match size {
        Some((w, h)) => ((w as usize * h as usize).div_ceil(750)).clamp(1, MAX_IMAGE_TOKENS),
        None => MAX_IMAGE_TOKENS,
    }
}

/// The tokens an image entry is counted as (from its meta), or `None` for an entry
/// that is not an image.
pub fn entry_tokens(cf: &ContextFile) -> Option<usize> {
    if cf.kind != Some(AttachKind::Image) {
        return None;
    }
    let t = cf
        .meta
        .as_ref()
        .and_then(|m| m.get("tokens"))
        .and_then(Value::as_u64);
    Some(t.map_or(MAX_IMAGE_TOKENS, |t| t as usize))
}

/// The media type of an image entry (from its meta; by its name when absent).
pub fn entry_media_type(cf: &ContextFile) -> &str {
    cf.meta
        .as_ref()
        .and_then(|m| m.get("media_type"))
        .and_then(Value::as_str)
        .or_else(|| media_type_of(&cf.path))
        .unwrap_or("image/png")
}

/// Adds (or replaces) the image `rel` with the file's `bytes` as an image attachment:
/// its base64 snapshot and meta `{media_type, bytes, width, height, tokens}`.
/// Errors: the bytes are not a PNG, JPEG, GIF or WebP image, its header gives no
/// width and height (`… is not a valid PNG image …`), or it is larger than
/// [`MAX_IMAGE_BYTES`].
pub fn add(chat: &mut Chat, files: ChatFiles, rel: &str, bytes: &[u8]) -> Result<Attached> {
    add_with(chat, files, rel, bytes, Map::new())
}

/// [`add`] with `extra` meta entries after the image's own (an MCP resource's
/// `server`, `uri`, `audience`). Errors: as [`add`].
pub fn add_with(
    chat: &mut Chat,
    files: ChatFiles,
    rel: &str,
    bytes: &[u8],
    extra: Map<String, Value>,
) -> Result<Attached> {
    let media_type = sniff(bytes).ok_or_else(|| {
        Error::invalid(format!(
            "{rel} is not a PNG, JPEG, GIF or WebP image (its bytes say otherwise)"
        ))
    })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(Error::invalid(format!(
            "{rel} is too large to send as an image: {} KiB (at most {} KiB)",
            bytes.len().div_ceil(1024),
            MAX_IMAGE_BYTES / 1024
        )));
    }
    // A file with an image's signature whose header cannot be read would be sent and
    // refused by the provider: it is refused here, at the add.
    let size = dimensions(bytes).filter(|&(w, h)| w > 0 && h > 0);
    let Some(size) = size else {
        let format = media_type.trim_start_matches("image/").to_ascii_uppercase();
        return Err(Error::invalid(format!(
            "{rel} is not a valid {format} image: its header (width and height) cannot be read; is the file damaged or cut short?"
        )));
    };
    let size = Some(size);
    let mut meta = Map::new();
    meta.insert("media_type".into(), json!(media_type));
    meta.insert("bytes".into(), json!(bytes.len()));
    if let Some((w, h)) = size {
        meta.insert("width".into(), json!(w));
        meta.insert("height".into(), json!(h));
    }
    meta.insert("tokens".into(), json!(tokens(size)));
    meta.extend(extra);
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    let path = attach::path_of(AttachKind::Image, rel);
    let cf = ContextFile {
        version: ids::file_version(&path, &text),
        path,
        readonly: true,
        external: false,
        start_line: None,
        end_line: None,
        kind: Some(AttachKind::Image),
        meta: Some(meta),
    };
    attach::put(chat, files, cf, &text, bytes.len(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_headers() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(640u32.to_be_bytes());
        png.extend(480u32.to_be_bytes());
        // Cut short before the bit depth: no readable header.
        assert_eq!(dimensions(&png), None);
        png.extend([8, 6, 0, 0, 0]);
        assert_eq!(dimensions(&png), Some((640, 480)));
        png[24] = 7;
        assert_eq!(dimensions(&png), None, "bit depth 7");
        assert_eq!(tokens(Some((640, 480))), 410);
        assert_eq!(tokens(Some((4000, 3000))), MAX_IMAGE_TOKENS);
        let gif = b"GIF89a\x20\x00\x10\x00".to_vec();
        assert_eq!(dimensions(&gif), Some((32, 16)));
        // JPEG: SOI, an APP0 segment, then SOF0 with height 200 and width 300.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00];
        jpeg.extend([
            0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0xC8, 0x01, 0x2C, 0x03, 0, 0, 0,
        ]);
        assert_eq!(dimensions(&jpeg), Some((300, 200)));
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        webp.extend([0x7F, 0x02, 0x00, 0xDF, 0x01, 0x00]);
        assert_eq!(dimensions(&webp), Some((640, 480)));
        assert_eq!(sniff(b"hello"), None);
        assert_eq!(media_type_of("shots/A.JPG"), Some("image/jpeg"));
        assert_eq!(media_type_of("a.rs"), None);
    }
}
