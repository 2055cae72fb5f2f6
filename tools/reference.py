"""reference - the pieces the fixture scripts share.

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from reference import gelu_tanh, rotate_half, check_saved, write_json

One home for what tools/make_fixtures.py, make_hf_fixtures.py,
make_modernbert_fixtures.py, make_text_fixtures.py, make_autocast_fixture.py,
make_hf5_fixtures.py, make_bert_dir.py, export_safetensors.py and
fixture_cli.py would otherwise each define:

  activations       gelu_tanh, gelu_new, ACT_FN
  linear / norm     linear, layer_norm (on a name -> tensor dict),
                    linear_names, norm_names ((name, shape) lists)
  RoPE              rotate_half, rotate_every_two, rope_tables (float64
                    angles), rope_inv_freq / rope_cos_sin (transformers'
                    float32 rotary module), cos_sin_full, apply_rotary,
                    rope_by_complex (the independent check)
  ALiBi             alibi_slopes, check_alibi_slopes, alibi_bias
  masks             extended_attention_mask, prepare_4d_attention_mask
  positions         sinusoidal_table
  token ids         ids_generator, random_ids
  files             check_saved (safetensors round trip), write_json,
                    md_row, write_readme

Each function computes what the scripts computed each on its own, so
the fixtures' bytes do not depend on where it lives.  torch is needed for
the tensor functions only: the file helpers work without it (make_bert_dir.py
and make_hf5_fixtures.py run on numpy / the standard library).
"""

import json
import math

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the file helpers still work
    torch = F = None


# ---- activations ---------------------------------------------------------------------

def gelu_tanh(x):
    """torch's tanh-approximated gelu, F.gelu(x, approximate="tanh") (transformers'
    ACT2FN["gelu_pytorch_tanh"]; attnd's "gelu_tanh")."""
    return F.gelu(x, approximate="tanh")


def gelu_new(x):
    """transformers.activations.NewGELUActivation (ACT2FN["gelu_new"]): the tanh
    formula written out, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


def _act_fn():
    if F is None:
        return {}
    return {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": gelu_tanh}


# attnd's activation names -> the functional form.
ACT_FN = _act_fn()


# ---- linear / norm -------------------------------------------------------------------

def linear(p, name, t, optional_bias=False):
    """nn.Linear held as p[name.weight] ([out, in]) and p[name.bias] on t.
    optional_bias: a missing bias means none (a bias=False module); otherwise
    it must be there."""
    bias = p.get(f"{name}.bias") if optional_bias else p[f"{name}.bias"]
    return F.linear(t, p[f"{name}.weight"], bias)


def layer_norm(p, name, t, eps, optional_bias=False):
    """nn.LayerNorm(t.shape[-1], eps) held as p[name.weight] / p[name.bias] on t;
    optional_bias as for linear (nn.LayerNorm(..., bias=False))."""
    bias = p.get(f"{name}.bias") if optional_bias else p[f"{name}.bias"]
    return F.layer_norm(t, (t.shape[-1],), p[f"{name}.weight"], bias, eps)


def linear_names(name, n_out, n_in, bias=True):
    """(name, shape) of an nn.Linear's parameters, in registration order."""
    return [(f"{name}.weight", (n_out, n_in))] + ([(f"{name}.bias", (n_out,))] if bias else [])


def norm_names(name, n, bias=True):
    """(name, shape) of an nn.LayerNorm's parameters, in registration order."""
    return [(f"{name}.weight", (n,))] + ([(f"{name}.bias", (n,))] if bias else [])


# ---- RoPE ------------------------------------------------------------------------------

