//! A chat copied or cloned with a project can list a file outside the project as
//! external context; bb7 reads or shows that file only if the user added it in this
//! project on this machine (README, "Security").

mod common;

use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn an_external_entry_the_user_did_not_add_here_is_neither_refreshed_nor_sent() {
    let (env, fake) = fake_env(json!({}));
    let outside = env.home.join("credentials");
    std::fs::write(&outside, "SECRET-ONE\n").unwrap();
    let abs = std::fs::canonicalize(&outside).unwrap();
    let abs = abs.to_str().unwrap();
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": abs, "content": "SECRET-ONE\n"}));
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("hi")["type"], "done");
    // The user's own add is shown.
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(sent.contains("SECRET-ONE"), "{sent}");
    assert_eq!(b.close().code(), Some(0));

    // The same `.bb7/` on a machine (or user) that never added the file: its record
    // outside the repository is not there.
    let record = env.home.join(".bb7").join("external_context.json");
    assert!(record.is_file(), "the add left no record");
    std::fs::remove_file(&record).unwrap();
    std::fs::write(&outside, "SECRET-TWO\n").unwrap();

    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    for req in [
        json!({"action": "context_update", "path": abs, "content": "SECRET-TWO\n"}),
        json!({"action": "sync_context", "path": abs}),
    ] {
        let e = b.err(req);
        assert_eq!(e["code"], "path_escape", "{e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains(abs) && m.contains("add it again"), "{m}");
    }
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("and now?")["type"], "done");
    // The earlier request, replayed as the chat's history, came with the chat; the
    // file as it is now on this machine is not read, and the new message lists no file.
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(
        !sent.contains("SECRET-TWO"),
        "an ungranted external file was sent: {sent}"
    );
    let last = sent.rsplit("<message role=\"user\"").next().unwrap();
    assert!(last.contains("Files in context: none."), "{last}");

    // Adding it again is the user's add: it is refreshed and shown.
    b.ok(json!({"action": "context_add", "path": abs, "content": "SECRET-TWO\n"}));
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("and now?")["type"], "done");
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(sent.contains("SECRET-TWO"), "{sent}");
    b.ok(json!({"action": "sync_context", "path": abs}));
}
