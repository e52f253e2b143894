//! The syntax referees of the generative test and the edit corpus
//! (`tests/edit_gen/referees.rs`) for TOML, YAML, Makefiles, Lua, HTML, and the
//! tree-sitter grammars of Go, Rust, TypeScript, TSX and C, each shown able to fail: a
//! result that breaks a parse the original and the intended file pass is named, the
//! intended result is not, and a case whose intended file does not parse is not
//! judged. Every checker is in CI (the tree-sitter ones are dev-dependencies).

#[path = "edit_gen/referees.rs"]
#[allow(dead_code)]
mod referees;

use referees::{Lang, Referee, breaks};

/// One language's case: the original file, the intended result, results that break
/// the parse, and an intended file that does not parse itself.
struct Case {
    lang: Lang,
    original: String,
    intended: &'static str,
    broken: &'static [&'static str],
    bad_intended: &'static str,
}

fn cases(marker_dir: &str) -> Vec<Case> {
    vec![
        Case {
            lang: Lang::Toml,
            original: "[package]\nname = \"app\"\nversion = \"0.1.0\"\n".into(),
            intended: "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            broken: &[
                // A line copied twice: a duplicate key.
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nversion = \"0.1.0\"\n",
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\n",
                // A byte-order mark moved below line 1.
                "[package]\n\u{feff}name = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ],
            bad_intended: "[package\nname = \"app\"\n",
        },
        Case {
            lang: Lang::Yaml,
            original: "jobs:\n  test:\n    runs-on: ubuntu-latest\n    bucket: !Ref Bucket\n"
                .into(),
            intended: "jobs:\n  test:\n    runs-on: ubuntu-latest\n    bucket: !Ref Bucket\n    steps:\n      - run: make\n",
            broken: &[
                "jobs:\n  test:\n    runs-on: ubuntu-latest\n    bucket: !Ref Bucket\n\tsteps:\n      - run: make\n",
                "jobs:\n  test:\n    runs-on: ubuntu-latest\n    bucket: !Ref Bucket\n     steps:\n      - run: make\n",
                "jobs:\n  test:\n    runs-on: ubuntu-latest\n    bucket: !Ref Bucket\n    steps:\n      - run: make\n  - run: test\n",
            ],
            bad_intended: "jobs: [\n",
        },
        Case {
            lang: Lang::Makefile,
            // Make must run none of it: not `$(shell)`, not the rule that remakes an
            // included makefile, not `$(MAKE)`; a missing include is not a syntax error.
            original: format!(
                "STAMP := $(shell touch {marker_dir}/shell-ran)\ninclude gen.mk\ngen.mk:\n\ttouch {marker_dir}/remake-ran\n\ninclude missing.mk\n\nall: build\n\nbuild:\n\tcc -o app main.c\n\t$(MAKE) -C sub\n"
            ),
            intended: "all: build\n\nbuild:\n\tcc -o app main.c\n\tstrip app\n\nifeq ($(OS),Windows_NT)\n  EXE := .exe\nendif\n",
            broken: &[
                // A recipe line indented with spaces.
                "all: build\n\nbuild:\n\tcc -o app main.c\n    strip app\n\nifeq ($(OS),Windows_NT)\n  EXE := .exe\nendif\n",
                "all: build\n\nbuild:\n\tcc -o app main.c\n\tstrip app\n\nifeq ($(OS),Windows_NT)\n  EXE := .exe\n",
                "\tstrip app\nall: build\n",
            ],
            bad_intended: "all:\n    cc -o app main.c\n",
        },
        Case {
            lang: Lang::Lua,
            original: "local M = {}\n\nfunction M.f(x)\n  return x\nend\n\nreturn M\n".into(),
            intended: "local M = {}\n\nfunction M.f(x)\n  if x then\n    x = x // 2\n  end\n  return x\nend\n\nreturn M\n",
            broken: &[
                "local M = {}\n\nfunction M.f(x)\n  if x then\n    x = x // 2\n  return x\nend\n\nreturn M\n",
                "local M = {}\n\nfunction M.f(x)\n  if x then\n    x = x // 2\n  end\n  return x\nend\nend\n\nreturn M\n",
            ],
            bad_intended: "local = 1\n",
        },
        Case {
            lang: Lang::Html,
            // Void elements, implied end tags, raw text and a template are fine.
            original: "<ul>\n  <li>one\n  <li>two\n</ul>\n<p>text<br>\n<img src=\"a.png\">\n<script>if (a < b) {}</script>\n{% if x %}<em>x</em>{% endif %}\n".into(),
            intended: "<ul>\n  <li>one\n  <li>two\n</ul>\n<div class=\"b\">\n  <span>b</span>\n</div>\n<p>text<br>\n<img src=\"a.png\">\n<script>if (a < b) {}</script>\n{% if x %}<em>x</em>{% endif %}\n",
            broken: &[
                // A lost end tag, a crossed pair, a stray end tag, an unterminated
                // comment, tag and script.
                "<ul>\n  <li>one\n  <li>two\n</ul>\n<div class=\"b\">\n  <span>b</span>\n<p>text<br>\n",
                "<ul>\n  <li>one\n</ul>\n<div class=\"b\">\n  <span>b</div>\n</span>\n",
                "<ul>\n  <li>one\n</ul>\n</div>\n<div class=\"b\">\n</div>\n",
                "<ul>\n  <li>one\n</ul>\n<!-- <div class=\"b\">\n</div>\n",
                "<ul>\n  <li>one\n</ul>\n<div class=\"b\"\n",
                "<ul>\n  <li>one\n</ul>\n<script>\nlet a = 1;\n",
            ],
            bad_intended: "<div>\n<span>a</span>\n",
        },
        Case {
            lang: Lang::Go,
            original: "package main\n\nfunc main() {\n\tprintln(1)\n}\n".into(),
            intended: "package main\n\nfunc main() {\n\tprintln(1)\n\tprintln(2)\n}\n",
            broken: &[
                "package main\n\nfunc main() {\n\tprintln(1)\n\tprintln(2)\n",
                "package main\n\nfunc main() {\n\tprintln(1)\n\tprintln(2))\n}\n",
            ],
            bad_intended: "package main\n\nfunc main( {\n}\n",
        },
        Case {
            lang: Lang::Rust,
            original: "fn f(x: u8) -> u8 {\n    match x {\n        0 => 1,\n        _ => x,\n    }\n}\n"
                .into(),
            intended: "fn f(x: u8) -> u8 {\n    match x {\n        0 => 1,\n        1 => 2,\n        _ => x,\n    }\n}\n",
            broken: &[
                // A line that lost its comma, and a brace the edit dropped.
                "fn f(x: u8) -> u8 {\n    match x {\n        0 => 1\n        1 => 2,\n        _ => x,\n    }\n}\n",
                "fn f(x: u8) -> u8 {\n    match x {\n        0 => 1,\n        1 => 2,\n        _ => x,\n}\n",
            ],
            bad_intended: "fn f(x: u8) -> u8 {\n    match x {\n",
        },
        Case {
            lang: Lang::TypeScript,
            original: "export function f(a: number): number {\n  return a;\n}\n".into(),
            intended: "export function f(a: number): number {\n  const s = \"\\n\";\n  return a + s.length;\n}\n",
            broken: &[
                // The closing brace dropped, and a bracket the edit left open. (A string
                // broken by a real line break is not seen: the grammar's string token
                // reads one, so that mistake is the JavaScript referee's, node's.)
                "export function f(a: number): number {\n  const s = \"\\n\";\n  return a + s.length;\n",
                "export function f(a: number): number {\n  const s = \"\\n\";\n  return (a + s.length;\n}\n",
            ],
            bad_intended: "export function f(a: number: number {\n}\n",
        },
        Case {
            lang: Lang::Tsx,
            original: "export const L = () => (\n  <ul>\n    <li>a</li>\n  </ul>\n);\n".into(),
            intended: "export const L = () => (\n  <ul>\n    <li>a</li>\n    <li>b</li>\n  </ul>\n);\n",
            broken: &["export const L = () => (\n  <ul>\n    <li>a</li>\n    <li>b</li>\n);\n"],
            bad_intended: "export const L = () => (\n  <ul>\n",
        },
        Case {
            lang: Lang::C,
            original: "int f(int n) {\n    return n;\n}\n".into(),
            intended: "int f(int n) {\n    n += 1;\n    return n;\n}\n",
            broken: &["int f(int n) {\n    n += 1\n    return n;\n}\n", "int f(int n) {\n    n += 1;\n    return n;\n"],
            bad_intended: "int f(int n {\n}\n",
        },
    ]
}

