//! What the model reads when its file tool arguments are refused: these texts reach it
//! in the repair round and the user in `diff_error`, so they are pinned here.

use serde_json::json;

use super::*;

fn err(name: &str, args: Value, mode: DiffMode) -> String {
    parse_call(name, &args, mode).unwrap_err().to_string()
}

/// Each refused shape and the exact message it gets.
#[test]
fn refusals_say_which_shape_was_expected() {
    use DiffMode::*;
    let cases: Vec<(&str, Value, DiffMode, &str)> = vec![
        (
            "write_file",
            json!({"content": "x"}),
            SearchReplaceMulti,
            "write_file expects {\"path\",\"content\"}: path is missing",
        ),
        (
            "write_file",
            json!({"path": "a"}),
            SearchReplaceMulti,
            "write_file expects {\"path\",\"content\"}: content is missing",
        ),
        (
            "write_file",
            json!({"path": 3, "content": "x"}),
            SearchReplaceMulti,
            "write_file: invalid arguments (invalid type: integer `3`, expected a string)",
        ),
        (
            "write_file",
            json!({"path": "a", "file_path": "b", "content": "x"}),
            SearchReplaceMulti,
            "path and file_path name different files",
        ),
        (
            "edit_file",
            json!({"edits": []}),
            Off,
            "edit_file is not available (diff_mode off); use write_file",
        ),
        (
            "delete_file",
            json!({"path": "a"}),
            SearchReplaceMulti,
            "Unknown tool delete_file; use write_file or edit_file",
        ),
        (
            "edit_file",
            json!({"path": "a"}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edits is missing",
        ),
        (
            "edit_file",
            json!({"path": "a"}),
            SearchReplace,
            "edit_file expects {\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}: edits is missing",
        ),
        (
            "edit_file",
            json!({"path": "a"}),
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: edits is missing",
        ),
        (
            "edit_file",
            json!({"edits": []}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edits is empty",
        ),
        (
            "edit_file",
            json!({"edits": 3}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: expected a list of objects, got 3",
        ),
        (
            "edit_file",
            json!({"edits": "not json"}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: expected a list of objects, got a string",
        ),
        (
            "edit_file",
            json!({"edits": [3]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: invalid type: integer `3`, expected struct RawEdit",
        ),
        (
            "edit_file",
            json!({"edits": [{"old_string": "a", "new_string": "b"}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edit 1: path is missing",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "new_string": "b"}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edit 1: old_string is missing",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "old_string": "b"}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edit 1: new_string is missing",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "old_string": "b", "new_string": "c", "replace_all": "yes"}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edit 1: replace_all must be true or false, not \"yes\"",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "file_path": "b", "old_string": "b", "new_string": "c"}]}),
            SearchReplaceMulti,
            "path and file_path name different files",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "file_id": [1], "old_string": "b", "new_string": "c"}]}),
            SearchReplaceMulti,
            "file_id must be a string, not [1]",
        ),
        (
            "edit_file",
            json!({"path": "a", "file_id": true, "old_string": "b", "new_string": "c"}),
            SearchReplace,
            "file_id must be a string, not true",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "old_string": 1, "new_string": "c"}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: invalid type: integer `1`, expected a string",
        ),
        (
            "edit_file",
            json!({"path": "a", "old_string": 1, "new_string": "c"}),
            SearchReplace,
            "edit_file: invalid arguments (invalid type: integer `1`, expected a string)",
        ),
        (
            "edit_file",
            json!({"changes": [{"start": ["a"]}]}),
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: path is missing",
        ),
        (
            "edit_file",
            json!({"path": "a", "changes": [{"start": ["a"]}]}),
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: content is missing",
        ),
        (
            "edit_file",
            json!({"path": "a", "changes": [{"content": ["a"]}]}),
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: start is missing",
        ),
        (
            "edit_file",
            json!({"path": "a", "changes": 5}),
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: expected a list of objects, got 5",
        ),
        (
            "edit_file",
            json!({"path": "a", "changes": [{"start": 5, "content": []}]}),
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: data did not match any variant of untagged enum Lines",
        ),
        (
            "edit_file",
            json!({"edits": [{"start": ["x"], "content": []}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: path is missing",
        ),
        (
            "edit_file",
            json!({"path": "a", "edits": [{"start": ["x"]}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: content is missing",
        ),
        (
            "edit_file",
            json!({"edits": [{"path": "a", "old_string": "b", "new_string": "c"}, {"path": "a", "old_string": "b"}]}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edit 2: new_string is missing",
        ),
        (
            "edit_file",
            json!({"path": "a", "edits": {"old_string": "b", "new_string": "c", "replace_all": 2}}),
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: data did not match any variant of untagged enum Flag",
        ),
    ];
    for (name, args, mode, want) in cases {
        assert_eq!(
            err(name, args.clone(), mode),
            want,
            "{name} {args} {mode:?}"
        );
    }
}

fn sr(path: &str, file_id: Option<&str>, old: &str, new: &str, all: bool) -> SrEdit {
    SrEdit {
        path: path.into(),
        file_id: file_id.map(str::to_owned),
        old_string: old.into(),
        new_string: new.into(),
        replace_all: all,
    }
}

fn lines(l: &[&str]) -> Vec<String> {
    l.iter().map(|s| s.to_string()).collect()
}

/// The near-variants models send, each read as the call they mean.
#[test]
fn accepted_variants_read_as_the_call_they_mean() {
    use DiffMode::*;
    let ok = |name: &str, args: Value, mode: DiffMode| parse_call(name, &args, mode).unwrap();
    let one = |e: SrEdit| Parsed::Edits(vec![e]);
    // write_file: content as a list of lines, file_path for path.
    assert_eq!(
        ok(
            "write_file",
            json!({"file_path": "a.txt", "content": ["x", "y"]}),
            Off
        ),
        Parsed::Write {
            path: "a.txt".into(),
            content: "x\ny".into()
        }
    );
    // The reference shape, with replace_all given as a string.
    assert_eq!(
        ok(
            "edit_file",
            json!({"edits": [{"path": "a", "file_id": "0000abcd", "old_string": "b", "new_string": "c", "replace_all": "true"}]}),
            SearchReplaceMulti
        ),
        one(sr("a", Some("0000abcd"), "b", "c", true))
    );
    // One edit object instead of a list, path and file_id at the top, camelCase names,
    // a numeric file id padded to eight digits.
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "fileId": 1234, "edits": {"oldString": "b", "newString": "c", "replaceAll": false}}),
            SearchReplaceMulti
        ),
        one(sr("a", Some("00001234"), "b", "c", false))
    );
    // The list as a JSON string, str_replace names, filePath, a blank file id.
    assert_eq!(
        ok(
            "edit_file",
            json!({"edits": "[{\"filePath\": \"a\", \"file_id\": \" \", \"old_str\": \"b\", \"new_str\": \"c\"}]"}),
            SearchReplaceMulti
        ),
        one(sr("a", None, "b", "c", false))
    );
    // The single shape in multi mode and the edits list in single mode.
    let single = json!({"path": "a", "file_id": " x1 ", "old_string": "b", "new_string": "c"});
    assert_eq!(
        ok("edit_file", single.clone(), SearchReplaceMulti),
        one(sr("a", Some("x1"), "b", "c", false))
    );
    assert_eq!(
        ok("edit_file", json!({"edits": [single]}), SearchReplace),
        one(sr("a", Some("x1"), "b", "c", false))
    );
    // path and file_path naming the same file.
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "file_path": "a", "old_string": "b", "new_string": "c"}),
            SearchReplace
        ),
        one(sr("a", None, "b", "c", false))
    );
    // Anchored: lines as one string, an empty end dropped, and the earlier
    // start_anchor shape sent as edits.
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "file_id": "f", "changes": [{"start": "x\ny", "end": [], "content": "z"}]}),
            Anchored
        ),
        Parsed::Anchored {
            path: "a".into(),
            file_id: Some("f".into()),
            changes: vec![Change {
                start: lines(&["x", "y"]),
                end: None,
                content: lines(&["z"]),
            }],
        }
    );
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "edits": [{"start_anchor": "x", "end_anchor": "}", "replacement": "p\nq"}]}),
            SearchReplaceMulti
        ),
        Parsed::Anchored {
            path: "a".into(),
            file_id: None,
            changes: vec![Change {
                start: lines(&["x"]),
                end: Some(lines(&["}"])),
                content: lines(&["p", "q"]),
            }],
        }
    );
    // A changes list wins over the mode: anchored changes sent in multi mode.
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "changes": {"start": ["x"], "end": ["y"], "content": []}}),
            SearchReplaceMulti
        ),
        Parsed::Anchored {
            path: "a".into(),
            file_id: None,
            changes: vec![Change {
                start: lines(&["x"]),
                end: Some(lines(&["y"])),
                content: vec![],
            }],
        }
    );
}

/// Errors are values a caller can match, with the text the user reads.
#[test]
fn errors_are_typed() {
    assert_eq!(
        parse_call("edit_file", &json!({}), DiffMode::Off),
        Err(ArgError::EditOff)
    );
    assert_eq!(
        parse_call("edit_file", &json!({"edits": []}), DiffMode::Anchored),
        Err(ArgError::Shape {
            expected: ANCHORED_SHAPE,
            problem: ShapeProblem::Empty
        })
    );
    assert_eq!(DiffMode::parse(None), Ok(DiffMode::SearchReplaceMulti));
    assert_eq!(DiffMode::parse(Some("off")), Ok(DiffMode::Off));
    let e = DiffMode::parse(Some("unified")).unwrap_err();
    assert_eq!(
        crate::error::Error::from(e).message,
        "Unknown diff_mode unified: use search_replace_multi, search_replace, anchored or off"
    );
}
