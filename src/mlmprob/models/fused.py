"""A lean forward pass for ESM-2 and BERT/RoBERTa encoders (transformers' models), on the same weights: the same
functions with fewer passes over memory (docs/results/precision/peak_share.md), differing by rounding only.

Q, K and V in one product (in int8 one quantization of the input); attention in float32 (a half-precision model on
a GPU attends in its own dtype: :func:`attention_dtype`); ESM's rotary embedding as one complex multiplication (the
pair ``(x_j, x_{j+d/2})`` as ``x_j + i x_{j+d/2}``: the halves come out interleaved, which leaves every query-key
dot product unchanged); the last layer only at the read positions (keys and values still at all positions). Float32
products on the CPU go through :mod:`mlmprob.runtime.threads`, so the bits do not depend on the thread count.
Modules are read at every call (training and quantization are followed); a layer's fused Q/K/V weights are rebuilt
when its Q, K or V weights change."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..runtime.threads import attention, direct_products
from ..runtime.threads import enabled as invariant_enabled
from ..runtime.threads import linear as _invariant_linear
from .precision import Int8Linear


def _dense(lin, x: torch.Tensor) -> torch.Tensor:
    """``lin(x)``; a float linear layer through :func:`mlmprob.runtime.threads.linear` (thread-invariant bits)."""
    return _invariant_linear(x, lin.weight, lin.bias) if type(lin) is torch.nn.Linear else lin(x)


def _signature(lin) -> tuple:
    """What identifies a linear layer's current weights (storage, in-place version, dtype, device)."""
    if isinstance(lin, Int8Linear):
        return (id(lin), id(lin._packed))
    return tuple((t.data_ptr(), t._version, t.dtype, t.device) for t in (lin.weight, lin.bias) if t is not None)


def _fused_qkv(att) -> torch.nn.Module:
    """One linear layer computing ``[Q | K | V]`` from the three of ``att`` (float or :class:`Int8Linear`, whose
    per-output-channel quantization of the concatenation is that of each part)."""
    int8 = isinstance(att.query, Int8Linear)
    ws, bs = [], []
    for lin in (att.query, att.key, att.value):
        if isinstance(lin, Int8Linear):
            qw, b = torch.ops.quantized.linear_unpack(lin._packed)
            ws.append(qw.dequantize())
            bs.append(b if b is not None else torch.zeros(lin.out_features))
        else:
            ws.append(lin.weight.detach())
            bs.append(lin.bias.detach() if lin.bias is not None else torch.zeros_like(lin.weight[:, 0]))
    w, b = torch.cat(ws, 0), torch.cat(bs, 0)
    fused = torch.nn.Linear(w.shape[1], w.shape[0], device=w.device, dtype=w.dtype)
    with torch.no_grad():
        fused.weight.copy_(w)
        fused.bias.copy_(b.to(w.dtype))
    return Int8Linear.from_linear(fused) if int8 else fused.eval()


def attention_dtype(dtype: torch.dtype, device_type: str, half: bool | None = None) -> torch.dtype:
    """The dtype the fused forward's attention runs in for ``dtype`` values on ``device_type``: float32, or the half
    dtype itself when ``half`` is True, or None (the default) and the device is a GPU."""
    if dtype not in (torch.float16, torch.bfloat16):
        return torch.float32
    on = device_type == "cuda" if half is None else half
    return dtype if on else torch.float32


def fused_encoder(base):
    """The fused forward of ``base`` (:class:`FusedEsm`, :class:`FusedBert`), or None: an ESM encoder with rotary
    positions, or a BERT / RoBERTa encoder with absolute positions and erf GELU, has one."""
    cfg = getattr(base, "config", None)
    if cfg is None or getattr(cfg, "is_decoder", False) or getattr(cfg, "add_cross_attention", False):
        return None
    name, positions = type(base).__name__, getattr(cfg, "position_embedding_type", "absolute")
    if name == "EsmModel" and positions == "rotary" and hasattr(base, "rotary_embeddings"):
        return FusedEsm(base)
    bert = name in ("BertModel", "RobertaModel") or getattr(base, "fused_family", "") == "bert"
    if bert and positions == "absolute" and getattr(cfg, "hidden_act", "") == "gelu":
        return FusedBert(base)
    return None


