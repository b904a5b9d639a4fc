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
# OUT/seedK holds run K (its log in OUT/seedK.log; OUT/seedK.done, written when it
# finished, holds its settings). Run again on the same OUT, the script keeps every
# model whose .done names the same settings and trains only the others: a larger
# MODELS adds waves to a finished recipe, and a recipe cut short restarts at the
# wave it was in. A model of other settings (another EPOCHS, say) is never
# overwritten: the script stops and asks for another OUT. Without TEST_FILE
# (WORD<TAB>PHONEMES lines) the ensemble is scored on the dev words of the
# training list; with it, on dev and on those words too.
# Run from the repository's root after `make` (or `make build/examples/seq2seq`).
# Settings from the environment:
#   MODELS       how many models (default 4: two waves of two, 45–53 minutes
#                on a 2-core Zen 5)
#   EPOCHS       epochs of each (default 30)
#   DIRECTIONS   both (default) or left: every model left to right, the recipe
#                before right-to-left models (25.1% dev WER)
#   EXTRA_FLAGS  added to every training's flags, e.g. EXTRA_FLAGS="--epochs 1"
#                to see the whole recipe run in a few minutes
#   SEQ2SEQ      the trainer (default build/examples/seq2seq; another build
#                folder's, say)
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
bin=${SEQ2SEQ:-build/examples/seq2seq}
[ -x "$bin" ] || { echo "g2p-2007-ensemble: $bin is missing: run make first, from the repository's root" >&2; exit 2; }
mkdir -p "$out"

flags="--data g2p-2007 --fast --dropout 0.2 --epochs $epochs --patience 0 --ema 0.999 --beam 5 --threads 1"
direction_of() {  # seed
    [ "$directions" = left ] || [ $(($1 % 2)) -eq 1 ] || echo --right-to-left
}
settings_of() {  # seed: its training's settings, one line (what OUT/seedK.done holds)
    echo "$flags --seed $1 $(direction_of "$1") ${EXTRA_FLAGS:-}"
}
trained() {  # seed: whether an earlier run of the script trained it (with these
    # settings: a model of other ones is refused before any training)
    [ -r "$out/seed$1.done" ] && [ -r "$out/seed$1/seq2seq/best.safetensors" ]
}
# shellcheck disable=SC2086,SC2046  # flags, the direction and EXTRA_FLAGS split into words on purpose
train() {  # seed
    "$bin" $flags --seed "$1" $(direction_of "$1") --out "$out/seed$1" ${EXTRA_FLAGS:-} > "$out/seed$1.log" 2>&1 ||
        return
    [ -r "$out/seed$1/seq2seq/best.safetensors" ] || {
        echo "g2p-2007-ensemble: run $1 ended without a best checkpoint: no epoch finished? See $out/seed$1.log" >&2
        return 1
    }
    settings_of "$1" > "$out/seed$1.done"
}
# A model trained with other settings is never overwritten: give another OUT.
k=1
while [ $k -le "$models" ]; do
    if [ -r "$out/seed$k.done" ] && [ "$(cat "$out/seed$k.done")" != "$(settings_of $k)" ]; then
        echo "g2p-2007-ensemble: $out/seed$k was trained with other settings ($(cat "$out/seed$k.done")); give another OUT to train with these" >&2
        exit 2
    fi
    k=$((k + 1))
done
start=$(date +%s)
seed=1
members=""
kept=0
while [ $seed -le "$models" ]; do
    # A wave: seed and seed+1 side by side (the last one alone when MODELS is odd),
    # less those an earlier run of the script trained already.
    wave=""
    for k in $seed $((seed + 1)); do
        [ "$k" -le "$models" ] || continue
        members="$members${members:+,}$out/seed$k/seq2seq/best.safetensors"
        if trained "$k"; then
            echo "seed $k: trained already ($out/seed$k.done), kept" >&2
            kept=$((kept + 1))
        else
            wave="$wave $k"
        fi
    done
    if [ -n "$wave" ]; then
        echo "training seed$wave (logs in $out/seed*.log)" >&2
        pids=""
        for k in $wave; do
            rm -f "$out/seed$k.done"
            train "$k" & pids="$pids $!"
        done
        status=0
        for pid in $pids; do wait "$pid" || status=$?; done
        if [ $status -ne 0 ]; then
            echo "g2p-2007-ensemble: a training run failed; see the logs in $out/" >&2
            exit $status
        fi
    fi
    seed=$((seed + 2))
done
echo "models trained: $((models - kept)), in $(( $(date +%s) - start )) s$([ $kept -eq 0 ] || echo " ($kept kept from an earlier run)")" >&2
# With models of both directions, --ensemble proposes and rescores (ensemble.hpp).
# shellcheck disable=SC2086  # test_flag is empty or two words
"$bin" --data g2p-2007 --fast --ensemble "$members" --beam 5 $test_flag
echo "the whole recipe, training and decoding: $(( $(date +%s) - start )) s$([ $kept -eq 0 ] ||
    echo ", not counting the $kept models kept from an earlier run")" >&2
