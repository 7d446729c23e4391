"""What an exact draw costs with and without its energies (issue 37, item 2).

The independent draws (ancestral, speculative, unmask, adaptive, mask-predict) make no forward pass beyond
their method's own unless the energies of the draws are asked for (``energies=True``, ``--energies``). Per
method, on the embedded AntiBERTy, side by side in one run (the two settings alternated, the same seed, so the
same draws): seconds per draw, forward rows and model calls per draw as the result reports them
(``forward_rows_per_sample``, ``calls_per_sample``), and the ratio with / without.

    PYTHONPATH=src:bench python bench/bench_draw_energies.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# isort: off
import mlmprob  # first: MKL's strict mode, as in the other benchmarks
import torch

# isort: on

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_info import describe  # noqa: E402

from mlmprob.sampling.spec import REGISTRY  # noqa: E402

SEQUENCE = "EVQLVESGGGLVQPGGSLRL"
DRAWS = [name for name, m in REGISTRY.items() if m.draws]


def _draw(mlm, ids, method: str, chains: int, energies: bool):
    t = time.perf_counter()
    r = mlmprob.sample(
        mlm, ids.expand(chains, -1), method=method, epochs=1, energies=energies,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    return time.perf_counter() - t, r


def measure(mlm, ids, method: str, chains: int, rounds: int) -> dict:
    """Seconds per draw (median over ``rounds``), rows and calls per draw, without and with energies."""
    out: dict = {False: [], True: []}
    rows, calls = {}, {}
    _draw(mlm, ids, method, chains, False)  # warm-up
    for i in range(rounds):
        for energies in (False, True) if i % 2 == 0 else (True, False):
            s, r = _draw(mlm, ids, method, chains, energies)
            out[energies].append(s / chains)
            rows[energies] = r.forward_rows / r.rounds.numel()
            calls[energies] = float(r.calls.double().mean())
    return {"s": {k: statistics.median(v) for k, v in out.items()}, "rows": rows, "calls": calls}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chains", type=int, default=1, help="draws per call")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--methods", default=",".join(DRAWS))
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    mlm = mlmprob.load_mlm("antiberty", device="cpu", dtype="float32")
    ids = mlm.encode([SEQUENCE]).input_ids
    print(f"Machine: {describe()}; torch {torch.__version__}; {a.threads} thread(s)")
    print(f"AntiBERTy, one input of {len(SEQUENCE)} residues, {a.chains} draws per call, median of {a.rounds} calls\n")
    print(
        "| method | s per draw | with energies | ratio | forward rows per draw | with energies "
        "| calls per draw | with energies |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for method in a.methods.split(","):
        m = measure(mlm, ids, method, a.chains, a.rounds)
        s, rows, calls = m["s"], m["rows"], m["calls"]
        print(
            f"| {method} | {s[False]:.3f} | {s[True]:.3f} | {s[True] / s[False]:.2f} | {rows[False]:.0f} "
            f"| {rows[True]:.0f} | {calls[False]:.1f} | {calls[True]:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
