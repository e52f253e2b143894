#!/usr/bin/env bash
# `bb7 chat` stopped with Ctrl-Z and continued with `fg` from an interactive bash in
# tmux: at the prompt, the prompt is drawn again with the text typed before Ctrl-Z,
# and the line editor reads keys again (not the shell's cooked echo); in the middle of
# an answer, echo is off again once continued, so what is typed waits for the prompt
# instead of landing in the answer. Ends with "N passed, M failed".
set -uo pipefail
SESSION=chat_suspend
COLUMNS_WIDE=100
source "$(dirname "$0")/lib.sh"

(cd "$work/project" && HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" "$bin" init >/dev/null 2>&1)
start "PS1='sh\$ ' bash --norc --noprofile -i"
check "the shell starts" wait_for 'sh$' 10
keys "TERM=xterm-256color '$bin' chat" Enter
check "the session starts" wait_for "bb7>" 15
tty=$(tmux -L "$sock" display -p -t "$SESSION" '#{pane_tty}')
last_line() { screen | grep -v '^ *$' | tail -n 1; }
# Waits (a hang after $HANG_POLLS polls) until the last line on the screen matches the regex $1.
last_is() {
  for _ in $(seq "$HANG_POLLS"); do
    last_line | grep -qE -- "$1" && return 0
    sleep 0.05
  done
  return 1
}
# Waits (a hang after $HANG_POLLS polls) until the terminal's modes include $1 (as `stty -a` prints it).
mode_is() {
  for _ in $(seq "$HANG_POLLS"); do
    stty -a -F "$tty" | tr ' ;' '\n\n' | grep -qx -- "$1" && return 0
    sleep 0.05
  done
  return 1
}

# Waits until bash has printed the job's command line $1 times: `fg` prints it as it
# continues the job, its own line editor done with the terminal.
continued() {
  for _ in $(seq "$HANG_POLLS"); do
    [ "$(screen | grep -cE '^TERM=xterm-256color .* chat *$')" -ge "$1" ] && return 0
    sleep 0.05
  done
  return 1
}

keys 'abc'
check "typed at the prompt" last_is 'bb7> abc$'
keys C-z
check "Ctrl-Z at the prompt stops bb7" wait_for "Stopped" 10
check "the shell's prompt is back" last_is '^sh\$ ?$'
keys 'fg' Enter
check "fg continues bb7" continued 1
check "fg draws the prompt again with the typed text" last_is 'bb7> abc$'
check "the line editor reads keys again (no echo of the terminal's own)" mode_is '-icanon'
keys 'def'
check "the text goes on in the line editor" last_is 'bb7> abcdef$'
keys C-u
check "Ctrl-U clears the line" last_is 'bb7> ?$'

script '{"text":"First line.\nThen a tail of words that keeps coming for a while yet, word by word, slowly.\n","chunk_delay_ms":400}'
keys 'go' Enter
check "an answer streams" wait_for "First line." 15
keys C-z
check "Ctrl-Z mid-answer stops bb7" last_is '^sh\$ ?$'
keys 'fg' Enter
check "fg continues bb7 again" continued 2
check "echo is off again once continued" mode_is '-echo'
keys 'typed'
check "the answer ends and the prompt shows what was typed" last_is 'bb7> typed$'
check "the typed text is nowhere in the answer" \
  test "$(screen | grep -c typed)" -eq 1
check "the whole answer came" wait_for "word by word, slowly." 2
keys C-u C-d
check "Ctrl-D leaves to the shell" last_is '^sh\$ ?$'
finish
