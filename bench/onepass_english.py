"""en-small: one-pass and unmasked PLL against exact PLL on held-out wikitext-2 test sentences.

PYTHONPATH=src:bench python bench/onepass_english.py 30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", type=int, help="held-out sentences (of at most 64 tokens) to score")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from onepass_data import english_sets

    import mlmprob
    from mlmprob.onepass.scoring import spearman

    torch.set_num_threads(1)
    m = mlmprob.load_mlm("en-small")
    ok = []
    for s in english_sets()["heldout"]:
        try:
            if m.encode([s]).input_ids.shape[1] <= 64:
                ok.append(s)
        except mlmprob.MLMProbError:
            pass
    ok = ok[: a.n]
    res = {}
    for meth in ["one_pass", "unmasked", "exact"]:
        t = time.perf_counter()
        res[meth] = torch.tensor([float(mlmprob.pll(m, m.encode([s]).input_ids, method=meth)[0]) for s in ok])
        print(meth, time.perf_counter() - t)
    n = torch.tensor([m.encode([s]).input_ids.shape[1] - 2 for s in ok], dtype=torch.float64)
    for meth in ["one_pass", "unmasked"]:
        d = (res[meth] - res["exact"]).abs()
        print(
            meth,
            len(ok),
            "spearman",
            spearman(res[meth], res["exact"]),
            "per-token mean err",
            float((d / n).mean()),
            "max",
            float((d / n).max()),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
