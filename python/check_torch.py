"""Checks that the PyTorch reference (attn_reference.py) reproduces a trained
attn model: it loads the model file strictly, runs the inputs of a
--dump-reference file through the model in float64, and compares the logits
and the attention weights with the ones the C++ program computed.

    python3 python/check_torch.py [--mistakes] MODEL.safetensors DUMP.safetensors [MODEL DUMP ...]
    python3 python/check_torch.py --write-back MODEL.safetensors OUT.safetensors
    python3 python/check_torch.py --write-untied TRANSFORMER.safetensors OUT.safetensors

(`make check-torch` trains small models of the three trainers and runs this;
see scripts/check-torch.sh.) Prints one line per model and case:

    seq2seq     21 tensors loaded  logits max|diff| 6.0e-07 (abs 1.7e-06)  attention max|diff| 1.4e-07  OK

and exits 1 if any difference exceeds the tolerance. --mistakes then applies
deliberate conversion mistakes, each of which must make the check fail.
--write-back loads a model file into torch and writes torch's state_dict back
(with the file's metadata): the C++ program loads that file too. --write-untied
does the same for a seq2seq Transformer with a tied output, giving it an output
layer of its own (tie_output=0, which the trainer has no flag for).

Tolerance. The C++ program computes in float32, the reference in float64 from
the same float32 weights, so the C++ numbers carry float32 rounding, growing
with the depth of the computation (an RNN step after step). The check is
absolute, |C++ − torch| ≤ 1e-5 for every attention weight (all in [0, 1]) and
≤ 1e-5 · max(1, |torch logit|) for every logit, i.e. an absolute 1e-5 for
logits up to 1 in size and a relative 1e-5 above. A wrong layout (a transposed
square weight, a dropped bias, gates in another order) moved them by 8e-5 to 8
in make check-torch's models.
"""
import os
import re
import sys

import torch

from attn_reference import build_model, read_safetensors, write_safetensors

TOLERANCE = 1e-5


