#!/usr/bin/env bash
# Screen test: real Neovim in a tmux terminal, driven with send-keys and read with
# capture-pane. Checks the UI layout and a streamed response as a person sees them.
# Ends with "N passed, M failed".
set -uo pipefail
SESSION=nvim
source "$(dirname "$0")/lib.sh"
nvim=${NVIM:-$(bash "$root/scripts/nvim")}

printf 'fn main() {}\n' > "$work/project/main.rs"
start "'$nvim' -u NONE -i NONE --cmd 'set rtp^=$root' --cmd 'set noswapfile' -c 'runtime plugin/bb7.lua' \
   -c \"lua require('bb7').setup({ binary = '$bin' })\" main.rs"
check "neovim starts" wait_for "fn main() {}" 15

keys ':BB7Init' Enter
check "init message" wait_for "BB-7: Initialized in"
keys ':BB7NewChat' Enter ':BB7Add' Enter ':BB7' Enter
check "layout: chats pane" wait_for " Chats"
check "layout: files pane with the added file" wait_for "    main.rs"
check "layout: message pane" wait_for " Message (<C-s> to send)"
check "layout: preview shows the context event" wait_for "· Added main.rs"

# A slow streamed answer: part of it is on screen before the end arrives.
script '{"thinking":"Reading main.rs.","text":"one two three four five six seven eight nine ten.","chunk_delay_ms":250}'
keys i 'What does main do?' Escape C-s
check "the question is shown" wait_for "What does main do?"
check "reasoning streams" wait_for "│ Reading main.rs."
partial() { wait_for 'one two' 10 && ! screen | grep -qF 'nine ten.'; }
check "text streams before the end" partial
check "the whole answer arrives" wait_for "nine ten." 15
check "winbar shows chat and model" wait_for "fake/model"
check "notification" wait_for "BB-7: Response received"

keys Escape ':qa!' Enter
finish
