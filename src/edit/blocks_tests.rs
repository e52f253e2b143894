use super::*;

fn blocks(answer: &str) -> Vec<Block> {
    split(answer)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Block(b) => Some(b),
            _ => None,
        })
        .collect()
}

fn prose_of(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Prose(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn block(path: &str, search: &str, replace: &str) -> Block {
    Block {
        path: path.into(),
        search: search.into(),
        replace: replace.into(),
    }
}

#[test]
fn the_taught_format_gives_one_block_and_keeps_the_prose() {
    let answer = "I fix the sum.\n\nsrc/a.rs\n```rust\n<<<<<<< SEARCH\nlet x = 1;\n=======\nlet x = 2;\n>>>>>>> REPLACE\n```\n\nThat is all.\n";
    let pieces = split(answer);
    assert_eq!(
        blocks(answer),
        [block("src/a.rs", "let x = 1;\n", "let x = 2;\n")]
    );
    assert_eq!(prose_of(&pieces), "I fix the sum.\n\n\nThat is all.\n");
}

#[test]
fn the_path_inside_the_fence_and_no_fence_at_all() {
    let diff_fenced =
        "```\nsrc/a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n";
    assert_eq!(
        blocks(diff_fenced),
        [block("src/a.py", "x = 1\n", "x = 2\n")]
    );
    let bare = "a.go\n<<<<<<< SEARCH\nx := 1\n=======\nx := 2\n>>>>>>> REPLACE\n";
    assert_eq!(blocks(bare), [block("a.go", "x := 1\n", "x := 2\n")]);
}

#[test]
fn decorated_path_lines_and_a_path_as_the_fence_info() {
    for header in [
        "**src/a.ts**\n```ts\n",
        "`src/a.ts`:\n```typescript\n",
        "### src/a.ts\n```\n",
        "File: src/a.ts\n```\n",
        "- src/a.ts\n```ts\n",
        "```ts\n// src/a.ts\n",
        "2. `src/a.ts`\n```ts\n",
        "```ts:src/a.ts\n",
        "```src/a.ts\n",
    ] {
        let answer = format!("{header}<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n");
        assert_eq!(
            blocks(&answer),
            [block("src/a.ts", "old\n", "new\n")],
            "{header:?}"
        );
    }
}

#[test]
fn several_blocks_per_fence_and_several_files() {
    let answer = "a.rs\n```rust\n<<<<<<< SEARCH\none\n=======\n1\n>>>>>>> REPLACE\n<<<<<<< SEARCH\ntwo\n=======\n2\n>>>>>>> REPLACE\n```\nb.rs\n```rust\n<<<<<<< SEARCH\nthree\n=======\n3\n>>>>>>> REPLACE\n```\n";
    assert_eq!(
        blocks(answer),
        [
            block("a.rs", "one\n", "1\n"),
            block("a.rs", "two\n", "2\n"),
            block("b.rs", "three\n", "3\n"),
        ]
    );
    assert_eq!(prose_of(&split(answer)), "");
}

#[test]
fn markers_with_extra_or_missing_angles_and_crlf() {
    let answer =
        "a.rs\r\n```\r\n<<<<<<<< SEARCH\r\nold\r\n======\r\nnew\r\n>>>>> REPLACE\r\n```\r\n";
    assert_eq!(blocks(answer), [block("a.rs", "old\n", "new\n")]);
}

#[test]
fn an_empty_search_part_creates_a_file() {
    let answer = "new.py\n```python\n<<<<<<< SEARCH\n=======\nprint('hi')\n>>>>>>> REPLACE\n```\n";
    let b = &blocks(answer)[0];
    assert!(b.creates());
    assert_eq!(b.tool(), "write_file");
    assert_eq!(b.replace, "print('hi')\n");
}

#[test]
fn a_block_cut_off_by_the_end_is_broken_not_applied() {
    for answer in [
        "a.rs\n```\n<<<<<<< SEARCH\nold\n=======\nnew\n",
        "a.rs\n```\n<<<<<<< SEARCH\nold\n",
    ] {
        let pieces = split(answer);
        assert!(
            matches!(pieces.last(), Some(Piece::Broken { path: Some(p), .. }) if p == "a.rs"),
            "{pieces:?}"
        );
        assert!(blocks(answer).is_empty());
    }
}

#[test]
fn a_missing_replace_marker_refuses_that_block_only() {
    let answer = "a.rs\n<<<<<<< SEARCH\nold\n=======\nnew\n<<<<<<< SEARCH\ntwo\n=======\n2\n>>>>>>> REPLACE\n";
    let pieces = split(answer);
    assert!(matches!(pieces[0], Piece::Broken { .. }), "{pieces:?}");
    assert_eq!(blocks(answer), [block("a.rs", "two\n", "2\n")]);
}

#[test]
fn a_block_without_any_path_is_broken() {
    let pieces = split("```\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n");
    assert!(
        matches!(pieces[0], Piece::Broken { path: None, .. }),
        "{pieces:?}"
    );
}

#[test]
fn any_split_of_the_stream_gives_the_same_pieces() {
    let answer = "Here is the change.\n\nsrc/lib.rs\n```rust\n<<<<<<< SEARCH\nfn a() {}\n=======\nfn a() { b() }\n>>>>>>> REPLACE\n```\nDone, see `README.md` too.\n```sh\ncargo test\n```\n";
    let whole = split(answer);
    for size in [1, 2, 3, 7, 13] {
        let mut s = BlockStream::new();
        let mut pieces = Vec::new();
        let chars: Vec<char> = answer.chars().collect();
        for chunk in chars.chunks(size) {
            let delta: String = chunk.iter().collect();
            pieces.extend(s.push(&delta));
        }
        pieces.extend(s.finish());
        assert_eq!(prose_of(&pieces), prose_of(&whole), "size {size}");
        let got: Vec<_> = pieces
            .into_iter()
            .filter(|p| !matches!(p, Piece::Prose(_)))
            .collect();
        let want: Vec<_> = whole
            .iter()
            .filter(|p| !matches!(p, Piece::Prose(_)))
            .cloned()
            .collect();
        assert_eq!(got, want, "size {size}");
    }
    assert_eq!(
        prose_of(&whole),
        "Here is the change.\n\nDone, see `README.md` too.\n```sh\ncargo test\n```\n"
    );
}

#[test]
fn ordinary_prose_and_code_pass_through_whole() {
    let answer = "Use this:\n```rust\nlet a = b;\n```\nconfig.json\nmatters.\n";
    assert_eq!(prose_of(&split(answer)), answer);
    assert!(blocks(answer).is_empty());
}

#[test]
fn prose_is_passed_on_before_its_line_ends() {
    let mut s = BlockStream::new();
    let pieces = s.push("Here is what I ");
    assert_eq!(pieces, [Piece::Prose("Here is what I ".into())]);
    assert!(
        s.push("src/a.rs")
            .iter()
            .all(|p| matches!(p, Piece::Prose(_)))
    );
}

#[test]
fn a_block_becomes_the_edit_a_tool_call_would_be() {
    let e = block("a.rs", "old\n", "new\n").proposed();
    assert_eq!(e.tool, "edit_file");
    let args = e.args.unwrap();
    assert_eq!(args["old_string"], "old\n");
    assert_eq!(args["path"], "a.rs");
    assert!(matches!(e.request, Ok(EditRequest::Edits(ref v)) if v[0].new_string == "new\n"));
}

#[test]
fn a_path_named_in_the_prose_line_before_the_fence() {
    let answer = "Change `src/a.rs` like this:\n```rust\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n";
    assert_eq!(blocks(answer), [block("src/a.rs", "old\n", "new\n")]);
    let answer = "In main.go, add the import:\n\n```go\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n";
    assert_eq!(blocks(answer), [block("main.go", "old\n", "new\n")]);
}

#[test]
fn a_second_divider_or_a_missing_one_refuses_the_block() {
    let two = "a.md\n<<<<<<< SEARCH\nTitle\n=======\nNew\n=======\nmore\n>>>>>>> REPLACE\n";
    let none = "a.md\n<<<<<<< SEARCH\nTitle\n>>>>>>> REPLACE\nafter\n";
    for answer in [two, none] {
        let pieces = split(answer);
        assert!(blocks(answer).is_empty(), "{pieces:?}");
        assert!(
            pieces
                .iter()
                .any(|p| matches!(p, Piece::Broken { path: Some(p), .. } if p == "a.md")),
            "{pieces:?}"
        );
    }
    assert_eq!(prose_of(&split(none)), "after\n");
}

#[test]
fn a_path_line_that_cannot_be_read_refuses_the_block_and_never_takes_another_path() {
    let first = "notes.md\n```markdown\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n\n";
    let second =
        "docs/meeting notes.md\n```markdown\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n";
    let pieces = split(&format!("{first}{second}"));
    assert_eq!(
        blocks(&format!("{first}{second}")),
        [block("notes.md", "a\n", "b\n")]
    );
    let reason = pieces
        .iter()
        .find_map(|p| match p {
            Piece::Broken { path: None, reason } => Some(reason.clone()),
            _ => None,
        })
        .expect("the second block is refused");
    assert!(reason.contains("docs/meeting notes.md"), "{reason}");
    assert!(reason.contains("backticks"), "{reason}");
    // Prose between two blocks ends the carry-over, also with no file named.
    let prose =
        "Now the other one.\n```markdown\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n";
    assert_eq!(blocks(&format!("{first}{prose}")).len(), 1);
    // Quoted, the path with a space is read whole.
    for header in ["`docs/meeting notes.md`", "**docs/meeting notes.md**"] {
        let answer =
            format!("{header}\n```markdown\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n");
        assert_eq!(
            blocks(&answer),
            [block("docs/meeting notes.md", "c\n", "d\n")],
            "{header}"
        );
    }
    let prose = "Change `docs/meeting notes.md` like this:\n```\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n";
    assert_eq!(
        blocks(prose),
        [block("docs/meeting notes.md", "c\n", "d\n")]
    );
    // A fence right after a block's fence still carries the path.
    let next = "```markdown\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n";
    assert_eq!(blocks(&format!("{first}{next}")).len(), 2);
}

#[test]
fn blocks_past_the_cap_are_refused() {
    let one = "a.rs\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n";
    let answer = one.repeat(MAX_BLOCKS + 3);
    let pieces = split(&answer);
    assert_eq!(blocks(&answer).len(), MAX_BLOCKS);
    let refused: Vec<_> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Broken { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].contains(&MAX_BLOCKS.to_string()),
        "{}",
        refused[0]
    );
}
