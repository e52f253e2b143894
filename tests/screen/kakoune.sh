#!/usr/bin/env bash
# Kakoune in a tmux terminal with editors/kakoune/bb7.kak: init, add, ask (streamed
# into *bb7*), diff, apply with buffer reload, checkpoints and rollback, a second ask
# with retrieval tools, hunk review and accept; then `bb7-chat` open in a pane beside
# Kakoune while bb7-add, bb7-status, bb7-ask and bb7-apply run on the same chat (the
# chat's holder serves them and shows what they did). Ends with "N passed, M failed".
set -uo pipefail
SESSION=kak
COLUMNS_WIDE=120
source "$(dirname "$0")/lib.sh"

printf 'fn main() {\n    println!("hi");\n}\n' > "$work/project/main.rs"
start "kak -n -e \"source '$root/editors/kakoune/bb7.kak'; set-option global bb7_bin '$bin'\" main.rs"
check "kakoune starts" wait_for 'println!("hi");'

keys ':bb7-init' Enter
check "init" wait_for "initialized in"
keys ':bb7-add' Enter
check "add" wait_for "added"
script '{"text":"I made it friendlier.","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\"hi\"","new_string":"\"hello\""}]}}],"chunk_delay_ms":50}'
keys ':bb7-ask make it friendlier' Enter
check "answer streams into *bb7*" wait_for "I made it friendlier."
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
check "a tool step is shown" wait_for "tool completed: Read main.rs"
check "second answer" wait_for "Now it greets twice."
keys ':bb7-review' Enter
check "review shows a hunk id" wait_for '  h_'
keys ':buffer main.rs' Enter
keys ':bb7-accept-all' Enter
# The review buffer shows the added line too: wait for the file on disk, then the buffer.
on_disk() { for _ in $(seq "$HANG_POLLS"); do grep -qF -- "$1" "$2" && return 0; sleep 0.05; done; return 1; }
check "accepted on disk" on_disk '// greets twice' "$work/project/main.rs"
check "accepting reloads the buffer" wait_for '// greets twice' 

# `bb7 chat` open on the chat in a pane beside Kakoune: the commands on keys are
# served by it instead of failing with "held".
tmux -L "$sock" set-environment -g HOME "$work/home"
tmux -L "$sock" set-environment -g XDG_CONFIG_HOME "$work/home/.config"
keys ":source '/usr/share/kak/rc/windowing/tmux.kak'; require-module tmux; alias global terminal tmux-terminal-horizontal" Enter
keys ':bb7-chat' Enter
chat_pane() { tmux -L "$sock" capture-pane -p -t "$SESSION:.1"; }
chat_has() { for _ in $(seq "$HANG_POLLS"); do chat_pane | grep -qF -- "$1" && return 0; sleep 0.05; done; return 1; }
check "bb7 chat opens in a pane beside" chat_has 'bb7>'
tmux -L "$sock" select-pane -t "$SESSION:.0"
printf 'notes\n' > "$work/project/notes.md"
keys ':edit notes.md' Enter
keys ':bb7-add' Enter
check "add beside bb7 chat" wait_for "added notes.md"
check "bb7 chat shows the add" chat_has "ran context_add"
keys ':bb7-status' Enter
check "status beside bb7 chat" wait_for "notes.md"
script '{"text":"Notes extended.","tool_calls":[{"name":"edit_file","args":{"path":"notes.md","edits":[{"old_string":"notes\n","new_string":"notes\nmore\n"}]}}]}'
keys ':bb7-ask -1 is a number' Enter
check "ask beside bb7 chat (an argument that looks like a flag)" wait_for "Notes extended."
check "bb7 chat hears of the answer" chat_has "got its answer"
keys ':buffer notes.md' Enter
keys ':bb7-apply' Enter
check "apply beside bb7 chat" wait_for "applied notes.md"
check "applied on disk" grep -qF 'more' "$work/project/notes.md"
check "bb7 chat shows the apply" chat_has "ran apply_file"
tmux -L "$sock" send-keys -t "$SESSION:.1" '/quit' Enter

keys ':q!' Enter
finish
