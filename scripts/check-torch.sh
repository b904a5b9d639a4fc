#!/bin/sh
# make check-torch: the PyTorch reference of the three example models
# (python/attn_reference.py) against the C++ programs.
#
# 1. trains a small model of each trainer for a few seconds (seq2seq with
#    Bahdanau's attention, with Luong's general score and the Transformer, the
#    captioner with soft and with hard attention, the HAN document classifier)
#    into $OUT, each leaving model.safetensors;
# 2. each trainer's --dump-reference runs its model.safetensors on fixed
#    inputs and writes the inputs, logits and attention weights;
# 3. python/check_torch.py loads each model.safetensors with
#    load_state_dict(strict=True), runs the same inputs in float64 and compares;
#    then it applies deliberate conversion mistakes (a transposed weight, a
#    dropped bias, swapped gates, a missing tensor, the training checkpoint
#    instead of the model file) and expects each one to fail;
# 4. and the way back: torch writes the HAN's state_dict to a file, the C++
#    program loads it and dumps again, and that is checked as well; likewise
#    the Transformer given an untied output layer by torch (tie_output=0, which
#    the trainer has no flag for).
#
# Needs a python3 with torch (Debian: apt-get install python3-torch). Not part
# of `make test`. Usage: [PYTHON=python] sh scripts/check-torch.sh [BUILD_DIR] [OUT_DIR]
set -e
B=${1:-build}
OUT=${2:-$B/check-torch}

# A python with torch: $PYTHON if set, else the one on PATH, else Debian's (a
# pyenv or venv python on PATH may lack the system's packages).
PY=
for candidate in ${PYTHON:-python3 /usr/bin/python3}; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import torch' >/dev/null 2>&1; then
        PY=$candidate
        break
    fi
done
if [ -z "$PY" ]; then
    echo "check-torch: no python3 with torch found (tried: ${PYTHON:-python3 on PATH, /usr/bin/python3})." >&2
    echo "check-torch: install PyTorch, e.g. on Debian: apt-get install python3-torch" >&2
    exit 1
fi
echo "check-torch: $("$PY" -c 'import sys, torch; print(sys.executable, "with torch", torch.__version__)')"

rm -rf "$OUT"
mkdir -p "$OUT"
# name, then its flags: a few seconds of training each, on one thread, with
# the fused kernels (--fast; the references below run the readable ones). The
# sizes make the attention matrices square (W_1 of seq2seq and caption, W of
# both HAN levels), so that a transposed one loads without a shape error and
# only the numbers can tell.
train() {
    name=$1
    shift
    echo "== $name $*"
    if ! "$B/examples/$name" --out "$OUT" --threads 1 --fast "$@" >"$OUT/$name$RUN.log" 2>&1; then
        tail -20 "$OUT/$name$RUN.log" >&2
        echo "check-torch: $name failed; its output is in $OUT/$name$RUN.log" >&2
        exit 1
    fi
}
SEQ2SEQ="--data dates --train-size 3000 --epochs 2 --batch 32 \
    --embedding 16 --encoder-hidden 16 --decoder-hidden 32 --attention-dim 32"
RUN= train seq2seq $SEQ2SEQ
# Luong's general score over a 2-layer encoder with dropout between its layers
# (its own --out: the trainer's folder is seq2seq either way)
RUN=-luong train seq2seq $SEQ2SEQ --attention luong --score general --encoder-layers 2 --dropout 0.1 --out "$OUT/luong"
CAPTION="--data shapes --cell-size 8 --train-size 512 --valid-size 32 --test-size 16 --epochs 2 --beam 1 \
    --channels1 8 --channels2 16 --hidden 32 --embedding 16 --attention-dim 32"
RUN= train caption $CAPTION
# hard attention sampling from the first step, with a context layer (context.0.*)
RUN=-hard train caption $CAPTION --align hard --expected-until 0 --context-layers 1
RUN= train docclass --data needle --needle-train 512 --epochs 2 --embedding 16 --hidden 8 --attention-dim 16
# the seq2seq Transformer, tied output (the default): 2 + 2 layers of d_model 16
# with 2 heads, so that every attention projection (W_Q, W_K, W_V, W_O: 16×16)
# loads transposed without a shape error (its own --out, as Luong's); a short
# warm-up, or its 188 steps would not reach the learning rate's peak
RUN=-transformer train seq2seq --model transformer --data dates --train-size 3000 --epochs 2 --batch 32 \
    --d-model 16 --heads 2 --layers 2 --ffn 32 --warmup 40 --out "$OUT/transformer"

echo "== reference dumps"
"$B/examples/seq2seq" --out "$OUT" --dump-reference "$OUT/seq2seq-reference.safetensors"
"$B/examples/seq2seq" --out "$OUT/luong" --dump-reference "$OUT/seq2seq-luong-reference.safetensors"
"$B/examples/caption" --out "$OUT" --dump-reference "$OUT/caption-reference.safetensors"
"$B/examples/caption" --out "$OUT" --align hard --dump-reference "$OUT/caption-hard-reference.safetensors"
"$B/examples/docclass" --out "$OUT" --dump-reference "$OUT/docclass-reference.safetensors"
"$B/examples/seq2seq" --out "$OUT/transformer" --dump-reference "$OUT/seq2seq-transformer-reference.safetensors"

echo "== the way back: torch writes the HAN's state_dict, the C++ program loads it"
mkdir -p "$OUT/docclass-from-torch"
"$PY" python/check_torch.py --write-back "$OUT/docclass/model.safetensors" "$OUT/docclass-from-torch/model.safetensors"
"$B/examples/docclass" --checkpoint "$OUT/docclass-from-torch/model.safetensors" \
    --dump-reference "$OUT/docclass-from-torch-reference.safetensors"

echo "== the Transformer untied: torch gives it an output layer (tie_output=0), the C++ program loads it"
mkdir -p "$OUT/seq2seq-transformer-untied"
"$PY" python/check_torch.py --write-untied "$OUT/transformer/seq2seq/model.safetensors" \
    "$OUT/seq2seq-transformer-untied/model.safetensors"
"$B/examples/seq2seq" --checkpoint "$OUT/seq2seq-transformer-untied/model.safetensors" \
    --dump-reference "$OUT/seq2seq-transformer-untied-reference.safetensors"

echo "== python/check_torch.py"
"$PY" python/check_torch.py --mistakes \
    "$OUT/seq2seq/model.safetensors" "$OUT/seq2seq-reference.safetensors" \
    "$OUT/luong/seq2seq/model.safetensors" "$OUT/seq2seq-luong-reference.safetensors" \
    "$OUT/caption/model.safetensors" "$OUT/caption-reference.safetensors" \
    "$OUT/caption-hard/model.safetensors" "$OUT/caption-hard-reference.safetensors" \
    "$OUT/docclass/model.safetensors" "$OUT/docclass-reference.safetensors" \
    "$OUT/docclass-from-torch/model.safetensors" "$OUT/docclass-from-torch-reference.safetensors" \
    "$OUT/transformer/seq2seq/model.safetensors" "$OUT/seq2seq-transformer-reference.safetensors" \
    "$OUT/seq2seq-transformer-untied/model.safetensors" "$OUT/seq2seq-transformer-untied-reference.safetensors"
