//! Project initialisation, chats, persistence, locks.

mod common;

use common::{Bb7, Env, wait_with_timeout};
use serde_json::json;

#[test]
fn ping_version_and_shutdown() {
    let env = Env::new();
    let mut b = env.spawn();
    assert_eq!(
        b.request(json!({"action": "ping", "request_id": 7}))["request_id"],
        "7"
    );
    let v = b.ok(json!({"action": "version"}));
    assert_eq!(v["type"], "version");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let r = b.ok(json!({"action": "shutdown"}));
    assert_eq!(r["type"], "ok");
    assert!(wait_with_timeout(&mut b.child).success());
}

#[test]
fn init_state_machine() {
    let env = Env::new();
    let mut b = env.spawn();
    // Before init, chat actions explain what to do instead of crashing.
    let e = b.err(json!({"action": "chat_new"}));
    assert_eq!(e["code"], "not_initialized");
    // A project without .bb7 is refused (the reference plugin then retries with an
    // empty root); an empty root runs global-only.
    let e = b.err(json!({"action": "init", "project_root": env.project}));
    assert_eq!(e["message"], "Not initialized. Run :BB7Init");
    let r = b.ok(json!({"action": "init", "project_root": ""}));
    assert_eq!(r["global_only"], true);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    assert!(env.project.join(".bb7/chats").is_dir());
    let e = b.err(json!({"action": "bb7_init", "project_root": env.project}));
    assert_eq!(e["message"], "Already initialized");
    let r = b.ok(json!({"action": "init", "project_root": env.project}));
    assert!(r.get("global_only").is_none());
    // Initialised, no active chat.
    assert_eq!(
        b.err(json!({"action": "chat_get"}))["message"],
        "No active chat"
    );
    assert_eq!(
        b.err(json!({"action": "context_list"}))["code"],
        "no_active_chat"
    );
    let a = b.ok(json!({"action": "chat_active"}));
    assert!(a.get("id").is_none());
    let e = b.err(json!({"action": "init", "project_root": env.project.join("missing")}));
    assert_eq!(e["code"], "not_found");
}

#[test]
fn init_names_config_problems_for_the_editor() {
    let env = Env::new();
    // A clean config: the reply has no warnings field at all (the reference plugin's
    // reply stays as it was).
    env.write_config(json!({"default_model": "a/b"}));
    let mut b = env.spawn();
    let r = b.ok(json!({"action": "init", "project_root": ""}));
    assert!(r.get("config_warnings").is_none(), "{r}");
    assert!(r.get("config_error").is_none(), "{r}");
    assert_eq!(r["default_model"], "a/b");
    // A misspelled key is named with the key it likely means; the rest still applies.
    env.write_config(json!({"defualt_model": "x/y", "default_model": "a/b", "zzz": 1}));
    let r = b.ok(json!({"action": "init", "project_root": ""}));
    let file = env.config_dir().join("config.json");
    assert_eq!(
        r["config_warnings"],
        json!([
            format!(
                "{}: unknown key defualt_model is ignored; did you mean default_model?",
                file.display()
            ),
            format!("{}: unknown key zzz is ignored", file.display()),
        ]),
        "{r}"
    );
    assert_eq!(r["default_model"], "a/b");
    // A value of the wrong type is the config error, named by its key.
    env.write_config(json!({"stream_timeout_secs": "soon"}));
    let r = b.ok(json!({"action": "init", "project_root": ""}));
    let e = r["config_error"].as_str().unwrap();
    assert!(e.contains("stream_timeout_secs has the wrong type"), "{e}");
}

