"""PyTorch reference of the three example models of attn (seq2seq with its RNN
or its Transformer, caption, docclass), and a reader for the safetensors files
the trainers write.

    from attn_reference import load_model
    model, meta = load_model("out/seq2seq/model.safetensors")   # strict load
    # model is a torch.nn.Module; its state_dict has exactly the file's keys

Each trainer writes OUT/NAME/model.safetensors: the model's state_dict alone
(no optimiser state) and, as metadata, what it takes to rebuild the model
(its sizes, its vocabulary). load_model() builds the matching module below
from that metadata and loads the file with load_state_dict(strict=True): a
missing, unexpected or mis-shaped tensor raises.

Weight layouts. No tensor is transposed or reshaped on loading, because the
library stores every weight the way torch uses it:

    nn.Linear        weight [out, in], bias [out]      y = x Wᵀ + b  (F.linear)
    nn.Embedding     weight [V, D]                     row v is the vector of id v
    nn.Conv2d        weight [O, C, kh, kw], bias [O]
    nn.GRU/GRUCell   weight_ih [3H, I], weight_hh [3H, H], biases [3H], gates r, z, n
    nn.LSTMCell      weight_ih [4H, I], weight_hh [4H, H], biases [4H], gates i, f, g, o
    nn.LayerNorm     weight [d], bias [d]
    nn.TransformerEncoderLayer / DecoderLayer (post-LN, ReLU)
                     self_attn.*, multihead_attn.* (below), linear1, linear2, norm1..3

and the attention modules, which have no torch counterpart, are written here
with the library's parameter names and shapes, every matrix applied as
F.linear applies a Linear weight (row = position: x [.., in] → x Wᵀ [.., out]):

    additive_score      W_1 [d_w, d_q], W_2 [d_w, d_k], b [d_w], w [d_w]
                        e = tanh(q W_1ᵀ + k W_2ᵀ + b) · w
    general_score       W [d_k, d_q]                      e = (q Wᵀ) · k
    luong_attention     score, W_c [d_s, d_h + d_s]       h̃ = tanh([c ; s] W_cᵀ)
    constant_query_self_attention
                        W [d_w, d_k], b [d_w], w [d_w]
                        e = tanh(k Wᵀ + b) · w
    doubly_stochastic_soft_attention
                        score (an additive_score, query h, keys a), w_beta [d_h], b_beta [1]
                        β = σ(h · w_beta + b_beta)

    multi_head_attention (the Transformer's self_attn, multihead_attn)
                        W_Q, W_K, W_V [d, d], W_O [d, d], b_Q, b_K, b_V, b_O [d]:
                        the catalog's XW form (d_in×d_out, column block j = head j),
                        applied as x W + b (the one exception to x Wᵀ above):
                        torch's in_proj_weight is [W_Qᵀ; W_Kᵀ; W_Vᵀ] and its
                        out_proj.weight W_Oᵀ. The file is still loaded as it is;
                        LibraryMultiheadAttention.forward transposes, in one place.

A square weight (W_1 when d_q = d_w, seq2seq's init.weight [S, 2H] when
S = 2H, ...) loads transposed without any shape error; only the outputs tell.
That is what check_torch.py checks: the same inputs through both
implementations.

Only the standard library and torch are needed; the reader below replaces
the safetensors package (which is not in Debian).
"""
import array
import json
import math
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# ---- safetensors ----------------------------------------------------------------------------
# offset 0   8 bytes  N, the header's length, unsigned 64-bit little-endian
# offset 8   N bytes  the header: JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
#                     "__metadata__": {str: str}}
# offset 8+N          the data: each tensor's bytes, row-major, little-endian, at data_offsets

_DTYPES = {
    "F64": (torch.float64, 8), "F32": (torch.float32, 4), "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2), "I64": (torch.int64, 8), "I32": (torch.int32, 4),
    "I16": (torch.int16, 2), "I8": (torch.int8, 1), "U8": (torch.uint8, 1), "BOOL": (torch.bool, 1),
}


