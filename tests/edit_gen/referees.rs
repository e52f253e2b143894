//! Syntax referees for the generative test and the edit corpus: a landed edit must
//! still parse when the original and the intended file do. They judge from outside
//! the matcher (the languages' own parsers), so a wrong result the generator's own
//! notion of "intended" shares is still caught.
//!
//! Checkers: Python's `compile()` on the file's bytes (as `python3 -m py_compile`
//! reads them, byte-order mark and coding cookie included), `serde_json`, `bash -n`,
//! Node's parser (`vm.Script`, then `vm.SourceTextModule` for ES modules, as
//! `node --check` would), Python's `tomllib` (TOML 1.0), PyYAML's composer (YAML
//! syntax without constructing values, so any tag is accepted), GNU `make -n` (only
//! errors make reports against a line of the file: "missing separator", an unclosed
//! conditional), Lua 5.4's `loadfile` (what `luac -p` runs), an HTML check built on
//! Python's `html.parser` (see [`HTML`]), and tree-sitter grammars in process for Go,
//! Rust, TypeScript/TSX and C (see `syntax_tree.rs`: no outside tool, so they judge in
//! CI). One process checks a whole batch (make: one `make` per file, from one shell),
//! so a run of thousands of cases costs a few process starts. A checker that is
//! missing is skipped with a printed note; its files count as not refereed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[path = "syntax_tree.rs"]
mod syntax_tree;

use syntax_tree::Grammar;

/// A language with a referee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    Python,
    Json,
    Shell,
    JavaScript,
    Toml,
    Yaml,
    Makefile,
    Lua,
    Html,
    Go,
    Rust,
    TypeScript,
    /// TypeScript or JavaScript with JSX (`.tsx`, `.jsx`): the TSX grammar.
    Tsx,
    C,
}

impl Lang {
    /// The language of a file by its name (a path's last component), or by a `#!`
    /// line naming `sh` or `bash` for a script without an extension; `None` when no
    /// referee reads it. `Makefile`, `makefile`, `GNUmakefile` and `*.mk` are read as
    /// GNU make reads them.
    pub fn of(name: &str, text: &str) -> Option<Lang> {
        let base = name.rsplit('/').next().unwrap_or(name);
        if matches!(base, "Makefile" | "makefile" | "GNUmakefile") {
            return Some(Lang::Makefile);
        }
        match base.rsplit_once('.').map(|(_, e)| e) {
            Some("py") => Some(Lang::Python),
            Some("json") => Some(Lang::Json),
            Some("sh" | "bash") => Some(Lang::Shell),
            Some("js" | "mjs" | "cjs") => Some(Lang::JavaScript),
            Some("toml") => Some(Lang::Toml),
            Some("yaml" | "yml") => Some(Lang::Yaml),
            Some("mk") => Some(Lang::Makefile),
            Some("lua") => Some(Lang::Lua),
            Some("html" | "htm") => Some(Lang::Html),
            Some("go") => Some(Lang::Go),
            Some("rs") => Some(Lang::Rust),
            Some("ts" | "mts" | "cts") => Some(Lang::TypeScript),
            Some("tsx" | "jsx") => Some(Lang::Tsx),
            Some("c") => Some(Lang::C),
            None => {
                let first = text.lines().next().unwrap_or("");
                let shell =
                    first.starts_with("#!") && (first.ends_with("/sh") || first.contains("bash"));
                shell.then_some(Lang::Shell)
            }
            Some(_) => None,
        }
    }
}

/// The parse results of texts, filled a batch at a time.
#[derive(Default)]
pub struct Referee {
    queued: HashSet<(Lang, String)>,
    /// `Some(None)` parses, `Some(Some(why))` does not, absent: not checked (the
    /// checker is missing).
    verdicts: HashMap<(Lang, String), Option<String>>,
    /// Languages whose missing checker has been noted in the output.
    noted: HashSet<String>,
}

impl Referee {
    /// Asks for `text` to be parsed as `lang` at the next [`Referee::settle`].
    pub fn queue(&mut self, lang: Lang, text: &str) {
        let key = (lang, text.to_owned());
        if !self.verdicts.contains_key(&key) {
            self.queued.insert(key);
        }
    }

