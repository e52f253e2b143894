#!/usr/bin/env python3
"""Writes the eval's hand-written tasks (eval/tasks/) and their traces
(eval/traces/<mode>/), and prints the metrics `bb7 eval --replay eval/traces` must
report for them. Real traces recorded with `bb7 eval --record DIR` replace these.

Each task is one small change in one language. How the models behave is scripted per
kind: a local model that answers right, one whose first edits do not apply (a retry),
one whose edits never apply (a schema fallback), one that is slow (a timeout), one
whose server refuses the prompt as too long or cannot call tools, one that asks a
clarifying question first, one that is wrong in a way no check of bb7 can see; and
tasks where the user edited the same lines meanwhile (a conflict) or takes only some
hunks.

The edit tasks (EDIT_TASKS) replay answers of the edit corpus's kinds in every mode:
edits a model gets slightly wrong that have one reading (indentation, line endings,
trailing spaces, a left-out blank line, an elision, a cut-off line), which must land
exactly as expected, and wrong or ambiguous ones bb7 must refuse with the files left
as they were; as tool calls, and as SEARCH/REPLACE blocks (asked for, or after a
server refused tool calls).

Every trace is marked `"source": "hand-written"` with the DATE it was written.
"""

import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
MODES = ["local", "remote", "hybrid_auto"]
TIMEOUT_MS = 300
# When the hand-written traces were written (their `date`).
DATE = "2026-11-25T00:00:00Z"
# The tag of a task kind, when it is not the kind's own name.
TAGS = {"normal": "exact"}
# Hunks an edit task's review shows, when not one.
HUNKS = {"py-blank-line-left-out": 2}


def file_id(path, content):
    return hashlib.sha256(path.encode() + b"\0" + content.encode()).hexdigest()[:8]


def lines(n, fmt):
    return "".join(fmt.format(i=i) for i in range(1, n + 1))


