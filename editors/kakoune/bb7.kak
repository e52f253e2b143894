# bb7 for Kakoune, on top of the bb7 command line (`bb7 --help`).
#
#   source /path/to/bb7/editors/kakoune/bb7.kak
#   set-option global bb7_bin /path/to/bb7/target/release/bb7   # default: bb7 on $PATH
#
# Commands: bb7-init, bb7-new, bb7-add, bb7-add-readonly, bb7-add-selection,
# bb7-remove, bb7-ask <message>, bb7-status, bb7-diff, bb7-apply [file],
# bb7-apply-force [file], bb7-reject <file>, bb7-review [file], bb7-accept <hunk>…,
# bb7-reject-hunk <hunk>…, bb7-accept-all, bb7-checkpoints, bb7-rollback [id],
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
    bb7-chat %{ terminal %opt{bb7_bin} --root %sh{pwd} chat }

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

define-command -params ..1 -docstring 'bb7-apply [file]: merge pending changes into your files, then reload them; stops at a conflict with your edits' \
    bb7-apply %{
    try %{ bb7-run apply %arg{@} } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -params ..1 -docstring 'bb7-apply-force [file]: apply even over your conflicting edits' \
    bb7-apply-force %{
    try %{ bb7-run apply --force %arg{@} } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -params ..1 -docstring 'bb7-review [file]: pending hunks with their ids' \
    bb7-review %{ bb7-fifo *bb7-review* diff review %arg{@} }

define-command -params 1.. -docstring 'bb7-accept <hunk>...: merge these hunks into your files' \
    bb7-accept %{
    try %{ bb7-run review --accept %arg{@} } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -docstring 'bb7-accept-all: merge every pending hunk' \
    bb7-accept-all %{
    try %{ bb7-run review --all } catch %{ bb7-reload; fail %val{error} }
    bb7-reload
}

define-command -params 1.. -docstring 'bb7-reject-hunk <hunk>...: discard these hunks' \
    bb7-reject-hunk %{ bb7-run review --reject %arg{@} }

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
