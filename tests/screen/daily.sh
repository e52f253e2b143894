#!/usr/bin/env bash
# Screen test of daily use at one terminal size (COLUMNS_WIDE x LINES_TALL, e.g.
# 80x24 and 200x50): real Neovim in tmux, driven with keys as a person would, read
# from the captured screen. Drafts stay in their chat, a file changed on disk is named
# before a send, the Preview's scroll keys scroll, the help fits, a switch during a
# stream shows the other chat, :BB7Add from a pane adds a real file, and no message
# asks to "Press ENTER". Ends with "N passed, M failed".
#   COLUMNS_WIDE=80 LINES_TALL=24 NVIM=... bash tests/screen/daily.sh
set -uo pipefail
SESSION=daily
source "$(dirname "$0")/lib.sh"
nvim=${NVIM:-$(bash "$root/scripts/nvim")}
size="${COLUMNS_WIDE:-150}x${LINES_TALL:-40}"

printf 'fn len() -> usize {\n    0\n}\n' > "$work/project/chain.rs"
printf 'fn main() {}\n' > "$work/project/main.rs"
start "'$nvim' -u NONE -i NONE --cmd 'set rtp^=$root' --cmd 'set noswapfile' -c 'runtime plugin/bb7.lua' \
   -c \"lua require('bb7').setup({ binary = '$bin' })\" chain.rs"
check "$size: neovim starts" wait_for 'fn len() -> usize {'

no_enter() { ! screen | grep -qF 'Press ENTER'; }
keys ':BB7Init' Enter
check "$size: init message with the .gitignore hint" wait_for "add .bb7/ to .gitignore"
check "$size: it fits: no Press ENTER" no_enter
keys ':BB7NewChat First' Enter ':BB7NewChat Second chat with a name far too long for the title of any pane at all' Enter
keys ':BB7Add' Enter ':BB7' Enter
check "$size: the UI opens" wait_for " Chats (2)"
title_cut() { screen | grep -qE ' Second chat with a name far too[^│]*…'; }
if [ "${COLUMNS_WIDE:-150}" -le 100 ]; then
  check "$size: a long title is cut at the right with …" title_cut
fi

# Help: one readable column at 80, never wrapped into '@@@'.
keys Escape '?'
check "$size: help opens" wait_for "go to Chats"
no_wrap() { ! screen | grep -qF '@@@'; }
check "$size: help is not wrapped" no_wrap
keys q

# A draft typed in one chat stays there.
keys gi 'Another question' Escape
keys gc gg j Enter
check "$size: switched to First" wait_for " First · fake/model"
not_carried() { ! screen | grep -qF 'Another question'; }
check "$size: the draft did not come along" not_carried
keys gi 'Make len simpler' Escape
keys gc gg Enter
check "$size: back in Second, its draft is back" wait_for 'Another question'
not_mixed() { ! screen | grep -qF 'Make len simpler'; }
check "$size: First's draft is not here" not_mixed

# A file changed on disk before a send is named, U updates it and sends.
keys gc gg j Enter
keys ':BB7Add chain.rs' Enter
keys ":call writefile(['fn len() -> usize {', '    42', '}'], 'chain.rs')" Enter
script '{"text":"Forty-two it is."}'
keys gi C-u 'How long is it?' Escape C-s
check "$size: the stale file is named in the Message pane" wait_for 'Changed since added: chain.rs'
check "$size: with the key to update it" wait_for 'U update and send'
keys U
check "$size: the answer arrives" wait_for 'Forty-two it is.'
sent_new() { grep -qF '42' "$work/fake/requests.jsonl"; }
check "$size: the new content was sent" sent_new
check "$size: no Press ENTER after the send" no_enter