# (id, language, kind, path, content, [(old, new)], prompt)
TASKS = [
    ("py-add-docstring", "python", "normal", "calc.py",
     "def add(a, b):\n    return a + b\n",
     [("def add(a, b):\n", "def add(a, b):\n    \"\"\"Sum of a and b.\"\"\"\n")],
     "Give add a docstring."),
    ("py-fix-off-by-one", "python", "normal", "ranges.py",
     "def upto(n):\n    return list(range(n))\n",
     [("range(n)", "range(n + 1)")],
     "upto(3) should include 3."),
    ("rs-rename-fn", "rust", "normal", "src/lib.rs",
     "pub fn calc(x: i32) -> i32 {\n    x * 2\n}\n",
     [("pub fn calc(", "pub fn double(")],
     "Rename calc to double."),
    ("rs-derive-debug", "rust", "normal", "src/point.rs",
     "pub struct Point {\n    pub x: f64,\n    pub y: f64,\n}\n",
     [("pub struct Point {", "#[derive(Debug, Clone, Copy)]\npub struct Point {")],
     "Point should be Debug, Clone and Copy."),
    ("go-error-wrap", "go", "normal", "load.go",
     "package cfg\n\nfunc Load(p string) error {\n\treturn err\n}\n",
     [("\treturn err\n", "\treturn fmt.Errorf(\"load %s: %w\", p, err)\n")],
     "Wrap the error with the path."),
    ("js-const", "javascript", "normal", "index.js",
     "var total = 0;\nfor (var i = 0; i < 3; i++) total += i;\n",
     [("var total = 0;", "let total = 0;")],
     "Use let for total."),
    ("ts-type-annotation", "typescript", "normal", "greet.ts",
     "export function greet(name) {\n  return `hi ${name}`;\n}\n",
     [("greet(name)", "greet(name: string): string")],
     "Type greet."),
    ("c-null-check", "c", "normal", "buf.c",
     "size_t len(const char *s) {\n    return strlen(s);\n}\n",
     [("    return strlen(s);\n", "    if (s == NULL) return 0;\n    return strlen(s);\n")],
     "len(NULL) must not crash."),
    ("java-final-field", "java", "normal", "User.java",
     "public class User {\n    private String name;\n}\n",
     [("private String name;", "private final String name;")],
     "Make name final."),
    ("rb-frozen-literal", "ruby", "normal", "greet.rb",
     "def greet(name)\n  \"hi \" + name\nend\n",
     [("def greet(name)\n", "# frozen_string_literal: true\n\ndef greet(name)\n")],
     "Add the frozen string literal comment."),
    ("sh-set-euo", "shell", "normal", "build.sh",
     "#!/bin/sh\ncargo build --release\n",
     [("#!/bin/sh\n", "#!/bin/sh\nset -eu\n")],
     "Stop the script on the first error."),
    ("lua-local-fn", "lua", "normal", "util.lua",
     "function trim(s)\n  return (s:gsub('^%s+', ''))\nend\n",
     [("function trim(s)", "local function trim(s)")],
     "trim should be local."),
    ("yaml-ci-cache", "yaml", "normal", "ci.yml",
     "steps:\n  - uses: actions/checkout@v4\n  - run: cargo test\n",
     [("  - run: cargo test\n", "  - uses: Swatinem/rust-cache@v2\n  - run: cargo test\n")],
     "Cache cargo in CI."),
    ("md-fix-link", "markdown", "normal", "README.md",
     "# Tool\n\nSee [docs](doc/index.md).\n",
     [("(doc/index.md)", "(docs/index.md)")],
     "The docs moved to docs/."),
    ("py-retry-rename", "python", "retry", "shop.py",
     "def price(item):\n    return item.cost\n",
     [("return item.cost", "return item.cost * (1 + item.tax)")],
     "Include the tax in price."),
    ("go-retry-ctx", "go", "retry", "fetch.go",
     "package net\n\nfunc Fetch(url string) ([]byte, error) {\n\treturn get(url)\n}\n",
     [("func Fetch(url string)", "func Fetch(ctx context.Context, url string)")],
     "Fetch should take a context."),
    ("ts-retry-optional", "typescript", "retry", "opts.ts",
     "export interface Opts {\n  verbose: boolean;\n}\n",
     [("  verbose: boolean;", "  verbose?: boolean;")],
     "verbose should be optional."),
    ("rs-schema-result", "rust", "schema", "src/parse.rs",
     "pub fn parse(s: &str) -> i64 {\n    s.parse().unwrap()\n}\n",
     [("pub fn parse(s: &str) -> i64 {\n    s.parse().unwrap()\n}",
       "pub fn parse(s: &str) -> Result<i64, std::num::ParseIntError> {\n    s.parse()\n}")],
     "parse must not panic."),
    ("java-schema-stream", "java", "schema", "Sum.java",
     "int sum(List<Integer> xs) {\n    int t = 0;\n    for (int x : xs) t += x;\n    return t;\n}\n",
     [("    int t = 0;\n    for (int x : xs) t += x;\n    return t;\n",
       "    return xs.stream().mapToInt(Integer::intValue).sum();\n")],
     "Use a stream."),
    ("py-timeout-large", "python", "timeout", "report.py",
     "def report(rows):\n    print(rows)\n",
     [("    print(rows)\n", "    for row in rows:\n        print(row)\n")],
     "One row per line."),
    ("c-overflow-big-context", "c", "overflow", "main.c",
     "int main(void) {\n    return 1;\n}\n",
     [("return 1;", "return 0;")],
     "main should succeed."),
    ("kt-no-tools", "kotlin", "notools", "App.kt",
     "fun main() {\n    println(\"hi\")\n}\n",
     [("println(\"hi\")", "println(\"hello\")")],
     "Say hello."),
    ("py-conflict-same-line", "python", "conflict", "conf.py",
     "TIMEOUT = 10\nRETRIES = 3\n",
     [("TIMEOUT = 10", "TIMEOUT = 30")],
     "Raise the timeout to 30."),
    ("js-conflict-handler", "javascript", "conflict", "server.js",
     "app.get('/', (req, res) => res.send('ok'));\n",
     [("res.send('ok')", "res.json({ ok: true })")],
     "Answer JSON."),
    ("go-conflict-port", "go", "conflict", "main.go",
     "package main\n\nconst port = 8080\n",
     [("const port = 8080", "const port = 9090")],
     "Use port 9090."),
    ("rs-clarify-units", "rust", "clarify", "src/time.rs",
     "pub fn timeout() -> u64 {\n    30\n}\n",
     [("    30\n", "    30_000\n")],
     "Change the timeout's unit."),
    ("py-clarify-format", "python", "clarify", "dates.py",
     "def fmt(d):\n    return d.isoformat()\n",
     [("return d.isoformat()", "return d.strftime('%d.%m.%Y')")],
     "Format dates the other way."),
    ("sql-clarify-index", "sql", "clarify", "schema.sql",
     "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT);\n",
     [("email TEXT);\n", "email TEXT);\nCREATE UNIQUE INDEX users_email ON users (email);\n")],
     "Add the index we talked about."),
    ("py-hunks-two-fixes", "python", "hunks", "tools.py",
     lines(8, "def f{i}():\n    return {i}\n\n"),
     [("    return 1\n", "    return 100\n"), ("    return 8\n", "    return 800\n")],
     "Scale f1 and f8 by 100."),
    ("lua-hunks-config", "lua", "hunks", "config.lua",
     lines(12, "M.opt{i} = false\n"),
     [("M.opt1 = false\n", "M.opt1 = true\n"), ("M.opt12 = false\n", "M.opt12 = true\n")],
     "Turn opt1 and opt12 on."),
    ("css-hunks-colors", "css", "hunks", "site.css",
     lines(10, ".c{i} {{ color: black; }}\n"),
     [(".c1 { color: black; }", ".c1 { color: navy; }"), (".c10 { color: black; }", ".c10 { color: teal; }")],
     "New colours for c1 and c10."),
    ("rb-wrong-method", "ruby", "wrong", "list.rb",
     "def first_two(xs)\n  xs.take(3)\nend\n",
     [("xs.take(3)", "xs.take(2)")],
     "first_two returns three items."),
    ("toml-wrong-edition", "toml", "wrong", "Cargo.toml",
     "[package]\nname = \"x\"\nedition = \"2018\"\n",
     [("edition = \"2018\"", "edition = \"2021\"")],
     "Move to the 2021 edition."),
]


