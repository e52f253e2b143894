//! Refusals that teach, through the binary: a copy that parts from the file names the
//! file line it starts like and the column where it parts (a long line otherwise
//! hides a one-character slip), in tool calls and in SEARCH/REPLACE blocks; a
//! placeholder written as a comment in a language's own syntax is refused and nothing
//! is written.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn setup(config: Value) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(config);
    let (b, id) = env.with_chat();
    (env, fake, b, id)
}

fn edit(b: &mut Bb7, fake: &FakeModel, path: &str, old: &str, new: &str) -> Value {
    let call = json!({"edits": [{"path": path, "old_string": old, "new_string": new}]});
    fake.push_sse(response("", "ok", vec![("edit_file", call)]));
    b.turn("change it")
}

fn error(m: &Value) -> &str {
    assert_eq!(m["type"], "diff_error", "{m}");
    assert_eq!(m["tool_calls"][0]["code"], "not_found", "{m}");
    m["tool_calls"][0]["error"].as_str().unwrap()
}

/// 190 comma-separated items for one line, each 9 characters.
fn long_list() -> String {
    (0..190).map(|i| format!("item{i:04},")).collect()
}

#[test]
fn a_long_line_copied_with_one_change_is_refused_naming_line_and_column() {
    let (env, fake, mut b, id) = setup(json!({}));
    let long = long_list();
    let file = format!("first = 1\nDATA = [{long}]\nlast = 2\n");
    env.add(&mut b, "d.py", &file);
    // The model's copy has `item0007` as `item0070`, 70 columns into the line.
    let copy = format!("DATA = [{}]", long.replacen("item0007", "item0070", 1));
    let m = edit(&mut b, &fake, "d.py", &copy, "DATA = []");
    let column = "DATA = [".len() + 7 * 9 + "item00".len() + 1;
    let e = error(&m);
    assert!(
        e.contains(&format!(
            "Line 2 starts like old_string but differs at column {column}: the file has \"07,item0008"
        )),
        "{e}"
    );
    assert!(env.output(&id, "d.py").is_none());
}

#[test]
fn an_edit_at_the_start_of_a_1900_character_line_names_the_line_and_column() {
    let (env, fake, mut b, id) = setup(json!({}));
    let long = format!("const TABLE = {{{}}};", "\"k\": 1, ".repeat(250));
    assert!(long.chars().count() > 1_900);
    let file = format!("// header\n\n{long}\nexport default TABLE;\n");
    env.add(&mut b, "t.js", &file);
    // The copy's first 40 characters of the line, with `TABLE` spelt `TABEL`.
    let copy: String = long
        .replacen("TABLE", "TABEL", 1)
        .chars()
        .take(40)
        .collect();
    let m = edit(&mut b, &fake, "t.js", &copy, "const T = {");
    let e = error(&m);
    assert!(
        e.contains("Line 3 starts like old_string but differs at column 10"),
        "{e}"
    );
    assert!(env.output(&id, "t.js").is_none());
}

#[test]
fn the_first_line_of_a_copy_that_is_not_in_the_file_is_the_one_named() {
    let (env, fake, mut b, id) = setup(json!({}));
    let file = "def total(items):\n    subtotal = sum(item.price * item.quantity for item in items)\n    return round(subtotal * 1.2, 2)\n";
    env.add(&mut b, "t.py", file);
    // Line 1 of the copy is the file's; line 2 has `qty` for `quantity`.
    let m = edit(
        &mut b,
        &fake,
        "t.py",
        "def total(items):\n    subtotal = sum(item.price * item.qty for item in items)\n",
        "def total(items):\n    subtotal = 0\n",
    );
    let e = error(&m);
    let column = "    subtotal = sum(item.price * item.q".len() + 1;
    assert!(
        e.contains(&format!(
            "Line 2 starts like old_string but differs at column {column}: the file has \"uantity for item in item"
        )),
        "{e}"
    );
    assert!(env.output(&id, "t.py").is_none());
}

#[test]
fn a_copy_like_no_line_of_the_file_names_no_column() {
    let (env, fake, mut b, _id) = setup(json!({}));
    env.add(&mut b, "a.py", "x = 1\ny = 2\n");
    let m = edit(&mut b, &fake, "a.py", "completely different text\n", "z\n");
    let e = error(&m);
    assert!(!e.contains("differs at column"), "{e}");
}

#[test]
fn a_block_whose_long_line_parts_from_the_file_names_line_and_column() {
    let (env, fake, mut b, id) = setup(json!({"edit_format": "blocks"}));
    let long = long_list();
    env.add(&mut b, "d.py", &format!("DATA = [{long}]\n"));
    let copy = format!("DATA = [{}]", long.replacen("item0100", "item0010", 1));
    let answer = format!(
        "d.py\n```python\n<<<<<<< SEARCH\n{copy}\n=======\nDATA = []\n>>>>>>> REPLACE\n```\n"
    );
    fake.push_sse(response("", &answer, vec![]));
    let m = b.turn("empty it");
    let column = "DATA = [".len() + 100 * 9 + "item0".len() + 1;
    let e = error(&m);
    assert!(
        e.contains(&format!(
            "Line 1 starts like old_string but differs at column {column}"
        )),
        "{e}"
    );
    assert!(env.output(&id, "d.py").is_none());
}

#[test]
fn a_jsx_comment_standing_in_for_lines_is_refused() {
    let (env, fake, mut b, id) = setup(json!({}));
    let file = "export const A = () => (\n  <div>\n    <B />\n    <C />\n    <D />\n  </div>\n);\n";
    env.add(&mut b, "a.jsx", file);
    let m = edit(
        &mut b,
        &fake,
        "a.jsx",
        "  <div>\n    <B />\n    <C />\n    <D />\n  </div>\n",
        "  <div className=\"x\">\n    {/* ...unchanged... */}\n  </div>\n",
    );
    assert_eq!(m["type"], "diff_error", "{m}");
    let e = m["tool_calls"][0]["error"].as_str().unwrap();
    assert!(e.contains("placeholder"), "{e}");
    assert!(env.output(&id, "a.jsx").is_none());
}
