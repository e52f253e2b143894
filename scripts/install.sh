#!/bin/sh
# Installs a released bb7 binary without Rust: downloads the archive for this machine
# from the GitHub release (the layout dist-workspace.toml makes), checks it against the
# release's .sha256 file, and puts `bb7` into a directory of your choice.
#
#   sh install.sh [--to DIR] [--version X.Y.Z] [--uninstall]
#   curl -LsSf <URL of this file> | sh -s -- --to ~/.local/bin
#
# Environment:
#   BB7_INSTALL_DIR   the directory bb7 goes into (default: $XDG_BIN_HOME, else
#                     ~/.local/bin, where dist's installer puts it too); no shell
#                     profile is changed
#   BB7_REPOSITORY    the repository whose GitHub release to use, for a fork (default:
#                     Cargo.toml's `repository`, below)
#   BB7_DOWNLOAD_URL  the folder holding the archives, for a mirror (default:
#                     $BB7_REPOSITORY/releases/download/v$VERSION; dist's
#                     bb7-installer.sh reads the same variable)
#   BB7_VERSION       the version to install (default: the one below)
# Nothing is installed unless the archive's sha256 matches; a rerun replaces the binary.
# POSIX sh (checked with dash, busybox sh and shellcheck, tests/installer_user.rs).
set -eu

VERSION="${BB7_VERSION:-0.1.0}"
# Cargo.toml's `repository` (tests/repository_url.rs keeps the two equal).
REPO_URL="${BB7_REPOSITORY:-https://github.com/bb7-dev/bb7}"
REPO_URL="${REPO_URL%/}"
DIR="${BB7_INSTALL_DIR:-}"

UNINSTALL=
say() { printf 'bb7 installer: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
# The usage text lives here rather than in the header: under `curl | sh` there is no
# file for $0 to name.
usage() {
    cat <<'EOF'
Installs the released bb7 binary (checked against the release's sha256).

usage: sh install.sh [--to DIR] [--version X.Y.Z] [--uninstall]
  --to DIR          install into DIR (default: $BB7_INSTALL_DIR, else $XDG_BIN_HOME,
                    else ~/.local/bin); no shell profile is changed
  --version X.Y.Z   the release to install (a tag vX.Y.Z is read the same)
  --uninstall       remove DIR/bb7 (and say what else bb7 keeps)
Environment: BB7_INSTALL_DIR, BB7_VERSION, BB7_REPOSITORY (a fork),
BB7_DOWNLOAD_URL (a folder holding the archives).
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --to) [ $# -ge 2 ] || die "--to needs a directory"; DIR="$2"; shift 2 ;;
        --version) [ $# -ge 2 ] || die "--version needs a version"; VERSION="$2"; shift 2 ;;
        --uninstall) UNINSTALL=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument: $1 (try --to DIR or --version X.Y.Z)" ;;
    esac
done

if [ -z "$DIR" ]; then
    DIR="${XDG_BIN_HOME:-${HOME:?set BB7_INSTALL_DIR or HOME}/.local/bin}"
fi
VERSION="${VERSION#v}"
case "$VERSION" in
    [0-9]*.[0-9]*.[0-9]*) ;;
    *) die "not a version: $VERSION (write it as X.Y.Z, e.g. 0.1.0)" ;;
esac

if [ -n "$UNINSTALL" ]; then
    if [ -f "$DIR/bb7" ]; then
        rm -f "$DIR/bb7" || die "cannot remove $DIR/bb7"
        say "removed $DIR/bb7"
    else
        say "no bb7 in $DIR (--to DIR names another directory)"
    fi
    say "kept: your settings (~/.config/bb7/), each project's .bb7/ folder, and the copy"
    say ":BB7Install made for Neovim (~/.local/share/nvim/bb7/); remove them by hand if you wish"
    exit 0
fi
BASE="${BB7_DOWNLOAD_URL:-$REPO_URL/releases/download/v$VERSION}"
BASE="${BASE%/}"

# The targets dist-workspace.toml builds; anything else has no archive.
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64|Linux-amd64) TARGET=x86_64-unknown-linux-musl ;;
    Linux-aarch64|Linux-arm64) TARGET=aarch64-unknown-linux-musl ;;
    Darwin-x86_64) TARGET=x86_64-apple-darwin ;;
    Darwin-arm64|Darwin-aarch64) TARGET=aarch64-apple-darwin ;;
    MINGW*|MSYS*|CYGWIN*|Windows*) die "bb7 does not run on Windows (it needs Unix domain sockets and a
    POSIX terminal); install it inside WSL" ;;
    *) die "no prebuilt bb7 for $(uname -s) $(uname -m); build it from source with
    cargo install --locked bb7    (needs Rust and a C compiler, see the README)" ;;