# Edits a model gets slightly wrong, with one reading bb7 recovers, or wrong in a way
# bb7 must refuse (the edit corpus's kinds: tests/edit_corpus/). Each answer is the
# same in every mode.
# (id, language, tags, path, content, answer, expected file or None to refuse, prompt);
# the id names the corpus's cause.
# answer: ("tools", [(old, new)]) for one edit_file call, ("blocks", [(old, new)]) for
# SEARCH/REPLACE blocks (the task asks for blocks), or ("no-tools", [(old, new)]): the
# server refuses tool calls and bb7 asks again for blocks.
EDIT_TASKS = [
    ("go-spaces-for-tabs", "go", ["recoverable"], "stats.go",
     "package stats\n\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n"
     "\t\ttotal += x\n\t}\n\treturn total\n}\n",
     ("tools", [("    for _, x := range xs {\n        total += x\n    }\n",
                 "    for _, x := range xs {\n        if x > 0 {\n            total += x\n"
                 "        }\n    }\n")]),
     "package stats\n\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n"
     "\t\tif x > 0 {\n\t\t\ttotal += x\n\t\t}\n\t}\n\treturn total\n}\n",
     "Only sum the positive numbers."),
    ("py-crlf-file", "python", ["recoverable"], "greet.py",
     "import sys\r\n\r\ndef greet(name):\r\n    return \"hi \" + name\r\n",
     ("tools", [("def greet(name):\n    return \"hi \" + name\n",
                 "def greet(name):\n    return f\"hi {name}\"\n")]),
     "import sys\r\n\r\ndef greet(name):\r\n    return f\"hi {name}\"\r\n",
     "Use an f-string."),
    ("go-trailing-spaces", "go", ["recoverable"], "cfg.go",
     "package cfg\n\n// Server settings.   \ntype Server struct {\n\tName string // shown  \n"
     "\tPort int\n}\n",
     ("tools", [("// Server settings.\ntype Server struct {\n\tName string // shown\n\tPort int\n}",
                 "// Server settings.\ntype Server struct {\n\tName string // shown\n\tPort int\n"
                 "\tHost string\n}")]),
     "package cfg\n\n// Server settings.   \ntype Server struct {\n\tName string // shown  \n"
     "\tPort int\n\tHost string\n}\n",
     "Add a Host field."),
    ("py-method-flush-left", "python", ["recoverable"], "cart.py",
     "class Cart:\n    def __init__(self):\n        self.items = []\n\n    def total(self):\n"
     "        return sum(self.items)\n",
     ("tools", [("def total(self):\n    return sum(self.items)\n",
                 "def total(self):\n    return sum(i.price for i in self.items)\n")]),
     "class Cart:\n    def __init__(self):\n        self.items = []\n\n    def total(self):\n"
     "        return sum(i.price for i in self.items)\n",
     "Items have a price; total should add those."),
    ("md-dash-kept", "markdown", ["recoverable"], "DEPLOY.md",
     "# Deploy\n\nStaging \u2014 every merge to main.\nProduction \u2014 tagged releases.\n",
     ("tools", [("Staging - every merge to main.\nProduction - tagged releases.\n",
                 "Staging - every merge to main.\nProduction - tagged releases, after a review.\n")]),
     "# Deploy\n\nStaging \u2014 every merge to main.\nProduction \u2014 tagged releases, after a review.\n",
     "Production needs a review."),
    ("yaml-no-final-newline", "yaml", ["recoverable"], "app.yml",
     "name: app\nversion: 1\nport: 80",
     ("tools", [("port: 80\n", "port: 8080\n")]),
     "name: app\nversion: 1\nport: 8080",
     "Serve on 8080."),
    ("py-blank-line-left-out", "python", ["recoverable"], "api.py",
     "class Api:\n    def get(self):\n        return self.http.get(self.url)\n\n"
     "    def post(self, body):\n        return self.http.post(self.url, json=body)\n",
     ("tools", [("    def get(self):\n        return self.http.get(self.url)\n"
                 "    def post(self, body):\n        return self.http.post(self.url, json=body)",
                 "    def get(self):\n        return self.http.get(self.url, timeout=5)\n"
                 "    def post(self, body):\n        return self.http.post(self.url, json=body, timeout=5)")]),
     "class Api:\n    def get(self):\n        return self.http.get(self.url, timeout=5)\n\n"
     "    def post(self, body):\n        return self.http.post(self.url, json=body, timeout=5)\n",
     "Both calls need a 5 s timeout."),
    ("rs-elided-loop", "rust", ["recoverable"], "src/count.rs",
     "pub fn count(items: &[u32]) -> u32 {\n    let mut n = 0;\n    for x in items {\n"
     "        n += x;\n    }\n    log::debug!(\"counted\");\n    n\n}\n",
     ("tools", [("pub fn count(items: &[u32]) -> u32 {\n    // ... existing code ...\n"
                 "    log::debug!(\"counted\");\n    n\n}\n",
                 "pub fn count(items: &[u32]) -> u32 {\n    // ... existing code ...\n"
                 "    log::debug!(\"counted {n}\");\n    n\n}\n")]),
     "pub fn count(items: &[u32]) -> u32 {\n    let mut n = 0;\n    for x in items {\n"
     "        n += x;\n    }\n    log::debug!(\"counted {n}\");\n    n\n}\n",
     "Log the count."),
    ("ts-truncated-last-line", "typescript", ["recoverable"], "list.ts",
     "export function list(items: string[]): string {\n  const rows = items.map((i) => `<li>${i}</li>`);\n"
     "  return `<ul>${rows.join(\"\")}</ul>`;\n}\n",
     ("tools", [("  const rows = items.map((i) => `<li>${i}</li>`);\n  return `<ul>",
                 "  const rows = items.map((i) => `<li class=\"row\">${i}</li>`);\n  return `<ul>")]),
     "export function list(items: string[]): string {\n  const rows = items.map((i) => `<li class=\"row\">${i}</li>`);\n"
     "  return `<ul>${rows.join(\"\")}</ul>`;\n}\n",
     "Give each row the class row."),
    ("py-copy-two-columns-short", "python", ["recoverable"], "shape.py",
     "class Shape:\n    def area(self):\n        w = self.w\n        return w * self.h\n",
     ("tools", [("      w = self.w\n      return w * self.h\n",
                 "      w = self.w\n      h = self.h\n      return w * h\n")]),
     "class Shape:\n    def area(self):\n        w = self.w\n        h = self.h\n        return w * h\n",
     "Read h into a local too."),
    ("lua-spaces-for-tabs", "lua", ["recoverable"], "keys.lua",
     "local function setup(opts)\n\tif opts.keys then\n\t\tmap(opts.keys)\n\tend\nend\n",
     ("tools", [("  if opts.keys then\n    map(opts.keys)\n  end\n",
                 "  if opts.keys then\n    map(opts.keys)\n  else\n    map(defaults)\n  end\n")]),
     "local function setup(opts)\n\tif opts.keys then\n\t\tmap(opts.keys)\n\telse\n\t\tmap(defaults)\n\tend\nend\n",
     "Map the defaults when no keys are given."),
    ("rs-quotes-escaped-twice", "rust", ["recoverable"], "src/bin/hello.rs",
     "fn main() {\n    println!(\"hello\");\n}\n",
     ("tools", [("println!(\\\"hello\\\");", "println!(\\\"hello, world\\\");")]),
     "fn main() {\n    println!(\"hello, world\");\n}\n",
     "Greet the world."),
    ("ts-typographic-quotes", "typescript", ["recoverable"], "tag.ts",
     "export function tag(name: string): string {\n  return `<${name}>` + \"\";\n}\n",
     ("tools", [("  return `<${name}>` + \u201c\u201d;", "  return `<${name}>` + \"\\n\";")]),
     "export function tag(name: string): string {\n  return `<${name}>` + \"\\n\";\n}\n",
     "End the tag with a newline."),
    ("py-two-matches", "python", ["must_refuse"], "lookup.py",
     "def find(xs, k):\n    for x in xs:\n        if x.key == k:\n            return x\n    return None\n\n"
     "def find_name(xs, n):\n    for x in xs:\n        if x.name == n:\n            return x\n    return None\n",
     ("tools", [("    return None\n", "    raise KeyError(k)\n")]),
     None,
     "find should raise when nothing matches."),
    ("go-near-miss-value", "go", ["must_refuse"], "limits.go",
     "package limits\n\nconst MaxItems = 100\nconst MaxBytes = 4096\n",
     ("tools", [("const MaxItems = 10\n", "const MaxItems = 200\n")]),
     None,
     "Double MaxItems."),
    ("rs-inside-longer-name", "rust", ["must_refuse"], "src/net.rs",
     "pub fn policy() -> (u32, u32) {\n    let retries = 3;\n    let max_retries = 5;\n"
     "    (retries, max_retries)\n}\n",
     ("tools", [("retries = 5;", "retries = 6;")]),
     None,
     "Allow one more retry at most."),
    ("rs-placeholder-deletes", "rust", ["must_refuse"], "src/main.rs",
     "fn main() {\n    let v = vec![1, 2, 3];\n    for x in &v {\n        println!(\"{x}\");\n    }\n}\n",
     ("tools", [("fn main() {\n    let v = vec![1, 2, 3];\n    for x in &v {\n        println!(\"{x}\");\n    }\n}",
                 "fn main() {\n    let v = vec![1, 2, 3, 4];\n    // ... existing code ...\n}")]),
     None,
     "Add 4 to the list."),
    ("py-line-between-depths", "python", ["must_refuse"], "score.py",
     "def score(items):\n    total = 0\n    for item in items:\n        if item.valid:\n"
     "            total += item.value\n            seen.add(item)\n        count += 1\n    return total\n",
     ("tools", [("            seen.add(item)\n        count += 1\n",
                 "            seen.add(item)\n          log(item)\n        count += 1\n")]),
     None,
     "Log every item."),
    ("js-block-exact", "javascript", ["blocks", "exact"], "sum.js",
     "function sum(xs) {\n  var t = 0;\n  xs.forEach(function (x) { t += x; });\n  return t;\n}\n",
     ("blocks", [("  var t = 0;\n  xs.forEach(function (x) { t += x; });\n  return t;\n",
                  "  return xs.reduce((t, x) => t + x, 0);\n")]),
     "function sum(xs) {\n  return xs.reduce((t, x) => t + x, 0);\n}\n",
     "Use reduce."),
    ("py-block-line-short", "python", ["blocks", "recoverable"], "fetch.py",
     "def fetch(url):\n    for attempt in range(3):\n        resp = get(url)\n        if resp.ok:\n"
     "            return resp\n    raise IOError(url)\n",
     ("blocks", [("        resp = get(url)\n        if resp.ok:\n",
                  "        resp = get(url)\n      log(attempt)\n        if resp.ok:\n")]),
     "def fetch(url):\n    for attempt in range(3):\n        resp = get(url)\n        log(attempt)\n"
     "        if resp.ok:\n            return resp\n    raise IOError(url)\n",
     "Log each attempt."),
    ("go-block-spaces", "go", ["blocks", "recoverable"], "run.go",
     "package main\n\nfunc run(xs []int) int {\n\tn := 0\n\tfor range xs {\n\t\tn++\n\t}\n\treturn n\n}\n",
     ("blocks", [("    for range xs {\n        n++\n    }\n",
                  "    for range xs {\n        n++\n    }\n    log(n)\n")]),
     "package main\n\nfunc run(xs []int) int {\n\tn := 0\n\tfor range xs {\n\t\tn++\n\t}\n\tlog(n)\n\treturn n\n}\n",
     "Log n before returning."),
    ("lua-block-crlf", "lua", ["blocks", "recoverable"], "init.lua",
     "local M = {}\r\nM.width = 80\r\nM.wrap = false\r\nreturn M\r\n",
     ("blocks", [("M.wrap = false\n", "M.wrap = true\n")]),
     "local M = {}\r\nM.width = 80\r\nM.wrap = true\r\nreturn M\r\n",
     "Turn wrapping on."),
    ("py-block-search-twice", "python", ["blocks", "must_refuse"], "ab.py",
     "def a():\n    return 1\n\n\ndef b():\n    return 1\n",
     ("blocks", [("    return 1\n", "    return 2\n")]),
     None,
     "b should return 2."),
    ("py-block-one-bad", "python", ["blocks", "must_refuse"], "geo.py",
     "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n",
     ("blocks", [("    return w * h\n", "    return float(w * h)\n"),
                 ("    return 3 * (w + h)\n", "    return float(2 * (w + h))\n")]),
     None,
     "Both should return floats."),
    ("ts-server-without-tools", "typescript", ["blocks", "recoverable"], "opts.ts",
     "export const defaults = {\n\tretries: 3,\n\tverbose: false,\n};\n",
     ("no-tools", [("  retries: 3,\n  verbose: false,\n", "  retries: 3,\n  verbose: true,\n")]),
     "export const defaults = {\n\tretries: 3,\n\tverbose: true,\n};\n",
     "Verbose by default."),
]


