#!/bin/sh
# Installs a released bb7 binary without Rust: downloads the archive for this machine
# from the GitHub release (the layout dist-workspace.toml makes), checks it against the
# release's .sha256 file, and puts `bb7` into a directory of your choice.
#
#   sh install.sh [--to DIR] [--version X.Y.Z]
#
# Environment:
#   BB7_INSTALL_DIR   the directory bb7 goes into (default: $CARGO_HOME/bin, else
#                     ~/.cargo/bin); no shell profile is changed
#   BB7_REPOSITORY    the repository whose GitHub release to use, for a fork (default:
#                     Cargo.toml's `repository`, below)
#   BB7_DOWNLOAD_URL  the folder holding the archives, for a mirror (default:
#                     $BB7_REPOSITORY/releases/download/v$VERSION; dist's
#                     bb7-installer.sh reads the same variable)
#   BB7_VERSION       the version to install (default: the one below)
# Nothing is installed unless the archive's sha256 matches.
set -eu

VERSION="${BB7_VERSION:-0.1.0}"
# Cargo.toml's `repository` (tests/repository_url.rs keeps the two equal).
REPO_URL="${BB7_REPOSITORY:-https://github.com/bb7-dev/bb7}"
REPO_URL="${REPO_URL%/}"
DIR="${BB7_INSTALL_DIR:-}"

say() { printf 'bb7 installer: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --to) [ $# -ge 2 ] || die "--to needs a directory"; DIR="$2"; shift 2 ;;
        --version) [ $# -ge 2 ] || die "--version needs a version"; VERSION="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" 2>/dev/null; exit 0 ;;
        *) die "unknown argument: $1 (try --to DIR or --version X.Y.Z)" ;;
    esac
done

if [ -z "$DIR" ]; then
    DIR="${CARGO_HOME:-${HOME:?set BB7_INSTALL_DIR or HOME}/.cargo}/bin"
fi
BASE="${BB7_DOWNLOAD_URL:-$REPO_URL/releases/download/v$VERSION}"
BASE="${BASE%/}"

# The targets dist-workspace.toml builds; anything else has no archive.
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64|Linux-amd64) TARGET=x86_64-unknown-linux-musl ;;
    Linux-aarch64|Linux-arm64) TARGET=aarch64-unknown-linux-musl ;;
    Darwin-x86_64) TARGET=x86_64-apple-darwin ;;
    Darwin-arm64|Darwin-aarch64) TARGET=aarch64-apple-darwin ;;
    *) die "no prebuilt bb7 for $(uname -s) $(uname -m); build it from source with
    cargo install --locked bb7    (needs Rust and a C compiler, see the README)" ;;
esac
ARCHIVE="bb7-$TARGET.tar.xz"

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

TMP="$(mktemp -d "${TMPDIR:-/tmp}/bb7-install.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT INT TERM

say "downloading $BASE/$ARCHIVE"
fetch "$BASE/$ARCHIVE" "$TMP/$ARCHIVE" ||
    die "could not download $BASE/$ARCHIVE (offline, or no release v$VERSION for $TARGET?); nothing installed"
fetch "$BASE/$ARCHIVE.sha256" "$TMP/$ARCHIVE.sha256" ||
    die "could not download $BASE/$ARCHIVE.sha256; nothing installed"

WANT="$(awk 'NR == 1 {print $1}' "$TMP/$ARCHIVE.sha256" | tr 'A-F' 'a-f')"
GOT="$(sha256_of "$TMP/$ARCHIVE")"
case "$WANT" in
    ????????????????????????????????????????????????????????????????) ;;
    *) die "$ARCHIVE.sha256 holds no sha256; nothing installed" ;;
esac
[ "$WANT" = "$GOT" ] || die "checksum mismatch for $ARCHIVE: the release says $WANT, the download is $GOT; nothing installed"

tar -xJf "$TMP/$ARCHIVE" -C "$TMP" || die "could not unpack $ARCHIVE; nothing installed"
BIN="$TMP/bb7-$TARGET/bb7"
[ -f "$BIN" ] || die "$ARCHIVE holds no bb7-$TARGET/bb7; nothing installed"

mkdir -p "$DIR" || die "cannot create $DIR"
# Copy beside the target then rename, so a running bb7 is never half overwritten.
cp "$BIN" "$DIR/.bb7.new.$$" && chmod 755 "$DIR/.bb7.new.$$" && mv -f "$DIR/.bb7.new.$$" "$DIR/bb7" ||
    { rm -f "$DIR/.bb7.new.$$"; die "cannot write $DIR/bb7"; }
say "installed bb7 $VERSION ($TARGET) as $DIR/bb7"
case ":${PATH:-}:" in
    *":$DIR:"*) ;;
    *) say "$DIR is not on your PATH: add it, or run $DIR/bb7" ;;
esac
