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
"""

import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
MODES = ["local", "remote", "hybrid_auto"]
TIMEOUT_MS = 300


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


def predict(kind, mode, ex, hunks_total):
    """What the run reports for one task: success, hunks, accepted, conflict,
    clarification, tool calls, latency, cost, fallback reason."""
    calls = sum(len(e.get("reply", {}).get("tool_calls", [])) for e in ex)
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
                clarification=kind == "clarify", tool_calls=calls, latency_ms=latency,
                cost=cost, fallback_reason=fallback)


def percentile(values, p):
    values = sorted(values)
    rank = max(1, -(-p * len(values) // 100))
    return values[min(rank, len(values)) - 1]


def main():
    tasks_dir = os.path.join(ROOT, "tasks")
    os.makedirs(tasks_dir, exist_ok=True)
    results = {m: [] for m in MODES}
    for i, (tid, lang, kind, path, content, edits, prompt) in enumerate(TASKS):
        expected = apply(content, edits)
        task = {"id": tid, "language": lang, "prompt": prompt, "files": {path: content},
                "expect": {"files": {path: expected}}}
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
        with open(os.path.join(tasks_dir, tid + ".json"), "w") as f:
            json.dump(task, f, indent=2)
            f.write("\n")
        for mode in MODES:
            ex = exchanges(kind, mode, i, path, content, edits)
            d = os.path.join(ROOT, "traces", mode)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, tid + ".json"), "w") as f:
                for e in ex:
                    # Every hand-written run uses the default `auto` edit format on a
                    # fresh home: each request offers tools.
                    e["expect_tools"] = True
                json.dump({"task": tid, "mode": mode, "source": "hand-written",
                           "exchanges": ex}, f, indent=2)
                f.write("\n")
            results[mode].append(predict(kind, mode, ex, len(edits)))
    summary = {}
    for mode, rs in results.items():
        n = len(rs)
        ok = [r for r in rs if r["success"]]
        hunks = sum(r["hunks"] for r in rs)
        summary[mode] = {
            "tasks": n, "successes": len(ok),
            "success_rate": round(len(ok) / n, 4),
            "accepted_hunk_ratio": round(sum(r["accepted"] for r in rs) / hunks, 4),
            "conflict_rate": round(sum(r["conflict"] for r in rs) / n, 4),
            "tool_calls_per_success": round(sum(r["tool_calls"] for r in ok) / len(ok), 4),
            "latency_p50_ms": percentile([r["latency_ms"] for r in rs], 50),
            "latency_p95_ms": percentile([r["latency_ms"] for r in rs], 95),
            "cost_per_task": round(sum(r["cost"] for r in rs) / n, 6),
            "clarification_rate": round(sum(r["clarification"] for r in rs) / n, 4),
            "fallback_rate": round(sum(1 for r in rs if r["fallback_reason"]) / n, 4),
        }
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
