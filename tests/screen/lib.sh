# Shared by the screen tests: a scratch HOME and project, the fake model server
# (target/debug/examples/fake_openai) configured as bb7's model API, and helpers to
# drive a program in a private tmux server and read its screen.
# Set SESSION (and COLUMNS_WIDE / LINES_TALL for the terminal's size) before
# sourcing; call `finish` at the end.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${BB7_BIN:-$root/target/debug/bb7}
work=$(mktemp -d)
sock="bb7-$SESSION-$$"
# Polls (every 0.05 s, plus the poll's own time) before a wait calls it a hang: a hang
# guard, not a speed bound. A first start of Neovim or bb7 on a loaded 2-core machine
# can take tens of seconds; a wait ends as soon as what it waits for is seen.
HANG_POLLS=1200
passed=0
failed=0
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null
  # bb7 may still be flushing its state when the terminal goes: retry once.
  rm -rf "$work" 2>/dev/null || { sleep 0.5; rm -rf "$work"; }
}
trap cleanup EXIT

mkdir -p "$work/home/.config/bb7" "$work/project" "$work/fake"
# The fake serves until its stdin closes; fd 9 keeps it open for the test's life.
mkfifo "$work/fake.in"
"$root/target/debug/examples/fake_openai" "$work/fake" < "$work/fake.in" > "$work/fake.url" &
fake_pid=$!
exec 9> "$work/fake.in"
for _ in $(seq "$HANG_POLLS"); do [ -s "$work/fake.url" ] && break; sleep 0.05; done
url=$(head -n1 "$work/fake.url")
printf '{"base_url":"%s","api_key":"k","default_model":"fake/model"}' "$url" > "$work/home/.config/bb7/config.json"

# Starts "$@" (a shell command line) in the project with the scratch HOME.
start() {
  tmux -L "$sock" -f /dev/null new-session -d -s "$SESSION" -x "${COLUMNS_WIDE:-150}" -y "${LINES_TALL:-40}" \
    "cd '$work/project' && HOME='$work/home' XDG_CONFIG_HOME='$work/home/.config' $*"
}
screen() { tmux -L "$sock" capture-pane -p -t "$SESSION"; }
# The screen with its colours and attributes as SGR escape sequences.
screen_ansi() { tmux -L "$sock" capture-pane -p -e -t "$SESSION"; }
keys() { tmux -L "$sock" send-keys -t "$SESSION" "$@"; }
# Waits for the screen to contain $1 (a hang after $HANG_POLLS polls).
wait_for() {
  for _ in $(seq "$HANG_POLLS"); do
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
# Queues a scripted model response (see examples/fake_openai.rs).
script() {
  local n; n=$(ls "$work/fake" | grep -c '\.json$\|\.used$' || true)
  printf '%s' "$1" > "$work/fake/$(printf '%04d' $((n + 1))).json"
}
# Waits until the screen no longer contains $1 (a hang after $HANG_POLLS polls).
wait_gone() {
  for _ in $(seq "$HANG_POLLS"); do
    screen | grep -qF -- "$1" || return 0
    sleep 0.05
  done
  return 1
}
# Waits until the command "$@" succeeds (a hang after $HANG_POLLS polls).
eventually() {
  for _ in $(seq "$HANG_POLLS"); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
