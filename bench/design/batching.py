"""Chains in one batched read against one chain at a time: model rows per second of ``mlmprob.design`` on the
trastuzumab VH with CDR-H3 free (AntiBERTy), for an ``E_local`` expert (every read proposal: 120 masked rows) and a
``mutant_marginal`` expert (one unmasked row), measured side by side in one process, the two arms interleaved
``--repeats`` times so that the machine's load falls on both.

``batched``: one ``design(chains=C)`` call, every chain's proposals read in one sub-batched forward per step (the API,
and a GPU's case). ``one_at_a_time``: ``C`` calls of ``chains=1`` (how ``mlmprob design`` runs its units today, one
chain per unit so that each resumes and shards alone). The same rows are read either way up to the chains' draws;
reported: rows, seconds, rows per second, and the ratio batched / one_at_a_time.

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/design/batching.py
"""

from __future__ import annotations

import argparse
import time

import torch

from mlmprob import load_mlm
from mlmprob.designing import Expert, design
from mlmprob.sampling.cdr import find_cdr_h3

VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYW"
    "GQGTLVTVSS"
)


def arm(mlm, kind: str, chains: int, steps: int, batched: bool, seed: int) -> tuple[int, float]:
    s, e = find_cdr_h3(VH)
    kw = dict(steps=steps, positions=tuple(range(s + 1, e + 1)))
    expert = Expert(mlm, kind=kind)
    t0 = time.perf_counter()
    rows = 0
    for c in range(1 if batched else chains):
        r = design(
            [expert], VH, chains=chains if batched else 1, generator=torch.Generator().manual_seed(seed + c), **kw
        )
        rows += r.stats["model_rows"]
    return rows, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--kinds", nargs="+", default=["mutant_marginal", "local"])
    p.add_argument("--steps", type=int, default=0, help="steps per chain (0: 40 for mutant_marginal, 2 for local)")
    args = p.parse_args()
    mlm = load_mlm("antiberty")
    print(f"torch threads {torch.get_num_threads()}, {args.chains} chains")
    print("| expert | arm | rows | seconds | rows/s |")
    print("|---|---|---|---|---|")
    for kind in args.kinds:
        steps = args.steps or (40 if kind == "mutant_marginal" else 2)
        sums = {True: [0, 0.0], False: [0, 0.0]}
        for rep in range(args.repeats):
            for batched in (True, False):
                rows, sec = arm(mlm, kind, args.chains, steps, batched, 100 * rep)
                sums[batched][0] += rows
                sums[batched][1] += sec
        for batched in (True, False):
            rows, sec = sums[batched]
            print(
                f"| {kind} ({steps} steps) | {'batched' if batched else 'one_at_a_time'} | {rows:,} | {sec:.1f} | {rows / sec:.1f} |"
            )
        ratio = (sums[True][0] / sums[True][1]) / (sums[False][0] / sums[False][1])
        print(f"| {kind} | batched / one_at_a_time | | | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