#[test]
fn chat_lifecycle_and_on_disk_format() {
    let env = Env::new();
    env.write_config(json!({"default_model": "test/model-a"}));
    let (mut b, id) = env.with_chat();
    assert_eq!(id.len(), 10);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["id"], id.as_str());
    assert_eq!(chat["model"], "test/model-a");
    assert!(chat["name"].as_str().unwrap().starts_with("Chat 20"));
    assert_eq!(chat["messages"], json!([]));
    assert_eq!(chat["context_files"], json!([]));
    assert_eq!(chat["draft"], "");
    assert_eq!(b.ok(json!({"action": "chat_active"}))["id"], id.as_str());

    b.ok(json!({"action": "save_draft", "draft": "half a thought"}));
    b.ok(json!({"action": "save_chat_settings", "model": "test/model-b", "reasoning_effort": "high"}));
    b.ok(json!({"action": "add_system_message", "message": "Note to self"}));
    b.ok(json!({"action": "chat_rename", "id": id, "name": "physics-refactor"}));

    let disk = env.chat_json(&id);
    assert_eq!(disk["version"], 2);
    assert_eq!(disk["id"], id.as_str());
    assert_eq!(disk["name"], "physics-refactor");
    assert_eq!(disk["draft"], "half a thought");
    assert_eq!(disk["model"], "test/model-b");
    assert_eq!(disk["reasoning_effort"], "high");
    let sys = &disk["messages"][0];
    assert_eq!(sys["role"], "system");
    assert_eq!(
        sys["parts"],
        json!([{"type": "text", "content": "Note to self"}])
    );
    assert!(disk["created"].as_str().unwrap().ends_with('Z'));

    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.project.join(".bb7/chats/index.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(index["version"], 1);
    assert_eq!(index["active_chat_id"], id.as_str());
    assert_eq!(index["chats"][0]["id"], id.as_str());
    assert_eq!(index["chats"][0]["name"], "physics-refactor");

    // The last model is remembered for new chats when config does not name one.
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.home.join(".bb7/state.json")).unwrap())
            .unwrap();
    assert_eq!(state["last_model"], "test/model-b");

    let second = b.ok(json!({"action": "chat_new", "name": "second", "model": "x/y"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let list = b.ok(json!({"action": "chat_list"}));
    let ids: Vec<_> = list["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(list["chats"][0]["locked"], false);

    b.ok(json!({"action": "chat_select", "id": id}));
    assert_eq!(
        b.ok(json!({"action": "chat_get"}))["draft"],
        "half a thought"
    );
    assert_eq!(
        b.err(json!({"action": "chat_select", "id": "0000000000"}))["message"],
        "Chat not found"
    );
    assert_eq!(
        b.err(json!({"action": "chat_select", "id": "../../etc"}))["message"],
        "Chat not found"
    );
    b.ok(json!({"action": "chat_delete", "id": second}));
    assert!(!env.chat_dir(&second).exists());
    assert_eq!(
        b.ok(json!({"action": "chat_list"}))["chats"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    b.ok(json!({"action": "chat_delete", "id": id}));
    assert_eq!(
        b.err(json!({"action": "chat_get"}))["message"],
        "No active chat"
    );
}

#[test]
fn restart_restores_the_active_chat_and_everything_in_it() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "alpha\n"}));
    b.ok(json!({"action": "save_draft", "draft": "keep me"}));
    assert!(b.close().success());

    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["id"], id.as_str());
    assert_eq!(chat["draft"], "keep me");
    assert_eq!(chat["context_files"][0]["path"], "a.txt");
    let f = b.ok(json!({"action": "get_context_file", "path": "a.txt"}));
    assert_eq!(f["content"], "alpha\n");
}

#[test]
fn a_chat_missing_from_the_index_is_still_listed() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    std::fs::write(env.project.join(".bb7/chats/index.json"), "{ broken").unwrap();
    let list = b.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["id"], id.as_str());
}