esac
ARCHIVE="bb7-$TARGET.tar.xz"
# GNU tar unpacks .tar.xz through the xz program, which slim Linux images lack; said
# before the download. (macOS's and busybox's tar read xz themselves.)
if ! command -v xz >/dev/null 2>&1 && tar --version 2>/dev/null | grep -q 'GNU tar'; then
    die "xz is needed to unpack $ARCHIVE (Debian, Ubuntu: apt-get install xz-utils; Fedora: dnf install xz)"
fi

fetch() { # URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl --proto '=https,http' -fsSL --connect-timeout 20 --retry 2 -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -T 20 -O "$2" "$1"
    else
        die "neither curl nor wget is installed"
    fi
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum -b "$1" | awk '{print $1}'
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 -b "$1" | awk '{print $1}'
    else
        die "neither sha256sum nor shasum is installed: cannot verify the download"
    fi
}

# Found before downloading: a directory that cannot be made costs no download.
if ! { mkdir -p "$DIR" 2>/dev/null && [ -w "$DIR" ]; }; then
    die "cannot write to $DIR; choose another with --to DIR"
fi
# An earlier bb7 there, named when it is replaced.
OLD=
if [ -x "$DIR/bb7" ]; then
    OLD="$("$DIR/bb7" --version 2>/dev/null | awk '{print $2}')" || OLD=
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/bb7-install.XXXXXX")"
# A signal removes the download and stops the script (a trap alone would carry on).
trap 'rm -rf "$TMP"' EXIT
trap 'rm -rf "$TMP"; exit 130' INT
trap 'rm -rf "$TMP"; exit 143' TERM HUP

say "downloading $BASE/$ARCHIVE"
fetch "$BASE/$ARCHIVE" "$TMP/$ARCHIVE" ||
    die "could not download $BASE/$ARCHIVE (offline, or no release v$VERSION for $TARGET?); nothing installed"
# The archive's own .sha256, else its line in the release's sha256.sum (dist makes both).
if fetch "$BASE/$ARCHIVE.sha256" "$TMP/$ARCHIVE.sha256" 2>/dev/null; then
    WANT="$(awk 'NR == 1 {print $1}' "$TMP/$ARCHIVE.sha256" | tr 'A-F' 'a-f')"
elif fetch "$BASE/sha256.sum" "$TMP/sha256.sum" 2>/dev/null; then
    WANT="$(awk -v f="$ARCHIVE" '$2 == f || $2 == "*" f {print $1; exit}' "$TMP/sha256.sum" | tr 'A-F' 'a-f')"
else
    die "could not download $BASE/$ARCHIVE.sha256 (nor sha256.sum): cannot verify the archive; nothing installed"
fi
GOT="$(sha256_of "$TMP/$ARCHIVE")"
case "$WANT" in
    ????????????????????????????????????????????????????????????????) ;;
    *) die "the release's checksum file holds no sha256 for $ARCHIVE; nothing installed" ;;
esac
[ "$WANT" = "$GOT" ] || die "checksum mismatch for $ARCHIVE: the release says $WANT, the download is $GOT; nothing installed"

tar -xJf "$TMP/$ARCHIVE" -C "$TMP" || die "could not unpack $ARCHIVE; nothing installed"
BIN="$TMP/bb7-$TARGET/bb7"
[ -f "$BIN" ] || die "$ARCHIVE holds no bb7-$TARGET/bb7; nothing installed"

# Copy beside the target then rename, so a running bb7 is never half overwritten.
if ! { cp "$BIN" "$DIR/.bb7.new.$$" && chmod 755 "$DIR/.bb7.new.$$" && mv -f "$DIR/.bb7.new.$$" "$DIR/bb7"; }; then
    rm -f "$DIR/.bb7.new.$$"
    die "cannot write $DIR/bb7"
fi
if [ -n "$OLD" ] && [ "$OLD" != "$VERSION" ]; then
    say "replaced bb7 $OLD with $VERSION ($TARGET) in $DIR/bb7"
else
    say "installed bb7 $VERSION ($TARGET) as $DIR/bb7"
fi
case ":${PATH:-}:" in
    *":$DIR:"*)
        # Another bb7 earlier on PATH would still be the one that runs.
        FIRST="$(command -v bb7 2>/dev/null || true)"
        if [ -n "$FIRST" ] && [ "$FIRST" != "$DIR/bb7" ]; then
            say "warning: $FIRST comes first on your PATH ($("$FIRST" --version 2>/dev/null || echo 'version unknown')); remove it, or put $DIR before it"
        fi
        ;;
    *)
        say "$DIR is not on your PATH: add it (e.g. the line export PATH=\"$DIR:\$PATH\" in ~/.profile), or run $DIR/bb7"
        FIRST="$(command -v bb7 2>/dev/null || true)"
        if [ -n "$FIRST" ]; then
            say "until then \`bb7\` runs $FIRST ($("$FIRST" --version 2>/dev/null || echo 'version unknown'))"
        fi
        ;;
esac
