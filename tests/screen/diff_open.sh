#!/usr/bin/env bash
# Screen test: the UI opened from inside a diff (:BB7DiffLocal's tab, a window in
# Vim's diff mode) at one terminal size (COLUMNS_WIDE x LINES_TALL, e.g. 80x24): the
# panes get their rows and columns as anywhere else, never one line each.
#   COLUMNS_WIDE=80 LINES_TALL=24 NVIM=... bash tests/screen/diff_open.sh
set -uo pipefail
SESSION=diffopen
source "$(dirname "$0")/lib.sh"
nvim=${NVIM:-$(bash "$root/scripts/nvim")}
size="${COLUMNS_WIDE:-150}x${LINES_TALL:-40}"

printf 'fn main() {\n    println!("hi");\n}\n' > "$work/project/main.rs"
start "'$nvim' -u NONE -i NONE --cmd 'set rtp^=$root' --cmd 'set noswapfile' -c 'runtime plugin/bb7.lua' \
   -c \"lua require('bb7').setup({ binary = '$bin' })\" main.rs"
check "$size: neovim starts" wait_for 'println!("hi");' 15
keys ':BB7Init' Enter
check "$size: init" wait_for "BB-7: Initialized in"
keys ':BB7NewChat Diffing' Enter ':BB7Add' Enter
check "$size: added" wait_for "Added main.rs"
script '{"text":"Greeting changed.","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\"hi\"","new_string":"\"hello\""}]}}]}'
keys ':BB7' Enter
check "$size: the UI opens" wait_for " Chats (1)"
keys gi 'Say hello' Escape C-s
check "$size: the answer with its change" wait_for "Response received: 1 file changed" 15
keys Escape q
check "$size: the UI closed" wait_gone " Chats (1)"
no_enter() { ! screen | grep -qF 'Press ENTER'; }
# The chat's first line and the Message pane's title are rows apart: the preview has
# its height, and its first line is in view (the chat fits).
rows_apart() {
  local a m
  a=$(screen | grep -nF "· Added main.rs" | head -n1 | cut -d: -f1)
  m=$(screen | grep -nF " Message" | head -n1 | cut -d: -f1)
  [ -n "$a" ] && [ -n "$m" ] && [ $((m - a)) -ge 4 ]
}
panes() {
  check "$size: $1: the Chats pane" wait_for " Chats (1)"
  check "$size: $1: the Files pane" wait_for " Files (1)"
  check "$size: $1: the Message pane" wait_for " Message"
  check "$size: $1: the preview's title" wait_for " Diffing · "
  check "$size: $1: the preview shows the chat from its first line" wait_for "· Added main.rs"
  check "$size: $1: the preview has its height" rows_apart
  check "$size: $1: no Press ENTER" no_enter
}

# :BB7DiffLocal from the file, then the UI opened from inside its diff tab.
keys ':BB7DiffLocal main.rs' Enter
check "$size: the diff tab" wait_for 'println!("hello");'
keys ':BB7' Enter
panes "opened from :BB7DiffLocal's tab"

# D in the Files pane opens the diff from the UI; :BB7 there goes back to the UI.
keys gf gg D
check "$size: D opens the diff" wait_for 'println!("hello");'
keys ':BB7' Enter
panes "back from D's diff tab with :BB7"

# q in the diff records the merge and closes its tab, back in the UI.
keys gf gg D
check "$size: D again" wait_for 'println!("hello");'
keys q
check "$size: q records the merge" wait_for 'Merged main.rs: none'
panes "back from the diff with q"

keys ':qa!' Enter
finish