# Scroll keys scroll the preview: no fork, no cut.
long=$(python3 -c 'import json; print(json.dumps({"text": "\n".join("line %d of a long answer" % i for i in range(1, 81))}))')
script "$long"
keys gi 'A long answer please' Escape C-s
check "$size: the long answer arrives, the view following it stays at its end" wait_for 'line 80 of a long answer'
top_row() { screen | sed -n 2p | sed 's/^[^│]*│//'; }
# The echo is drawn only after the keys before it were handled: then the top row is read.
keys gp gg ':echo "at-the-top"' Enter
wait_for 'at-the-top'
before=$(top_row)
keys C-e C-e
scrolled() { [ "$(top_row)" != "$before" ]; }
check "$size: <C-e> scrolls the preview" eventually scrolled
# The echo after G: once it shows, every key before it was handled.
keys C-f C-b C-d C-u G ':echo "at-the-end"' Enter
wait_for 'at-the-end'
check "$size: G shows the end of the answer" wait_for 'line 80 of a long answer'
check "$size: still two chats (no fork)" wait_for " Chats (2)"
keys gg
check "$size: the chat was not cut (its first question is still there)" wait_for 'How long is it?'

# A switch during a stream shows the other chat; back, the stream goes on live.
script '{"text":"alpha beta gamma delta epsilon zeta eta theta iota kappa","chunk_delay_ms":200}'
keys gi 'Stream slowly' Escape C-s
check "$size: streaming" wait_for 'alpha beta'
keys gc gg Enter
check "$size: switched during the stream" wait_for 'Another question'
no_stream() { ! screen | grep -qF 'alpha beta' && ! screen | grep -qF 'answering'; }
check "$size: the other chat's stream is not shown" no_stream
keys gc gg j Enter
check "$size: back: the stream is there" wait_for 'Stream slowly'
check "$size: and ends live" wait_for 'kappa'
# The last word shows before the turn's end arrives; the next send waits for the end.
check "$size: the streamed answer is done" wait_for 'Response received'

# :BB7Add from a pane adds the last file buffer (chain.rs, in this chat already), or
# in the Files pane updates the file under the cursor; never a bb7:// name.
keys gp ':BB7Add' Enter
check "$size: :BB7Add in the preview means chain.rs" wait_for 'Context file already exists'
keys gf gg ':BB7Add' Enter
check "$size: :BB7Add in Files updates the row" wait_for 'Updated chain.rs'
no_pane_file() { ! screen | grep -qF 'bb7://'; }
check "$size: no bb7:// in the Files pane" no_pane_file
check "$size: never Press ENTER" no_enter

# Messages: two in a row, one longer than the command line: no Press ENTER, and
# :messages has the whole text.
keys gp ":lua require('bb7.util').say(string.rep('a long message ', 12) .. 'THE-END', vim.log.levels.WARN); require('bb7.util').say('second message')" Enter
check "$size: the second message shows" wait_for 'BB-7: second message'
check "$size: two messages in a row, one long: no Press ENTER" no_enter
keys ':messages' Enter
check "$size: :messages has the whole long message" wait_for 'THE-END'
keys Enter ':echo "messages-closed"' Enter
wait_for 'messages-closed'

# A send that fails (the fake model has no answer left: HTTP 500) keeps the text in the
# pane, the reason above it. (A mode without its provider can no longer be chosen, so
# that refusal is not the way here.)
keys gi C-u 'my precious question' Escape C-s
check "$size: a failed send says why in the Message pane" wait_for 'no script left'
check "$size: and keeps the typed text" wait_for 'my precious question'
check "$size: no Press ENTER after a failed send" no_enter

# A context file deleted on disk: D in Files, dropped with U before the send.
printf 'fn gone() {}\n' > "$work/project/gone.rs"
keys ':BB7Add gone.rs' Enter
check "$size: gone.rs added" wait_for 'Added gone.rs'
rm "$work/project/gone.rs"
keys gf ':BB7Add' Enter
check "$size: a deleted file shows as D" wait_for 'D   gone.rs'
script '{"text":"Without gone.rs then."}'
keys gi C-u 'Is gone.rs still there?' Escape C-s
check "$size: the deleted file is named before the send" wait_for 'Deleted on disk: gone.rs'
check "$size: with the key that drops it" wait_for 'U drop and send'
keys U
check "$size: dropped, then sent" wait_for 'Without gone.rs then.'
check "$size: no Press ENTER after dropping" no_enter

# A binary file is refused at once.
printf 'BLOB\0\0\1\2' > "$work/project/blob.dat"
keys ':BB7Add blob.dat' Enter
check "$size: a binary file is refused" wait_for 'blob.dat is a binary file'
check "$size: no Press ENTER after the refusal" no_enter

keys ':qa!' Enter
finish
