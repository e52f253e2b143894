#!/usr/bin/env bash
# Kakoune with editors/kakoune/bb7.kak: review without copying hunk ids (bb7-accept and
# bb7-reject-hunk take the hunk under the cursor in *bb7-review*), and an apply with
# an unsaved buffer of the changed file refused by name, then merged once written.
# Ends with "N passed, M failed".
set -uo pipefail
SESSION=kakrev
COLUMNS_WIDE=${COLUMNS_WIDE:-120}
source "$(dirname "$0")/lib.sh"

printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n' > "$work/project/notes.txt"
start "kak -n -e \"source '$root/editors/kakoune/bb7.kak'; set-option global bb7_bin '$bin'\" notes.txt"
check "kakoune starts" wait_for 'three'
keys ':bb7-init' Enter
check "init" wait_for "initialized in"
keys ':bb7-add' Enter
check "add" wait_for "added notes.txt"

# Two hunks; the cursor on the second one's changed line accepts that one only.
script '{"text":"Two changes.","tool_calls":[{"name":"edit_file","args":{"path":"notes.txt","edits":[{"old_string":"one\n","new_string":"ONE\n"},{"old_string":"ten\n","new_string":"TEN\n"}]}}]}'
keys ':bb7-ask shout' Enter
check "answer" wait_for "Two changes."
keys ':bb7-review' Enter
check "review lists hunks" wait_for '  h_'
keys gg
# Line 1 is the file, 2 the first hunk, then its lines; find the second hunk's `+TEN`.
keys '/\+TEN' Enter
keys ':bb7-accept' Enter
check "the hunk under the cursor is accepted" wait_for "accepted"
has_ten() { grep -qx 'TEN' "$work/project/notes.txt" && grep -qx 'one' "$work/project/notes.txt"; }
check "only that hunk is on disk" has_ten
keys ':bb7-review' Enter
# The listing is refilled through a fifo: move only once the accepted hunk is gone from it.
ten_gone() { for _ in $(seq "$HANG_POLLS"); do screen | grep -qF -- '+TEN' || return 0; sleep 0.05; done; return 1; }
check "the review lists the rest" ten_gone
check "the rest is the other hunk" wait_for '+ONE'
keys gg '/\+ONE' Enter
keys ':bb7-reject-hunk' Enter
check "the hunk under the cursor is rejected" wait_for "rejected"
check "rejected hunk not on disk" grep -qx 'one' "$work/project/notes.txt"
keys gg ':bb7-accept' Enter
check "no hunk above the cursor: refused" wait_for "no hunk at the cursor"

# An unsaved buffer of the changed file: refused by name, nothing written.
keys ':buffer notes.txt' Enter ':edit!' Enter
script '{"text":"Three is loud.","tool_calls":[{"name":"edit_file","args":{"path":"notes.txt","edits":[{"old_string":"three\n","new_string":"THREE\n"}]}}]}'
keys ':bb7-ask loud three' Enter
check "second answer" wait_for "Three is loud."
keys ':buffer notes.txt' Enter
keys gg 'A' ' mine' Escape
keys ':bb7-apply' Enter
check "apply refused by name" wait_for "notes.txt has unsaved changes here: write it"
check "nothing written" grep -qx 'three' "$work/project/notes.txt"
keys ':write' Enter
keys ':bb7-apply' Enter
check "applied once written" wait_for "applied notes.txt"
both() { grep -qx 'one mine' "$work/project/notes.txt" && grep -qx 'THREE' "$work/project/notes.txt"; }
check "both sides kept on disk" both
check "buffer reloaded with both" wait_for "THREE"

keys ':q!' Enter
finish