#[test]
fn version_1_chat_is_migrated_on_load() {
    let env = Env::new();
    let mut b = env.spawn();
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    let dir = env.chat_dir("0123456789");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("chat.json"), include_str!("fixtures/chat_v1.json")).unwrap();
    let list = b.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["name"], "old chat");
    b.ok(json!({"action": "chat_select", "id": "0123456789"}));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(
        chat["messages"][0]["parts"],
        json!([{"type": "text", "content": "Hello there"}])
    );
    assert_eq!(
        chat["messages"][1]["parts"][0]["content"],
        "Hi! How can I help?"
    );
    let disk = env.chat_json("0123456789");
    assert_eq!(disk["version"], 2);
    assert!(disk["messages"][0].get("content").is_none());
    assert_eq!(disk["messages"][0]["parts"][0]["content"], "Hello there");
    // Fields bb7 does not know survive the rewrite.
    assert_eq!(disk["custom_field"], "kept");
}

#[test]
fn a_chat_is_held_by_one_process_at_a_time() {
    let env = Env::new();
    let (mut first, id) = env.with_chat();
    let mut second = env.spawn();
    second.ok(json!({"action": "init", "project_root": env.project}));
    // init does not steal the active chat held elsewhere.
    assert!(
        second
            .ok(json!({"action": "chat_active"}))
            .get("id")
            .is_none()
    );
    let list = second.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["locked"], true);
    // A holder that leaves no hint in .bb7/locks/ (a reference BB-7 process) still
    // shows as locked on a recent chat.
    let hint = env.project.join(".bb7/locks").join(&id);
    std::fs::remove_file(&hint).expect("the holder keeps a lock hint");
    let list = second.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["locked"], true);
    let e = second.err(json!({"action": "chat_select", "id": id}));
    assert_eq!(e["code"], "locked");
    assert!(e["message"].as_str().unwrap().contains("locked"));
    let pid = std::fs::read_to_string(env.chat_dir(&id).join("lock")).unwrap();
    assert_eq!(pid.trim(), first.child.id().to_string());

    // When the holder dies, the kernel releases the lock.
    first.kill();
    second.ok(json!({"action": "chat_select", "id": id}));
    drop(second);

    // chat_force_unlock with `careful` refuses a live holder that answers on its
    // socket, saying so and how to go on; without it, it takes the chat (the reference
    // plugin's "Force unlock chat?").
    let mut third = env.spawn();
    third.ok(json!({"action": "init", "project_root": env.project}));
    third.ok(json!({"action": "chat_select", "id": id}));
    let mut fourth = env.spawn();
    fourth.ok(json!({"action": "init", "project_root": env.project}));
    fourth.err(json!({"action": "chat_select", "id": id}));
    let e = fourth.err(json!({"action": "chat_force_unlock", "id": id, "careful": true}));
    assert_eq!(e["code"], "locked", "{e}");
    assert_eq!(e["data"]["holder_pid"], third.child.id(), "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("live bb7 process") && message.contains("refuses its next save"),
        "{e}"
    );
    assert!(env.chat_dir(&id).join("lock").exists());
    fourth.err(json!({"action": "chat_select", "id": id}));
    fourth.ok(json!({"action": "chat_force_unlock", "id": id}));
    fourth.ok(json!({"action": "chat_select", "id": id}));
}