class _Fused:
    """What both families share: fused Q/K/V, attention, the layer loop with the last layer at the reads."""

    def __init__(self, base):
        cfg = base.config
        self.base = base
        self.heads = int(cfg.num_attention_heads)
        self.hidden_size = int(cfg.hidden_size)
        self.head_dim = self.hidden_size // self.heads
        self._qkv: dict[int, tuple] = {}
        self._int8 = False  # an int8 model (some layers quantized), read at every forward

    def _qkv_of(self, i: int, att) -> torch.nn.Module:
        sig = tuple(_signature(lin) for lin in (att.query, att.key, att.value))
        cached = self._qkv.get(i)
        if cached is None or cached[0] != sig:
            cached = self._qkv[i] = (sig, _fused_qkv(att))
        return cached[1]

    half_attention: bool | None = None
    """Attention of a half-precision model in its own dtype: None (the default) on GPUs only (1.6x faster there,
    docs/results/gpu), True everywhere, False never (float32 scores and softmax)."""

    def _attend(self, q, k, v, mask, exact: bool = True) -> torch.Tensor:
        """Attention (float32, or the half dtype of ``v``: :func:`attention_dtype`) of ``q``
        ``[B, Lq, heads, d]`` over ``k``, ``v`` ``[B, L, heads, d]`` -> ``[B, Lq, H]``."""
        dt = attention_dtype(v.dtype, v.device.type, self.half_attention)
        q, k, v = q.to(dt).transpose(1, 2), k.to(dt).transpose(1, 2), v.to(dt).transpose(1, 2)
        if exact and q.device.type == "cpu" and invariant_enabled():
            out = attention(q, k, v, attn_mask=mask, scale=self.head_dim**-0.5)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.head_dim**-0.5)
        return out.transpose(1, 2).reshape(q.shape[0], q.shape[2], self.hidden_size)

    def _attention(self, x, i, att, ctx, mask, rows, cols) -> torch.Tensor:
        """Self-attention of the layer input ``x`` ``[B, L, H]``: ``[B, L, H]``, or ``[N, H]`` at the reads."""
        b, length, _ = x.shape
        lin = self._qkv_of(i, att)
        exact = not self._int8  # int8: torch's attention (no thread invariance to keep), float32 layers too
        qkv = _dense(lin, x).view(b, length, 3, self.heads, self.head_dim)
        if rows is None:
            q, k, v = qkv.unbind(2)
            q, k = self._position(q, k, ctx, None, exact)
            return self._attend(q, k, v, mask, exact)
        q, k, v = qkv[rows, cols, 0].unsqueeze(1), qkv[rows, :, 1], qkv[rows, :, 2]  # each read's own row
        q, k = self._position(q, k, ctx, cols, exact)
        return self._attend(q, k, v, None if mask is None else mask[rows], exact)[:, 0]

    # each architecture's own steps (FusedEsm, FusedBert; the defaults are BERT's)
    def _position(self, q, k, ctx, cols, exact=False):
        return q, k

    def _context(self, ids):
        return None

    def _embed(self, ids: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def _layer(self, h, i, lay, ctx, mask, rows, cols):
        raise NotImplementedError

    def _finish(self, h):
        return h

    @torch.inference_mode()
    @direct_products()  # the products and attention below call the invariant ones themselves: no per-op routing
    def hidden(
        self,
        ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
        cols: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Final hidden states (the LM head's input): ``[B, L, H]``, or ``[N, H]`` at ``(rows, cols)``."""
        keep = None if attention_mask is None or bool(attention_mask.all()) else attention_mask
        h = self._embed(ids, keep)
        ctx = self._context(ids)
        mask = None if keep is None else keep.bool()[:, None, None, :]
        layers = self.base.encoder.layer
        self._int8 = any(isinstance(lay.attention.self.query, Int8Linear) for lay in layers)
        read_few = rows is not None and rows.numel() * 4 <= ids.numel()
        for i, lay in enumerate(layers):
            if i == len(layers) - 1 and read_few:
                return self._finish(self._layer(h, i, lay, ctx, mask, rows, cols))
            h = self._layer(h, i, lay, ctx, mask, None, None)
        h = self._finish(h)
        return h if rows is None else h[rows, cols]


class FusedEsm(_Fused):
    """ESM-2 (pre-norm layers, rotary positions, token dropout, a final layer norm)."""

    def __init__(self, base):
        super().__init__(base)
        self.mask_id = base.config.mask_token_id
        self.token_dropout = bool(base.config.token_dropout)
        self._rot: dict = {}

    def _context(self, ids) -> torch.Tensor:
        """``exp(i * position * inv_freq)``, ``[L, d/2]`` complex64, kept for the last length and device."""
        key = (ids.shape[1], str(ids.device))
        if key not in self._rot:
            pos = torch.arange(ids.shape[1], device=ids.device, dtype=torch.float32)
            angle = pos[:, None] * self._inv_freq().to(ids.device)[None, :]
            self._rot = {key: torch.polar(torch.ones_like(angle), angle)}
        return self._rot[key]

    def _inv_freq(self) -> torch.Tensor:
        """The rotary frequencies in float32 in every precision, as transformers computes them: from the
        configuration (the model's buffer is rounded when the model is cast to bfloat16 or float16)."""
        rotary = self.base.rotary_embeddings
        compute = getattr(type(rotary), "compute_default_rope_parameters", None)
        if compute is not None:
            inv_freq = compute(self.base.config)[0]
            if inv_freq.shape == rotary.inv_freq.shape:
                return inv_freq.float()
        dim = self.head_dim  # older transformers: ESM's formula
        return 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))

    def _rotate(self, x: torch.Tensor, rot: torch.Tensor, real: bool | None = None) -> torch.Tensor:
        """``x`` rotated (float32, pair parts interleaved); ``real``: in real arithmetic (default: on devices
        other than CPUs and CUDA, e.g. MPS, whose complex kernels are not assumed)."""
        half = self.head_dim // 2
        x = x.float()
        a, b = x[..., :half], x[..., half:]
        if real or (real is None and x.device.type not in ("cpu", "cuda")):
            # [a | b] times [c | c] and [s | s] (one vectorised pass each, 1.4x faster than four products of
            # strided halves), then the pairs (ac - bs, as + bc) written interleaved in place
            shape = x.shape[-rot.dim() :]
            c, s = (torch.cat([p, p], -1).expand(shape).contiguous() for p in (rot.real, rot.imag))
            xc, xs = x * c, x * s
            out = torch.empty_like(xc)
            torch.sub(xc[..., :half], xs[..., half:], out=out[..., 0::2])
            torch.add(xs[..., :half], xc[..., half:], out=out[..., 1::2])
            return out
        return torch.view_as_real(torch.complex(a, b) * rot).flatten(-2)

    def _position(self, q, k, rot, cols, exact=False):
        """Rotated ``q`` and ``k``; ``exact`` (float32 under thread invariance, on a CPU): in real arithmetic, whose
        kernels round alike at any thread count (torch's complex product's vectorised and scalar loops round
        differently, and the thread count moves the boundary). On GPUs one complex product (faster)."""
        real = True if exact and q.device.type == "cpu" and invariant_enabled() else None
        rq = rot[:, None, :] if cols is None else rot[cols][:, None, None, :]
        return self._rotate(q, rq, real), self._rotate(k, rot[:, None, :], real)

    def _embed(self, ids: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        emb = self.base.embeddings
        x = emb.word_embeddings(ids)
        if self.token_dropout:
            masked = ids == self.mask_id
            x = x.masked_fill(masked.unsqueeze(-1), 0.0)
            lengths = keep.sum(-1) if keep is not None else torch.full_like(ids[:, 0], ids.shape[1])
            ratio = masked.sum(-1).float() / lengths
            x = (x * (1 - 0.15 * 0.8) / (1 - ratio)[:, None, None]).to(x.dtype)
        if emb.layer_norm is not None:
            x = emb.layer_norm(x)
        if keep is not None:
            x = (x * keep.unsqueeze(-1)).to(x.dtype)
        return x

    def _layer(self, h, i, lay, rot, mask, rows, cols):
        a = self._attention(lay.attention.LayerNorm(h), i, lay.attention.self, rot, mask, rows, cols)
        h = (h if rows is None else h[rows, cols]) + _dense(lay.attention.output.dense, a.to(h.dtype))
        return h.add_(_dense(lay.output.dense, F.gelu(_dense(lay.intermediate.dense, lay.LayerNorm(h)))))

    def _finish(self, h):
        return self.base.encoder.emb_layer_norm_after(h)


class FusedBert(_Fused):
    """BERT and RoBERTa (post-norm layers, absolute positions; transformers' own embeddings module)."""

    def _embed(self, ids: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        return self.base.embeddings(input_ids=ids)

    def _layer(self, h, i, lay, ctx, mask, rows, cols):
        a = self._attention(h, i, lay.attention.self, ctx, mask, rows, cols)
        out = lay.attention.output
        res = h if rows is None else h[rows, cols]
        h = out.LayerNorm(_dense(out.dense, a.to(h.dtype)).add_(res))
        ffn = lay.output
        return ffn.LayerNorm(_dense(ffn.dense, F.gelu(_dense(lay.intermediate.dense, h))).add_(h))
