//! The chat store without a process: create, load, list, rename, delete, the index as a
//! cache, pins in both forms, archive, search and migration on load.

use super::*;

fn store() -> (tempfile::TempDir, ChatStore) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join(".bb7");
    std::fs::create_dir_all(base.join("chats")).unwrap();
    (tmp, ChatStore::new(base, false))
}

#[test]
fn a_created_chat_loads_back_and_is_listed_newest_first() {
    let (_tmp, s) = store();
    let a = s.create(Some("first"), "m/a").unwrap();
    let b = s.create(None, "m/b").unwrap();
    assert_eq!(s.load(&a.id).unwrap().name, "first");
    assert_eq!(s.load(&b.id).unwrap().model, "m/b");
    assert!(b.name.starts_with("Chat "), "{}", b.name);
    let ids: Vec<String> = s.list(false).unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&a.id) && ids.contains(&b.id));
    assert!(matches!(s.load("0000000000"), Err(e) if e.message == "Chat not found"));
    assert!(s.load("../escape").is_err());
}

#[test]
fn the_index_is_a_cache_a_chat_missing_from_it_is_still_listed() {
    let (_tmp, s) = store();
    let a = s.create(Some("kept"), "m").unwrap();
    std::fs::write(s.chats_dir().unwrap().join("index.json"), "{not json").unwrap();
    let listed = s.list(false).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, a.id);
    assert_eq!(listed[0].name, "kept");
}

#[test]
fn rename_delete_and_active() {
    let (_tmp, s) = store();
    let mut a = s.create(Some("old"), "m").unwrap();
    s.rename(&mut a, "new").unwrap();
    assert_eq!(s.load(&a.id).unwrap().name, "new");
    s.set_active(Some(&a.id)).unwrap();
    assert_eq!(
        s.read_index().active_chat_id.as_deref(),
        Some(a.id.as_str())
    );
    s.delete(&a.id).unwrap();
    assert!(!s.exists(&a.id));
    assert!(s.list(false).unwrap().is_empty());
}

#[test]
fn pins_read_both_forms_and_are_written_in_the_reference_form() {
    let (_tmp, s) = store();
    let a = s.create(Some("a"), "m").unwrap();
    let b = s.create(Some("b"), "m").unwrap();
    let pins = s.base().join("pinned_chats.json");
    std::fs::write(&pins, format!("[\"{}\"]", a.id)).unwrap();
    assert!(
        s.list(false)
            .unwrap()
            .iter()
            .any(|c| c.id == a.id && c.pinned)
    );
    std::fs::write(&pins, format!("{{\"chats\":[\"{}\"]}}", b.id)).unwrap();
    let listed = s.list(false).unwrap();
    assert_eq!(listed[0].id, b.id, "pinned first");
    assert!(listed[0].pinned);
    s.set_pinned(&a.id, true).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pins).unwrap()).unwrap();
    let mut want = vec![a.id.clone(), b.id.clone()];
    want.sort();
    assert_eq!(written, serde_json::json!({ "chats": want }));
}

#[test]
fn archived_chats_leave_the_list_and_stay_searchable() {
    let (_tmp, s) = store();
    let a = s.create(Some("parser bug"), "m").unwrap();
    s.set_archived(&a.id, true).unwrap();
    assert!(s.list(false).unwrap().is_empty());
    assert_eq!(s.list(true).unwrap().len(), 1);
    let hits = s.search("parser").unwrap();
    assert_eq!(hits[0].id, a.id);
    assert_eq!(hits[0].match_type, crate::chat::store::MatchType::Title);
    // An empty query lists what `chat_list` shows, so not the archived chat.
    let b = s.create(Some("other"), "m").unwrap();
    let all = s.search("").unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].id, b.id);
}

#[test]
fn an_old_chat_is_migrated_on_load_keeping_unknown_fields() {
    let (_tmp, s) = store();
    let id = "abcdef0123";
    let dir = s.chat_dir(id).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("chat.json"),
        r#"{"version":1,"id":"abcdef0123","name":"old","created":"2025-01-01T00:00:00Z",
            "model":"m","context_files":[],"future_field":7,
            "messages":[{"role":"user","content":"hello"},
                        {"role":"system","content":"note"}]}"#,
    )
    .unwrap();
    let chat = s.load(id).unwrap();
    assert_eq!(chat.version, 2);
    assert_eq!(chat.messages[0].text(), "hello");
    assert_eq!(chat.messages[1].text(), "note");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chat.json")).unwrap()).unwrap();
    assert_eq!(saved["future_field"], 7);
    assert_eq!(
        saved["messages"][1]["content"], "note",
        "system text kept as content"
    );
}

#[test]
fn chats_made_in_the_same_second_list_newest_first() {
    let (_tmp, s) = store();
    let ids: Vec<String> = (0..5)
        .map(|i| s.create(Some(&format!("c{i}")), "m").unwrap().id)
        .collect();
    let listed: Vec<String> = s.list(false).unwrap().into_iter().map(|c| c.id).collect();
    let newest_first: Vec<String> = ids.into_iter().rev().collect();
    assert_eq!(listed, newest_first);
}

#[test]
fn a_new_chat_is_locked_before_the_index_names_it() {
    let (_tmp, s) = store();
    let (chat, held) = s.create_locked(None, "m").unwrap();
    assert_eq!(
        s.read_index().active_chat_id.as_deref(),
        Some(chat.id.as_str())
    );
    // Another taker finds it held while this process has it, and free after.
    assert!(lock::ChatLock::acquire(&s.chat_dir(&chat.id).unwrap()).is_err());
    drop(held);
    assert!(lock::ChatLock::acquire(&s.chat_dir(&chat.id).unwrap()).is_ok());
}

/// Sets the mtime of every file the listing is built from to a minute ago, so the
/// next listing is kept (a fresh stamp is too recent to trust).
fn age(s: &ChatStore) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let chats = s.chats_dir().unwrap();
    for p in [
        chats.clone(),
        chats.join("index.json"),
        s.base().join(PINS_FILE),
        s.base().join(ARCHIVE_FILE),
    ] {
        if let Ok(f) = std::fs::File::open(&p) {
            f.set_modified(old).unwrap();
        }
    }
}

#[test]
fn a_kept_listing_follows_new_chats_renames_pins_archive_and_locks() {
    let (_tmp, s) = store();
    let a = s.create(Some("a"), "m").unwrap();
    age(&s);
    assert_eq!(s.list(false).unwrap().len(), 1);
    // Served from the kept listing now; every change below must still show.
    assert_eq!(s.list(false).unwrap().len(), 1);
    let (b, held) = s.create_locked(Some("b"), "m").unwrap();
    age(&s);
    let listed = s.list(false).unwrap();
    assert_eq!(listed.len(), 2);
    let mut chat = s.load(&a.id).unwrap();
    s.rename(&mut chat, "renamed").unwrap();
    age(&s);
    let names: Vec<String> = s.list(false).unwrap().into_iter().map(|c| c.name).collect();
    assert!(names.contains(&"renamed".to_owned()), "{names:?}");
    s.set_pinned(&a.id, true).unwrap();
    age(&s);
    assert_eq!(s.list(false).unwrap()[0].id, a.id);
    s.set_archived(&a.id, true).unwrap();
    age(&s);
    let ids: Vec<String> = s.list(false).unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![b.id.clone()]);
    // This process's own lock does not count as another holder's; a released one
    // leaves no hint behind.
    assert!(!s.list(false).unwrap()[0].locked);
    drop(held);
    assert!(lock::hinted(s.base()).is_empty());
}