#[test]
fn the_new_syntax_referees_name_a_result_that_breaks_the_parse() {
    let markers = std::env::temp_dir().join(format!("bb7-referee-markers-{}", std::process::id()));
    std::fs::create_dir_all(&markers).unwrap();
    let cases = cases(&markers.display().to_string());
    let mut referee = Referee::default();
    for c in &cases {
        for t in [c.original.as_str(), c.intended, c.bad_intended]
            .into_iter()
            .chain(c.broken.iter().copied())
        {
            referee.queue(c.lang, t);
        }
    }
    referee.settle();
    let ran: Vec<_> = std::fs::read_dir(&markers).unwrap().flatten().collect();
    let _ = std::fs::remove_dir_all(&markers);
    assert!(ran.is_empty(), "make ran part of the Makefile: {ran:?}");
    for c in &cases {
        let lang = c.lang;
        assert_eq!(referee.parses(lang, &c.original), Some(Ok(())), "{lang:?}");
        assert_eq!(referee.parses(lang, c.intended), Some(Ok(())), "{lang:?}");
        assert_eq!(
            breaks(&referee, lang, &c.original, c.intended, c.intended),
            None,
            "{lang:?}"
        );
        for broken in c.broken {
            let why = breaks(&referee, lang, &c.original, c.intended, broken);
            assert!(why.is_some(), "{lang:?}: {broken:?} is not seen as broken");
            println!("{lang:?} names {:?}", why.unwrap());
            assert_eq!(
                breaks(&referee, lang, &c.original, c.bad_intended, broken),
                None,
                "{lang:?}: an intended file that does not parse judges nothing"
            );
        }
    }
}

#[test]
fn files_are_refereed_by_name_and_makefiles_by_their_names() {
    for (name, lang) in [
        ("Makefile", Some(Lang::Makefile)),
        ("sub/dir.v2/GNUmakefile", Some(Lang::Makefile)),
        ("rules.mk", Some(Lang::Makefile)),
        ("Cargo.toml", Some(Lang::Toml)),
        (".github/workflows/ci.yml", Some(Lang::Yaml)),
        ("config.yaml", Some(Lang::Yaml)),
        ("lua/bb7/init.lua", Some(Lang::Lua)),
        ("templates/index.html", Some(Lang::Html)),
        ("cmd/main.go", Some(Lang::Go)),
        ("src/edit/verify.rs", Some(Lang::Rust)),
        ("web/api.ts", Some(Lang::TypeScript)),
        ("web/List.tsx", Some(Lang::Tsx)),
        ("web/List.jsx", Some(Lang::Tsx)),
        ("sum.c", Some(Lang::C)),
        ("notes.txt", None),
        ("dir.d/README", None),
    ] {
        assert_eq!(Lang::of(name, "x\n"), lang, "{name}");
    }
}
