# bb7 for Kakoune, on top of the bb7 command line (`bb7 --help`).
#
#   source /path/to/bb7/editors/kakoune/bb7.kak
#   set-option global bb7_bin /path/to/bb7/target/release/bb7   # default: bb7 on $PATH
#
# Commands: bb7-init, bb7-new, bb7-add, bb7-add-readonly, bb7-add-selection,
# bb7-remove, bb7-ask <message>, bb7-status, bb7-diff, bb7-apply [file],
# bb7-apply-force [file], bb7-reject <file>, bb7-review [file], bb7-accept [hunk]…,
# bb7-reject-hunk [hunk]… (Tab completes hunk ids; without one, in *bb7-review*, the
# hunk under the cursor), bb7-accept-all, bb7-checkpoints, bb7-rollback [id],
# bb7-show, bb7-chats, bb7-chat (the interactive `bb7 chat` in a terminal next to
# Kakoune, through Kakoune's `terminal` command). Files are read from disk: write the buffer before adding it
# (adding it again refreshes bb7's snapshot after you edited it).
#
#   set-option global bb7_tools auto    # let the model read project files (off|auto)
#   set-option global bb7_mode hybrid_auto   # which provider answers (local|remote|hybrid_auto)

declare-option -docstring 'path of the bb7 binary' str bb7_bin bb7
declare-option -docstring 'retrieval tools for bb7-ask: off or auto (ask needs a terminal); empty keeps the chat setting' \
    str bb7_tools
declare-option -docstring 'provider for bb7-ask: local, remote or hybrid_auto; empty keeps the chat setting' \
    str bb7_mode

# Runs bb7 with the given arguments and shows its last line of output.
define-command -hidden -params 1.. bb7-run %{ evaluate-commands %sh{
    out=$("$kak_opt_bb7_bin" "$@" 2>&1)
    status=$?
    msg=$(printf '%s' "$out" | tail -n 1 | sed "s/'/''/g")
    if [ "$status" -eq 0 ]; then
        printf "echo -markup '{Information}%s'\n" "$msg"
    else
        printf "fail '%s'\n" "$msg"
    fi
}}

# Runs bb7 in the background and shows its output in a fifo buffer.
define-command -hidden -params 3.. bb7-fifo %{ evaluate-commands %sh{
    buffer=$1; filetype=$2; shift 2
    # An empty option gives an empty --tools= or --mode=: "keep the chat's setting".
    for a; do shift; [ "$a" = "--tools=" ] || [ "$a" = "--mode=" ] || set -- "$@" "$a"; done
    dir=$(mktemp -d "${TMPDIR:-/tmp}/bb7-kak.XXXXXX")
    mkfifo "$dir/fifo"
    ( "$kak_opt_bb7_bin" "$@" > "$dir/fifo" 2>&1; rm -rf "$dir" ) < /dev/null > /dev/null 2>&1 &
    printf "edit! -fifo %s %s\n" "$dir/fifo" "$buffer"
    printf "set-option buffer filetype %s\n" "$filetype"
}}

define-command -docstring 'bb7-init: create .bb7/ in the current directory' \
    bb7-init %{ bb7-run init }

define-command -params ..1 -docstring 'bb7-new [name]: start a chat' \
    bb7-new %{ bb7-run new -- %arg{@} }

define-command -docstring 'bb7-chats: list chats' \
    bb7-chats %{ bb7-fifo *bb7-chats* plain chats }

define-command -docstring 'bb7-add: add the current file to the active chat' \
    bb7-add %{ bb7-run add %val{buffile} }

define-command -docstring 'bb7-add-readonly: add the current file, read-only for the model' \
    bb7-add-readonly %{ bb7-run add --readonly %val{buffile} }

