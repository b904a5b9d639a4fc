#!/bin/sh
# The best G2P recipe within an hour on a 2-core machine (docs/examples/seq2seq.md,
# "Both directions"): MODELS W2-sized RNNs of different seeds (1, 2, …), trained two
# at a time, one core each, with an average of their weights (--ema 0.999); the odd
# seeds write the phonemes left to right, the even ones right to left
# (--right-to-left). Then all of them decode together: each direction's models
# propose the outputs of their beam of 5, and every model scores every proposal.
#
#   sh scripts/g2p-2007-ensemble.sh OUT [TEST_FILE]
#
# OUT/seedK holds run K (its log in OUT/seedK.log). Without TEST_FILE
# (WORD<TAB>PHONEMES lines) the ensemble is scored on the dev words of the
# training list; with it, on dev and on those words too.
# Run from the repository's root after `make` (or `make build/examples/seq2seq`).
# Settings from the environment:
#   MODELS       how many models (default 4: two waves of two, about 50 minutes
#                on a 2-core Zen 5)
#   EPOCHS       epochs of each (default 30)
#   DIRECTIONS   both (default) or left: every model left to right, the recipe
#                before right-to-left models (25.1% dev WER)
#   EXTRA_FLAGS  added to every training's flags, e.g. EXTRA_FLAGS="--epochs 1"
#                to see the whole recipe run in a few minutes
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
models=${MODELS:-4}
epochs=${EPOCHS:-30}
case $models in
    ''|*[!0-9]*|0) echo "g2p-2007-ensemble: MODELS must be a whole number ≥ 1, not '$models'" >&2; exit 2 ;;
esac
directions=${DIRECTIONS:-both}
case $directions in
    both|left) ;;
    *) echo "g2p-2007-ensemble: DIRECTIONS must be both or left, not '$directions'" >&2; exit 2 ;;
esac
case $epochs in
    ''|*[!0-9]*|0) echo "g2p-2007-ensemble: EPOCHS must be a whole number ≥ 1, not '$epochs'" >&2; exit 2 ;;
esac
bin=build/examples/seq2seq
[ -x "$bin" ] || { echo "g2p-2007-ensemble: $bin is missing: run make first, from the repository's root" >&2; exit 2; }
mkdir -p "$out"

# shellcheck disable=SC2086  # EXTRA_FLAGS is split into its words on purpose
train() {  # seed
    direction=""
    [ "$directions" = left ] || [ $(($1 % 2)) -eq 1 ] || direction=--right-to-left
    "$bin" --data g2p-2007 --fast --dropout 0.2 --epochs "$epochs" --patience 0 --ema 0.999 --beam 5 --threads 1 \
        --seed "$1" $direction --out "$out/seed$1" ${EXTRA_FLAGS:-} > "$out/seed$1.log" 2>&1
}
start=$(date +%s)
seed=1
members=""
while [ $seed -le "$models" ]; do
    # A wave: seed and seed+1 side by side (the last one alone when MODELS is odd).
    echo "training seed $seed$([ $seed -lt "$models" ] && echo " and $((seed + 1))") (logs in $out/seed*.log)" >&2
    train $seed & first=$!
    second=""
    if [ $seed -lt "$models" ]; then
        train $((seed + 1)) & second=$!
    fi
    status=0
    wait $first || status=$?
    [ -z "$second" ] || wait "$second" || status=$?
    if [ $status -ne 0 ]; then
        echo "g2p-2007-ensemble: a training run failed; see the logs in $out/" >&2
        exit $status
    fi
    for k in $seed $((seed + 1)); do
        [ $k -le "$models" ] || continue
        best=$out/seed$k/seq2seq/best.safetensors
        [ -r "$best" ] || { echo "g2p-2007-ensemble: run $k ended without a best checkpoint ($best): no epoch finished? See $out/seed$k.log" >&2; exit 1; }
        members="$members${members:+,}$best"
    done
    seed=$((seed + 2))
done
echo "trained $models models in $(( $(date +%s) - start )) s" >&2
# With models of both directions, --ensemble proposes and rescores (ensemble.hpp).
# shellcheck disable=SC2086  # test_flag is empty or two words
"$bin" --data g2p-2007 --fast --ensemble "$members" --beam 5 $test_flag
echo "the whole recipe, training and decoding: $(( $(date +%s) - start )) s" >&2
