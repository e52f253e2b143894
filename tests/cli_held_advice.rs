//! A chat held by a process that does not answer: every message names the command that
//! takes this chat over, with its id (`bb7 unlock --force ID`), as `bb7 --help` says
//! for exit status 4; and `bb7 chats` marks the project's active chat while another
//! process holds it.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::json;

#[test]
fn held_messages_name_the_unlock_command_with_the_chat_id() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "x\n")]);
    let id = stdout(&ok(&env, &["new"])).trim().to_owned();
    let mut holder = hold_without_socket(&env, &id);

    // A command that writes: status 4 and the exact command.
    let o = bb7(&env, &["add", "f.txt"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("`bb7 unlock --force {id}`")), "{err}");
    // `bb7 unlock` without --force: the same command, named.
    let o = bb7(&env, &["unlock"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("`bb7 unlock --force {id}`")), "{err}");
    // `bb7 chats` marks the held chat as the active one.
    let chats = stdout(&ok(&env, &["chats"]));
    assert!(
        chats.lines().any(|l| l.starts_with('*') && l.contains(&id)),
        "{chats}"
    );

    // `bb7 chat` shows it read-only and says how to take it.
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(&format!("`bb7 unlock --force {id}` takes it"));
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());

    // Taken as the message says: the chat is this project's again.
    ok(&env, &["unlock", "--force", &id]);
    ok(&env, &["add", "f.txt"]);
    let _ = holder.kill();
    let _ = holder.wait();
}

#[test]
fn help_names_the_unlock_command_with_the_id_for_status_4() {
    let env = common::Env::new();
    let help = stdout(&ok(&env, &["--help"]));
    assert!(help.contains("`bb7 unlock --force ID`"), "{help}");
    assert!(help.contains("--take-over"), "{help}");
}
