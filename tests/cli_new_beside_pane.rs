//! `bb7 new` while an editor's pane holds the active chat: the new chat becomes the
//! project's active one (for the shell's and the editor's one-shot commands), and the
//! command says that the pane still shows the old chat instead of switching silently;
//! `bb7 chats` marks the new one.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::json;

#[test]
fn bb7_new_says_the_pane_keeps_the_old_chat() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "x\n")]);
    let old = stdout(&ok(&env, &["new", "old"])).trim().to_owned();
    let mut pane = hold_without_socket(&env, &old);
    let o = ok(&env, &["new", "fresh"]);
    let new = stdout(&o).trim().to_owned();
    let err = stderr(&o);
    assert!(
        err.contains(&format!("chat {new} is now the project's active chat")),
        "{err}"
    );
    assert!(
        err.contains(&format!("chat {old} stays open in PID {}", pane.id())),
        "{err}"
    );
    let chats = stdout(&ok(&env, &["chats"]));
    assert!(
        chats
            .lines()
            .any(|l| l.starts_with('*') && l.contains(&new)),
        "{chats}"
    );
    // Nothing held: nothing to say.
    let _ = pane.kill();
    let _ = pane.wait();
    let err = stderr(&ok(&env, &["new", "third"]));
    assert!(!err.contains("stays open"), "{err}");
}
