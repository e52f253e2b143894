#!/usr/bin/env bash
# Screen test: real Neovim in a tmux terminal, driven with send-keys and read with
# capture-pane. Checks the UI layout and a streamed response as a person sees them.
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
nvim=${NVIM:-$(bash scripts/nvim)}
bin=${BB7_BIN:-$root/target/debug/bb7}
fake_bin=$root/target/debug/examples/fake_openai
work=$(mktemp -d)
sock="bb7-screen-$$"
passed=0
failed=0
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/home/.config/bb7" "$work/project" "$work/fake"
printf 'fn main() {}\n' > "$work/project/main.rs"
mkfifo "$work/fake.in"
"$fake_bin" "$work/fake" < "$work/fake.in" > "$work/fake.url" &
fake_pid=$!
exec 9> "$work/fake.in"
for _ in $(seq 100); do [ -s "$work/fake.url" ] && break; sleep 0.05; done
url=$(head -n1 "$work/fake.url")
printf '{"base_url":"%s","api_key":"k","default_model":"fake/model"}' "$url" > "$work/home/.config/bb7/config.json"

screen() { tmux -L "$sock" capture-pane -p -t bb7; }
keys() { tmux -L "$sock" send-keys -t bb7 "$@"; }
# Waits up to $2 seconds for the screen to contain $1.
wait_for() {
  for _ in $(seq $(( ${2:-10} * 20 ))); do
    screen | grep -qF -- "$1" && return 0
    sleep 0.05
  done
  return 1
}
check() {
  local name=$1; shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"; echo "----- screen -----"; screen; echo "------------------"
  fi
}

tmux -L "$sock" -f /dev/null new-session -d -s bb7 -x 150 -y 40 \
  "cd '$work/project' && HOME='$work/home' XDG_CONFIG_HOME='$work/home/.config' '$nvim' -u NONE -i NONE \
   --cmd 'set rtp^=$root' --cmd 'set noswapfile' -c 'runtime plugin/bb7.lua' \
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
printf '{"thinking":"Reading main.rs.","text":"one two three four five six seven eight nine ten.","chunk_delay_ms":250}' > "$work/fake/0001.json"
keys i 'What does main do?' Escape C-s
check "the question is shown" wait_for "What does main do?"
check "reasoning streams" wait_for "│ Reading main.rs."
check "text streams before the end" bash -c "$(declare -f screen wait_for); sock=$sock; wait_for 'one two' 10 && ! screen | grep -qF 'nine ten.'"
check "the whole answer arrives" wait_for "nine ten." 15
check "winbar shows chat and model" wait_for "fake/model"
check "notification" wait_for "BB-7: Response received"

keys Escape ':qa!' Enter
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
