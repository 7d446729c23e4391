"""One-pass variant ranking on the trastuzumab CDR-H3 library against exact masked marginals (issue 21 §3).

    PYTHONPATH=src:bench OMP_NUM_THREADS=1 python bench/onepass_variants.py --models sapiens-vh,antiberty \
        --variants 1000,all --out docs/results/one_pass/variants.md

A variant's score is ``sum over its mutated sites i of log q_i(mt_i) - log q_i(wt_i)`` read from one
distribution per CDR-H3 position of the wild type (trastuzumab VH), three ways:

- ``exact``: ``masked_marginals`` (``score_variants``): position i masked, one forward row per position;
- ``one_pass``: the one unmasked pass of the wild type through the model's shipped one-pass correction
  (``h' = h + h U + e(wt_i) M + b``, the same correction as ``mlmprob.pll(..., method="one_pass")``);
- ``unmasked``: the same pass without correction (``wt_marginals``; checked equal to ``score_variants``'s).

Variants: the first ``n`` of the library ordered by ``variants_data_common.load_library`` (seed 0: binders
and non-binders alternate, so any even prefix is balanced; ``all`` = the balanced prefix of both classes'
smaller size). AUROC of binder (1) vs non-binder (0), with paired bootstrap intervals (the same resamples for
the three scores, so each difference with exact gets its own interval), and the Spearman of each
estimate with the exact scores.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch

# the experiments live at the repository's top level (beside bench/), outside the installed package
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCORES = ("exact", "one_pass", "unmasked")


def site_tables(mlm, wt: torch.Tensor, positions: list[int], correction=None) -> dict[str, torch.Tensor]:
    """``{"one_pass", "unmasked"}`` -> log-probabilities ``[len(positions), V]`` (float64) at ``positions`` of
    one unmasked pass of ``wt``, with and without the model's correction (``correction`` overrides it)."""
    from mlmprob.onepass.correction import find_correction
    from mlmprob.onepass.estimate import reader, unmasked_hidden

    sel = torch.zeros(1, len(wt), dtype=torch.bool)
    sel[0, positions] = True
    _, cols, hidden, emb = unmasked_hidden(mlm, wt[None], sel)
    if cols.tolist() != sorted(positions):
        raise ValueError("positions must be sorted and distinct")
    c = find_correction(mlm, correction)
    head = reader(mlm, wt[None]).head_logits
    with torch.inference_mode():
        return {
            "one_pass": head(c.apply(hidden, emb)).double().log_softmax(-1),
            "unmasked": head(hidden).double().log_softmax(-1),
        }


def variant_scores(table: torch.Tensor, wt: torch.Tensor, positions: list[int], variants) -> torch.Tensor:
    """``sum_i table[i, mt] - table[i, wt_i]`` per variant (``variants``: lists of ``(position, token)``).

    >>> t = torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]], dtype=torch.float64))
    >>> variant_scores(t, torch.tensor([9, 0, 1]), [1, 2], [[(1, 1)], [(1, 2), (2, 0)]]).tolist()
    [-0.6931471805599453, -2.772588722239781]
    """
    row = {p: k for k, p in enumerate(positions)}
    terms = [(n, row[p], t, int(wt[p])) for n, v in enumerate(variants) for p, t in v]
    out = torch.zeros(len(variants), dtype=torch.float64)
    if terms:
        n, r, t, w = (torch.tensor(c) for c in zip(*terms))
        out.index_add_(0, n, table[r, t] - table[r, w])
    return out


def evaluate(scores: dict[str, torch.Tensor], labels: torch.Tensor, *, n_boot: int, seed: int) -> dict:
    """AUROC of each score (paired bootstrap), its difference with ``exact``, and Spearman with ``exact``."""
    from mlmprob.metrics.ranking import PairedBootstrap, auroc, spearman

    pb = PairedBootstrap(auroc, scores, labels, n_boot=n_boot, generator=torch.Generator().manual_seed(seed))
    return {
        k: {
            "auroc": pb.estimate(k),
            "diff": pb.difference(k, "exact") if k != "exact" else None,
            "spearman": float(spearman(scores[k], scores["exact"])),
        }
        for k in scores
    }