def read_safetensors(path):
    """(tensors, metadata): name → torch.Tensor (a copy, the file's dtype) and str → str."""
    if sys.byteorder != "little":
        raise ValueError("this reader assumes a little-endian machine, as the format does")
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, too short for the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ValueError(f"{path}: header length {n} runs past the end of the file ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = memoryview(blob)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors, covered = {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name!r}: dtype {info['dtype']} is not read here")
        dtype, size = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        shape = info["shape"]
        if begin != covered or end > len(data) or end - begin != math.prod(shape) * size:
            raise ValueError(f"{path}: tensor {name!r}: data_offsets [{begin}, {end}] do not fit "
                             f"{info['dtype']} {shape} after byte {covered}")
        covered = end
        raw = bytearray(data[begin:end])  # a copy: the tensor owns its bytes
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(shape)
    if covered != len(data):
        raise ValueError(f"{path}: bytes {covered} to {len(data)} of the data belong to no tensor")
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes name → tensor (stored as F32, row-major, in name order) and str → str
    metadata: a file the library's load_safetensors and load_model read."""
    if sys.byteorder != "little":
        raise ValueError("this writer assumes a little-endian machine, as the format does")
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        data = array.array("f", tensors[name].detach().to(torch.float32).flatten().tolist()).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # the data starts at a multiple of 8
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ---- pieces the three models share -------------------------------------------------------------

