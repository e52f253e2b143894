//! docs/PROTOCOL.md and the binary agree on the set of actions: every action a table
//! of the document names is served (never `Unknown action`), and every action the
//! server's typed `Action` knows is documented.

mod common;

use std::collections::BTreeSet;

use bb7::protocol::action::ACTION_NAMES;
use serde_json::json;

/// Action names from the first column of each `| action | fields | reply |` table.
fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/PROTOCOL.md"))
        .expect("docs/PROTOCOL.md");
    let mut names = BTreeSet::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| action |") {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table {
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("");
        for part in first.split('/') {
            let name = part.trim().trim_matches('`');
            if !name.is_empty() && !name.starts_with('-') {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

#[test]
fn every_documented_action_is_served_and_every_served_action_is_documented() {
    let documented = documented();
    let known: BTreeSet<String> = ACTION_NAMES.iter().map(|s| s.to_string()).collect();
    let undocumented: Vec<_> = known.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/PROTOCOL.md: {undocumented:?}"
    );
    let unknown: Vec<_> = documented.difference(&known).collect();
    assert!(unknown.is_empty(), "documented but not served: {unknown:?}");

    let env = common::Env::new();
    let mut b = env.spawn();
    for name in documented.iter().filter(|n| *n != "shutdown") {
        let reply = b.request(json!({"action": name}));
        let message = reply["message"].as_str().unwrap_or("");
        assert!(
            !message.starts_with("Unknown action"),
            "{name} is documented but the binary answers {reply}"
        );
    }
    let reply = b.request(json!({"action": "no_such_action"}));
    assert_eq!(reply["message"], "Unknown action: no_such_action");
}
