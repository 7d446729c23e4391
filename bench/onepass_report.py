"""One-pass PLL against exact PLL on held-out antibody chains (issue 21 §3): docs/results/one_pass.

    PYTHONPATH=src:bench python bench/onepass_report.py --models sapiens-vh,antiberty --n 20 \
        --out docs/results/one_pass/README.md

For each model, the first ``--n`` VH chains of GDPa1 and of Jain-137 (never in the calibration set, see
``onepass_data``) are scored three ways: exact PLL (one masked copy per residue), the one-pass estimate
with the shipped correction, and the plain unmasked pass (no correction). Reported: Spearman with exact
PLL, mean and max |error| per sequence and per residue, and the time of each (same process, same
thread count; exact and one-pass timed back to back).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

import torch
from cpu_info import describe
from onepass_data import antibody_sets

import mlmprob
from mlmprob.onepass.scoring import spearman


def evaluate(model: str, sets: dict[str, list[str]], compare: dict[str, str] | None = None) -> list[str]:
    """Table rows for ``model`` on each set; ``compare`` ({label: correction file}) adds a one-pass row per
    other correction (loaded once, before timing), scored on the same chains against the same exact PLL."""
    from mlmprob.onepass.correction import Correction

    mlm = mlmprob.load_mlm(model, device="cpu", dtype="float32")
    runs = {"one_pass": ("one_pass", None)}
    runs.update({f"one_pass ({label})": ("one_pass", Correction.load(path)) for label, path in (compare or {}).items()})
    runs.update({"unmasked": ("unmasked", None), "exact": ("exact", None)})
    rows = []
    for name, seqs in sets.items():
        res, times = {}, {}
        for key, (method, corr) in runs.items():
            vals = []
            t0 = time.perf_counter()
            for s in seqs:  # one chain per call: a record's score never depends on its neighbours
                vals.append(float(mlmprob.pll(mlm, mlm.encode([s]).input_ids, method=method, correction=corr)[0]))
            times[key] = time.perf_counter() - t0
            res[key] = torch.tensor(vals, dtype=torch.float64)
            print(f"{model} {name} {key}: {times[key]:.1f} s", file=sys.stderr, flush=True)
        n = torch.tensor([len(s) for s in seqs], dtype=torch.float64)
        for method in (k for k in runs if k != "exact"):
            d = (res[method] - res["exact"]).abs()
            rows.append(
                f"| {model} | {name} ({len(seqs)} VH) | {method} | {spearman(res[method], res['exact']):.3f} | "
                f"{spearman(res[method] / n, res['exact'] / n):.3f} | {d.mean():.2f} | {d.max():.2f} | "
                f"{(d / n).mean():.4f} | {(d / n).max():.4f} | {times['exact'] / times[method]:.0f}x |"
            )
        rows.append(f"| {model} | {name} | exact (reference) | 1 | 1 | 0 | 0 | 0 | 0 | 1x ({times['exact']:.1f} s) |")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="sapiens-vh,antiberty")
    ap.add_argument("--n", type=int, default=20, help="held-out chains per set")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="LABEL=FILE",
        help="also score one-pass with this correction file (one model only), e.g. a previous fit",
    )
    a = ap.parse_args(argv)
    compare = dict(c.split("=", 1) for c in a.compare)
    torch.set_num_threads(a.threads)
    sets = antibody_sets("H")
    held = {"GDPa1": sets["gdpa1"][: a.n], "Jain-137": sets["jain137"][: a.n]}
    load0 = os.getloadavg()
    rows = [r for m in a.models.split(",") for r in evaluate(m, held, compare)]
    load1 = os.getloadavg()
    lines = [
        "# One-pass PLL vs exact PLL on held-out antibody chains",
        "",
        f"Command: `{shlex.join(['python', 'bench/onepass_report.py'] + (argv if argv is not None else sys.argv[1:]))}`",
        f"Machine: {describe()}; float32, {a.threads} thread(s); load average "
        f"{load0[0]:.1f} at start, {load1[0]:.1f} at end (a shared, loaded 2-core machine: speed ratios are of "
        "runs back to back in one process).",
        "",
        "Spearman: rank correlation with exact PLL across the set (per sequence, and of PLL per residue); "
        "|error|: absolute difference from exact PLL in nats, per sequence and per residue; speed: exact time / "
        "method time. one_pass uses the correction shipped in the package (fitted on Thera-SAbDab chains that "
        "are not in GDPa1 or Jain-137); unmasked is the plain unmasked pass (log q(x_t | x), no mask, no "
        "correction)."
        + (
            " one_pass (LABEL): the same estimate with the correction file given as "
            "`--compare LABEL=FILE` (loaded once, before timing)."
            if compare
            else ""
        ),
        "",
        "| model | set | method | Spearman (PLL) | Spearman (PLL/residue) | mean abs error | max | mean abs "
        "error / residue | max | speed vs exact |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    text = "\n".join(lines + rows) + "\n"
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
