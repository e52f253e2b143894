#!/usr/bin/env bash
# Screen test of a working day at one terminal size (COLUMNS_WIDE x LINES_TALL): real
# Neovim in tmux. :BB7 from inside a diff opens the normal layout; a question asked
# with `bb7 ask` in a shell beside Neovim streams into Neovim's preview (its wrapped
# reasoning keeps the `│` rule on every screen line) and ends there as Neovim's own;
# a read to approve never takes the keys typed in a file.
# Ends with "N passed, M failed".
#   COLUMNS_WIDE=80 LINES_TALL=24 NVIM=... bash tests/screen/workday.sh
set -uo pipefail
SESSION=workday
source "$(dirname "$0")/lib.sh"
nvim=${NVIM:-$(bash "$root/scripts/nvim")}
size="${COLUMNS_WIDE:-150}x${LINES_TALL:-40}"

printf 'alpha\nbeta\n' > "$work/project/a.txt"
printf 'alpha\nBETA\n' > "$work/project/b.txt"
start "'$nvim' -u NONE -i NONE --cmd 'set rtp^=$root' --cmd 'set noswapfile' -c 'runtime plugin/bb7.lua' \
   -c \"lua require('bb7').setup({ binary = '$bin' })\" a.txt"
check "$size: neovim starts" wait_for 'alpha'
keys ':BB7Init' Enter ':BB7NewChat Workday' Enter ':BB7Add a.txt' Enter
keys ':diffsplit b.txt' Enter
check "$size: a diff is open" wait_for 'BETA'

# From inside the diff: every pane with its title, the preview with its lines.
keys ':BB7' Enter
check "$size: the Chats pane" wait_for " Chats (1)"
check "$size: the Message pane" wait_for " Message"
check "$size: the preview's title" wait_for " Workday · fake/model"
check "$size: the preview shows the chat, not one folded line" wait_for "· Added a.txt"
# The chat's first lines and the Message pane's title are rows apart, as in any layout.
rows_apart() {
  local a m
  a=$(screen | grep -nF "· Added a.txt" | head -n1 | cut -d: -f1)
  m=$(screen | grep -nF " Message" | head -n1 | cut -d: -f1)
  [ -n "$a" ] && [ -n "$m" ] && [ $((m - a)) -ge 4 ]
}
check "$size: the preview has its height" rows_apart

# A question beside Neovim, on the chat Neovim holds.
words=$(printf 'zeta eta theta %.0s' $(seq 25))
script "{\"thinking\":\"$words\",\"text\":\"The peer answer arrives word by word and goes on for a good while yet.\",\"chunk_delay_ms\":250}"
( cd "$work/project" && HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" "$bin" ask 'what is in a.txt' > "$work/ask.out" 2>&1; echo $? > "$work/ask.status" ) &
check "$size: the shell's question shows in Neovim" wait_for "what is in a.txt"
check "$size: the answer streams into the preview" wait_for "The peer answer"
# The reasoning wraps: each of its screen lines starts with the rule (after the pane
# border and the fold column), not only the first.
rule_kept() { [ "$(screen | grep -cE '│ +│ (zeta|eta|theta)')" -ge 2 ]; }
check "$size: wrapped reasoning keeps its rule" rule_kept
check "$size: the answer ends in Neovim" wait_for "BB-7: Response received"
ask_done() { for _ in $(seq "$HANG_POLLS"); do [ -s "$work/ask.status" ] && break; sleep 0.05; done; [ "$(cat "$work/ask.status")" = 0 ]; }
check "$size: bb7 ask got its answer" ask_done
check "$size: and printed it" grep -qF "for a good while yet." "$work/ask.out"

# A read to approve while typing in a file: the keys stay in the file; the question
# (Neovim's own vim.ui.select) opens in the UI.
keys Escape ':BB7Tools ask' Enter
check "$size: tools ask" wait_for "BB-7: Tools: ask"
keys q
script '{"tool_calls":[{"name":"read_file","args":{"path":"b.txt"}}]}'
script '{"text":"It says BETA."}'
keys ':BB7Send what does b.txt say' Enter
check "$size: the read waits for the UI" wait_for "Answer in the bb7 UI"
keys o 'typed in the file' Escape
check "$size: the keys went to the file" wait_for "typed in the file"
no_prompt() { ! screen | grep -qE '^ *[12]: (Allow|Deny)'; }
check "$size: no prompt took them" no_prompt
keys ':BB7' Enter
check "$size: the question opens in the UI" wait_for "1: Allow"
keys 1 Enter
check "$size: allowed, the answer comes" wait_for "BB-7: Response received"

keys Escape ':qa!' Enter
finish