def apply(content, edits):
    for old, new in edits:
        assert content.count(old) == 1, (old, content)
        content = content.replace(old, new, 1)
    return content


def edit_call(path, content, edits):
    return {"name": "edit_file", "arguments": {"edits": [
        {"path": path, "file_id": file_id(path, content), "old_string": old, "new_string": new}
        for old, new in edits]}}


def reply(text, calls, cost, prompt=1200, completion=180):
    return {"text": text, "tool_calls": calls, "prompt_tokens": prompt,
            "completion_tokens": completion, "cost": cost}


def error(status, message):
    return json.dumps({"error": {"code": status, "message": message}})


def exchanges(kind, mode, i, path, content, edits):
    """The exchanges of one task in one mode, and what the run must report."""
    good = [edit_call(path, content, edits)]
    bad = [edit_call(path, content, [("no such line\n", "x\n")])]
    schema = [{"name": "edit_file", "arguments": {"file": path, "text": "?"}}]
    wrong = [edit_call(path, content, [(edits[0][0], edits[0][1].replace("2", "9", 1))])]
    local_ms, remote_ms = 700 + (i * 37) % 600, 2100 + (i * 53) % 1700
    remote_cost = round(0.0030 + 0.0001 * (i % 7), 4)

    def L(calls, text="Done.", ms=None, **kw):
        return dict(provider="local", reply=reply(text, calls, 0.0), latency_ms=ms or local_ms, **kw)

    def R(calls, text="Done."):
        return dict(provider="remote", reply=reply(text, calls, remote_cost), latency_ms=remote_ms)

    ask = [{"name": "clarify_user", "arguments": {"question": "Which one do you mean?"}}]
    if mode == "remote":
        if kind == "clarify":
            return [R(ask, ""), R(good)]
        if kind == "wrong":
            return [R(good)]
        return [R(good)]
    hybrid = mode == "hybrid_auto"
    if kind in ("normal", "conflict", "hunks"):
        return [L(good)]
    if kind == "wrong":
        return [L(wrong)]
    if kind == "clarify":
        return [L(ask, ""), L(good)]
    if kind == "retry":
        return [L(bad), L(good)] if hybrid else [L(bad)]
    if kind == "schema":
        return [L(schema), L(bad), R(good)] if hybrid else [L(schema)]
    if kind == "timeout":
        if hybrid:
            return [L(good, ms=TIMEOUT_MS, stall_ms=1500), R(good)]
        return [L(good, ms=1500, stall_ms=1500)]
    if kind == "overflow":
        refusal = dict(provider="local", status=400, latency_ms=40,
                       response=error(400, "This model's maximum context length is 8192 tokens"))
        return [refusal, R(good)] if hybrid else [refusal]
    if kind == "notools":
        refusal = dict(provider="local", status=400, latency_ms=30,
                       response=error(400, "registry.ollama.ai/library/gemma:2b does not support tools"))
        return [refusal, R(good)] if hybrid else [refusal]
    raise ValueError(kind)