def masked_softmax(scores, keep):
    """softmax over the last axis among the kept positions; a row with none
    kept gives zeros (the library's rule: never NaN, never uniform over padding)."""
    if keep is None:
        return torch.softmax(scores, -1)
    keep = keep.bool().expand_as(scores)
    masked = scores.masked_fill(~keep, float("-inf"))
    top = masked.amax(-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(masked - top) * keep
    total = e.sum(-1, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(e))


def run_rnn(rnn, x, lengths):
    """A batch_first nn.GRU over padded sequences of the given lengths, as
    pack_padded_sequence does it: padded steps output zeros, h_n is each
    sequence's state after its own last step. A length of 0 (a padded
    sentence) is allowed, unlike in pack_padded_sequence: its outputs are
    zeros and its state h0 = 0, which is what the library does."""
    B, T = x.shape[:2]
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    D = 2 if rnn.bidirectional else 1
    out = x.new_zeros(B, T, D * rnn.hidden_size)
    h_n = x.new_zeros(rnn.num_layers * D, B, rnn.hidden_size)
    alive = (lengths > 0).nonzero().flatten()
    if len(alive):
        packed = pack_padded_sequence(x[alive], lengths[alive], batch_first=True, enforce_sorted=False)
        o, h = rnn(packed)
        out[alive] = pad_packed_sequence(o, batch_first=True, total_length=T)[0]
        h_n[:, alive] = h
    return out, h_n


class AdditiveScore(nn.Module):
    """additive_score (Bahdanau et al. 2015): e_ij = wᵀ tanh(W_1 q_i + W_2 k_j + b).
    W_1 [d_w, d_q] and W_2 [d_w, d_k] are applied as F.linear applies a Linear
    weight: the projected queries are Q W_1ᵀ. Without a bias, b is absent from
    the state_dict (Bahdanau's decoder)."""

    def __init__(self, query_dim, key_dim, width, bias=True):
        super().__init__()
        self.W_1 = nn.Parameter(torch.empty(width, query_dim))
        self.W_2 = nn.Parameter(torch.empty(width, key_dim))
        self.b = nn.Parameter(torch.empty(width)) if bias else None
        self.w = nn.Parameter(torch.empty(width))

    def project_keys(self, keys):                  # keys B×n×d_k → K W_2ᵀ  B×n×d_w
        return F.linear(keys, self.W_2)

    def score_projected(self, queries, projected):  # queries B×m×d_q → e B×m×n
        h = F.linear(queries, self.W_1).unsqueeze(2) + projected.unsqueeze(1)  # B×m×n×d_w
        if self.b is not None:
            h = h + self.b
        return torch.tanh(h) @ self.w


class ConstantQuerySelfAttention(nn.Module):
    """constant_query_self_attention (HAN's word and sentence attention):
    u_l = tanh(W k_l + b), e_l = wᵀ u_l, a = softmax(e), c = Σ_l a_l k_l.
    W [d_w, d_k] applied as F.linear(k, W, b)."""

    def __init__(self, key_dim, width):
        super().__init__()
        self.W = nn.Parameter(torch.empty(width, key_dim))
        self.b = nn.Parameter(torch.empty(width))
        self.w = nn.Parameter(torch.empty(width))

    def forward(self, keys, keep):                 # keys B×n×d, keep B×n → c B×d, a B×n
        keys = keys * keep.unsqueeze(-1)           # padding zeroed before W reads it
        a = masked_softmax(torch.tanh(F.linear(keys, self.W, self.b)) @ self.w, keep)
        return (a.unsqueeze(1) @ keys).squeeze(1), a


# ---- seq2seq: encoder–decoder with Bahdanau attention ------------------------------------------

class BahdanauAttention(nn.Module):
    """bahdanau_attention: e_tj = vᵀ tanh(W_a s_t + U_a h̄_j) (score.W_1 = W_a,
    score.W_2 = U_a, score.w = v, no bias), α_t = masked softmax, c_t = Σ_j α_tj h̄_j."""

    def __init__(self, state_dim, encoder_dim, width):
        super().__init__()
        self.score = AdditiveScore(state_dim, encoder_dim, width, bias=False)

    def forward(self, s, states, projected, keep):  # s B×S, states B×n×2H → c B×2H, α B×n
        alpha = masked_softmax(self.score.score_projected(s.unsqueeze(1), projected).squeeze(1), keep)
        return (alpha.unsqueeze(1) @ states).squeeze(1), alpha


class GeneralScore(nn.Module):
    """general_score (Luong et al. 2015): e_ij = k_jᵀ W q_i, W [d_k, d_q]: E = Q Wᵀ Kᵀ."""

    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.W = nn.Parameter(torch.empty(key_dim, query_dim))

    def forward(self, queries, keys):              # B×m×d_q, B×n×d_k → B×m×n
        return F.linear(queries, self.W) @ keys.transpose(1, 2)


class DotScore(nn.Module):
    """dot_score qᵀk, or scaled_dot_score qᵀk / √d_k: no parameters."""

    def __init__(self, scaled):
        super().__init__()
        self.scaled = scaled

    def forward(self, queries, keys):
        e = queries @ keys.transpose(1, 2)
        return e / math.sqrt(keys.shape[-1]) if self.scaled else e


class LuongAttention(nn.Module):
    """luong_attention with the global (soft) alignment: e_tj = score(s_t, h̄_j),
    α_t = masked softmax, c_t = Σ_j α_tj h̄_j, h̃_t = tanh(W_c [c_t ; s_t]),
    W_c [S, 2H + S] applied as F.linear([c ; s], W_c)."""

    def __init__(self, state_dim, encoder_dim, score, width):
        super().__init__()
        if score == "additive_score":  # Luong's concat: with a bias
            self.score = AdditiveScore(state_dim, encoder_dim, width, bias=True)
        elif score == "general_score":
            self.score = GeneralScore(state_dim, encoder_dim)
        elif score in ("dot_score", "scaled_dot_score"):
            self.score = DotScore(score == "scaled_dot_score")
        else:
            raise NotImplementedError(f"seq2seq: this reference has the additive, general, dot and scaled scores "
                                      f"for Luong's attention, not {score}")
        self.W_c = nn.Parameter(torch.empty(state_dim, encoder_dim + state_dim))

    def forward(self, s, states, keep):            # s B×S, states B×n×2H → h̃ B×S, α B×n
        q = s.unsqueeze(1)
        if isinstance(self.score, AdditiveScore):
            e = self.score.score_projected(q, self.score.project_keys(states))
        else:
            e = self.score(q, states)
        alpha = masked_softmax(e.squeeze(1), keep)
        c = (alpha.unsqueeze(1) @ states).squeeze(1)
        return torch.tanh(F.linear(torch.cat([c, s], -1), self.W_c)), alpha


def parse_key_values(text):
    return dict(item.split("=", 1) for item in text.split())


# The short names a seq2seq config may give a score or an alignment (the
# --score and --align flags, attention/by_id.cpp's table), by catalog id: the
# file keeps the names the run was given, the C++ program reads either.
_SCORE_IDS = {"additive": "additive_score", "concat": "additive_score", "dot": "dot_score",
              "scaled": "scaled_dot_score", "general": "general_score"}
_ALIGN_IDS = {"global": "soft_alignment", "soft": "soft_alignment"}


def canonical_seq2seq_config(c):
    """The RNN seq2seq config with catalog ids, as ModelConfig::canonical()
    (examples/seq2seq/seq2seq_model.cpp): the older --attention additive|dot|general|concat|scaled
    (the score's name, meaning Luong's form for all but additive), short score and alignment names."""
    c = dict(c)
    if c.get("attention") == "additive":
        c["attention"], c["score"] = "bahdanau", "additive_score"
    elif c.get("attention") in ("dot", "general", "concat", "scaled"):
        c["attention"], c["score"] = "luong", c["attention"]
    c["score"] = _SCORE_IDS.get(c.get("score", "additive_score"), c.get("score", "additive_score"))
    c["align"] = _ALIGN_IDS.get(c.get("align", "soft_alignment"), c.get("align", "soft_alignment"))
    return c


class Seq2Seq(nn.Module):
    """examples/seq2seq/seq2seq_model.hpp, with --attention bahdanau (the default)
    or luong with the global alignment (--align soft_alignment):
        h̄ = bi-GRU(emb(x))                          (padding rows 0)
        s_0 = tanh(init([h→_last ; h←_first]))
        s_t = GRUCell([emb(y_{t−1}) ; f_{t−1}], s_{t−1})   (f_0 = 0; without input feeding: emb alone)
        bahdanau  c_t, α_t = attention(s_t, h̄)   logits_t = output([s_t ; c_t])   f_t = c_t
        luong     h̃_t, α_t = attention(s_t, h̄)   logits_t = output(h̃_t)          f_t = h̃_t"""

    def __init__(self, config):
        super().__init__()
        c = canonical_seq2seq_config(parse_key_values(config))
        E, H, S, A = (int(c[k]) for k in ("embedding", "encoder_hidden", "decoder_hidden", "attention_dim"))
        self.luong = c["attention"] == "luong"
        if self.luong and c["align"] != "soft_alignment":
            raise NotImplementedError(f"seq2seq: this reference has Luong's global alignment only, not {c['align']}")
        feed = S if self.luong else 2 * H
        self.input_feeding = c["input_feeding"] == "1"
        self.source_embedding = nn.Embedding(int(c["source_vocab"]), E, padding_idx=0)
        self.encoder = nn.GRU(E, H, num_layers=int(c.get("encoder_layers", 1)), batch_first=True, bidirectional=True)
        self.init = nn.Linear(2 * H, S)
        self.target_embedding = nn.Embedding(int(c["target_vocab"]), E, padding_idx=0)
        self.decoder = nn.GRUCell(E + (feed if self.input_feeding else 0), S)
        if self.luong:
            self.attention = LuongAttention(S, 2 * H, c["score"], A)
        else:
            self.attention = BahdanauAttention(S, 2 * H, A)
        self.output = nn.Linear(S if self.luong else S + 2 * H, int(c["target_vocab"]))

    def forward(self, source, lengths, target_in):
        """source B×n ids, lengths B, target_in B×T ids → logits B×T×V, attention B×T×n."""
        states, h_n = run_rnn(self.encoder, self.source_embedding(source), lengths)
        keep = torch.arange(source.shape[1]) < torch.as_tensor(lengths).unsqueeze(1)  # B×n
        s = torch.tanh(self.init(torch.cat([h_n[-2], h_n[-1]], -1)))  # the top layer's final states
        feed = states.new_zeros(source.shape[0], s.shape[1] if self.luong else states.shape[2])
        if not self.luong:
            projected = self.attention.score.project_keys(states)  # U_a h̄, once
        logits, alphas = [], []
        for t in range(target_in.shape[1]):
            x = self.target_embedding(target_in[:, t])
            if self.input_feeding:
                x = torch.cat([x, feed], -1)
            s = self.decoder(x, s)
            if self.luong:
                feed, alpha = self.attention(s, states, keep)  # h̃_t
                logits.append(self.output(feed))
            else:
                feed, alpha = self.attention(s, states, projected, keep)  # c_t
                logits.append(self.output(torch.cat([s, feed], -1)))
            alphas.append(alpha)
        return torch.stack(logits, 1), torch.stack(alphas, 1)


# ---- seq2seq --model transformer: Vaswani et al. (2017) -----------------------------------------

class LibraryMultiheadAttention(nn.Module):
    """The library's MultiHeadAttention with biases (attention/multi_head.hpp, entry
    40), standing in for torch.nn.MultiheadAttention inside torch's
    TransformerEncoderLayer / TransformerDecoderLayer: the same call, computed by
    torch's own F.multi_head_attention_forward, but with the library's parameter
    names, so that a model file loads with strict=True as it is.

    The library writes its projections in the XW form of the catalog (d_in×d_out,
    multiplied from the right; column block j of W_Q is head j's), torch's
    MultiheadAttention stores them as Linear weights (out×in). This forward is the
    ONE place where the two are mapped onto each other:

        library (state_dict)          torch.nn.MultiheadAttention
        W_Q, W_K, W_V   d×d           in_proj_weight = [W_Qᵀ; W_Kᵀ; W_Vᵀ]  3d×d
                                      (here passed apart: q/k/v_proj_weight = W_Qᵀ, W_Kᵀ, W_Vᵀ)
        b_Q, b_K, b_V   d             in_proj_bias   = [b_Q; b_K; b_V]     3d
        W_O             d×d           out_proj.weight = W_Oᵀ               d×d
        b_O             d             out_proj.bias   = b_O

    Heads: torch splits the projected d columns into h blocks of d/h, head j the
    j-th, as the library does. Keeps the weights of its last call, every head's
    (B×h×m×n), in .last_weights: the layers ask for none (need_weights=False)."""

    batch_first = True
    # "q, k and v have projections of their own": true here (the weights are
    # passed apart), and it keeps torch's fused fast path, which reads
    # in_proj_weight, out of the layers in evaluation mode.
    _qkv_same_embed_dim = False

    def __init__(self, d_model, heads):
        super().__init__()
        self.embed_dim, self.num_heads = d_model, heads
        self.W_Q = nn.Parameter(torch.empty(d_model, d_model))
        self.W_K = nn.Parameter(torch.empty(d_model, d_model))
        self.W_V = nn.Parameter(torch.empty(d_model, d_model))
        self.W_O = nn.Parameter(torch.empty(d_model, d_model))
        self.b_Q = nn.Parameter(torch.empty(d_model))
        self.b_K = nn.Parameter(torch.empty(d_model))
        self.b_V = nn.Parameter(torch.empty(d_model))
        self.b_O = nn.Parameter(torch.empty(d_model))
        self.last_weights = None

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, **unused):
        # batch first (B×m×d) in, torch's functional form is sequence first (m×B×d)
        q, k, v = (x.transpose(0, 1) for x in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            q, k, v, self.embed_dim, self.num_heads,
            in_proj_weight=None, in_proj_bias=torch.cat([self.b_Q, self.b_K, self.b_V]),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
            out_proj_weight=self.W_O.t(), out_proj_bias=self.b_O, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=True, attn_mask=attn_mask,
            use_separate_proj_weight=True,
            q_proj_weight=self.W_Q.t(), k_proj_weight=self.W_K.t(), v_proj_weight=self.W_V.t(),
            average_attn_weights=False)
        self.last_weights = weights  # B×h×m×n
        out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, weights.mean(1) if average_attn_weights else weights