    /// Runs the checkers on everything queued.
    pub fn settle(&mut self) {
        let queued = std::mem::take(&mut self.queued);
        let mut by_lang: BTreeMap<Lang, Vec<String>> = BTreeMap::new();
        for (lang, text) in queued {
            by_lang.entry(lang).or_default().push(text);
        }
        for (lang, texts) in by_lang {
            let results = match lang {
                Lang::Json => Some(
                    texts
                        .iter()
                        .map(|t| {
                            serde_json::from_str::<serde_json::Value>(t)
                                .err()
                                .map(|e| e.to_string())
                        })
                        .collect(),
                ),
                Lang::Python => self.batch("python3", &["-c", PYTHON], &texts, "py"),
                Lang::Shell => self.batch("bash", &["-c", SHELL, "bash"], &texts, "sh"),
                Lang::JavaScript => self.batch(
                    "node",
                    &["--experimental-vm-modules", "--no-warnings", "-e", NODE],
                    &texts,
                    "js",
                ),
                Lang::Toml => self.batch("python3", &["-c", TOML], &texts, "toml"),
                Lang::Yaml => self.batch("python3", &["-c", YAML], &texts, "yaml"),
                Lang::Makefile => self.batch("bash", &["-c", MAKE, "bash"], &texts, "mk"),
                Lang::Lua => self.batch("bash", &["-c", LUA, "bash"], &texts, "lua"),
                Lang::Html => self.batch("python3", &["-c", HTML], &texts, "html"),
                Lang::Go => self.tree(Grammar::Go, &texts),
                Lang::Rust => self.tree(Grammar::Rust, &texts),
                Lang::TypeScript => self.tree(Grammar::TypeScript, &texts),
                Lang::Tsx => self.tree(Grammar::Tsx, &texts),
                Lang::C => self.tree(Grammar::C, &texts),
            };
            if let Some(results) = results {
                for (text, why) in texts.into_iter().zip(results) {
                    self.verdicts.insert((lang, text), why);
                }
            }
        }
    }

    /// Whether `text` parses as `lang`: `None` when it was not checked.
    pub fn parses(&self, lang: Lang, text: &str) -> Option<Result<(), String>> {
        let why = self.verdicts.get(&(lang, text.to_owned()))?;
        Some(match why {
            None => Ok(()),
            Some(why) => Err(why.clone()),
        })
    }

    /// Parses `texts` with a tree-sitter grammar in process (see `syntax_tree.rs`).
    fn tree(&mut self, grammar: Grammar, texts: &[String]) -> Option<Vec<Option<String>>> {
        match syntax_tree::check(grammar, texts) {
            Ok(v) => Some(v),
            Err(why) => {
                if self.noted.insert(format!("{grammar:?}")) {
                    println!("note: the {grammar:?} syntax referee is skipped: {why}");
                }
                None
            }
        }
    }

    /// Writes `texts` to a temporary folder, runs `program args` with their paths on
    /// stdin (one a line) and reads back `path<TAB>why` lines for those that fail.
    fn batch(
        &mut self,
        program: &'static str,
        args: &[&str],
        texts: &[String],
        ext: &str,
    ) -> Option<Vec<Option<String>>> {
        let dir = temp_dir();
        std::fs::create_dir_all(&dir).ok()?;
        let paths: Vec<PathBuf> = (0..texts.len())
            .map(|i| dir.join(format!("f{i}.{ext}")))
            .collect();
        for (p, t) in paths.iter().zip(texts) {
            std::fs::write(p, t).ok()?;
        }
        let out = run(program, args, &paths);
        let _ = std::fs::remove_dir_all(&dir);
        let out = match out {
            Ok(out) => out,
            Err(why) => {
                if self.noted.insert(ext.to_owned()) {
                    println!("note: the .{ext} syntax referee is skipped: {why}");
                }
                return None;
            }
        };
        let mut failed: HashMap<String, String> = HashMap::new();
        for line in out.lines() {
            if let Some((p, why)) = line.split_once('\t') {
                // The first error of a file: the later ones often follow from it. The
                // folder is gone after the batch; the file's own name says nothing.
                let why = why.replace(&format!("{}/", dir.display()), "");
                failed.entry(p.to_owned()).or_insert(why);
            }
        }
        Some(
            paths
                .iter()
                .map(|p| failed.remove(&p.to_string_lossy().into_owned()))
                .collect(),
        )
    }
}

