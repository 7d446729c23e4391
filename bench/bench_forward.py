"""What batch independence costs: the forward primitive's per-record plan against the plan it replaced.

    python bench/bench_forward.py --data ../shared/data --out docs/results/bench_forward.md

Since issue 19 a record's masked copies are forwarded only with each other (its own width, its own
sub-batches), so its scores are identical to the bit wherever it is computed. Before, the copies of all
records of a call were sorted by length and packed into shared sub-batches (padding to the longest,
at least 8 rows). Both plans run here through the same primitive (``models.forward.iter_forward``): the
old one is reproduced by giving each of its sub-batches a group of its own. Workloads: PLL copies of
AntiBERTy heavy chains (Thera-SAbDab, 100-130 residues) and of short English sentences with en-small
(the worst case for per-record batches: 8-20 tokens). The two plans run in interleaved rounds in one
process; the table gives the median time of each and their ratio (per-record / packed).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

import mlmprob
from mlmprob.data import shared_data_dir
from mlmprob.models.forward import MaskedCopies, iter_forward, rows_per_batch
from mlmprob.models.reader import reader_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from precision import _antibodies, _sentences  # noqa: E402 - the benchmark inputs the precision report uses


def packed_groups(lengths: torch.Tensor, batch_tokens: int, min_rows: int = 8) -> torch.Tensor:
    """The plan before issue 19, as group ids: copies sorted by length (descending), cut into sub-batches
    of at most ``rows_per_batch(width)`` rows of similar length (>= 4/5 of the longest) or ``min_rows``."""
    order = torch.argsort(lengths, descending=True, stable=True)
    sorted_len = lengths[order].tolist()
    groups = torch.empty_like(lengths)
    start, g, N = 0, 0, len(order)
    while start < N:
        width = max(int(sorted_len[start]), 1)
        n = min(N - start, rows_per_batch(width, batch_tokens))
        similar = sum(1 for x in sorted_len[start : start + n] if x * 5 >= width * 4)
        n = max(similar, min(n, min_rows))
        groups[order[start : start + n]] = g
        start, g = start + n, g + 1
    return groups


def _run(mlm, source, reads) -> float:
    t = time.perf_counter()
    for _ in iter_forward(mlm, source, reads, source.cols, on_device=True):
        pass
    return time.perf_counter() - t


def measure(mlm, seqs: list[str], rounds: int) -> dict:
    ids = mlm.encode(seqs).input_ids
    rows, cols = reader_of(mlm).default_positions(ids).nonzero(as_tuple=True)
    per_record = MaskedCopies(mlm, ids, rows, cols)
    packed = MaskedCopies(mlm, ids, rows, cols)
    packed.groups = packed_groups(packed.lengths, 65536)
    reads = torch.arange(len(rows))
    times = {"per_record": [], "packed": []}
    with torch.inference_mode():
        _run(mlm, per_record, reads[:64])  # warm-up
        for _ in range(rounds):
            times["packed"].append(_run(mlm, packed, reads))
            times["per_record"].append(_run(mlm, per_record, reads))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "copies": len(rows),
        "sequences": len(seqs),
        "packed_s": med["packed"],
        "per_record_s": med["per_record"],
        "ratio": med["per_record"] / med["packed"],
        "spread": {k: (min(v), max(v)) for k, v in times.items()},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="the shared data folder (default: ../shared/data)")
    ap.add_argument("--out", default=None, help="markdown report (default: stdout)")
    ap.add_argument("--n-antibodies", type=int, default=16)
    ap.add_argument("--n-sentences", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    data = Path(a.data) if a.data else shared_data_dir()
    if data is None or not data.exists():
        print("error: the shared data folder was not found; pass --data", file=sys.stderr)
        return 2
    load0 = os.getloadavg()[0]
    rows = []
    for name, seqs in [("antiberty", _antibodies(data, a.n_antibodies)), ("en-small", _sentences(data, a.n_sentences))]:
        mlm = mlmprob.load_mlm(name)
        r = measure(mlm, seqs, a.rounds)
        lens = [len(mlm.encode([s]).input_ids[0]) for s in seqs[:50]]
        rows.append((name, r, min(lens), max(lens)))
        print(f"{name}: {r}", file=sys.stderr)
    lines = [
        "# Batch independence: what the per-record plan costs",
        "",
        f"Command: `python bench/bench_forward.py {shlex.join(argv if argv is not None else sys.argv[1:])}`",
        f"Machine: {platform.machine()}, {torch.get_num_threads()} thread(s), torch {torch.__version__}, "
        f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| model | sequences | tokens (min-max of first 50) | copies | packed (s) | per-record (s) | per-record / packed |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r, lo, hi in rows:
        lines.append(
            f"| {name} | {r['sequences']} | {lo}-{hi} | {r['copies']} | {r['packed_s']:.2f} | "
            f"{r['per_record_s']:.2f} | {r['ratio']:.3f} |"
        )
    lines += [
        "",
        f"Median of {a.rounds} interleaved rounds per plan (min-max: "
        + "; ".join(
            f"{n} packed {r['spread']['packed'][0]:.2f}-{r['spread']['packed'][1]:.2f}, per-record "
            f"{r['spread']['per_record'][0]:.2f}-{r['spread']['per_record'][1]:.2f}"
            for n, r, _, _ in rows
        )
        + ").",
    ]
    text = "\n".join(lines) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
