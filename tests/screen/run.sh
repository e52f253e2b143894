#!/usr/bin/env bash
# Screen test: real Neovim in a tmux terminal, driven with send-keys and read with
# capture-pane. Checks the UI as a person sees it: titles in the winbars, no `~` filler,
# no tabline, a streamed answer, and the inline review highlighted in the file.
# Ends with "N passed, M failed".
# Without COLUMNS_WIDE it runs at 80x24 and at 200x50, each followed by the daily-use
# tests (tests/screen/daily.sh, tests/screen/workday.sh, tests/screen/diff_open.sh) at
# that size.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${COLUMNS_WIDE:-}" ]; then
  export NVIM=${NVIM:-$(bash "$here/../../scripts/nvim")}
  status=0
  for size in 80x24 200x50; do
    echo "== ${size}"
    COLUMNS_WIDE=${size%x*} LINES_TALL=${size#*x} bash "$here/run.sh" || status=1
    COLUMNS_WIDE=${size%x*} LINES_TALL=${size#*x} bash "$here/daily.sh" || status=1
    COLUMNS_WIDE=${size%x*} LINES_TALL=${size#*x} bash "$here/workday.sh" || status=1
    COLUMNS_WIDE=${size%x*} LINES_TALL=${size#*x} bash "$here/diff_open.sh" || status=1
  done
  exit $status
fi
SESSION=nvim
source "$here/lib.sh"
nvim=${NVIM:-$(bash "$root/scripts/nvim")}

printf 'fn main() {\n    println!("hi");\n}\n' > "$work/project/main.rs"
start "COLORTERM=truecolor '$nvim' -u NONE -i NONE --cmd 'set rtp^=$root' --cmd 'set noswapfile' -c 'runtime plugin/bb7.lua' \
   -c \"lua require('bb7').setup({ binary = '$bin' })\" main.rs"
check "neovim starts" wait_for 'println!("hi");'

keys ':BB7Init' Enter
check "init message" wait_for "BB-7: Initialized in"
keys ':BB7NewChat Greeting' Enter ':BB7Add' Enter ':BB7' Enter
check "title: chats" wait_for " Chats (1)"
check "title: files with the added file" wait_for " Files (1)"
check "files pane lists the file" wait_for "    main.rs"
# The context's token estimate joins the title whenever its reply arrives: with or
# without it.
message_title() {
  wait_for '<C-s> send · ? keys · q close' &&
    screen | grep -qE ' Message(  ~[^ ]+ tok)? · <C-s> send · \? keys · q close'
}
check "title: message pane" message_title
check "title: chat name and model" wait_for " Greeting · fake/model"
check "preview shows the context event" wait_for "· Added main.rs"
no_filler() { ! screen | grep -qE '(^|│) *~ *($|│)'; }
check "no ~ filler in the panes" no_filler
no_tabline() { screen | head -n1 | grep -qF " Chats (1)"; }
check "no tabline: the first row is a pane title" no_tabline

# A slow streamed answer with an edit: part of it is on screen before the end arrives
# (the fake holds it after "one two " until the test creates go-on).
script '{"thinking":"Reading main.rs.","text":"one two three four five six seven eight nine ten.","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\"hi\"","new_string":"\"hello\""}]}}],"chunk_delay_ms":250,"hold_after":2,"hold_until":"go-on"}'
keys i 'What does main do?' Escape C-s
check "the question is shown" wait_for "What does main do?"
check "reasoning streams" wait_for "│ Reading main.rs."
check "spinner in the title while streaming" wait_for "answering"
partial() { wait_for 'one two' && ! screen | grep -qF 'nine ten.'; }
check "text streams before the end" partial
touch "$work/fake/go-on"
check "the whole answer arrives" wait_for "nine ten."
check "notification" wait_for "BB-7: Response received: 1 file changed"
check "tokens, cached share and cost in the title" wait_for " tok, 3% cached, \$0.0"
check "reasoning folded after the turn" wait_for "▸ Reasoning  (1 line, za)"
check "the change as one line" wait_for "▸ Edit main.rs: 1 hunk"
check "files pane: status M" wait_for "M   main.rs"

# Review in the file: the old line highlighted, the new one as a highlighted virtual line.
keys Escape ':BB7Review' Enter
check "review opens main.rs" wait_for 'hunk 1/1  ga accept · gr reject'
# The added line is split by the mark on its changed word, so it is found by that word.
highlighted() {
  screen_ansi | grep -F 'hello' | grep -qE $'\e\\[[0-9;]*48;' &&
  screen_ansi | grep -F 'println!("hi");' | grep -qE $'\e\\[[0-9;]*48;'
}
check "removed and added lines are highlighted" highlighted
# The changed word has a background of its own: two different ones on that line.
word_marked() {
  [ "$(screen_ansi | grep -F 'hello' | grep -oE $'\e\\[48;2;[0-9;]*m' | sort -u | wc -l)" -ge 3 ]
}
check "the changed word is marked" word_marked
no_tabline_in_file() { ! screen | head -n1 | grep -qE 'bb7://|//input'; }
check "no stray tabline over the file" no_tabline_in_file
keys ga
check "accepted: the buffer is reloaded" wait_for "Review of main.rs done"
no_enter() { ! screen | grep -qF 'Press ENTER'; }
check "one message for the decision: no Press ENTER" no_enter
on_disk() { grep -qF 'println!("hello");' "$work/project/main.rs"; }
check "file on disk" on_disk

keys ':qa!' Enter
finish