/// A holder that holds the lock but does not answer on its socket (stopped, or a
/// process that serves none) loses it to `chat_force_unlock` without `force`.
#[test]
fn chat_force_unlock_takes_the_chat_of_a_holder_that_does_not_answer() {
    let env = Env::new();
    let (mut holder, id) = env.with_chat();
    let signal = |sig: &str, pid: u32| {
        let status = std::process::Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    let pid = holder.child.id();
    signal("-STOP", pid);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(
        b.err(json!({"action": "chat_select", "id": id}))["code"],
        "locked"
    );
    b.ok(json!({"action": "chat_force_unlock", "id": id}));
    b.ok(json!({"action": "chat_select", "id": id}));
    signal("-CONT", pid);
    holder.kill();
    drop(b);

    // A live process that only wrote its PID (a reference BB-7) has no socket.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::fs::write(env.chat_dir(&id).join("lock"), sleeper.id().to_string()).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.err(json!({"action": "chat_select", "id": id}));
    b.ok(json!({"action": "chat_force_unlock", "id": id}));
    b.ok(json!({"action": "chat_select", "id": id}));
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn a_reference_process_pid_in_the_lock_file_is_respected() {
    let env = Env::new();
    let (b, id) = env.with_chat();
    assert!(b.close().success());
    // A live process that takes no OS lock (as the reference BB-7) wrote its PID.
    let mut holder = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::fs::write(env.chat_dir(&id).join("lock"), holder.id().to_string()).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(
        b.err(json!({"action": "chat_select", "id": id}))["code"],
        "locked"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    b.ok(json!({"action": "chat_select", "id": id}));
}

#[test]
fn pins_archive_search_and_move() {
    let env = Env::new();
    let mut b = env.spawn();
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    let a = b.ok(json!({"action": "chat_new", "name": "Parser rewrite"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    b.ok(json!({"action": "add_system_message", "message": "The tokenizer handles CRLF badly"}));
    let c = b.ok(json!({"action": "chat_new", "name": "Other"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();

    b.ok(json!({"action": "chat_pin", "id": a, "pinned": true}));
    let list = b.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["id"], a.as_str());
    assert_eq!(list["chats"][0]["pinned"], true);
    // The reference plugin's own form, so its Chats pane shows bb7's pins.
    let pins: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.project.join(".bb7/pinned_chats.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(pins, json!({"chats": [a.clone()]}));

    let r = b.ok(json!({"action": "search_chats", "query": "parser"}));
    assert_eq!(r["results"][0]["id"], a.as_str());
    assert_eq!(r["results"][0]["match_type"], "title");
    let r = b.ok(json!({"action": "search_chats", "query": "TOKENIZER handles"}));
    assert_eq!(r["results"].as_array().unwrap().len(), 1);
    assert_eq!(r["results"][0]["match_type"], "content");
    assert!(
        r["results"][0]["excerpt"]
            .as_str()
            .unwrap()
            .contains("tokenizer handles CRLF")
    );
    assert_eq!(
        b.ok(json!({"action": "search_chats", "query": "nowhere"}))["results"],
        json!([])
    );

    b.ok(json!({"action": "chat_archive", "id": a, "archived": true}));
    let list = b.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"].as_array().unwrap().len(), 1);
    let all = b.ok(json!({"action": "chat_list", "include_archived": true}));
    assert_eq!(all["chats"].as_array().unwrap().len(), 2);
    // Archived chats stay searchable.
    assert_eq!(
        b.ok(json!({"action": "search_chats", "query": "tokenizer"}))["results"][0]["id"],
        a.as_str()
    );
    b.err(json!({"action": "chat_pin", "id": "ffffffffff", "pinned": true}));

    // Move the active chat to the global store and back.
    b.ok(json!({"action": "chat_move", "id": c, "to": "global"}));
    assert!(
        env.home
            .join(".bb7/chats")
            .join(&c)
            .join("chat.json")
            .is_file()
    );
    assert!(!env.chat_dir(&c).exists());
    let g = b.ok(json!({"action": "chat_list", "global": true}));
    assert_eq!(g["chats"][0]["id"], c.as_str());
    let active = b.ok(json!({"action": "chat_active"}));
    assert_eq!(active["id"], c.as_str());
    assert_eq!(active["global"], true);
    b.ok(json!({"action": "chat_move", "id": c, "to": "project"}));
    assert!(env.chat_dir(&c).join("chat.json").is_file());
    assert_eq!(
        b.ok(json!({"action": "chat_list", "global": true}))["chats"],
        json!([])
    );
}

#[test]
fn instructions_files_and_customization_info() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    let info = b.ok(json!({"action": "get_customization_info"}));
    assert_eq!(info["type"], "customization_info");
    assert_eq!(info["project_instructions"], false);
    assert_eq!(info["global_instructions"], false);
    assert_eq!(info["system_override"], false);
    assert!(info.get("project_instructions_error").is_none());

    let p = b.ok(json!({"action": "prepare_instructions", "level": "project"}));
    assert_eq!(p["type"], "instructions_path");
    let path = std::path::PathBuf::from(p["path"].as_str().unwrap());
    assert_eq!(path, env.project.join(".bb7/instructions"));
    assert!(path.is_file());
    let g = b.ok(json!({"action": "prepare_instructions", "level": "global"}));
    assert_eq!(
        g["path"],
        env.home
            .join(".config/bb7/instructions.md")
            .to_str()
            .unwrap()
    );
    b.err(json!({"action": "prepare_instructions", "level": "nonsense"}));

    std::fs::write(&path, "Be brief.\n@include /etc/hostname\n").unwrap();
    let info = b.ok(json!({"action": "get_customization_info"}));
    // An invalid include makes the project instructions unusable.
    assert_eq!(info["project_instructions"], false);
    assert_eq!(info["global_instructions"], true);
    let err = info["project_instructions_error"].as_str().unwrap();
    assert!(err.contains("line 2") && err.contains("absolute"), "{err}");
    let chat = b.ok(json!({"action": "chat_get"}));
    assert!(
        chat["instructions_info"]["project_error"]
            .as_str()
            .unwrap()
            .contains("line 2")
    );
    assert_eq!(chat["instructions_info"]["project_exists"], true);

    // A symlink inside the project that leads outside cannot be included.
    std::os::unix::fs::symlink("/etc", env.project.join("etc-link")).unwrap();
    std::fs::write(&path, "@include etc-link/hostname\n").unwrap();
    let info = b.ok(json!({"action": "get_customization_info"}));
    assert!(
        info["project_instructions_error"]
            .as_str()
            .unwrap()
            .contains("outside")
    );
    env.write("docs/style.md", "Tabs.\n");
    std::fs::write(&path, "@@ comment\n@include \"docs/style.md\"\n").unwrap();
    let info = b.ok(json!({"action": "get_customization_info"}));
    assert!(info.get("project_instructions_error").is_none(), "{info}");
    assert_eq!(info["project_instructions"], true);
}

#[test]
fn global_chats_work_without_a_project_state_directory() {
    let env = Env::new();
    let mut b = Bb7::spawn(&env.home, &env.project, &[]);
    assert_eq!(
        b.ok(json!({"action": "init", "project_root": ""}))["global_only"],
        true
    );
    let id = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        env.home
            .join(".bb7/chats")
            .join(&id)
            .join("chat.json")
            .is_file()
    );
    assert!(!env.project.join(".bb7").exists());
    assert_eq!(b.ok(json!({"action": "chat_active"}))["global"], true);
}

#[test]
fn error_paths_of_chat_and_instruction_actions() {
    let env = Env::new();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": ""}));
    // Global-only: no project instructions, no moving into a project.
    assert_eq!(
        b.err(json!({"action": "prepare_instructions", "level": "project"}))["code"],
        "not_initialized"
    );
    let g = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        b.err(json!({"action": "chat_move", "id": g, "to": "project"}))["code"],
        "not_initialized"
    );
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    // A chat with the same id already at the destination.
    let p = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let twin = env.home.join(".bb7/chats").join(&p);
    std::fs::create_dir_all(&twin).unwrap();
    std::fs::copy(env.chat_dir(&p).join("chat.json"), twin.join("chat.json")).unwrap();
    assert_eq!(
        b.err(json!({"action": "chat_move", "id": p, "to": "global"}))["code"],
        "conflict"
    );
    assert!(env.chat_dir(&p).join("chat.json").is_file());
    b.err(json!({"action": "chat_move", "id": p, "to": "mars"}));
    assert_eq!(
        b.err(json!({"action": "chat_delete", "id": "0000000000"}))["message"],
        "Chat not found"
    );
}
