"""Accepted moves per 1,000 forward rows of ``sample(method="mh")``'s kernel (``MetropolisHastings``) with each
proposal: the default single-site sweep, the exact moves of ``mlmprob.mcmc.moves`` (``informed`` k = 1, 2, 3;
plain ``sites`` k = 2) and today's block proposals (``block_size`` 2, 3). AntiBERTy, trastuzumab VH with its
CDR-H3 (IMGT) free, 4 chains from the parent, target ``exp(-E_local)``, one thread.

Each run steps the kernel until it has forwarded ``--rows`` rows after its start (the start's own rows, one per
free position per chain, are the same for every proposal and left out) and counts the accepted moves that changed a
chain (``StepInfo.novel``) and the residues they changed. Reported per proposal, summed over ``--seeds`` seeds:
rows, moves per 1,000 rows, residues moved per 1,000 rows, their ratios to the default, and proposals per 1,000
rows; a table on stdout (``--json``: one JSON row per proposal).

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/bench_mh_moves.py

A row of AntiBERTy (122 tokens) takes about 0.14 s on one thread of a shared 2-core CPU, so the default run (7 x
3,000 rows) took 53 minutes there; ``--rows 600`` fits in about 10. Measured so (``--rows 3000 --seeds 1``), accepted
moves per 1,000 rows and their ratio to the default (residues moved in brackets):

    default 39.5 (1.00); informed k=1 35.4 (0.90); informed k=2 15.6 (0.39; residues 0.79); informed k=3 13.3
    (0.34; residues 1.01); plain k=2 31.4 (0.79; residues 0.97); block 2 25.6 (0.65; 0.76); block 3 25.6 (0.65;
    0.88). About 100 moves a run: a ratio is known to about +-15 %. The default is cheap where it re-proposes the
    current residue (no row read: 211 proposals per 1,000 rows against 77-83 for the informed moves, which always
    change).

The ceiling for this target: an exact kernel knows ``E_local(x')`` (the 13 CDR-H3 rows, 12 new ones when one site
changed) before it accepts ``x'``, so no exact move makes more than 1000 / 12 = 83 accepted moves per 1,000 rows
here, 2.1x the default's 39.5: the issue's 5x bar for ``sample --method mh`` is above what any exact kernel of this
target can reach. Past it go only the residues a move changes, or a target that costs fewer rows.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from mlmprob import load_mlm
from mlmprob.sampling import MetropolisHastings
from mlmprob.sampling.cdr import find_cdr_h3

VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
CONFIGS = {  # name: MetropolisHastings options
    "default": {},
    "informed k=1": {"informed": True},
    "informed k=2": {"informed": True, "sites": 2},
    "informed k=3": {"informed": True, "sites": 3},
    "plain k=2": {"sites": 2},
    "block 2": {"block_size": 2},
    "block 3": {"block_size": 3},
    "informed k=2 delayed": {"informed": True, "sites": 2, "delayed": True},
    "plain k=2 delayed": {"sites": 2, "delayed": True},
    "plain k=3 delayed": {"sites": 3, "delayed": True},
}


def run(mlm, ids, free, options: dict, rows: int, seed: int) -> dict:
    kernel = MetropolisHastings(mlm, **options)
    g = torch.Generator().manual_seed(seed)
    state = kernel.init(ids, free)
    start = state.forward_rows
    moves = residues = proposals = steps = 0
    t0 = time.perf_counter()
    while state.forward_rows - start < rows:
        before = state.ids
        state, info = kernel.step(state, g)
        steps += 1
        proposals += int(info.active.sum())
        moves += int(info.novel.sum())
        residues += int((state.ids != before).sum())
    used = state.forward_rows - start
    return {
        "rows": used,
        "steps": steps,
        "proposals": proposals,
        "moves": moves,
        "residues": residues,
        "seconds": time.perf_counter() - t0,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3000, help="forward rows per run after the start (default 3000)")
    ap.add_argument("--seeds", type=int, default=2, help="runs per proposal, seeds 0.. (default 2)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--json", action="store_true", help="one JSON row per proposal instead of the table")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    mlm = load_mlm("antiberty", device="cpu")
    s, e = find_cdr_h3(VH)
    ids = mlm.encode([VH]).input_ids.expand(args.chains, -1).clone()
    free = torch.zeros_like(ids, dtype=torch.bool)
    free[:, 1 + s : 1 + e] = True  # [CLS], then one token per residue
    assert mlm.decode(ids[0, 1 + s : 1 + e]).replace(" ", "") == VH[s:e]
    out = {}
    for name, options in CONFIGS.items():
        runs = [run(mlm, ids, free, options, args.rows, seed) for seed in range(args.seeds)]
        total = {k: sum(r[k] for r in runs) for k in runs[0]}
        total["moves_per_1k"] = 1000 * total["moves"] / total["rows"]
        total["residues_per_1k"] = 1000 * total["residues"] / total["rows"]
        total["proposals_per_1k"] = 1000 * total["proposals"] / total["rows"]
        out[name] = total
    base = out["default"]
    for r in out.values():
        r["moves_ratio"] = r["moves_per_1k"] / base["moves_per_1k"] if base["moves_per_1k"] else float("nan")
        r["residues_ratio"] = (
            r["residues_per_1k"] / base["residues_per_1k"] if base["residues_per_1k"] else float("nan")
        )
    if args.json:
        for name, r in out.items():
            print(json.dumps({"proposal": name, **r}))
        return 0
    print(
        f"AntiBERTy, trastuzumab VH CDR-H3 ({e - s} residues free), {args.chains} chains, {args.seeds} seeds x "
        f"~{args.rows} rows, 1 thread"
    )
    print(
        "| proposal | rows | proposals / 1k rows | moves | moves / 1k rows | x default | residues / 1k rows "
        "| x default | seconds |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in out.items():
        print(
            f"| {name} | {r['rows']} | {r['proposals_per_1k']:.0f} | {r['moves']} | {r['moves_per_1k']:.1f} "
            f"| {r['moves_ratio']:.2f} | {r['residues_per_1k']:.1f} | {r['residues_ratio']:.2f} "
            f"| {r['seconds']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
