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
check "the session starts" wait_for "bb7>"

script '{"thinking":"Let me think.","text":"# Plan\nThe program **prints** hi.\n","chunk_delay_ms":300}'
keys 'what does it print?' Enter
check "a waiting indicator until the answer" wait_for "waiting for the model"
check "the answer streams" wait_for "The program **prints** hi."
check "the prompt comes back" wait_for "bb7>"

script '{"text":"Made it friendlier.\n","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\"hi\"","new_string":"\"hello\""}]}}]}'
keys 'make it friendlier' Enter
check "the edit is listed" wait_for "Edit main.rs: 1 hunk"
keys '/di' Tab
check "Tab completes a command" wait_for "bb7> /diff"
keys Enter
check "/diff shows the change" wait_for '+    println!("hello");'
keys '/apply' Enter
check "/apply merges it" wait_for "applied main.rs"
check "the file changed" grep -qF 'println!("hello");' "$work/project/main.rs"
keys '/undo' Enter
check "/undo rolls it back" wait_for "restored main.rs"
check "the file is back" grep -qF 'println!("hi");' "$work/project/main.rs"

# The fake holds the answer after its second word (the file "never" is never made).
script '{"text":"One line.\nAnother line that never comes.\n","hold_after":2,"hold_until":"never"}'
keys 'go slowly' Enter
check "a slow answer starts" wait_for "One line."
keys C-c
check "Ctrl-C stops it and keeps it" wait_for "partial answer is kept"
# Whether the last line is bb7 chat's prompt.
at_prompt() {
  for _ in $(seq "$HANG_POLLS"); do
    screen | grep -v '^ *$' | tail -n 1 | grep -qE 'bb7> ?$' && return 0
    sleep 0.05
  done
  return 1
}
# "partial answer is kept" shows as the stop begins; a command typed before the answer
# has ended is refused ("/help waits for the answer to end"): type at the prompt.
check "the prompt is back after Ctrl-C" at_prompt
keys '/help' Enter
check "the session goes on" wait_for "/undo             roll back the last apply"
# Ctrl-D ends bb7 and with it the terminal's only pane.
# The prompt comes after the help (its gauge asks for an estimate first): a Ctrl-D typed
# before the line editor reads is taken by the terminal as an empty read and lost, and
# nothing on the screen tells when the line editor has begun to read. So Ctrl-D is typed
# again while bb7 is still there at its prompt, instead of after a fixed wait.
check "the prompt is back after /help" at_prompt
running() { tmux -L "$sock" has-session -t "$SESSION" 2>/dev/null; }
left_on_ctrl_d() {
  for _ in $(seq "$HANG_POLLS"); do
    running || return 0
    if screen | grep -v '^ *$' | tail -n 1 | grep -qE 'bb7> ?$'; then
      keys C-d
      # Time for bb7 to leave before the next Ctrl-D (a hang guard, not a bound).
      for _ in $(seq 40); do running || return 0; sleep 0.05; done
    fi
    sleep 0.05
  done
  return 1
}
check "Ctrl-D leaves" left_on_ctrl_d
finish
