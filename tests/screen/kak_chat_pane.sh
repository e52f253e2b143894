#!/usr/bin/env bash
# Kakoune's bb7-chat in a tmux pane when `bb7 chat` cannot start (a project without
# .bb7/): the pane stays open with the error until Enter, instead of closing before it
# can be read. Ends with "N passed, M failed".
set -uo pipefail
SESSION=kakpane
COLUMNS_WIDE=${COLUMNS_WIDE:-120}
source "$(dirname "$0")/lib.sh"

printf 'text\n' > "$work/project/notes.txt"
start "kak -n -e \"source '$root/editors/kakoune/bb7.kak'; set-option global bb7_bin '$bin'\" notes.txt"
check "kakoune starts" wait_for 'text'
tmux -L "$sock" set-environment -g HOME "$work/home"
tmux -L "$sock" set-environment -g XDG_CONFIG_HOME "$work/home/.config"
keys ":source '/usr/share/kak/rc/windowing/tmux.kak'; require-module tmux; alias global terminal tmux-terminal-horizontal" Enter
keys ':bb7-chat' Enter
pane() { tmux -L "$sock" capture-pane -p -t "$SESSION:.1" 2>/dev/null; }
pane_has() { for _ in $(seq "$HANG_POLLS"); do pane | grep -qF -- "$1" && return 0; sleep 0.05; done; return 1; }
check "the error is shown in the pane" pane_has 'not initialized'
check "the pane waits for Enter" pane_has 'Enter closes this pane'
panes() { tmux -L "$sock" list-panes -t "$SESSION" | wc -l; }
check "the pane is still open" test "$(panes)" -eq 2
tmux -L "$sock" send-keys -t "$SESSION:.1" Enter
closed() { for _ in $(seq "$HANG_POLLS"); do [ "$(panes)" -eq 1 ] && return 0; sleep 0.05; done; return 1; }
check "Enter closes it" closed

keys ':q!' Enter
finish
