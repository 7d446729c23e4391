"""The CPU token budget of a forward sub-batch (``--batch-tokens``): exact PLL at 65536 / 8192 / 4096 / 2048.

    PYTHONPATH=src:bench OMP_NUM_THREADS=1 python bench/batch_budget.py --threads 1,2 \
        --out docs/results/precision/batch_budget.md

One GDPa1 heavy chain (119 residues, 119 masked copies) scored exactly by AntiBERTy (float32, bfloat16,
int8), Sapiens-VH (float32) and a random-weight ESM-2 35M (float32, bfloat16, int8; ``bench_cpu.save_random_esm``),
on the default (fused) forward. Each budget runs ``--rounds`` times, budgets interleaved; best times, and the
speed of each budget against 65536 (the CPU default until this measurement). The scores agree across budgets
to float rounding (checked: max |d PLL| printed).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch

from mlmprob.models.reader import reader_of  # noqa: E402

BUDGETS = (65536, 8192, 4096, 2048)
UNITS = (
    ("antiberty", "float32"),
    ("antiberty", "bfloat16"),
    ("antiberty", "int8"),
    ("sapiens-vh", "float32"),
    ("esm2-35M", "float32"),
    ("esm2-35M", "bfloat16"),
    ("esm2-35M", "int8"),
)


def run(units, seq: str, threads: int, rounds: int, weights: Path) -> list[str]:
    from bench_cpu import save_random_esm

    import mlmprob

    torch.set_num_threads(threads)
    lines = []
    for name, dt in units:
        src = str(save_random_esm(name, weights)) if name.startswith("esm2") else name
        m = mlmprob.load_mlm(src, device="cpu", dtype=dt)
        ids = m.encode([seq]).input_ids
        mlmprob.pll(m, ids, [1, 2])  # warm-up
        times, plls = {b: [] for b in BUDGETS}, {}
        for r in range(rounds):
            for b in BUDGETS if r % 2 == 0 else BUDGETS[::-1]:
                t0 = time.perf_counter()
                plls[b] = float(mlmprob.pll(reader_of(m, b), ids)[0])
                times[b].append(time.perf_counter() - t0)
        base = min(times[BUDGETS[0]])
        d = max(abs(p - plls[BUDGETS[0]]) for p in plls.values())
        lines.append(
            f"| {name} | {dt} | {threads} | "
            + " | ".join(f"{min(times[b]):.2f} (x{base / min(times[b]):.2f})" for b in BUDGETS)
            + f" | {d:.1e} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--units", default=",".join(f"{n}:{d}" for n, d in UNITS), help="model:dtype,...")
    ap.add_argument("--weights", default="/tmp/mlmprob_bench_cpu")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cpu_info import describe, emit
    from onepass_data import antibody_sets

    seq = antibody_sets("H")["gdpa1"][0]
    units = [tuple(u.split(":")) for u in a.units.split(",")]
    lines = []
    for t in (int(x) for x in a.threads.split(",")):
        lines += run(units, seq, t, a.rounds, Path(a.weights))
    cmd = shlex.join(["python", "bench/batch_budget.py"] + list(sys.argv[1:] if argv is None else argv))
    text = (
        "\n".join(
            [
                "# CPU token budget of a forward sub-batch: exact PLL of one heavy chain",
                "",
                f"Command: `{cmd}`",
                "",
                f"Machine: {describe()}; GDPa1 VH #0 ({len(seq)} residues, {len(seq)} masked copies); best of "
                f"{a.rounds} interleaved rounds; seconds (speed against 65536).",
                "",
                "| model | precision | threads | " + " | ".join(f"{b} tokens" for b in BUDGETS) + " | max abs d PLL |",
                "|---|---|---:|" + "---|" * len(BUDGETS) + "---:|",
                *lines,
            ]
        )
        + "\n"
    )
    return emit(text, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
