#!/usr/bin/env bash
# `bb7 chat` stopped with Ctrl-Z while a tool approval question (Allow? [y/N]) waits,
# then continued with `fg` from an interactive bash in tmux: the question is asked
# again and the answer typed then is the question's (it was read as a refusal).
# Ends with "N passed, M failed".
set -uo pipefail
SESSION=chat_suspend_approval
COLUMNS_WIDE=100
source "$(dirname "$0")/lib.sh"

printf 'hidden words\n' > "$work/project/secret.txt"
in_project() { (cd "$work/project" && HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" "$bin" "$@" >/dev/null 2>&1); }
in_project init
# `bb7 ask --tools ask` sets the chat's tools; `bb7 chat` goes on in that chat.
script '{"text":"Set.\n"}'
in_project ask --tools ask "set up"
script '{"text":"Looking.\n","tool_calls":[{"name":"read_file","args":{"path":"secret.txt"}}]}'
script '{"text":"Read it.\n"}'

start "PS1='sh\$ ' bash --norc --noprofile -i"
check "the shell starts" wait_for 'sh$' 10
keys "TERM=xterm-256color '$bin' chat" Enter
check "the session starts" wait_for "bb7>" 15
last_line() { screen | grep -v '^ *$' | tail -n 1; }
# Waits (a hang after $HANG_POLLS polls) until the last line on the screen matches the regex $1.
last_is() {
  for _ in $(seq "$HANG_POLLS"); do
    last_line | grep -qE -- "$1" && return 0
    sleep 0.05
  done
  return 1
}
# Waits until the question shows $1 times.
asked() {
  for _ in $(seq "$HANG_POLLS"); do
    [ "$(screen | grep -c 'Allow? \[y/N\]')" -ge "$1" ] && return 0
    sleep 0.05
  done
  return 1
}

keys 'go' Enter
check "the question is asked" asked 1
keys C-z
check "Ctrl-Z at the question stops bb7" last_is '^sh\$ ?$'
keys 'fg' Enter
check "fg asks the question again" asked 2
check "the question is the last line" last_is 'Allow\? \[y/N\] ?$'
keys 'y' Enter
check "the answer is the question's: the read is allowed" wait_for "Read it." 15
check "nothing was refused" test "$(screen | grep -c 'bb7: refused')" -eq 0
check "the prompt is back" last_is 'bb7> ?$'
keys C-d
check "Ctrl-D leaves to the shell" last_is '^sh\$ ?$'
finish
