"""Does torch's own CPU attention kernel give the same bits at 1, 2, 3 and 4 threads? (issue 37, item 1)

    PYTHONPATH=src python bench/scan_attention_threads.py

``import mlmprob`` first sets MKL's strict reproducibility mode (``MKL_CBWR=AUTO,STRICT``) unless it is set
already; run with ``MKL_CBWR=`` (empty) to scan without it. For each shape ``[B, heads, L, d]`` (the layer shapes
of AntiBERTy, ESM-2 35M and BERT-base at a 32-position PLL, one query row, long inputs) and mask (none, boolean,
additive, with padded keys), ``F.scaled_dot_product_attention`` on float32 and float64 random inputs at 1-4
threads: prints one line per case and the number of cases whose bits moved.
"""

from __future__ import annotations

import os

# isort: off
import mlmprob  # noqa: F401 - first: sets MKL's strict mode before torch's first MKL call
import torch
import torch.nn.functional as F

# isort: on

SHAPES = [
    (32, 8, 34, 64),  # AntiBERTy
    (32, 20, 34, 24),  # ESM-2 35M
    (32, 12, 34, 64),  # BERT-base
    (30, 8, 1, 64),  # one query row (the last layer at the read positions)
    (4, 20, 120, 32),
    (64, 20, 122, 32),
    (1, 20, 500, 24),
    (2, 4, 1000, 32),
    (3, 4, 7, 16),
]


def masks(b: int, lk: int, g: torch.Generator, dtype: torch.dtype) -> dict:
    keep = torch.arange(lk)[None, :] < torch.randint(1, lk + 1, (b,), generator=g)[:, None]
    keep = keep[:, None, None, :]
    additive = torch.zeros(b, 1, 1, lk, dtype=dtype).masked_fill(~keep, float("-inf"))
    return {"none": None, "bool": keep, "additive": additive}


def main() -> int:
    g = torch.Generator().manual_seed(0)
    moved = total = 0
    print(f"MKL_CBWR={os.environ.get('MKL_CBWR', '')!r}; torch {torch.__version__}")
    for b, h, lq, d in SHAPES:
        lk = max(lq, 32)
        for dtype in (torch.float32, torch.float64):
            q = torch.randn(b, h, lq, d, generator=g, dtype=dtype)
            k, v = (torch.randn(b, h, lk, d, generator=g, dtype=dtype) for _ in range(2))
            for name, mask in masks(b, lk, g, dtype).items():
                outs = []
                for t in (1, 2, 3, 4):
                    torch.set_num_threads(t)
                    with torch.inference_mode():
                        outs.append(F.scaled_dot_product_attention(q, k, v, mask))
                same = all(torch.equal(outs[0], o) for o in outs[1:])
                moved, total = moved + (not same), total + 1
                print(f"{(b, h, lq, d)} keys {lk} {str(dtype)[6:]} mask {name}: {'same' if same else 'MOVED'}")
    print(f"{moved} of {total} cases moved between 1-4 threads")
    return 1 if moved else 0


if __name__ == "__main__":
    raise SystemExit(main())
