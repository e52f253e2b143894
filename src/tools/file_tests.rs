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
    let expects = |mode: DiffMode, shape: &str, args: Value, problem: &str| {
        let want = format!("edit_file expects {shape}: {problem}");
        assert_eq!(
            err("edit_file", args.clone(), mode),
            want,
            "{args} {mode:?}"
        );
    };
    let multi = |args, problem| expects(SearchReplaceMulti, MULTI_SHAPE, args, problem);
    let single = |args, problem| expects(SearchReplace, SINGLE_SHAPE, args, problem);
    let anchored = |args, problem| expects(Anchored, ANCHORED_SHAPE, args, problem);
    let other = |name: &str, args: Value, mode: DiffMode, want: &str| {
        assert_eq!(
            err(name, args.clone(), mode),
            want,
            "{name} {args} {mode:?}"
        );
    };
    // The shapes in full, as the model reads them.
    for (mode, want) in [
        (
            SearchReplaceMulti,
            "edit_file expects {\"edits\":[{\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}]}: edits is missing",
        ),
        (
            SearchReplace,
            "edit_file expects {\"path\",\"file_id\",\"old_string\",\"new_string\",\"replace_all\"?}: edits is missing",
        ),
        (
            Anchored,
            "edit_file expects {\"path\",\"file_id\",\"changes\":[{\"start\":[lines],\"end\"?:[lines],\"content\":[lines]}]}: edits is missing",
        ),
    ] {
        other("edit_file", json!({"path": "a"}), mode, want);
    }
    other(
        "write_file",
        json!({"content": "x"}),
        SearchReplaceMulti,
        "write_file expects {\"path\",\"content\"}: path is missing",
    );
    other(
        "write_file",
        json!({"path": "a"}),
        SearchReplaceMulti,
        "write_file expects {\"path\",\"content\"}: content is missing",
    );
    other(
        "write_file",
        json!({"path": 3, "content": "x"}),
        SearchReplaceMulti,
        "write_file: invalid arguments (invalid type: integer `3`, expected a string)",
    );
    other(
        "write_file",
        json!({"path": "a", "file_path": "b", "content": "x"}),
        SearchReplaceMulti,
        "path and file_path name different files",
    );
    other(
        "edit_file",
        json!({"edits": []}),
        Off,
        "edit_file is not available (diff_mode off); use write_file",
    );
    other(
        "delete_file",
        json!({"path": "a"}),
        SearchReplaceMulti,
        "Unknown tool delete_file; use write_file or edit_file",
    );
    multi(json!({"path": "a"}), "edits is missing");
    single(json!({"path": "a"}), "edits is missing");
    anchored(json!({"path": "a"}), "edits is missing");
    multi(json!({"edits": []}), "edits is empty");
    multi(json!({"edits": 3}), "expected a list of objects, got 3");
    multi(
        json!({"edits": "not json"}),
        "expected a list of objects, got a string",
    );
    multi(
        json!({"edits": [3]}),
        "invalid type: integer `3`, expected struct RawEdit",
    );
    multi(
        json!({"edits": [{"old_string": "a", "new_string": "b"}]}),
        "edit 1: path is missing",
    );
    multi(
        json!({"edits": [{"path": "a", "new_string": "b"}]}),
        "edit 1: old_string is missing",
    );
    multi(
        json!({"edits": [{"path": "a", "old_string": "b"}]}),
        "edit 1: new_string is missing",
    );
    multi(
        json!({"edits": [{"path": "a", "old_string": "b", "new_string": "c", "replace_all": "yes"}]}),
        "edit 1: replace_all must be true or false, not \"yes\"",
    );
    other(
        "edit_file",
        json!({"edits": [{"path": "a", "file_path": "b", "old_string": "b", "new_string": "c"}]}),
        SearchReplaceMulti,
        "path and file_path name different files",
    );
    other(
        "edit_file",
        json!({"edits": [{"path": "a", "file_id": [1], "old_string": "b", "new_string": "c"}]}),
        SearchReplaceMulti,
        "file_id must be a string, not [1]",
    );
    other(
        "edit_file",
        json!({"path": "a", "file_id": true, "old_string": "b", "new_string": "c"}),
        SearchReplace,
        "file_id must be a string, not true",
    );
    multi(
        json!({"edits": [{"path": "a", "old_string": 1, "new_string": "c"}]}),
        "invalid type: integer `1`, expected a string",
    );
    other(
        "edit_file",
        json!({"path": "a", "old_string": 1, "new_string": "c"}),
        SearchReplace,
        "edit_file: invalid arguments (invalid type: integer `1`, expected a string)",
    );
    anchored(json!({"changes": [{"start": ["a"]}]}), "path is missing");
    anchored(
        json!({"path": "a", "changes": [{"start": ["a"]}]}),
        "content is missing",
    );
    anchored(
        json!({"path": "a", "changes": [{"content": ["a"]}]}),
        "start is missing",
    );
    anchored(
        json!({"path": "a", "changes": 5}),
        "expected a list of objects, got 5",
    );
    anchored(
        json!({"path": "a", "changes": [{"start": 5, "content": []}]}),
        "data did not match any variant of untagged enum Lines",
    );
    multi(
        json!({"edits": [{"start": ["x"], "content": []}]}),
        "path is missing",
    );
    multi(
        json!({"path": "a", "edits": [{"start": ["x"]}]}),
        "content is missing",
    );
    multi(
        json!({"edits": [{"path": "a", "old_string": "b", "new_string": "c"}, {"path": "a", "old_string": "b"}]}),
        "edit 2: new_string is missing",
    );
    multi(
        json!({"path": "a", "edits": {"old_string": "b", "new_string": "c", "replace_all": 2}}),
        "data did not match any variant of untagged enum Flag",
    );
}

/// One anchored change of file `a`.
fn anchored(
    file_id: Option<&str>,
    start: &[&str],
    end: Option<&[&str]>,
    content: &[&str],
) -> EditRequest {
    EditRequest::Anchored {
        path: "a".into(),
        file_id: file_id.map(Into::into),
        changes: vec![Change {
            start: lines(start),
            end: end.map(lines),
            content: lines(content),
        }],
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
    let one = |e: SrEdit| EditRequest::Edits(vec![e]);
    // write_file: content as a list of lines, file_path for path.
    assert_eq!(
        ok(
            "write_file",
            json!({"file_path": "a.txt", "content": ["x", "y"]}),
            Off
        ),
        EditRequest::Write {
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
        anchored(Some("f"), &["x", "y"], None, &["z"])
    );
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "edits": [{"start_anchor": "x", "end_anchor": "}", "replacement": "p\nq"}]}),
            SearchReplaceMulti
        ),
        anchored(None, &["x"], Some(&["}"]), &["p", "q"])
    );
    // A changes list wins over the mode: anchored changes sent in multi mode.
    assert_eq!(
        ok(
            "edit_file",
            json!({"path": "a", "changes": {"start": ["x"], "end": ["y"], "content": []}}),
            SearchReplaceMulti
        ),
        anchored(None, &["x"], Some(&["y"]), &[])
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