def table_rows(model: str, n: int, res: dict, seconds: dict[str, float]) -> list[str]:
    rows = []
    for k, r in res.items():
        diff = "" if r["diff"] is None else r["diff"].fmt(3)
        rows.append(f"| {model} | {n} | {k} | {r['auroc'].fmt(3)} | {diff} | {r['spearman']:.3f} | {seconds[k]:.2f} |")
    return rows


def run_model(model: str, sizes: list[str], lib, n_boot: int, seed: int) -> tuple[list[str], str]:
    import mlmprob
    from experiments.variants_data_runner import Encoder

    mlm = mlmprob.load_mlm(model, device="cpu", dtype="float32")
    enc = Encoder(mlm)
    n_bal = 2 * min(sum(lib.labels), len(lib.labels) - sum(lib.labels))
    n_max = max(n_bal if s == "all" else int(s) for s in sizes)
    variants = [enc.variant(c) for c in lib.cdrs[:n_max]]
    seconds, scores = {}, {}
    t0 = time.perf_counter()
    ex = mlmprob.score_variants(mlm, enc.wt, variants, methods=["masked_marginals", "wt_marginals"])
    seconds["exact"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    tabs = site_tables(mlm, enc.wt, enc.positions)
    t_pass = time.perf_counter() - t0
    scores["exact"] = ex["masked_marginals"]
    for k in ("one_pass", "unmasked"):
        t0 = time.perf_counter()
        scores[k] = variant_scores(tabs[k], enc.wt, enc.positions, variants)
        seconds[k] = t_pass + time.perf_counter() - t0
    check = float((scores["unmasked"] - ex["wt_marginals"]).abs().max())
    rows = []
    for s in sizes:
        n = n_bal if s == "all" else int(s)
        labels = torch.tensor(lib.labels[:n], dtype=torch.float64)
        res = evaluate({k: v[:n] for k, v in scores.items()}, labels, n_boot=n_boot, seed=seed)
        rows += table_rows(model, n, res, seconds)
    return rows, f"{model}: max |unmasked - score_variants wt_marginals| = {check:.1e} over {n_max} variants"


def report(rows: list[str], checks: list[str], command: str, n_boot: int) -> str:
    head = [
        "# One-pass variant ranking: trastuzumab CDR-H3 library, binders vs non-binders",
        "",
        f"Command: `{command}`",
        "",
        "Scores: `exact` = masked marginals (one masked row per CDR-H3 position, 10 rows); `one_pass` = the one "
        "unmasked pass of the wild type through the shipped one-pass correction; `unmasked` = that pass "
        "uncorrected (wt_marginals). Both estimates read 1 forward row. AUROC (binder = 1) with 95% paired "
        f"bootstrap intervals ({n_boot} resamples of the variants, the same for the three scores); "
        "'vs exact' = AUROC minus exact's on the same resamples. Spearman: with the exact scores. Time: "
        "seconds for all the variants of the largest set, one thread, on a shared machine (exact: `score_variants` "
        "with masked_marginals and wt_marginals, its row plan included; one-pass: the pass, both tables, and "
        "the per-variant sums).",
        "",
        "| model | variants | score | AUROC [95% CI] | vs exact [95% CI] | Spearman with exact | s |",
        "|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows + [""] + [f"Check: {c}." for c in checks]) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="sapiens-vh,antiberty")
    ap.add_argument("--variants", default="1000,all", help="comma list of prefix sizes (even numbers) or 'all'")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="seed of the library order and of the bootstrap")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    from experiments.variants_data_common import load_library
    from mlmprob.data import shared_data_dir

    lib = load_library(shared_data_dir(), a.seed)
    rows, checks = [], []
    for m in a.models.split(","):
        r, c = run_model(m, a.variants.split(","), lib, a.n_boot, a.seed)
        rows += r
        checks.append(c)
        print("\n".join(r + [c]), file=sys.stderr, flush=True)
    cmd = shlex.join(["python", "bench/onepass_variants.py"] + (argv if argv is not None else sys.argv[1:]))
    text = report(rows, checks, cmd, a.n_boot)
    from cpu_info import emit

    return emit(text, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