fn temp_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("bb7-referee-{}-{n}", std::process::id()))
}

/// The checker's stdout, or why it did not run: it cannot be started, or it exits
/// unsuccessfully (the scripts below exit with a reason on stderr when their parser is
/// missing, and print per-file failures on stdout with a success status).
fn run(program: &str, args: &[&str], paths: &[PathBuf]) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("`{program}` cannot be started ({e})"))?;
    let list: String = paths.iter().map(|p| format!("{}\n", p.display())).collect();
    if let Some(mut stdin) = child.stdin.take() {
        // A checker that exits early closes its end; its status says why below.
        let _ = stdin.write_all(list.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("`{program}` did not finish ({e})"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    Err(last.map_or_else(
        || format!("`{program}` failed ({})", out.status),
        str::to_owned,
    ))
}

/// Compiles each file's bytes; prints `path<TAB>error` for those that fail.
const PYTHON: &str = r#"
import sys
for p in sys.stdin.read().splitlines():
    try:
        compile(open(p, 'rb').read(), p, 'exec', dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        print(p + '\t' + str(e).replace('\n', ' ').replace('\t', ' '))
"#;

/// `bash -n` on each file; prints `path<TAB>error` for those that fail.
const SHELL: &str = r#"
while IFS= read -r f; do
    if ! why=$(bash -n "$f" 2>&1); then
        why=${why//$'\n'/ }
        printf '%s\t%s\n' "$f" "${why//$'\t'/ }"
    fi
done
"#;

/// Parses each file as a script, else as an ES module; prints `path<TAB>error` for
/// those that are neither.
const NODE: &str = r#"
const fs = require('fs'), vm = require('vm');
for (const f of fs.readFileSync(0, 'utf8').split('\n').filter(Boolean)) {
  const src = fs.readFileSync(f, 'utf8');
  let why = null;
  try { new vm.Script(src, { filename: f }); } catch (e) {
    why = String(e.message);
    if (vm.SourceTextModule) {
      try { new vm.SourceTextModule(src, { identifier: f }); why = null; } catch (_) {}
    }
  }
  if (why !== null) console.log(f + '\t' + why.replace(/[\n\t]/g, ' '));
}
"#;

/// TOML 1.0 as Python's `tomllib` reads it (`tomli` before Python 3.11); a leading
/// byte-order mark is allowed, one anywhere else is not.
const TOML: &str = r#"
import sys
try:
    import tomllib
except ImportError:
    try:
        import tomli as tomllib
    except ImportError:
        sys.exit("Python has neither tomllib (3.11+) nor tomli")
for p in sys.stdin.read().splitlines():
    try:
        tomllib.loads(open(p, 'rb').read().decode('utf-8-sig'))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        print(p + '\t' + str(e).replace('\n', ' ').replace('\t', ' '))
"#;

/// Every document of each file composed by PyYAML (libyaml's when built with it):
/// the syntax, anchors and aliases, without constructing values, so a custom tag
/// (`!Ref`) is not an error.
const YAML: &str = r#"
import sys
try:
    import yaml
except ImportError:
    sys.exit("PyYAML is not installed (python3 -m pip install pyyaml)")
loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
for p in sys.stdin.read().splitlines():
    try:
        with open(p, 'rb') as f:
            for _ in yaml.compose_all(f, Loader=loader):
                pass
    except (yaml.YAMLError, ValueError) as e:
        print(p + '\t' + str(e).replace('\n', ' ').replace('\t', ' '))
"#;

/// GNU make reads each file and builds only an empty target of its own, on a copy in
/// a folder of its own (an `include *.mk` finds no other file of the batch), with `-n`
/// and `SHELL=/bin/true`: nothing of the file is run, not
/// even `$(shell ...)` or a rule that remakes an included makefile (make runs those
/// under `-n`). Only errors make reports against a line of the file count ("missing
/// separator", "missing 'endif'", "recipe commences before first target"); a missing
/// include or target is the folder's business, not the file's syntax.
const MAKE: &str = r#"
command -v make >/dev/null || { echo "make is not installed" >&2; exit 3; }
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEFILES
while IFS= read -r f; do
    w=$(mktemp -d "${f%/*}/make.XXXXXX") && cp "$f" "$w/Makefile" || exit 1
    why=$(cd "$w" && make -n -r -R SHELL=/bin/true --eval='.bb7-parse-only: ;' \
        .bb7-parse-only 2>&1 >/dev/null | grep -m1 -E '^Makefile:[0-9]+: \*\*\* ')
    rm -rf "$w"
    if [ -n "$why" ]; then
        printf '%s\t%s\n' "$f" "${why//$'\t'/ }"
    fi
done
"#;

/// Lua 5.4's `loadfile` on each file (it compiles without running, as `luac -p`
/// does, in one process for the batch); `lua` when `lua5.4` is not there.
const LUA: &str = r#"
lua=$(command -v lua5.4 || command -v lua) ||
    { echo "Lua is not installed (Debian: lua5.4)" >&2; exit 3; }
exec "$lua" -e '
for p in io.lines() do
    local f, why = loadfile(p)
    if not f then print(p .. "\t" .. (why:gsub("[\t\n]", " "))) end
end'
"#;

/// HTML read by Python's `html.parser` with the element nesting checked, which the
/// parser itself does not do: every element that is neither void (`br`, `img`) nor
/// one whose end tag HTML lets be implied (`p`, `li`, `td`, `html`, ...) is closed, in
/// order; no end tag closes an element that is not open; no tag, comment or raw-text
/// element (`script`, `style`) is left unterminated at the end of the file. html5lib
/// would follow the HTML standard's tree building, but it recovers from exactly the
/// mistakes an edit makes (a lost `</div>` is implied at the end), and it is one more
/// package to install. Template syntax (`{% if %}`) is text to this check.
const HTML: &str = r#"
import sys
from html.parser import HTMLParser
VOID = set('area base br col embed hr img input link meta param source track wbr'.split())
IMPLIED_END = set('html head body p li dt dd option optgroup tr td th thead tbody tfoot '
                  'colgroup caption rb rt rtc rp'.split())
class Check(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.open = []
        self.why = None
    def fail(self, why):
        if self.why is None:
            self.why = 'line %d: %s' % (self.getpos()[0], why)
    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append((tag, self.getpos()[0]))
    def handle_endtag(self, tag):
        if tag in VOID:
            return
        names = [t for t, _ in self.open]
        if tag not in names:
            return self.fail('</%s> closes no open element' % tag)
        at = len(names) - 1 - names[::-1].index(tag)
        for t, line in self.open[at + 1:]:
            if t not in IMPLIED_END:
                self.fail('<%s> of line %d is not closed before </%s>' % (t, line, tag))
        del self.open[at:]
for p in sys.stdin.read().splitlines():
    try:
        c = Check()
        c.feed(open(p, 'rb').read().decode('utf-8-sig'))
        rest = c.rawdata[c.rawdata.find('<'):] if '<' in c.rawdata else ''
        if rest.strip():
            c.fail('unterminated markup at the end: %r' % rest[:40])
        for t, line in c.open:
            if t not in IMPLIED_END:
                c.fail('<%s> of line %d is never closed' % (t, line))
        why = c.why
    except (UnicodeDecodeError, AssertionError) as e:
        why = str(e)
    if why is not None:
        print(p + '\t' + why.replace('\n', ' ').replace('\t', ' '))
"#;

/// The referees' verdict on one landed edit: `Some(why)` when the original and the
/// intended file parse and the result does not.
pub fn breaks(
    referee: &Referee,
    lang: Lang,
    original: &str,
    intended: &str,
    got: &str,
) -> Option<String> {
    referee.parses(lang, original)?.ok()?;
    referee.parses(lang, intended)?.ok()?;
    referee.parses(lang, got)?.err()
}

/// Referee counts per language: results refereed, results not refereed (the original
/// or the intended file does not parse, or the checker is missing), results that
/// broke the parse.
pub type Tally = BTreeMap<Lang, [usize; 3]>;

/// The tally as lines for the test's output.
pub fn tally_table(tally: &Tally) -> String {
    let mut out = format!(
        "{:<24} {:>8} {:>8} {:>8}\n",
        "referee", "judged", "skipped", "broke"
    );
    for (lang, t) in tally {
        out.push_str(&format!(
            "{:<24} {:>8} {:>8} {:>8}\n",
            format!("{lang:?}"),
            t[0],
            t[1],
            t[2]
        ));
    }
    out
}