def blocks_answer(path, edits):
    """An answer with the edits as SEARCH/REPLACE blocks (whole lines)."""
    blocks = "".join(f"<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n" for old, new in edits)
    return f"The change:\n\n{path}\n```\n{blocks}```\n"


def edit_exchanges(mode, i, path, content, answer, refuse):
    """The exchanges of an edit-corpus task in one mode. A refusal in hybrid_auto is
    retried on local once and then falls back to remote, which answers the same."""
    kind, edits = answer
    local_ms, remote_ms = 650 + (i * 41) % 500, 1900 + (i * 59) % 1500
    remote_cost = round(0.0025 + 0.0001 * (i % 5), 4)
    tools = kind == "tools"
    if tools:
        # The model saw the snapshot, which holds LF text: its id is the LF text's.
        calls, text = [edit_call(path, content.replace("\r\n", "\n"), edits)], "Done."
    else:
        calls, text = [], blocks_answer(path, edits)

    def answer_on(provider):
        ms, cost = (remote_ms, remote_cost) if provider == "remote" else (local_ms, 0.0)
        return dict(provider=provider, reply=reply(text, calls, cost), latency_ms=ms,
                    expect_tools=tools)

    first = "remote" if mode == "remote" else "local"
    if kind == "no-tools":
        refusal = dict(provider=first, status=400, latency_ms=25, expect_tools=True,
                       response=error(400, "model qwen-coder does not support tools"))
        return [refusal, answer_on(first)]
    if refuse and mode == "hybrid_auto":
        return [answer_on("local"), answer_on("local"), answer_on("remote")]
    return [answer_on(first)]