def rotate_half(x):
    """transformers' rotate_half (models/llama/modeling_llama.py, gpt_neox/
    modeling_gpt_neox.py, modernbert/modeling_modernbert.py): halves
    (x1, x2) -> (-x2, x1)."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    """transformers' models/gptj/modeling_gptj.py rotate_every_two (RoFormer's
    interleaved pairs): (x[2k], x[2k+1]) -> (-x[2k+1], x[2k])."""
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


ROTATE = {"neox": rotate_half, "gptj": rotate_every_two}


def rope_tables(pos, theta, R):
    """(cos, sin), float32 [B, L, R/2] for positions pos [B, L]: for the token
    at position p and k < R/2, inv_freq_k = theta ** (-2k / R) and angle =
    p * inv_freq_k in float64 (Python floats, C's pow / cos / sin), cos and
    sin rounded to float32 once."""
    inv_freq = [float(theta) ** (-2 * k / R) for k in range(R // 2)]
    angles = [[[p * f for f in inv_freq] for p in row] for row in pos.tolist()]
    cos = [[[math.cos(a) for a in r] for r in b] for b in angles]
    sin = [[[math.sin(a) for a in r] for r in b] for b in angles]
    return (torch.tensor(cos, dtype=torch.float64).to(torch.float32),
            torch.tensor(sin, dtype=torch.float64).to(torch.float32))


def rope_inv_freq(dim, base):
    """transformers' rotary modules' inv_freq buffer (float32), as
    ModernBertRotaryEmbedding.__init__: 1 / base ** (arange(0, dim, 2) / dim)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def rope_cos_sin(inv_freq, position_ids):
    """transformers' rotary module's forward (ModernBertRotaryEmbedding): (cos,
    sin) [B, L, E] float32 for position_ids [B, L], and the angles freqs
    [B, L, E/2] they come from."""
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin(), freqs


def cos_sin_full(cos, sin, style):
    """Half-width tables [..., R/2] -> the full-width ones apply_rotary takes:
    neox (rotate_half) cat(c, c); gptj (rotate_every_two) each entry twice."""
    if style == "neox":
        return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    return torch.repeat_interleave(cos, 2, dim=-1), torch.repeat_interleave(sin, 2, dim=-1)


def apply_rotary(x, cos, sin, style="neox"):
    """transformers' apply_rotary_pos_emb for one tensor: (x * cos) +
    (rotate(x) * sin), rotate_half for neox and rotate_every_two for gptj;
    float32 products, each rounded, then one sum."""
    return (x * cos) + (ROTATE[style](x) * sin)


def rope_by_complex(x, angle, style="neox"):
    """The rotation independently, in float64: each rotated pair of x's last
    dim (k, k + E/2 for neox; 2k, 2k + 1 for gptj) as a complex number times
    torch.polar(1, angle); angle broadcasts against x[..., :E/2]."""
    half = x.shape[-1] // 2
    turn = torch.polar(torch.ones_like(angle), angle)
    xr = x.detach().to(torch.float64)
    if style == "neox":
        z = torch.complex(xr[..., :half], xr[..., half:]) * turn
        return torch.cat((z.real, z.imag), dim=-1)
    z = torch.view_as_complex(xr.reshape(*xr.shape[:-1], half, 2).contiguous()) * turn
    return torch.view_as_real(z).flatten(-2)


# ---- ALiBi ------------------------------------------------------------------------------

def alibi_slopes(n):
    """float32 [n]: ALiBi's slope per query head.  For n a power of two
    m_h = 2^(-8 (h + 1) / n), h = 0..n-1; otherwise, with m the largest power
    of two below n, the m slopes of m heads followed by the first n - m of
    every other slope of 2m heads (index 0, 2, 4, ...).  The rule of get_slopes
    in the paper's code (ofirpress/attention_with_linear_biases,
    fairseq/models/transformer.py), of transformers' modeling_bloom.py
    build_alibi_tensor and of MPT's gen_slopes (llm-foundry
    llmfoundry/models/layers/attention.py; transformers' modeling_mpt.py
    build_mpt_alibi_tensor).  Computed in float64 as 2.0 ** (-8.0 * (h + 1) / k)
    (k = m or 2m), each rounded to float32 once."""
    def power_of_2(k):
        return [2.0 ** (-8.0 * (h + 1) / k) for h in range(k)]
    m = 1 << (n.bit_length() - 1)
    s = power_of_2(m) if m == n else power_of_2(m) + power_of_2(2 * m)[0::2][:n - m]
    slopes = torch.tensor(s, dtype=torch.float64).float()
    check_alibi_slopes(n, slopes)
    return slopes


def check_alibi_slopes(n, slopes):
    """The slopes three more ways: the paper's get_slopes (start * ratio ** i,
    float64, then float32) and MPT's gen_slopes (1 / 2^m in float32, odd
    entries then even) exactly equal; BLOOM's build_alibi_tensor (float32
    torch.pow of a float32 base) within 1e-6 relative, as its float32 powers
    are an ulp off for some of the extra heads (2^-2.5, 2^-3.5 with 12)."""
    def paper(k):
        def power_of_2(k):
            start = 2 ** (-2 ** -(math.log2(k) - 3))
            ratio = start
            return [start * ratio ** i for i in range(k)]
        if math.log2(k).is_integer():
            return power_of_2(k)
        closest = 2 ** math.floor(math.log2(k))
        return power_of_2(closest) + paper(2 * closest)[0::2][:k - closest]

    closest = 2 ** math.floor(math.log2(n))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest) - 3))), dtype=torch.float32)
    bloom = torch.pow(base, torch.arange(1, 1 + closest, dtype=torch.int32))
    if closest != n:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest) - 3))),
                                  dtype=torch.float32)
        extra = min(closest, n - closest)
        bloom = torch.cat([bloom, torch.pow(extra_base, torch.arange(1, 1 + 2 * extra, 2,
                                                                     dtype=torch.int32))])
    n2 = 2 ** math.ceil(math.log2(n))
    mpt = 1.0 / torch.pow(2, torch.arange(1, n2 + 1, dtype=torch.float32).mul(8 / n2))
    if n2 != n:
        mpt = torch.cat([mpt[1::2], mpt[::2]])[:n]
    for name, other, rtol in (("paper", torch.tensor(paper(n), dtype=torch.float64).float(), 0),
                              ("mpt", mpt, 0), ("bloom", bloom, 1e-6)):
        assert other.dtype == torch.float32 and torch.allclose(other, slopes, rtol=rtol, atol=0), \
            f"ALiBi slopes for {n} heads: {name} gives {other.tolist()}, not {slopes.tolist()}"


