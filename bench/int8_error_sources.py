"""Where int8 ESM-2's error against float32 comes from (issue 37, item 4): the PLL workload and error metric of
``bench_int8_esm.py`` (mean and max |log-probability difference| per masked position, |PLL difference|),
with every encoder linear in int8 (the scheme before ``int8_float_layers``) and then one part in float32 or
another activation quantization. Errors only, no timings.

    PYTHONPATH=src:bench python bench/int8_error_sources.py --models esm2-150M --layers

Trials: ``every layer int8``; ``float KIND`` (that kind of linear in float32 in every layer: ``qkv``,
``attn_out``, ``ffn_in``, ``ffn_out``); ``float layers 0..k-1`` (the first k layers' linears in float32,
what ``int8_float_layers`` keeps); ``mlmprob int8`` (the model as ``load_mlm(dtype="int8")`` gives it);
``weights only`` / ``activations only`` (the other operand in float32, emulated in float32 arithmetic);
``activations per row, symmetric`` / ``asymmetric`` (one scale, or one scale and zero point, per row instead
of per call, through fbgemm's fixed-scale kernel); ``--layers``: each single layer in float32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import Mlmprob, chains, save_random_esm  # noqa: E402

from mlmprob.models import fused  # noqa: E402
from mlmprob.models.precision import Int8Linear, quantize_linears  # noqa: E402

KINDS = {
    "qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "attn_out": ("attention.output.dense",),
    "ffn_in": ("intermediate.dense",),
    "ffn_out": ("output.dense",),
}
FIXED = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32


def _get(root, path: str):
    for p in path.split("."):
        root = getattr(root, p)
    return root


def _set(root, path: str, mod) -> None:
    head, _, last = path.rpartition(".")
    setattr(_get(root, head), last, mod)


def _parts(self: Int8Linear):
    """The float32 weight and bias of an :class:`Int8Linear`, its dequantized weight and a prepack without bias."""
    if not hasattr(self, "_bench_parts"):
        qw, b = torch.ops.quantized.linear_unpack(self._packed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._bench_parts = (qw.dequantize(), b, torch.ops.quantized.linear_prepack(qw, None))
    return self._bench_parts


def _fake_tensor(x):
    """``x`` quantized and dequantized as fbgemm's dynamic path does: one uint8 scale and zero point per call."""
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    s = max((hi - lo) / 255, 1e-12)
    zp = round(-lo / s)
    return (torch.clamp(torch.round(x / s) + zp, 0, 255) - zp) * s


def _row_forward(asymmetric: bool):
    """An :class:`Int8Linear` forward with one activation scale (and zero point) per row."""

    def forward(self, x):
        shape = x.shape
        x = x.float().reshape(-1, shape[-1]).contiguous()
        wq, b, packed = _parts(self)
        if asymmetric:
            lo, hi = x.amin(1, keepdim=True).clamp_max(0), x.amax(1, keepdim=True).clamp_min(0)
            s = ((hi - lo) / 255).clamp_min(1e-30)
            shift = torch.round(-lo / s) - 128
            y = FIXED(x / s + shift, 1.0, 128, packed).sub_(shift * wq.sum(1))
        else:
            s = (x.abs().amax(1, keepdim=True) / 127).clamp_min(1e-30)
            y = FIXED(x / s, 1.0, 128, packed)
        y.mul_(s)
        return (y if b is None else y.add_(b)).reshape(*shape[:-1], -1)

    return forward


@contextmanager
def _emulated(fb, weights: bool):
    """The float32 model with int8's weights (dequantized, per output channel) or with its activations
    quantized per call (before every product of the fused forward), the other operand exact."""
    if weights:
        saved = {}
        with torch.no_grad():
            for n, m in fb.named_modules():
                if type(m) is torch.nn.Linear:
                    saved[n] = m.weight.clone()
                    wq, _, _ = _parts(Int8Linear.from_linear(m))
                    m.weight.copy_(wq)
        try:
            yield
        finally:
            with torch.no_grad():
                for n, w in saved.items():
                    _get(fb, n).weight.copy_(w)
        return
    linear = fused._invariant_linear
    fused._invariant_linear = lambda x, w, b=None: linear(_fake_tensor(x), w, b)
    try:
        yield
    finally:
        fused._invariant_linear = linear


class Trials:
    def __init__(self, folder: Path, positions: int):
        self.seqs, self.positions = chains(1, 50), positions
        self.ref = Mlmprob(folder, "float32")
        self.r = self.ref.pll(self.seqs, positions)[0]
        self.q = Mlmprob(folder, "int8")
        self.first = self.row("mlmprob int8 (int8_float_layers in float32)")
        quantize_linears(self.q.mlm.model.esm)  # every layer int8
        self.qb, self.fb = self.q.mlm.model.esm, self.ref.mlm.model.esm
        self.n = len(self.qb.encoder.layer)

    def row(self, label: str, engine=None) -> str:
        out = (engine or self.q).pll(self.seqs, self.positions)[0]
        tok = [abs(x - y) for x, y in zip(out, self.r, strict=True)]
        return f"| {label} | {statistics.mean(tok):.4f} | {max(tok):.4f} | {abs(sum(out) - sum(self.r)):.4f} |"

    def floated(self, label: str, paths: list[str]) -> str:
        saved = {p: _get(self.qb, p) for p in paths}
        for p in paths:
            _set(self.qb, p, _get(self.fb, p))
        try:
            return self.row(label)
        finally:
            for p, m in saved.items():
                _set(self.qb, p, m)

    def patched(self, label: str, forward) -> str:
        original = Int8Linear.forward
        Int8Linear.forward = forward
        try:
            return self.row(label)
        finally:
            Int8Linear.forward = original

    def emulated(self, weights: bool) -> str:
        with _emulated(self.fb, weights):
            return self.row("weights only (emulated)" if weights else "activations only (emulated)", self.ref)

    def paths(self, layers, kinds=tuple(KINDS)) -> list[str]:
        return [f"encoder.layer.{i}.{p}" for i in layers for k in kinds for p in KINDS[k]]


def run(name: str, a) -> None:
    """Print one table row per trial, as each finishes."""
    t = Trials(save_random_esm(name, Path(a.weights)), a.pll_positions)
    print(f"| {name}: trial | per position mean | max | PLL diff |\n|---|---|---|---|", flush=True)
    print(t.first, flush=True)
    trials = [lambda: t.row("every layer int8")]
    trials += [lambda k=k: t.floated(f"float {k}", t.paths(range(t.n), (k,))) for k in KINDS]
    trials += [lambda k=k: t.floated(f"float layers 0..{k - 1}", t.paths(range(k))) for k in (1, 2, 4)]
    trials += [lambda w=w: t.emulated(w) for w in (True, False)]
    trials += [
        lambda: t.patched("activations per row, symmetric", _row_forward(False)),
        lambda: t.patched("activations per row, asymmetric", _row_forward(True)),
    ]
    if a.layers:
        trials += [lambda i=i: t.floated(f"float layer {i} only", t.paths([i])) for i in range(t.n)]
    for trial in trials:
        print(trial(), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="esm2-150M")
    p.add_argument("--pll-positions", type=int, default=32)
    p.add_argument("--layers", action="store_true", help="also each single layer in float32")
    p.add_argument("--weights", default=os.path.join(tempfile.gettempdir(), "mlmprob_bench_cpu"))
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    for name in a.models.split(","):
        run(name, a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