def handled_calls(ex):
    """The model's calls bb7 handles: a result for each call of an answer the next
    request continues on the same provider (a tool step, a question, a local retry),
    and the edit calls or blocks of the last answer."""
    def planned(e):
        r = e.get("reply")
        if e.get("status", 200) != 200 or not r:
            return 0
        return len(r["tool_calls"]) or r["text"].count("<<<<<<< SEARCH")
    n = sum(len(prev.get("reply", {}).get("tool_calls", []))
            for prev, cur in zip(ex, ex[1:]) if prev["provider"] == cur["provider"])
    return n + planned(ex[-1])


def predict(kind, mode, ex, hunks_total):
    """What the run reports for one task: success, hunks, accepted, conflict,
    clarification, refusal, tool calls, latency, cost, fallback reason."""
    latency = sum(e["latency_ms"] for e in ex)
    cost_of = lambda es: sum(e.get("reply", {}).get("cost", 0.0) for e in es)
    fallback = None
    hybrid = mode == "hybrid_auto"
    answered = True
    if mode == "local" and kind in ("retry", "schema", "overflow", "notools"):
        answered = False
    if hybrid:
        fallback = {"schema": "schema_fail", "timeout": "timeout", "overflow": "context_overflow",
                    "notools": "schema_fail"}.get(kind)
    cost = cost_of(ex)
    if not answered and kind in ("overflow", "notools"):
        cost = 0.0  # an error carries no usage
    hunks = hunks_total if answered else 0
    conflict = kind == "conflict" and answered
    accepted = 0 if conflict else (1 if kind == "hunks" else hunks)
    success = answered and not (kind == "wrong" and mode != "remote")
    return dict(success=success, hunks=hunks, accepted=accepted, conflict=conflict,
                clarification=kind == "clarify", must_refuse=False, refused=False,
                tool_calls=handled_calls(ex), latency_ms=latency, cost=cost,
                fallback_reason=fallback)