def sinusoidal_positions(n, d, dtype=torch.float64):
    """Vaswani et al. (2017) §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), n×d (computed in float64)."""
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)           # n×1
    two_i = torch.arange(0, d, 2, dtype=torch.float64)                 # d/2
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(dtype)


def _transformer_layer(kind, d_model, heads, ffn):
    """torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (post-LN, ReLU,
    batch first, no dropout) with their attentions replaced by the library's
    (LibraryMultiheadAttention): names self_attn.*, multihead_attn.*, linear1/2,
    norm1/2/3, as the library's layers register them."""
    layer = kind(d_model, heads, dim_feedforward=ffn, dropout=0.0, activation="relu",
                 batch_first=True, norm_first=False)
    layer.self_attn = LibraryMultiheadAttention(d_model, heads)
    if hasattr(layer, "multihead_attn"):
        layer.multihead_attn = LibraryMultiheadAttention(d_model, heads)
    return layer


class TransformerSeq2Seq(nn.Module):
    """examples/seq2seq/transformer_model.hpp, --model transformer:
        X_0 = √d · E_s[x] + PE          M = N × TransformerEncoderLayer(X_0; source padding)
        Y_0 = √d · E_t[y_in] + PE       Y = N × TransformerDecoderLayer(Y_0, M; causal ∧ target padding,
                                                                          source padding)
        logits = Y E_tᵀ (tie_output=1, the default) or Y W_outᵀ + b (tie_output=0: output.*)
    The attention returned is what the C++ forward returns: the last decoder
    layer's cross-attention, the mean of its heads, B×T×n.

    torch.nn.TransformerEncoder / TransformerDecoder without a final norm
    (torch.nn.Transformer adds one to each; the post-LN library has none) give
    the names encoder.layers.i.*, decoder.layers.i.*; the only names that are
    not torch's are the attentions' (LibraryMultiheadAttention)."""

    def __init__(self, config):
        super().__init__()
        c = parse_key_values(config)
        if c.get("model") != "transformer":
            raise ValueError(f"seq2seq: not a transformer config: {config!r}")
        d, h, N, ffn = (int(c[k]) for k in ("d_model", "heads", "layers", "ffn"))
        self.d_model = d
        self.tied = c.get("tie_output", "1") == "1"
        self.source_embedding = nn.Embedding(int(c["source_vocab"]), d, padding_idx=0)
        self.target_embedding = nn.Embedding(int(c["target_vocab"]), d, padding_idx=0)
        self.encoder = nn.TransformerEncoder(_transformer_layer(nn.TransformerEncoderLayer, d, h, ffn), N,
                                             enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(_transformer_layer(nn.TransformerDecoderLayer, d, h, ffn), N)
        self.output = None if self.tied else nn.Linear(d, int(c["target_vocab"]))

    def embed(self, embedding, ids):               # ids B×L → √d · E[ids] + PE   B×L×d
        x = embedding(ids) * math.sqrt(self.d_model)
        return x + sinusoidal_positions(ids.shape[1], self.d_model, x.dtype)

    def forward(self, source, lengths, target_in):
        """source B×n ids, lengths B, target_in B×T ids → logits B×T×V, attention B×T×n.
        Masks in torch's convention, True = hidden."""
        n, T = source.shape[1], target_in.shape[1]
        source_padding = torch.arange(n) >= torch.as_tensor(lengths).unsqueeze(1)              # B×n
        # the target's real positions: every one up to its last non-<pad> (<s> and the tokens)
        real = target_in != 0
        last = torch.where(real, torch.arange(T).expand_as(target_in), torch.full_like(target_in, -1)).amax(1)
        target_padding = torch.arange(T) > last.unsqueeze(1)                                   # B×T
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)                    # key j > query i
        memory = self.encoder(self.embed(self.source_embedding, source), src_key_padding_mask=source_padding)
        y = self.decoder(self.embed(self.target_embedding, target_in), memory, tgt_mask=causal,
                         tgt_key_padding_mask=target_padding, memory_key_padding_mask=source_padding)
        logits = F.linear(y, self.target_embedding.weight) if self.tied else self.output(y)
        return logits, self.decoder.layers[-1].multihead_attn.last_weights.mean(1)