def max_abs(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def logits_error(cpp, ref):
    """max over the logits of |C++ − torch| / max(1, |torch|): an absolute error for
    small logits, a relative one for large."""
    return ((cpp.double() - ref).abs() / ref.abs().clamp_min(1.0)).max().item()


def check_seq2seq(model, dump):
    logits, attention = model(dump["input.source"].long(), dump["input.lengths"].long().tolist(),
                              dump["input.target_in"].long())
    return [("", {"logits": (dump["output.logits"], logits), "attention": (dump["output.attention"], attention)}, {})]


def check_caption(model, dump, cases):
    images, words = dump["input.images"].double(), dump["input.words_in"].long()
    results = []
    for case in cases:
        read = "argmax" if case == "argmax" else "expected"
        logits, alpha, beta, where = model(images, words, read=read)
        compared = {"logits": (dump[case + ".logits"], logits), "attention": (dump[case + ".attention"], alpha),
                    "gate": (dump[case + ".gate"], beta)}
        extra = {}
        if case == "argmax":  # the location read must be the same one
            extra["locations differ"] = int((dump["argmax.location"].long() != where).sum().item())
        results.append((case, compared, extra))
    return results


def check_docclass(model, dump):
    logits, alpha, beta = model(dump["input.ids"].long(), dump["input.word_mask"].double(),
                                dump["input.sentence_mask"].double())
    return [("", {"logits": (dump["output.logits"], logits), "word attention": (dump["output.word_attention"], alpha),
                  "sentence attention": (dump["output.sentence_attention"], beta)}, {})]


def load_strictly(model_path, edit=None):
    """attn_reference.load_model, with `edit` applied to the file's tensors
    first (a deliberate mistake of a conversion, below)."""
    tensors, metadata = read_safetensors(model_path)
    if edit:
        edit(tensors)
    model = build_model(metadata)
    model.load_state_dict(tensors, strict=True)
    return model.double().eval()


def short_load_error(text):
    """torch's load_state_dict error, on one short line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    message = lines[-1] if len(lines) > 1 else " ".join(lines)  # its first line only names the module
    mismatch = re.match(r"size mismatch for (\S+): copying a param with shape torch.Size\((\[.*?\])\) from "
                        r"checkpoint, the shape in current model is torch.Size\((\[.*?\])\)", message)
    if mismatch:
        return f"size mismatch for {mismatch[1]}: {mismatch[2]} in the file, {mismatch[3]} in the model"
    keys = re.match(r"(Unexpected|Missing) key\(s\) in state_dict: (.*)\.$", message)
    if keys:
        names = keys[2].split(", ")
        return f"{keys[1].lower()} {names[0]}" + (f" and {len(names) - 1} more" if len(names) > 1 else "")
    return message


def run_name(model_path, example):
    """The trainer's folder (caption, caption-hard, ...), or the example's name;
    for seq2seq with Luong's attention, which score."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(model_path)))
    name = folder if folder.startswith(example) else example
    config = read_safetensors(model_path)[1].get("seq2seq.config", "")
    if "attention=luong" in config:
        name += "-luong-" + config.split("score=")[1].split()[0].replace("_score", "")
    if config.startswith("model=transformer"):
        name += "" if "transformer" in name else "-transformer"
        name += "-untied" if "tie_output=0" in config and "untied" not in name else ""
    return name


def mistakes_kind(model_path, example):
    """Which list of MISTAKES applies: the example's, or seq2seq-transformer."""
    config = read_safetensors(model_path)[1].get("seq2seq.config", "")
    return "seq2seq-transformer" if config.startswith("model=transformer") else example


def check(model_path, dump_path, edit=None, label=None, quiet=False):
    """Prints a line per case (none if quiet); returns (True when every one is
    within the tolerance, what failed first)."""
    dump, meta = read_safetensors(dump_path)
    example = meta.get("example", "?")
    label = label or run_name(model_path, example)
    try:
        model = load_strictly(model_path, edit)
    except Exception as e:  # a strict load that failed is the check failing, with torch's message
        message = short_load_error(str(e))
        if not quiet:
            print(f"{label:26s} strict load FAILED: {message}")
        return False, "strict load: " + message
    loaded = len(model.state_dict())
    with torch.no_grad():
        if example == "seq2seq":
            results = check_seq2seq(model, dump)
        elif example == "caption":
            results = check_caption(model, dump, meta["cases"].split())
        elif example == "docclass":
            results = check_docclass(model, dump)
        else:
            raise ValueError(f"{dump_path}: example {example!r} is not seq2seq, caption or docclass")
    ok_all, first_failure = True, ""
    for case, compared, extra in results:
        parts, ok = [], True
        for what, (cpp, ref) in compared.items():
            if tuple(cpp.shape) != tuple(ref.shape):
                parts.append(f"{what} shape {list(cpp.shape)} vs {list(ref.shape)}")
                ok = False
                continue
            error = logits_error(cpp, ref) if what == "logits" else max_abs(cpp, ref)
            parts.append(f"{what} max|diff| {error:.1e}" + (f" (abs {max_abs(cpp, ref):.1e})" if what == "logits" else ""))
            ok = ok and error <= TOLERANCE
            if error > TOLERANCE and not first_failure:
                first_failure = parts[-1]
        for what, count in extra.items():
            parts.append(f"{count} {what}")
            ok = ok and count == 0
            if count and not first_failure:
                first_failure = parts[-1]
        name = label + (f" ({case})" if case else "")
        if not quiet:
            print(f"{name:26s} {loaded} tensors loaded  " + "  ".join(parts) + ("  OK" if ok else "  FAIL"))
        ok_all = ok_all and ok
    return ok_all, first_failure


# ---- the check is shown to bite ------------------------------------------------------------------
# Mistakes a conversion of these files could make, each applied in turn to the
# tensors before the strict load: every one must make the check fail (the load
# itself, or the numbers).

def transposed(name):
    def edit(t):
        t[name] = t[name].t().contiguous()
    return f"{name} transposed", [name], edit


def bias_dropped(name):
    def edit(t):
        t[name] = torch.zeros_like(t[name])
    return f"{name} dropped (zeros)", [name], edit


def missing(name):
    def edit(t):
        del t[name]
    return f"{name} missing", [name], edit


def gates_swapped(prefix, suffix, gates, first, second):
    """Rows of gate `first` and gate `second` exchanged in every weight and bias
    of one RNN direction (a loader that assumed another gate order)."""
    names = [prefix + kind + suffix for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]

    def edit(t):
        for name in names:
            w = t[name]
            H = w.shape[0] // gates
            rows = list(range(w.shape[0]))
            rows[first * H:(first + 1) * H], rows[second * H:(second + 1) * H] = \
                rows[second * H:(second + 1) * H], rows[first * H:(first + 1) * H]
            t[name] = w[rows].contiguous()
    order = "rzn" if gates == 3 else "ifgo"  # torch's (and the library's) gate order
    return f"{prefix}*{suffix}: gates {order[first]} and {order[second]} swapped", names, edit


def swapped(first, second, suffixes=("",)):
    """Tensors `first + suffix` and `second + suffix` exchanged: same shapes, so
    the strict load passes and only the numbers can tell (two LayerNorms read in
    the wrong order, q and k chunks of an in_proj_weight taken in the wrong order)."""
    names = [p + s for s in suffixes for p in (first, second)]

    def edit(t):
        for s in suffixes:
            t[first + s], t[second + s] = t[second + s], t[first + s]
    what = ".*" if suffixes != ("",) else ""
    return f"{first}{what} and {second.rsplit('.', 1)[-1]}{what} swapped", names, edit


def heads_interleaved(prefix, heads):
    """A multi-head attention whose heads were split the wrong way: column c of
    head j read at c·h + j (interleaved) instead of j·d_k + c (blocks, as torch
    and the library): the columns of W_Q, W_K, W_V, the entries of their biases
    and the rows of W_O permuted alike. Shapes unchanged; each head then mixes
    columns of all the true heads, and the numbers change."""
    names = [prefix + n for n in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V")]

    def edit(t):
        d = t[prefix + "W_Q"].shape[1]
        d_k = d // heads
        perm = [c * heads + j for j in range(heads) for c in range(d_k)]
        for n in ("W_Q", "W_K", "W_V"):
            t[prefix + n] = t[prefix + n][:, perm].contiguous()
        for n in ("b_Q", "b_K", "b_V"):
            t[prefix + n] = t[prefix + n][perm].contiguous()
        t[prefix + "W_O"] = t[prefix + "W_O"][perm].contiguous()
    return f"{prefix}*: heads interleaved", names, edit


def untied_on_writing(embedding, output):
    """A tied model written with an output layer of its own (output.weight a copy
    of the target embedding): an unexpected tensor for the tied model."""
    def edit(t):
        t[output] = t[embedding].clone()
    return f"{output} added (tied model written untied)", [embedding], edit


MISTAKES = {
    "seq2seq": [transposed("attention.score.W_1"), transposed("attention.score.W"), transposed("attention.W_c"),
                transposed("init.weight"),
                gates_swapped("encoder.", "_l0", 3, 0, 1), gates_swapped("decoder.", "", 3, 1, 2),
                bias_dropped("output.bias"), missing("attention.score.w"), transposed("output.weight")],
    "caption": [transposed("attention.score.W_1"), gates_swapped("cell.", "", 4, 0, 1),
                bias_dropped("attention.score.b"), bias_dropped("attention.b_beta"), missing("init_c.bias"),
                transposed("attention.score.W_2")],
    "docclass": [transposed("attention.word.W"), transposed("attention.sentence.W"),
                 gates_swapped("word_rnn.", "_l0_reverse", 3, 0, 2), bias_dropped("attention.sentence.b"),
                 missing("classifier.bias"), transposed("classifier.weight")],
    # --model transformer, 2 layers of d_model 16 with 2 heads: every attention
    # projection is square (d×d), as are the LayerNorms' pairs
    "seq2seq-transformer": [
        transposed("encoder.layers.0.self_attn.W_Q"), transposed("decoder.layers.1.multihead_attn.W_O"),
        swapped("decoder.layers.1.self_attn.W_Q", "decoder.layers.1.self_attn.W_K"),
        swapped("decoder.layers.0.norm1", "decoder.layers.0.norm2", (".weight", ".bias")),
        heads_interleaved("encoder.layers.1.self_attn.", 2),
        bias_dropped("decoder.layers.1.multihead_attn.b_V"), bias_dropped("encoder.layers.0.linear1.bias"),
        missing("decoder.layers.0.multihead_attn.W_K"), transposed("encoder.layers.1.linear1.weight"),
        bias_dropped("output.bias"), transposed("output.weight")],
}


def check_mistakes(model_path, dump_path):
    """True when every deliberate mistake makes the check fail."""
    example = read_safetensors(dump_path)[1].get("example", "?")
    tensors, metadata = read_safetensors(model_path)
    name = run_name(model_path, example) + ":"
    caught_all = True
    mistakes = list(MISTAKES.get(mistakes_kind(model_path, example), []))
    if "tie_output=1" in metadata.get("seq2seq.config", ""):
        mistakes.append(untied_on_writing("target_embedding.weight", "output.weight"))
    for title, names, edit in mistakes:
        if not all(name in tensors for name in names):
            continue  # a tensor this configuration does not have
        square = all(tensors[n].dim() == 2 and tensors[n].shape[0] == tensors[n].shape[1] for n in names)
        ok, failure = check(model_path, dump_path, edit=edit, quiet=True)
        note = " (square)" if "transposed" in title and square else ""
        print(f"  {name:27s} {title + note:56s} {'NOT CAUGHT' if ok else 'caught: ' + failure}")
        caught_all = caught_all and not ok
    # The training checkpoint beside the model file is no model file: its
    # optimizer.* tensors are not the model's, and a strict load must say so.
    checkpoint = os.path.join(os.path.dirname(model_path), "best.safetensors")
    if os.path.exists(checkpoint):
        names = read_safetensors(checkpoint)[0]
        optimizer = sum(name.startswith("optimizer.") for name in names)
        ok, failure = check(checkpoint, dump_path, quiet=True)
        title = f"best.safetensors ({optimizer} of {len(names)} tensors optimizer.*)"
        print(f"  {name:27s} {title:56s} {'NOT CAUGHT' if ok else 'caught: ' + failure}")
        caught_all = caught_all and not ok
    return caught_all


def write_back(model_path, out_path):
    """The way back: the model loaded into torch, its state_dict written by torch
    (write_safetensors) with the file's metadata, for the C++ program to load."""
    metadata = read_safetensors(model_path)[1]
    write_safetensors(out_path, load_strictly(model_path).state_dict(), metadata)
    print(f"wrote {out_path} from torch's state_dict")
    return 0


def write_untied(model_path, out_path, seed=0):
    """A Transformer with an output layer of its own (tie_output=0), written by
    torch from a tied one: output.weight = the target embedding plus noise,
    output.bias random (both N(0, 0.1²), torch.manual_seed(seed)), everything
    else as loaded. The trainer has no flag for it; the C++ program loads this
    file and dumps, and the untied path of both implementations is checked."""
    tensors, metadata = read_safetensors(model_path)
    config = metadata["seq2seq.config"]
    if not config.startswith("model=transformer") or "tie_output=1" not in config.split():
        raise ValueError(f"{model_path}: not a tied transformer ({config})")
    metadata = dict(metadata, **{"seq2seq.config": config.replace("tie_output=1", "tie_output=0")})
    model = build_model(metadata)
    generator = torch.Generator().manual_seed(seed)
    embedding = tensors["target_embedding.weight"]
    tensors["output.weight"] = embedding + 0.1 * torch.randn(embedding.shape, generator=generator)
    tensors["output.bias"] = 0.1 * torch.randn(embedding.shape[0], generator=generator)
    model.load_state_dict(tensors, strict=True)
    write_safetensors(out_path, model.state_dict(), metadata)
    print(f"wrote {out_path} from torch's state_dict (tie_output=0)")
    return 0


def main(argv):
    if argv[:1] == ["--write-back"] and len(argv) == 3:
        return write_back(argv[1], argv[2])
    if argv[:1] == ["--write-untied"] and len(argv) == 3:
        return write_untied(argv[1], argv[2])
    mistakes = "--mistakes" in argv
    argv = [a for a in argv if a != "--mistakes"]
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__.strip().split("\n\n")[1])
        return 2
    pairs = [(argv[i], argv[i + 1]) for i in range(0, len(argv), 2)]
    results = [check(model, dump)[0] for model, dump in pairs]
    print(f"tolerance {TOLERANCE:g} (logits: of |diff| / max(1, |logit|); attention: of |diff|); "
          + ("all OK" if all(results) else f"{results.count(False)} of {len(results)} models FAILED"))
    bites = True
    if mistakes and not all(results):
        # a mistake may then cancel the one that made the check fail (a weight
        # transposed twice), which would say nothing about the check
        print("deliberate mistakes not tried: the check fails without them")
    elif mistakes:
        print("deliberate mistakes in the conversion (each must make the check fail):")
        bites = all([check_mistakes(model, dump) for model, dump in pairs])
        print("every mistake caught" if bites else "SOME MISTAKES WERE NOT CAUGHT: the check is too weak")
    return 0 if all(results) and bites else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
