#!/usr/bin/env bash
# `bb7 chat` in a tmux terminal as a user types it: a question whose answer streams
# rendered after the waiting indicator, a second question that edits a file, /diff,
# /apply, /undo, Ctrl-C in the middle of a slow answer (the session stays), Tab
# completion, and Ctrl-D to leave. Ends with "N passed, M failed".
set -uo pipefail
SESSION=chat
COLUMNS_WIDE=100
source "$(dirname "$0")/lib.sh"

printf 'fn main() {\n    println!("hi");\n}\n' > "$work/project/main.rs"
(cd "$work/project" && HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" "$bin" init >/dev/null 2>&1)
(cd "$work/project" && HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" "$bin" add main.rs >/dev/null 2>&1)
start "TERM=xterm-256color '$bin' chat"
check "the session starts" wait_for "bb7>" 15

script '{"thinking":"Let me think.","text":"# Plan\nThe program **prints** hi.\n","chunk_delay_ms":300}'
keys 'what does it print?' Enter
check "a waiting indicator until the answer" wait_for "waiting for the model" 10
check "the answer streams" wait_for "The program **prints** hi." 15
check "the prompt comes back" wait_for "bb7>" 10

script '{"text":"Made it friendlier.\n","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\"hi\"","new_string":"\"hello\""}]}}]}'
keys 'make it friendlier' Enter
check "the edit is listed" wait_for "Edit main.rs: 1 hunk" 15
keys '/di' Tab
check "Tab completes a command" wait_for "bb7> /diff" 5
keys Enter
check "/diff shows the change" wait_for '+    println!("hello");' 10
keys '/apply' Enter
check "/apply merges it" wait_for "applied main.rs" 10
check "the file changed" grep -qF 'println!("hello");' "$work/project/main.rs"
keys '/undo' Enter
check "/undo rolls it back" wait_for "restored main.rs" 10
check "the file is back" grep -qF 'println!("hi");' "$work/project/main.rs"

script '{"text":"One line.\nAnother line that never comes.\n","chunk_delay_ms":4000}'
keys 'go slowly' Enter
check "a slow answer starts" wait_for "One line." 15
keys C-c
check "Ctrl-C stops it and keeps it" wait_for "partial answer is kept" 10
keys '/help' Enter
check "the session goes on" wait_for "/undo             roll back the last apply" 10
# Ctrl-D ends bb7 and with it the terminal's only pane.
gone() {
  for _ in $(seq 100); do
    tmux -L "$sock" has-session -t "$SESSION" 2>/dev/null || return 0
    sleep 0.05
  done
  return 1
}
# The prompt comes after the help (its gauge asks for an estimate first): a Ctrl-D typed
# before the line editor reads is taken by the terminal as an empty read and lost.
at_prompt() {
  for _ in $(seq 200); do
    screen | grep -v '^ *$' | tail -n 1 | grep -qE 'bb7> ?$' && return 0
    sleep 0.05
  done
  return 1
}
check "the prompt is back after /help" at_prompt
sleep 0.3
keys C-d
check "Ctrl-D leaves" gone
finish
