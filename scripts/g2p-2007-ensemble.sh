#!/bin/sh
# The best G2P recipe within an hour on a 2-core machine (docs/examples/seq2seq.md,
# "Ensembles"): two W2-sized RNNs of different seeds trained side by side, one
# core each, then decoded together with a beam of 5.
#
#   sh scripts/g2p-2007-ensemble.sh OUT [TEST_FILE]
#
# OUT/seed1 and OUT/seed2 hold the two runs (their logs in OUT/seed*.log).
# Without TEST_FILE (WORD<TAB>PHONEMES lines) the ensemble is scored on the
# dev words of the training list; with it, on dev and on those words too.
# Run from the repository's root after `make` (or `make build/examples/seq2seq`).
# EXTRA_FLAGS is added to both trainings' flags, e.g. EXTRA_FLAGS="--epochs 1"
# to see the whole recipe run in a few minutes.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: sh scripts/g2p-2007-ensemble.sh OUT [TEST_FILE]" >&2
    exit 2
fi
out=$1
test_flag=""
if [ $# -eq 2 ]; then
    [ -r "$2" ] || { echo "g2p-2007-ensemble: cannot read the test file '$2'" >&2; exit 2; }
    test_flag="--test $2"
fi
bin=build/examples/seq2seq
[ -x "$bin" ] || { echo "g2p-2007-ensemble: $bin is missing: run make first, from the repository's root" >&2; exit 2; }
mkdir -p "$out"

# shellcheck disable=SC2086  # EXTRA_FLAGS is split into its words on purpose
train() {  # seed
    "$bin" --data g2p-2007 --dropout 0.2 --epochs 36 --patience 0 --beam 5 --threads 1 --seed "$1" \
        --out "$out/seed$1" ${EXTRA_FLAGS:-} > "$out/seed$1.log" 2>&1
}
echo "training two models side by side (about 45 minutes; logs in $out/seed1.log and $out/seed2.log)" >&2
train 1 & first=$!
train 2 & second=$!
status=0
wait $first || status=$?
wait $second || status=$?
if [ $status -ne 0 ]; then
    echo "g2p-2007-ensemble: a training run failed; see $out/seed1.log and $out/seed2.log" >&2
    exit $status
fi
# shellcheck disable=SC2086  # test_flag is empty or two words
"$bin" --data g2p-2007 --ensemble "$out/seed1/seq2seq/best.safetensors,$out/seed2/seq2seq/best.safetensors" \
    --beam 5 $test_flag