# ---- caption: Show, Attend and Tell ----------------------------------------------------------

class DoublyStochasticSoftAttention(nn.Module):
    """doubly_stochastic_soft_attention: e_ti = wᵀ tanh(W_1 h_{t−1} + W_2 a_i + b)
    (score, Xu et al.'s W_h, W_a, b_a, v), α_t = softmax(e_t), β_t = σ(w_βᵀ h_{t−1} + b_β)."""

    def __init__(self, annotation_dim, hidden_dim, width):
        super().__init__()
        self.score = AdditiveScore(hidden_dim, annotation_dim, width, bias=True)
        self.w_beta = nn.Parameter(torch.empty(hidden_dim))
        self.b_beta = nn.Parameter(torch.empty(1))

    def gate(self, h):                              # h B×d_h → β B×1
        return torch.sigmoid((h @ self.w_beta).unsqueeze(-1) + self.b_beta)


def grid_position_code(h, w, D, dtype):
    """The captioner's fixed 2-D sinusoidal code, h·w×D: channels [0, D/2) the
    row y, [D/2, D) the column x; code[2i] = sin(p·ω_i), code[2i+1] = cos(p·ω_i),
    ω_i = 100^(−i/(D/4))."""
    code = torch.zeros(h * w, D, dtype=torch.float64)
    quarter = max(D // 4, 1)
    for y in range(h):
        for x in range(w):
            for c in range(0, D - 1, 2):
                row = c < D // 2
                i = (c if row else c - D // 2) // 2
                omega = 100.0 ** (-i / quarter)
                pos = y if row else x
                code[y * w + x, c] = math.sin(pos * omega)
                code[y * w + x, c + 1] = math.cos(pos * omega)
    return code.to(dtype)


class Captioner(nn.Module):
    """examples/caption/caption_model.hpp:
        a = conv→ReLU→pool→conv→ReLU→pool(image) (+ context convs) as B×L×D, + position code
        h_0 = init_h(ā), c_0 = init_c(ā)
        α_t = softmax(e_t), β_t: the attention above, queried by h_{t−1}
        ẑ_t = β_t Σ_i α_ti a_i              (soft; hard/Gumbel read with the expected context)
              β_t a_argmax α_t               (hard/Gumbel read with the argmax)
        h_t, c_t = LSTMCell([emb(y_{t−1}) ; ẑ_t], (h_{t−1}, c_{t−1}))
        logits_t = out([h_t ; ẑ_t ; emb(y_{t−1})])"""

    def __init__(self, config):
        super().__init__()
        c = parse_key_values(config)
        n = {k: int(float(v)) for k, v in c.items() if k not in ("temperature", "soft_probability")}
        C1, D, Hd, E, A, V = n["channels1"], n["channels2"], n["hidden"], n["embedding"], n["attention"], n["vocab"]
        self.position_code = n["position_code"] != 0
        self.stochastic = n["hard"] != 0 or n["gumbel"] != 0
        self.conv1 = nn.Conv2d(1, C1, 3, padding=1)
        self.conv2 = nn.Conv2d(C1, D, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        if n["context_layers"] > 0:  # registered only when there are some, as in the library
            layers = []
            for _ in range(n["context_layers"]):
                layers += [nn.Conv2d(D, D, 3, padding=1), nn.ReLU()]
            self.context = nn.Sequential(*layers)
        else:
            self.context = None
        self.init_h = nn.Linear(D, Hd)
        self.init_c = nn.Linear(D, Hd)
        self.attention = DoublyStochasticSoftAttention(D, Hd, A)
        self.embed = nn.Embedding(V, E)
        self.cell = nn.LSTMCell(E + D, Hd)
        self.out = nn.Linear(Hd + D + E, V)

    def encode(self, images):                      # B×1×H×W → a B×L×D
        x = self.pool(F.relu(self.conv1(images)))
        x = self.pool(F.relu(self.conv2(x)))
        if self.context is not None:
            x = self.context(x)
        B, D, gh, gw = x.shape
        a = x.reshape(B, D, gh * gw).transpose(1, 2)
        if self.position_code:
            a = a + grid_position_code(gh, gw, D, a.dtype)
        return a

    def forward(self, images, words_in, read="expected"):
        """images B×1×H×W, words_in B×T (the decoder's input words) → logits B×T×V,
        α B×T×L, β B×T, locations B×T (read = "argmax" only, else None)."""
        a = self.encode(images)
        mean = a.mean(1)
        h, c = self.init_h(mean), self.init_c(mean)
        projected = self.attention.score.project_keys(a)
        logits, alphas, betas, locations = [], [], [], []
        for t in range(words_in.shape[1]):
            emb = self.embed(words_in[:, t])
            alpha = torch.softmax(self.attention.score.score_projected(h.unsqueeze(1), projected).squeeze(1), -1)
            beta = self.attention.gate(h)
            if read == "argmax":
                where = alpha.argmax(-1)
                z = beta * a[torch.arange(a.shape[0]), where]
                locations.append(where)
            else:
                z = beta * (alpha.unsqueeze(1) @ a).squeeze(1)
            h, c = self.cell(torch.cat([emb, z], -1), (h, c))
            logits.append(self.out(torch.cat([h, z, emb], -1)))
            alphas.append(alpha)
            betas.append(beta.squeeze(-1))
        return (torch.stack(logits, 1), torch.stack(alphas, 1), torch.stack(betas, 1),
                torch.stack(locations, 1) if locations else None)


# ---- docclass: hierarchical attention network ---------------------------------------------------

class HierarchicalAttention(nn.Module):
    """hierarchical_attention: a constant-query attention over the words of each
    sentence (word: W_w, b_w, u_w) and one over the sentences (sentence: W_s, b_s, u_S)."""

    def __init__(self, word_dim, word_width, sentence_dim, sentence_width):
        super().__init__()
        self.word = ConstantQuerySelfAttention(word_dim, word_width)
        self.sentence = ConstantQuerySelfAttention(sentence_dim, sentence_width)


class HAN(nn.Module):
    """examples/docclass/docclass_models.hpp, --model han (Yang et al. 2016):
        h_it = bi-GRU(emb(w_it)) per sentence
        s_i, α_i· = word attention over h_i·
        h_i = bi-GRU(s_1 .. s_S) over the document
        v, β = sentence attention over h_·
        logits = classifier(v)"""

    def __init__(self, metadata):
        super().__init__()
        if metadata["docclass.model"] != "han":
            raise NotImplementedError(f"docclass: this reference has HAN only, not {metadata['docclass.model']}")
        E, Hw, Aw, Hs, As, _, _ = (int(x) for x in metadata["docclass.sizes"].split())
        V = 2 + len(metadata["docclass.vocabulary"].splitlines())  # <pad>, <unk>, then the words
        C = len(metadata["docclass.classes"].splitlines())
        self.embedding = nn.Embedding(V, E, padding_idx=0)
        self.word_rnn = nn.GRU(E, Hw, batch_first=True, bidirectional=True)
        self.attention = HierarchicalAttention(2 * Hw, Aw, 2 * Hs, As)
        self.sentence_rnn = nn.GRU(2 * Hw, Hs, batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(2 * Hs, C)

    def forward(self, ids, word_mask, sentence_mask):
        """ids B×S×W, masks B×S×W and B×S (1 = real) → logits B×C, word weights B×S×W,
        sentence weights B×S."""
        B, S, W = ids.shape
        words, _ = run_rnn(self.word_rnn, self.embedding(ids).reshape(B * S, W, -1),
                           word_mask.reshape(B * S, W).sum(-1).long())
        keep = (word_mask * sentence_mask.unsqueeze(-1)).reshape(B * S, W)
        sentences, alpha = self.attention.word(words, keep)
        h, _ = run_rnn(self.sentence_rnn, sentences.reshape(B, S, -1), sentence_mask.sum(-1).long())
        document, beta = self.attention.sentence(h, sentence_mask)
        return self.classifier(document), alpha.reshape(B, S, W), beta


# ---- loading -----------------------------------------------------------------------------------

def build_model(metadata):
    """The module for a model file's metadata (which trainer wrote it, and its sizes)."""
    if "seq2seq.config" in metadata:
        config = metadata["seq2seq.config"]
        return TransformerSeq2Seq(config) if config.startswith("model=transformer") else Seq2Seq(config)
    if "caption.config" in metadata:
        return Captioner(metadata["caption.config"])
    if "docclass.model" in metadata:
        return HAN(metadata)
    raise ValueError("not a model file of the seq2seq, caption or docclass trainer (no seq2seq.config, "
                     "caption.config or docclass.model in its metadata)")


def load_model(path, dtype=torch.float64):
    """(model, metadata): the model of `path`, loaded with strict=True, in
    evaluation mode, converted to `dtype`. A training checkpoint
    (best.safetensors, last.safetensors) is refused: its optimizer.* tensors are
    not the model's, and strict loading says so."""
    tensors, metadata = read_safetensors(path)
    model = build_model(metadata)
    model.load_state_dict(tensors, strict=True)
    return model.to(dtype).eval(), metadata
