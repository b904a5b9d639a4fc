#!/bin/sh
# make data: fetches the real data sets of the three examples from Debian
# packages into DATA (default data/), without installing anything system-wide:
# each package is downloaded with `apt-get download` into a temporary
# directory, unpacked there with `dpkg-deb -x`, and only its data files are
# copied. Files already in DATA are kept (run again to fill in what is missing;
# delete a file or folder to fetch it anew).
#
#   DATA/cmudict-en-us.dict          pocketsphinx-en-us   seq2seq (G2P)
#   DATA/fashion-mnist/*-ubyte       dataset-fashion-mnist caption (IDX files, gunzipped)
#   DATA/fortunes/<category>         fortunes, fortunes-min  docclass (one file per category)
set -eu
DATA=${1:-data}
mkdir -p "$DATA"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/attn-data.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
UPDATED=0

say() { printf '%s\n' "make data: $*"; }

# fetch PKG: downloads and unpacks PKG into $TMP/PKG (apt-get update once if
# apt does not know the package yet).
fetch() {
    pkg=$1
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
        if [ "$UPDATED" = 0 ]; then
            say "apt does not know $pkg yet: running apt-get update"
            apt-get update -qq || { say "apt-get update failed (are you root, is the network up?)"; return 1; }
            UPDATED=1
        fi
    fi
    mkdir -p "$TMP/$pkg"
    say "downloading $pkg"
    (cd "$TMP/$pkg" && apt-get download -qq "$pkg" 2>/dev/null) ||
        { say "apt-get download $pkg failed"; return 1; }
    dpkg-deb -x "$TMP/$pkg"/*.deb "$TMP/$pkg/root"
}

# ---- CMU pronouncing dictionary (seq2seq) ----
if [ -s "$DATA/cmudict-en-us.dict" ]; then
    say "$DATA/cmudict-en-us.dict is already there"
else
    fetch pocketsphinx-en-us
    cp "$TMP/pocketsphinx-en-us/root/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict" "$DATA/cmudict-en-us.dict.tmp"
    mv "$DATA/cmudict-en-us.dict.tmp" "$DATA/cmudict-en-us.dict"
    say "wrote $DATA/cmudict-en-us.dict ($(wc -l <"$DATA/cmudict-en-us.dict") entries)"
fi

# ---- Fashion-MNIST (caption) ----
FM="$DATA/fashion-mnist"
FM_FILES="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"
missing=0
for f in $FM_FILES; do [ -s "$FM/$f" ] || missing=1; done
if [ "$missing" = 0 ]; then
    say "$FM is already there"
else
    fetch dataset-fashion-mnist
    mkdir -p "$FM"
    for f in $FM_FILES; do
        gunzip -c "$TMP/dataset-fashion-mnist/root/usr/share/datasets/fashion-mnist/$f.gz" >"$FM/$f.tmp"
        mv "$FM/$f.tmp" "$FM/$f"
    done
    say "wrote $FM/ (4 IDX files)"
fi

# ---- fortunes by category (docclass) ----
FO="$DATA/fortunes"
if [ -d "$FO" ] && [ -n "$(ls -A "$FO" 2>/dev/null)" ]; then
    say "$FO is already there"
else
    fetch fortunes-min
    fetch fortunes
    mkdir -p "$FO.tmp"
    # the category files: not the .dat indexes, the .u8 copies, nor the offensive off/ folder
    for pkg in fortunes-min fortunes; do
        for f in "$TMP/$pkg/root/usr/share/games/fortunes/"*; do
            name=$(basename "$f")
            case "$name" in *.dat | *.u8) continue ;; esac
            [ -f "$f" ] && cp -L "$f" "$FO.tmp/$name"
        done
    done
    rm -rf "$FO" && mv "$FO.tmp" "$FO"
    say "wrote $FO/ ($(ls "$FO" | wc -l) categories)"
fi
say "done: $DATA"
