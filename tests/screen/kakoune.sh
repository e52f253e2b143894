#!/usr/bin/env bash
# Kakoune in a tmux terminal with editors/kakoune/bb7.kak: init, add, ask (streamed
# into *bb7*), diff, apply with buffer reload, checkpoints and rollback, a second ask
# with retrieval tools, hunk review and accept. Ends with "N passed, M failed".
set -uo pipefail
SESSION=kak
COLUMNS_WIDE=120
source "$(dirname "$0")/lib.sh"

printf 'fn main() {\n    println!("hi");\n}\n' > "$work/project/main.rs"
start "kak -n -e \"source '$root/editors/kakoune/bb7.kak'; set-option global bb7_bin '$bin'\" main.rs"
check "kakoune starts" wait_for 'println!("hi");' 15

keys ':bb7-init' Enter
check "init" wait_for "initialized in"
keys ':bb7-add' Enter
check "add" wait_for "added"
script '{"text":"I made it friendlier.","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\"hi\"","new_string":"\"hello\""}]}}],"chunk_delay_ms":50}'
keys ':bb7-ask make it friendlier' Enter
check "answer streams into *bb7*" wait_for "I made it friendlier." 15
check "changed files are listed" wait_for "Edit main.rs: 1 hunk"
keys ':bb7-diff' Enter
check "diff" wait_for '+    println!("hello");'
keys ':buffer main.rs' Enter
check "back in main.rs" wait_for 'main.rs 1:1'
keys ':bb7-apply' Enter
check "applied message" wait_for 'applied main.rs'
check "apply reloads the buffer" wait_for 'println!("hello");'
check "file on disk" grep -qF 'println!("hello");' "$work/project/main.rs"

keys ':bb7-checkpoints' Enter
check "checkpoints list the apply" wait_for 'main.rs'
check "checkpoint ids" wait_for 'cp_'
keys ':buffer main.rs' Enter
keys ':bb7-rollback' Enter
check "rollback reloads the buffer" wait_for 'println!("hi");'
check "rolled back on disk" grep -qF 'println!("hi");' "$work/project/main.rs"

# The snapshot still holds the applied version: adding the file again refreshes it.
keys ':bb7-add' Enter
check "add again refreshes" wait_for "refreshed main.rs"
keys ':set-option global bb7_tools auto' Enter
script '{"tool_calls":[{"name":"read_file","args":{"path":"main.rs"}}]}'
script '{"text":"Now it greets twice.","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"fn main() {","new_string":"fn main() {\n    // greets twice"}]}}]}'
keys ':bb7-ask greet twice' Enter
check "a tool step is shown" wait_for "tool completed: Read main.rs" 15
check "second answer" wait_for "Now it greets twice." 15
keys ':bb7-review' Enter
check "review shows a hunk id" wait_for '  h_'
keys ':buffer main.rs' Enter
keys ':bb7-accept-all' Enter
check "accepting reloads the buffer" wait_for '// greets twice'
check "accepted on disk" grep -qF '// greets twice' "$work/project/main.rs"

keys ':q!' Enter
finish