def alibi_bias(pos, n_heads):
    """float32 [B, n_heads, L, L] for positions pos [B, L]: ALiBi's bias
    -m_h * |p_i - p_j| for query i and key j (bidirectional, as encoders use
    it), float32(-m_h) times the exact float32 distance, one rounding."""
    dist = (pos[:, :, None] - pos[:, None, :]).abs().to(torch.float32)    # [B, L, L]
    return (-alibi_slopes(n_heads))[None, :, None, None] * dist[:, None]


# ---- masks ------------------------------------------------------------------------------

def extended_attention_mask(attention_mask, dtype):
    """transformers' ModuleUtilsMixin.get_extended_attention_mask for an
    encoder: [B, L] of 1 / 0 -> [B, 1, 1, L], (1 - mask) * finfo(dtype).min."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def prepare_4d_attention_mask(mask, dtype):
    """modeling_attn_mask_utils._prepare_4d_attention_mask (AttentionMaskConverter.
    _expand_mask): [B, L] of 1 / 0 -> [B, 1, L, L], 0 where the key is kept,
    finfo(dtype).min where it is padding."""
    bsz, src_len = mask.shape
    expanded = mask[:, None, None, :].expand(bsz, 1, src_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


# ---- positions --------------------------------------------------------------------------

def sinusoidal_table(n_pos, dim):
    """transformers' DistilBERT _create_sinusoidal_embeddings: angles pos /
    10000^(2 (j // 2) / dim) in numpy float64, sin in the even columns and cos
    in the odd ones, then torch.FloatTensor (float32)."""
    import numpy as np
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
                             for pos in range(n_pos)])
    out = torch.zeros(n_pos, dim)
    out[:, 0::2] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
    out[:, 1::2] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    return out


# ---- token ids --------------------------------------------------------------------------

def ids_generator(name):
    """The generator of a case's ids.safetensors batch: seeded with
    crc32(name + ":ids")."""
    import zlib
    return torch.Generator().manual_seed(zlib.crc32((name + ":ids").encode()))


def random_ids(gen, lengths, L, vocab, pad, pad_at=None):
    """(input_ids [B, L] int64, valid [B, L] bool) for lengths (int tensor [B]):
    ids drawn below vocab from gen, any pad among them moved to pad + 1 (mod
    vocab), then pad at pad_at ((row, col), a pad token inside a sequence) if
    given, and pad past each length."""
    ids = torch.randint(0, vocab, (len(lengths), L), generator=gen)
    ids = torch.where(ids == pad, (ids + 1) % vocab, ids)
    if pad_at is not None:
        ids[pad_at] = pad
    valid = torch.arange(L)[None, :] < lengths.long()[:, None]
    ids = torch.where(valid, ids, torch.full_like(ids, pad))
    return ids, valid


# ---- files ------------------------------------------------------------------------------

def check_saved(path, tensors, meta, what, dtype=None):
    """Reads the safetensors file at path back (torch tensors) and asserts it
    holds exactly meta and tensors: the same names, every value equal, each in
    dtype(name) when dtype is given, else in its own dtype.  what names the
    case in the messages.  Returns (tensors read, metadata read)."""
    from safetensors_io import load_file
    got, got_meta = load_file(path, "pt")
    assert got_meta == meta and set(got) == set(tensors), what
    for k, v in tensors.items():
        want = v.dtype if dtype is None else dtype(k)
        assert got[k].dtype == want and torch.equal(got[k], v), f"{what}: {k}"
    return got, got_meta


def write_json(obj, path, indent=2, sort_keys=True, newline=True, ensure_ascii=True):
    """Writes obj as JSON, UTF-8.  The defaults are transformers' config.json
    and shard index (indent 2, sorted keys, a trailing newline);
    sentence-transformers' files are indent 2, keys as given, no newline."""
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + ("\n" if newline else ""))


def md_row(*cells):
    """One Markdown table row: "| a | b |" and a newline."""
    return "| " + " | ".join(str(c) for c in cells) + " |\n"


def write_readme(path, head, rows):
    """Writes a fixture folder's README.md: head (the text and the table's
    header lines) and then each row as given."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(head)
        for row in rows:
            f.write(row)
