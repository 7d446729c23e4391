"""What MKL's reproducibility mode (``MKL_CBWR=AUTO,STRICT``, set by ``import mlmprob``) costs in wall time,
and whether it makes float32 scores independent of the thread count.

Each configuration runs in a fresh process (MKL reads the variable at its first call): exact PLL of the
same sequences with ``MKL_CBWR`` off (empty) and on, at 1 and N threads, rounds interleaved; the report
gives the best time of each, the on/off ratio, and whether 1 and N threads gave the same bits.

    python bench/bench_threads_repro.py --model antiberty --threads 2 --rounds 3 --length 120 --n 1

>>> run = measure("en-small", ["the cat sat on the mat"], threads=(1, 2), rounds=1)
>>> sorted(run), run["on"]["same_bits"]
(['off', 'on'], True)
>>> run["on"]["seconds"][1] > 0
True
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys

CHILD = r"""
import json, sys, time
import mlmprob, torch
model, seqs, threads = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
mlm = mlmprob.load_mlm(model, device="cpu", dtype="float32")
ids = [mlm.encode([s]).input_ids for s in seqs]
t = time.perf_counter()
out = [mlmprob.pll(mlm, x).tolist() for x in ids]
print(json.dumps({"seconds": time.perf_counter() - t, "pll": [repr(v) for row in out for v in row]}))
"""


def _child(model: str, seqs: list[str], threads: int, cbwr: str) -> dict:
    env = {**os.environ, "MKL_CBWR": cbwr}
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(k, None)
    run = subprocess.run([sys.executable, "-c", CHILD, model, json.dumps(seqs), str(threads)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def measure(model: str, seqs: list[str], threads=(1, 2), rounds: int = 3) -> dict:
    """``{"off"|"on": {"seconds": {threads: best}, "same_bits": bool}}`` for MKL_CBWR off (empty) and on."""
    modes = {"off": "", "on": "AUTO,STRICT"}
    best = {m: {t: float("inf") for t in threads} for m in modes}
    plls = {m: {} for m in modes}
    for _ in range(rounds):
        for t in threads:
            for m, value in modes.items():
                r = _child(model, seqs, t, value)
                best[m][t] = min(best[m][t], r["seconds"])
                plls[m][t] = r["pll"]
    return {m: {"seconds": best[m], "same_bits": len({tuple(p) for p in plls[m].values()}) == 1} for m in modes}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="antiberty")
    p.add_argument("--threads", type=int, default=2, help="N: compared with 1 thread")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--length", type=int, default=120, help="residues per random sequence")
    p.add_argument("--n", type=int, default=1, help="sequences")
    a = p.parse_args(argv)
    rng = random.Random(0)
    seqs = ["".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(a.length)) for _ in range(a.n)]
    run = measure(a.model, seqs, (1, a.threads), a.rounds)
    print(f"| MKL_CBWR | 1 thread (s) | {a.threads} threads (s) | 1 and {a.threads} threads same bits |")
    print("|---|---|---|---|")
    for m, r in run.items():
        s = r["seconds"]
        print(f"| {m} | {s[1]:.2f} | {s[a.threads]:.2f} | {'yes' if r['same_bits'] else 'no'} |")
    for t in (1, a.threads):
        print(f"cost at {t} thread(s): on/off = {run['on']['seconds'][t] / run['off']['seconds'][t]:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
