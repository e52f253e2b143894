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

/// Actions the Neovim plugin does not send, and why. Everything else in the protocol's
/// list must be named by the plugin (`lua/bb7/`), so a new action is either wired into
/// the plugin or written down here.
const NOT_SENT_BY_THE_PLUGIN: &[(&str, &str)] = &[
    ("ping", "liveness probe for other clients and tests"),
    ("shutdown", "the plugin ends bb7 by closing its stdin"),
    (
        "watch",
        "sent by bb7 itself on a holder socket, for a chat shown read-only",
    ),
    (
        "get_customization_info",
        "chat_get's instructions_info serves the panes",
    ),
    (
        "chat_move",
        "moving chats between stores is a CLI and API feature",
    ),
    (
        "chat_new_with_context",
        "the plugin starts chats empty or by fork",
    ),
    ("add_system_message", "a reference-compatibility action"),
    (
        "context_update",
        "the plugin re-snapshots from disk with sync_context",
    ),
    ("apply_file_as", "the plugin applies to the file's own path"),
    (
        "checkpoint_get",
        "the checkpoint list carries what the plugin shows",
    ),
    (
        "checkpoint_diff3",
        "the plugin diffs checkpoints from the list's files",
    ),
    (
        "generate_title",
        "titles come from title_model after a send",
    ),
    (
        "get_balance",
        "the plugin shows costs from usage, not the account",
    ),
    (
        "chat_compact",
        "compaction is an API action; the plugin does not offer it yet",
    ),
    (
        "estimate_text_tokens",
        "token counts come from the statuses",
    ),
    (
        "mcp_servers_add",
        "an editor's own MCP servers (ACP mcpServers); the plugin's come from the config",
    ),
    (
        "events_get",
        "the event trace is for postmortems, tools and tests; the plugin draws the stream",
    ),
];

/// Action names the Lua sources pass to the client (`action('x')`, `call('x', …)`,
/// `request('x', …)`, `notify('x', …)`, and every name of a `define({ 'x', 'y' })`
/// list in lua/bb7/api.lua).
fn sent_by_the_plugin() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/lua");
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("lua/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for piece in text.split("define({").skip(1) {
                let list = piece.split("})").next().unwrap_or_default();
                names.extend(list.split('\'').skip(1).step_by(2).map(str::to_owned));
            }
            for call in ["action(", "call(", "request(", "request_sync(", "notify("] {
                for piece in text.split(call).skip(1) {
                    let piece = piece.trim_start();
                    let Some(quote) = piece.chars().next().filter(|c| *c == '\'' || *c == '"')
                    else {
                        continue;
                    };
                    if let Some(name) = piece[1..].split(quote).next() {
                        names.insert(name.to_owned());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn the_plugin_names_every_action_or_the_list_says_why_not() {
    let sent = sent_by_the_plugin();
    let left_out: BTreeSet<&str> = NOT_SENT_BY_THE_PLUGIN.iter().map(|(n, _)| *n).collect();
    for name in ACTION_NAMES {
        let in_plugin = sent.contains(*name);
        assert!(
            in_plugin || left_out.contains(name),
            "the Neovim plugin never sends {name}: wire it in or add it to NOT_SENT_BY_THE_PLUGIN"
        );
        assert!(
            !(in_plugin && left_out.contains(name)),
            "the plugin sends {name} now: take it off NOT_SENT_BY_THE_PLUGIN"
        );
    }
    let unknown: Vec<_> = sent
        .iter()
        .filter(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .filter(|n| n.contains('_') || ACTION_NAMES.contains(&n.as_str()))
        .filter(|n| !ACTION_NAMES.contains(&n.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "the plugin sends unknown actions: {unknown:?}"
    );
}
