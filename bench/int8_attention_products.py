"""Could an int8 ESM-2's attention products run in int8 (or bfloat16) and be faster? (issue 37, item 4)

Per ESM-2 attention shape of the int8 benchmark (``[rows, heads, L, head width]``: 8M, 35M and 150M at one
thread, the PLL's 32 copies), side by side in one run: the path int8 models take now (torch's float32
``scaled_dot_product_attention``: both products and the softmax), one float32 product ``q k^T`` alone, the
same product in int8 by ``torch._int_mm`` (torch's only int8 x int8 product on the CPU; two-dimensional, so
one call per copy and head, the key length padded to a multiple of 8 as it requires), and in bfloat16
(``torch.matmul``; emulated where the CPU lacks AVX512-BF16). An int8 attention needs two such int8 products
(``q k^T`` and ``p v``), so it can only be faster than the float32 path if twice the int8 product is well
below the whole float32 attention. Last column: a whole int8 attention written with it (q and k quantised per
row, the probabilities per row, v per column, symmetric to 127; scores and softmax in float32), its time and its
largest difference from the float32 attention.

    PYTHONPATH=src:bench python bench/int8_attention_products.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# isort: off
import mlmprob  # noqa: F401 - first: MKL's strict mode, as in the other benchmarks
import torch
import torch.nn.functional as F

# isort: on

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_info import describe  # noqa: E402

SHAPES = {"esm2-8M": (32, 20, 34, 16), "esm2-35M": (32, 20, 66, 24), "esm2-150M": (32, 20, 122, 32)}


def _time(fn, rounds: int) -> float:
    fn()
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1e3


def _int8(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    scale = x.abs().amax(dim, keepdim=True).clamp_min(1e-12) / 127
    return torch.round(x / scale).to(torch.int8), scale


def _products(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` per leading index by ``torch._int_mm`` (int32)."""
    return torch.stack([torch._int_mm(x, y) for x, y in zip(a, b, strict=True)])


def int8_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Softmax attention with both products in int8 (``[B, H, L, d]``, ``d`` a multiple of 8)."""
    b, h, n, d = q.shape
    pad = (n + 7) // 8 * 8 - n
    qi, sq = _int8(q * d**-0.5, -1)
    ki, sk = _int8(k, -1)
    qi, ki = F.pad(qi, (0, 0, 0, pad)).flatten(0, 1), F.pad(ki, (0, 0, 0, pad)).flatten(0, 1)
    scores = _products(qi, ki.transpose(1, 2).contiguous()).view(b, h, n + pad, n + pad)[:, :, :n, :n]
    probs = torch.softmax(scores.float() * sq * sk.transpose(-1, -2), -1)
    pi, sp = _int8(probs, -1)
    vi, sv = _int8(v, -2)
    pi, vi = F.pad(pi, (0, pad, 0, pad)).flatten(0, 1), F.pad(vi, (0, 0, 0, pad)).flatten(0, 1)
    return _products(pi, vi).view(b, h, n + pad, d)[:, :, :n].float() * sp * sv


def measure(shape: tuple[int, int, int, int], rounds: int) -> dict[str, float]:
    b, h, n, d = shape
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=g) for _ in range(3))
    kt = k.transpose(-1, -2).contiguous()
    pad = (n + 7) // 8 * 8
    qi = torch.randint(-127, 128, (b * h, pad, d), dtype=torch.int8, generator=g)
    ki = torch.randint(-127, 128, (b * h, d, pad), dtype=torch.int8, generator=g)
    qb, kb = q.bfloat16(), kt.bfloat16()
    return {
        "attention float32 (now)": _time(lambda: F.scaled_dot_product_attention(q, k, v), rounds),
        "q k^T float32": _time(lambda: torch.matmul(q, kt), rounds),
        "q k^T int8 (_int_mm per copy and head)": _time(
            lambda: [torch._int_mm(qi[i], ki[i]) for i in range(b * h)], rounds
        ),
        "q k^T bfloat16": _time(lambda: torch.matmul(qb, kb), rounds),
        "int8 attention": _time(lambda: int8_attention(q, k, v), rounds),
        "its max abs difference": float(
            (int8_attention(q, k, v) - F.scaled_dot_product_attention(q, k, v)).abs().max()
        ),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    print(f"Machine: {describe()}; torch {torch.__version__}; {a.threads} thread(s), median of {a.rounds} calls, ms\n")
    rows = {name: measure(shape, a.rounds) for name, shape in SHAPES.items()}
    cols = list(next(iter(rows.values())))
    print("| model | shape | " + " | ".join(cols) + " | 2 x int8 product / attention now | int8 attention / now |")
    print("|---" * (len(cols) + 4) + "|")
    for name, r in rows.items():
        ratio, whole = 2 * r[cols[2]] / r[cols[0]], r[cols[4]] / r[cols[0]]
        cells = " | ".join(f"{r[c]:.2f}" if c != cols[5] else f"{r[c]:.3f}" for c in cols)
        print(f"| {name} | {list(SHAPES[name])} | {cells} | {ratio:.2f} | {whole:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
