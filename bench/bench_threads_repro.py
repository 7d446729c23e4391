"""What thread-count-invariant float32 costs in wall time, and whether 1 and N threads give the same bits.

Configurations (each run in a fresh process: MKL reads ``MKL_CBWR`` at its first call):

- ``invariant``: the default, ``mlmprob.runtime.threads`` on (single-threaded MKL per forward, fused
  linears in fixed row blocks on the threads) and ``MKL_CBWR=AUTO,STRICT``;
- ``invariant-nocbwr``: the same with ``MKL_CBWR`` unset;
- ``cbwr-only``: the previous default (``MKL_CBWR=AUTO,STRICT``, ``MLMPROB_THREAD_INVARIANT=0``);
- ``off``: neither.

Exact PLL of the same random chain(s) at N threads, configurations interleaved round by round; the report
gives each configuration's median time, its per-round ratio to ``cbwr-only`` and to ``off`` (median and
range over the rounds), the load average around the runs, and, with ``--check``, whether a 1-thread run
gave the same bits as the N-thread runs.

    python bench/bench_threads_repro.py --model antiberty --threads 2 --rounds 7 --length 120 --n 1 --check

>>> run = measure("en-small", ["the cat sat on the mat"], threads=2, rounds=1, configs=("invariant", "off"), check=True)
>>> sorted(run["seconds"]), run["same_bits"]["invariant"]
(['invariant', 'off'], True)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys

CONFIGS = {
    "invariant": {"MKL_CBWR": "AUTO,STRICT", "MLMPROB_THREAD_INVARIANT": "1"},
    "invariant-nocbwr": {"MKL_CBWR": "", "MLMPROB_THREAD_INVARIANT": "1"},
    "cbwr-only": {"MKL_CBWR": "AUTO,STRICT", "MLMPROB_THREAD_INVARIANT": "0"},
    "off": {"MKL_CBWR": "", "MLMPROB_THREAD_INVARIANT": "0"},
}

CHILD = r"""
import json, sys, time
import mlmprob, torch
model, seqs, threads = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
mlm = mlmprob.load_mlm(model, device="cpu", dtype="float32")
ids = [mlm.encode([s]).input_ids for s in seqs]
mlmprob.pll(mlm, mlm.encode([seqs[0][:8]]).input_ids)   # warm-up
t = time.perf_counter()
out = [mlmprob.pll(mlm, x).tolist() for x in ids]
print(json.dumps({"seconds": time.perf_counter() - t, "pll": [repr(v) for row in out for v in row]}))
"""


def _child(model: str, seqs: list[str], threads: int, config: str) -> dict:
    env = {**os.environ, **CONFIGS[config]}
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(k, None)
    load = os.getloadavg()[0]
    run = subprocess.run(
        [sys.executable, "-c", CHILD, model, json.dumps(seqs), str(threads)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(run.stdout.strip().splitlines()[-1])
    out["load"] = (load + os.getloadavg()[0]) / 2
    return out


def _ratios(seconds: dict, config: str, base: str) -> list[float]:
    return [a / b for a, b in zip(seconds[config], seconds[base])]


def measure(
    model: str, seqs: list[str], threads: int = 2, rounds: int = 5, configs=tuple(CONFIGS), check: bool = False
) -> dict:
    """``{"seconds": {config: [per round]}, "load": [...], "pll": {config: bits at N threads},
    "same_bits": {config: 1 thread == N threads, and every round alike}}`` (``same_bits`` with ``check``)."""
    seconds = {c: [] for c in configs}
    plls = {c: set() for c in configs}
    load = []
    for r in range(rounds):
        order = list(configs) if r % 2 == 0 else list(reversed(configs))  # no configuration always first
        for c in order:
            res = _child(model, seqs, threads, c)
            seconds[c].append(res["seconds"])
            plls[c].add(tuple(res["pll"]))
            load.append(res["load"])
    out = {"seconds": seconds, "load": load, "same_bits": {}}
    if check:
        for c in configs:
            plls[c].add(tuple(_child(model, seqs, 1, c)["pll"]))
            out["same_bits"][c] = len(plls[c]) == 1
    return out


IN_PROCESS = r"""
import json, os, sys, time
import mlmprob, torch
model, seqs, threads, pairs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
mlm = mlmprob.load_mlm(model, device="cpu", dtype="float32")
ids = [mlm.encode([s]).input_ids for s in seqs]
mlmprob.pll(mlm, mlm.encode([seqs[0][:8]]).input_ids)
out = {"on": [], "off": [], "load": []}
for i in range(2 * pairs):
    mode = ("on", "off")[(i + i // 2) % 2]              # on off off on on off ...: neither always first
    os.environ["MLMPROB_THREAD_INVARIANT"] = "1" if mode == "on" else "0"
    t = time.perf_counter()
    for x in ids:
        mlmprob.pll(mlm, x)
    out[mode].append(time.perf_counter() - t)
    out["load"].append(os.getloadavg()[0])
print(json.dumps(out))
"""


def measure_in_process(model: str, seqs: list[str], threads: int = 2, pairs: int = 5) -> dict:
    """The switch ``MLMPROB_THREAD_INVARIANT`` on and off alternately in one process (``MKL_CBWR`` as set
    by mlmprob): ``{"on": [s], "off": [s], "load": [...]}``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    run = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, model, json.dumps(seqs), str(threads), str(pairs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="antiberty")
    p.add_argument("--threads", type=int, default=2, help="N: the thread count timed")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--length", type=int, default=120, help="residues per random sequence")
    p.add_argument("--n", type=int, default=1, help="sequences")
    p.add_argument("--check", action="store_true", help="one more run per configuration at 1 thread: same bits?")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, from: " + ", ".join(CONFIGS))
    p.add_argument(
        "--in-process",
        type=int,
        default=0,
        metavar="PAIRS",
        help="instead: PAIRS on/off pairs of the invariance switch in one process",
    )
    a = p.parse_args(argv)
    rng = random.Random(0)
    seqs = ["".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(a.length)) for _ in range(a.n)]
    if a.in_process:
        r = measure_in_process(a.model, seqs, a.threads, a.in_process)
        ratios = [x / y for x, y in zip(r["on"], r["off"])]
        print(
            f"{a.model}, float32, exact PLL, {a.threads} threads, one process, {a.in_process} on/off pairs; "
            f"load average median {statistics.median(r['load']):.1f} ({min(r['load']):.1f}-{max(r['load']):.1f})"
        )
        print(
            f"on: median {statistics.median(r['on']):.2f} s; off: median {statistics.median(r['off']):.2f} s; "
            f"on/off per pair: {_spread(ratios)}"
        )
        return 0
    configs = tuple(a.configs.split(","))
    run = measure(a.model, seqs, a.threads, a.rounds, configs, a.check)
    s = run["seconds"]
    bases = [b for b in ("cbwr-only", "off") if b in s]
    print(
        f"{a.model}, float32, exact PLL of {a.n} random {a.length}-residue chain(s), {a.threads} threads, "
        f"{a.rounds} interleaved rounds; load average (1 min) median {statistics.median(run['load']):.1f} "
        f"(range {min(run['load']):.1f}-{max(run['load']):.1f}) on {os.cpu_count()} CPUs"
    )
    print()
    head = "| configuration | median s | " + " | ".join(f"/ {b}: median (range)" for b in bases)
    head += " | 1 and N threads same bits |" if a.check else " |"
    print(head)
    print("|---" * (2 + len(bases) + bool(a.check)) + "|")
    for c in configs:
        row = f"| {c} | {statistics.median(s[c]):.2f} | " + " | ".join(_spread(_ratios(s, c, b)) for b in bases)
        if a.check:
            row += " | " + ("yes" if run["same_bits"][c] else "no")
        print(row + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
