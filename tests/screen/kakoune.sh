#!/usr/bin/env bash
# Kakoune in a tmux terminal with editors/kakoune/bb7.kak: init, add, ask (streamed
# into *bb7*), diff, apply with buffer reload. Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=${BB7_BIN:-$root/target/debug/bb7}
fake_bin=$root/target/debug/examples/fake_openai
work=$(mktemp -d)
sock="bb7-kak-$$"
passed=0
failed=0
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/home/.config/bb7" "$work/project" "$work/fake"
printf 'fn main() {\n    println!("hi");\n}\n' > "$work/project/main.rs"
mkfifo "$work/fake.in"
"$fake_bin" "$work/fake" < "$work/fake.in" > "$work/fake.url" &
fake_pid=$!
exec 9> "$work/fake.in"
for _ in $(seq 100); do [ -s "$work/fake.url" ] && break; sleep 0.05; done
url=$(head -n1 "$work/fake.url")
printf '{"base_url":"%s","api_key":"k","default_model":"fake/model"}' "$url" > "$work/home/.config/bb7/config.json"

screen() { tmux -L "$sock" capture-pane -p -t kak; }
keys() { tmux -L "$sock" send-keys -t kak "$@"; }
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

tmux -L "$sock" -f /dev/null new-session -d -s kak -x 120 -y 30 \
  "cd '$work/project' && HOME='$work/home' XDG_CONFIG_HOME='$work/home/.config' kak -n \
   -e \"source '$root/editors/kakoune/bb7.kak'; set-option global bb7_bin '$bin'\" main.rs"
check "kakoune starts" wait_for 'println!("hi");' 15

keys ':bb7-init' Enter
check "init" wait_for "initialized in"
keys ':bb7-add' Enter
check "add" wait_for "added"
printf '{"text":"I made it friendlier.","tool_calls":[{"name":"edit_file","args":{"path":"main.rs","edits":[{"old_string":"\\"hi\\"","new_string":"\\"hello\\""}]}}],"chunk_delay_ms":50}' > "$work/fake/0001.json"
keys ':bb7-ask make it friendlier' Enter
check "answer streams into *bb7*" wait_for "I made it friendlier." 15
check "changed files are listed" wait_for "Edit main.rs: 1 hunk"
keys ':bb7-diff' Enter
check "diff" wait_for '+    println!("hello");'
keys ':buffer main.rs' Enter
check "back in main.rs" wait_for 'main.rs 1:1'
keys ':bb7-apply' Enter
check "applied message" wait_for 'applied main.rs'
check "apply reloads the buffer" wait_for 'println!("hello");'
check "file on disk" grep -qF 'println!("hello");' "$work/project/main.rs"

keys ':q!' Enter
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
