//! What a client's `fs/write_text_file` may do to the text bb7 sends it, besides
//! writing it: clients write through their editor's buffer and save it as the buffer
//! is set up, so the bytes on disk may differ from the text in ways the user never
//! chose. The forms seen in real clients (tests/fixtures/acp-clients/README.md and
//! docs/PROTOCOL.md, "ACP"): CRLF line endings written as LF (a buffer whose
//! `fileformat` is `unix`), the final newline dropped (a buffer read without it, as
//! avante.nvim's read gives it), and an empty last line appended on every write
//! (codecompanion.nvim writes each `\n`-separated piece as a line).

/// Whether `now` is `recorded` as a client's write leaves it: the same text, or the
/// text with any of the rewrites above (CRLF as LF; the final newline dropped; one
/// or more line breaks appended). Nothing else passes: a changed, added or removed
/// line, or a changed ending inside the text, is a change of the user's.
pub(super) fn written_as(now: &str, recorded: &str) -> bool {
    if now == recorded {
        return true;
    }
    let lf = recorded.replace("\r\n", "\n");
    [recorded, lf.as_str()].into_iter().any(|r| {
        if now == r || r.strip_suffix('\n') == Some(now) {
            return true;
        }
        now.strip_prefix(r).is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .split_inclusive('\n')
                    .all(|piece| piece == "\n" || piece == "\r\n")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::written_as;

    #[test]
    fn each_client_rewrite_passes() {
        assert!(written_as("a\nb\n", "a\nb\n"));
        assert!(written_as("a\nb\n", "a\r\nb\r\n"), "CRLF written as LF");
        assert!(written_as("a\nb", "a\r\nb"), "CRLF as LF, no final newline");
        assert!(written_as("a\nb", "a\nb\n"), "final newline dropped");
        assert!(written_as("a\nb", "a\r\nb\r\n"), "both");
        assert!(written_as("a\nb\n\n", "a\nb\n"), "an empty line appended");
        assert!(written_as("a\nb\n\n\n", "a\nb\n"), "one each time");
        assert!(written_as("a\nb\n", "a\nb"), "a line break appended");
        assert!(written_as("a\r\nb\r\n\r\n", "a\r\nb\r\n"));
    }

    #[test]
    fn a_change_of_the_users_does_not() {
        assert!(!written_as("a\nB\n", "a\nb\n"));
        assert!(!written_as("a\nb\nc\n", "a\nb\n"));
        assert!(!written_as("a\n", "a\nb\n"));
        assert!(!written_as("a\nb\n \n", "a\nb\n"), "a line with a space");
        assert!(
            !written_as("a\nb\r\n", "a\nb\n"),
            "LF written as CRLF is no rewrite seen"
        );
        assert!(!written_as("", "a\n"));
        assert!(!written_as("a\nb\n", ""));
    }
}