define-command -docstring 'bb7-add-selection: add the lines of the main selection as a section' \
    bb7-add-selection %{ evaluate-commands %sh{
        # selection_desc is anchor_line.col,cursor_line.col
        a=${kak_selection_desc%%.*}
        rest=${kak_selection_desc#*,}
        c=${rest%%.*}
        if [ "$a" -le "$c" ]; then s=$a; e=$c; else s=$c; e=$a; fi
        printf "bb7-run add '%s:%s:%s'\n" "$(printf '%s' "$kak_buffile" | sed "s/'/''/g")" "$s" "$e"
    }}

define-command -docstring 'bb7-remove: remove the current file from context' \
    bb7-remove %{ bb7-run remove %val{buffile} }

define-command -params 1.. -docstring 'bb7-ask <message>: ask the model; the answer streams into *bb7*' \
    bb7-ask %{ bb7-fifo *bb7* markdown ask "--tools=%opt{bb7_tools}" "--mode=%opt{bb7_mode}" -- %arg{@} }

define-command -docstring 'bb7-chat: the interactive bb7 chat in a new terminal (tmux pane, kitty, x11…)' \
    bb7-chat %{
    # A chat that cannot start (no .bb7/, a broken config) keeps its pane open with the
    # error until Enter, instead of closing before it can be read.
    terminal sh -c '"$@"; s=$?; [ "$s" -eq 0 ] || { printf "\n[bb7 chat ended with status %s: Enter closes this pane]" "$s"; read -r _; }' bb7-chat %opt{bb7_bin} --root %sh{pwd} chat
}

define-command -docstring 'bb7-status: statuses of context and output files' \
    bb7-status %{ bb7-fifo *bb7-status* plain status }

define-command -docstring 'bb7-diff: the pending changes as a diff' \
    bb7-diff %{ bb7-fifo *bb7-diff* diff diff }

# Reloads unmodified buffers of files on disk; modified ones are left alone.
define-command -hidden bb7-reload %{
    evaluate-commands -buffer * %{ evaluate-commands %sh{
        if [ "$kak_modified" = false ] && [ -f "$kak_buffile" ]; then echo 'edit!'; fi
    }}
}

# bb7 writes files on disk, and a buffer with unsaved changes is never reloaded: an
# apply would leave the model's change on disk and your edits in the buffer, and the
# next :w would drop the change. So an apply touching a file whose buffer is modified
# is refused, naming it: write it (:w) first, and bb7 merges your edits.
declare-option -hidden str-list bb7_unsaved
define-command -hidden bb7-refuse-unsaved %{
    set-option global bb7_unsaved
    evaluate-commands -buffer * %{ evaluate-commands %sh{
        if [ "$kak_modified" = true ] && [ -n "$kak_buffile" ] && [ "${kak_buffile#\*}" = "$kak_buffile" ]; then
            printf "set-option -add global bb7_unsaved '%s'\n" "$(printf '%s' "$kak_buffile" | sed "s/'/''/g")"
        fi
    }}
    evaluate-commands %sh{
        eval set -- "$kak_quoted_opt_bb7_unsaved"
        [ $# -eq 0 ] && exit 0
        pending=$("$kak_opt_bb7_bin" diff 2>/dev/null | sed -n 's|^+++ b/||p')
        unsaved=$(for f; do
            printf '%s\n' "$pending" | while IFS= read -r p; do
                [ -n "$p" ] && case "$f" in */"$p"|"$p") printf '%s\n' "$p";; esac
            done
        done | sort -u | tr '\n' ' ' | sed 's/ $//')
        if [ -n "$unsaved" ]; then
            msg="bb7: $unsaved has unsaved changes here: write it (:w) first, then apply (bb7 merges your saved edits)"
            printf "fail '%s'\n" "$(printf '%s' "$msg" | sed "s/'/''/g")"
        fi
    }
}

define-command -params ..1 -docstring 'bb7-apply [file]: merge pending changes into your files, then reload them; stops at a conflict with your edits, and at a file with unsaved changes in a buffer' \
    bb7-apply %{
    bb7-refuse-unsaved
    try %{ bb7-run apply %arg{@} } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -params ..1 -docstring 'bb7-apply-force [file]: apply even over your conflicting edits' \
    bb7-apply-force %{
    bb7-refuse-unsaved
    try %{ bb7-run apply --force %arg{@} } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -params ..1 -docstring 'bb7-review [file]: pending hunks with their ids; in *bb7-review*, bb7-accept and bb7-reject-hunk without an id take the hunk under the cursor' \
    bb7-review %{ bb7-fifo *bb7-review* diff review %arg{@} }

# The id of the hunk the cursor is in, in *bb7-review*: the nearest hunk line
# (`  h_ID @@ …`) at or above the cursor.
declare-option -hidden str bb7_hunk
declare-option -hidden int bb7_line
define-command -hidden bb7-hunk-at-cursor %{
    set-option global bb7_hunk ''
    set-option global bb7_line %val{cursor_line}
    # A backward search wraps around the buffer: a match below the cursor is none.
    try %{ evaluate-commands -draft %{
        execute-keys 'gl<a-/>^  h_\S+<ret>'
        evaluate-commands %sh{
            line=${kak_selection_desc%%.*}
            if [ "$line" -le "$kak_opt_bb7_line" ]; then
                printf "set-option global bb7_hunk '%s'\n" "$(printf '%s' "$kak_selection" | tr -d " '")"
            fi
        }
    }}
    evaluate-commands %sh{
        if [ -z "$kak_opt_bb7_hunk" ]; then
            echo "fail 'bb7: no hunk at the cursor: in *bb7-review* (:bb7-review) move onto a hunk, or name its id'"
        fi
    }
}

define-command -hidden -params 1.. bb7-accept-ids %{
    bb7-refuse-unsaved
    try %{ bb7-run review --accept %arg{@} } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}
# Tab completes hunk ids: the pending hunks of `bb7 review`.
define-command -params .. -shell-script-candidates %{ "$kak_opt_bb7_bin" review 2>/dev/null | sed -n 's/^  \(h_[^ ]*\).*/\1/p' } \
    -docstring 'bb7-accept [hunk]...: merge these hunks into your files (none: the hunk under the cursor in *bb7-review*)' \
    bb7-accept %{ evaluate-commands %sh{
        if [ $# -eq 0 ]; then echo 'bb7-hunk-at-cursor; bb7-accept-ids %opt{bb7_hunk}'; else echo 'bb7-accept-ids %arg{@}'; fi
    }}

define-command -docstring 'bb7-accept-all: merge every pending hunk' \
    bb7-accept-all %{
    bb7-refuse-unsaved
    try %{ bb7-run review --all } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -params .. -shell-script-candidates %{ "$kak_opt_bb7_bin" review 2>/dev/null | sed -n 's/^  \(h_[^ ]*\).*/\1/p' } \
    -docstring 'bb7-reject-hunk [hunk]...: discard these hunks (none: the hunk under the cursor in *bb7-review*)' \
    bb7-reject-hunk %{ evaluate-commands %sh{
        if [ $# -eq 0 ]; then echo 'bb7-hunk-at-cursor; bb7-run review --reject %opt{bb7_hunk}'; else echo 'bb7-run review --reject %arg{@}'; fi
    }}

define-command -docstring 'bb7-checkpoints: every apply and rollback, newest last' \
    bb7-checkpoints %{ bb7-fifo *bb7-checkpoints* plain checkpoints }

define-command -params ..1 -docstring 'bb7-rollback [id]: undo a checkpoint (default: the last apply not undone yet; again: the one before it), then reload' \
    bb7-rollback %{ evaluate-commands %sh{
        if [ -z "$1" ]; then
            echo "try %{ bb7-run rollback --last } catch %{ bb7-reload; fail %val{error} }"
        else
            printf "try %%{ bb7-run rollback -- '%s' } catch %%{ bb7-reload; fail %%val{error} }\n" "$1"
        fi
        echo bb7-reload
    }}

define-command -docstring 'bb7-show: the chat as Markdown' \
    bb7-show %{ bb7-fifo *bb7-chat* markdown show }

define-command -params 1 -docstring 'bb7-reject <file>: discard the pending changes to a file' \
    bb7-reject %{ bb7-run reject %arg{1} }