def predict_edit(tid, ex, refuse):
    """What the run reports for an edit-corpus task: it lands in one hunk, or bb7
    refuses it (a `diff_error`, which names no provider and no fallback)."""
    hunks = 0 if refuse else HUNKS.get(tid, 1)
    return dict(success=True, hunks=hunks, accepted=hunks,
                conflict=False, clarification=False, must_refuse=refuse, refused=refuse,
                tool_calls=handled_calls(ex), latency_ms=sum(e["latency_ms"] for e in ex),
                cost=sum(e.get("reply", {}).get("cost", 0.0) for e in ex), fallback_reason=None)


def percentile(values, p):
    values = sorted(values)
    rank = max(1, -(-p * len(values) // 100))
    return values[min(rank, len(values)) - 1]


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


# The models `bb7 eval --replay` configures by default (--local-model, --remote-model).
MODELS = {"local": "local-model", "remote": "remote-model"}


def write_trace(tid, mode, ex):
    for e in ex:
        # Unless it says otherwise, an exchange is of a run with the default `auto`
        # edit format on a fresh home: its request offers tools.
        e.setdefault("expect_tools", True)
        # The model that answered, as `bb7 eval --replay` configures each provider:
        # a replay refuses an exchange of another model (or of none).
        e.setdefault("model", MODELS[e["provider"]])
    write_json(os.path.join(ROOT, "traces", mode, tid + ".json"),
               {"task": tid, "mode": mode, "source": "hand-written", "date": DATE,
                "exchanges": ex})


def exact_share():
    """Traced edits whose old text is in the file as it is, of all traced edits."""
    exact = total = 0
    for mode in MODES:
        d = os.path.join(ROOT, "traces", mode)
        for name in os.listdir(d):
            with open(os.path.join(d, name)) as f:
                trace = json.load(f)
            with open(os.path.join(ROOT, "tasks", name)) as f:
                files = json.load(f)["files"]
            for e in trace["exchanges"]:
                r = e.get("reply") or {}
                pairs = [(ed["path"], ed["old_string"])
                         for c in r.get("tool_calls", []) if c["name"] == "edit_file"
                         for ed in c["arguments"].get("edits", [])]
                text = r.get("text", "")
                if "<<<<<<< SEARCH" in text:
                    path = text.split("\n")[2]
                    pairs += [(path, b.split("=======\n")[0])
                              for b in text.split("<<<<<<< SEARCH\n")[1:]]
                for path, old in pairs:
                    total += 1
                    exact += old != "" and old in files.get(path, "")
    return exact, total


def main():
    results = {m: [] for m in MODES}
    for i, (tid, lang, kind, path, content, edits, prompt) in enumerate(TASKS):
        expected = apply(content, edits)
        task = {"id": tid, "language": lang, "tags": [TAGS.get(kind, kind)], "prompt": prompt,
                "files": {path: content}, "expect": {"files": {path: expected}}}
        if kind == "timeout":
            task["config"] = {"hybrid_remote_on_timeout_ms": TIMEOUT_MS}
        if kind == "notools":
            # With `auto` bb7 would first ask the local model again for blocks.
            task["config"] = {"edit_format": "tools"}
        if kind == "conflict":
            user = content.replace(edits[0][0], edits[0][0] + "  # mine" if lang == "python"
                                   else edits[0][0] + " // mine")
            task["user_edits"] = {path: user}
            task["expect"] = {"files": {path: user}, "conflict": True}
        if kind == "clarify":
            task["tools"] = "auto"
            task["clarify_answer"] = "The one in the file, please."
            task["expect"]["clarification"] = True
        if kind == "hunks":
            task["review"] = {"hunks": {path: ["accept", "reject"]}}
            task["expect"] = {"files": {path: apply(content, edits[:1])}}
        if lang == "shell":
            task["expect"]["command"] = ["sh", "-n", path]
        if lang == "python" and kind == "normal":
            task["expect"]["command"] = ["python3", "-m", "py_compile", path]
        write_json(os.path.join(ROOT, "tasks", tid + ".json"), task)
        for mode in MODES:
            ex = exchanges(kind, mode, i, path, content, edits)
            write_trace(tid, mode, ex)
            results[mode].append(predict(kind, mode, ex, len(edits)))
    for i, (tid, lang, tags, path, content, answer, expected, prompt) in enumerate(EDIT_TASKS):
        refuse = expected is None
        task = {"id": tid, "language": lang, "tags": tags, "prompt": prompt,
                "files": {path: content},
                "expect": {"refusal": True} if refuse else {"files": {path: expected}}}
        if answer[0] == "blocks":
            task["config"] = {"edit_format": "blocks"}
        write_json(os.path.join(ROOT, "tasks", tid + ".json"), task)
        for mode in MODES:
            ex = edit_exchanges(mode, i, path, content, answer, refuse)
            write_trace(tid, mode, ex)
            results[mode].append(predict_edit(tid, ex, refuse))
    summary = {}
    for mode, rs in results.items():
        n = len(rs)
        ok = [r for r in rs if r["success"]]
        hunks = sum(r["hunks"] for r in rs)
        refusals = [r for r in rs if r["must_refuse"]]
        summary[mode] = {
            "tasks": n, "successes": len(ok),
            "success_rate": round(len(ok) / n, 4),
            "accepted_hunk_ratio": round(sum(r["accepted"] for r in rs) / hunks, 4),
            "conflict_rate": round(sum(r["conflict"] for r in rs) / n, 4),
            "refusal_tasks": len(refusals),
            "refused_as_expected": sum(1 for r in refusals if r["refused"] and r["success"]),
            "tool_calls_per_success": round(sum(r["tool_calls"] for r in ok) / len(ok), 4),
            "latency_p50_ms": percentile([r["latency_ms"] for r in rs], 50),
            "latency_p95_ms": percentile([r["latency_ms"] for r in rs], 95),
            "cost_per_task": round(sum(r["cost"] for r in rs) / n, 6),
            "clarification_rate": round(sum(r["clarification"] for r in rs) / n, 4),
            "fallback_rate": round(sum(1 for r in rs if r["fallback_reason"]) / n, 4),
        }
    exact, total = exact_share()
    summary["traced_edits"] = {"total": total, "exact": exact}
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
