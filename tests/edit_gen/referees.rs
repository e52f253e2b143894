//! Syntax referees for the generative test: a landed edit of a Python, JSON, shell or
//! JavaScript file must still parse when the original and the intended file do. They
//! judge from outside the matcher (the languages' own parsers), so a wrong result
//! the generator's own notion of "intended" shares is still caught.
//!
//! Checkers: Python's `compile()` on the file's bytes (as `python3 -m py_compile`
//! reads them, byte-order mark and coding cookie included), `serde_json`, `bash -n`,
//! and Node's parser (`vm.Script`, then `vm.SourceTextModule` for ES modules, as
//! `node --check` would). One process checks a whole batch, so a run of thousands of
//! cases costs a few process starts. A checker that is not on PATH is skipped with a
//! printed note; its files count as not refereed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A language with a referee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    Python,
    Json,
    Shell,
    JavaScript,
}

impl Lang {
    /// The language of a file by its name, or by a `#!` line naming `sh` or `bash` for
    /// a script without an extension; `None` when no referee reads it.
    pub fn of(name: &str, text: &str) -> Option<Lang> {
        match name.rsplit_once('.').map(|(_, e)| e) {
            Some("py") => Some(Lang::Python),
            Some("json") => Some(Lang::Json),
            Some("sh" | "bash") => Some(Lang::Shell),
            Some("js" | "mjs" | "cjs") => Some(Lang::JavaScript),
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
    /// Notes already printed for missing checkers.
    noted: Vec<&'static str>,
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
        let Some(out) = out else {
            if !self.noted.contains(&program) {
                println!("note: `{program}` is not on PATH: its syntax referee is skipped");
                self.noted.push(program);
            }
            return None;
        };
        let mut failed: HashMap<String, String> = HashMap::new();
        for line in out.lines() {
            if let Some((p, why)) = line.split_once('\t') {
                failed.insert(p.to_owned(), why.to_owned());
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

/// The checker's stdout, or `None` when it cannot be started or does not finish
/// normally (a missing interpreter).
fn run(program: &str, args: &[&str], paths: &[PathBuf]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let list: String = paths.iter().map(|p| format!("{}\n", p.display())).collect();
    child.stdin.take()?.write_all(list.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
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
