"""fbgemm's dynamic int8 linear vs the same product in two calls (issue 21 §2): which runs faster here?

Result on the AVX-512 VNNI EPYC (docs/results/precision/int8_kernels.md): the same speed (0.96-1.15x on
a quiet core), so ``Int8Linear`` keeps the one call. A first look on a loaded machine had suggested up to
1.3x for the two calls; interleaved rounds on a quiet core did not confirm it.

    PYTHONPATH=src:bench OMP_NUM_THREADS=1 python bench/int8_kernels.py --rounds 8 \
        --out docs/results/precision/int8_kernels.md

``dynamic``: ``torch.ops.quantized.linear_dynamic`` (chooses the activation scale and runs the product);
``two-call``: ``torch._choose_qparams_per_tensor`` (the same scale) and then
``linear_with_input_q_dq_qweight_dq_output_fp32`` (the product with that static scale, float32 output),
with static activation scales chosen per call. Both give the same bits (checked on every shape here). Shapes: the linear layers of ESM-2 35M / 150M and AntiBERTy on 16 masked copies of a 121-token
chain (1,936 rows). The two run interleaved, ``--rounds`` times; best and median times.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

SHAPES = {  # label: (in, out) of a linear layer
    "ESM-2 35M QKV": (480, 1440),
    "ESM-2 35M FFN up": (480, 1920),
    "ESM-2 35M FFN down": (1920, 480),
    "ESM-2 150M QKV": (640, 1920),
    "ESM-2 150M FFN up": (640, 2560),
    "ESM-2 150M FFN down": (2560, 640),
    "AntiBERTy QKV": (512, 1536),
    "AntiBERTy FFN up": (512, 2048),
    "AntiBERTy FFN down": (2048, 512),
}


def packed_weights(n_in: int, n_out: int, g: torch.Generator):
    w = torch.randn(n_out, n_in, generator=g) * 0.05
    scale = (w.abs().amax(1) / 127).double()
    qw = torch.quantize_per_channel(w, scale, torch.zeros(n_out, dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(qw, torch.randn(n_out, generator=g))


def dynamic(x, packed, reduce_range):
    return torch.ops.quantized.linear_dynamic(x, packed, reduce_range)


def two_call(x, packed, reduce_range):
    scale, zero = torch._choose_qparams_per_tensor(x, reduce_range)
    return torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(x, scale, zero, packed)


def run(rows: int, rounds: int, reduce_range: bool) -> list[str]:
    g = torch.Generator().manual_seed(0)
    lines = []
    for label, (n_in, n_out) in SHAPES.items():
        packed, x = packed_weights(n_in, n_out, g), torch.randn(rows, n_in, generator=g) * 3
        same = torch.equal(dynamic(x, packed, reduce_range), two_call(x, packed, reduce_range))
        times = {"dynamic": [], "two-call": []}
        for r in range(rounds):
            order = (("dynamic", dynamic), ("two-call", two_call))
            for name, fn in order if r % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                fn(x, packed, reduce_range)
                times[name].append(time.perf_counter() - t0)
        flops = 2 * rows * n_in * n_out
        best = {k: min(v) for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        lines.append(
            f"| {label} | {n_in} x {n_out} | {1e3 * best['dynamic']:.1f} / {1e3 * med['dynamic']:.1f} | "
            f"{1e3 * best['two-call']:.1f} / {1e3 * med['two-call']:.1f} | "
            f"{flops / best['two-call'] / 1e9:.0f} | {med['dynamic'] / med['two-call']:.2f} | "
            f"{'yes' if same else 'NO'} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1936)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cpu_info import describe

    from mlmprob.models.precision import int8_reduce_range

    rr = int8_reduce_range()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lines = run(a.rows, a.rounds, rr)
    cmd = shlex.join(["python", "bench/int8_kernels.py"] + list(sys.argv[1:] if argv is None else argv))
    text = (
        "\n".join(
            [
                "# int8 linear: fbgemm's dynamic op vs the same product in two calls",
                "",
                f"Command: `{cmd}`",
                "",
                f"Machine: {describe()}; {a.threads} thread(s); activations {'7' if rr else '8'}-bit "
                f"(reduce_range={rr}); {a.rows} rows; {a.rounds} interleaved rounds.",
                "",
                "| layer | in x out | dynamic ms (best / median) | two-call ms (best / median) | two-call GFLOP/s (best) "
                "| speed-up (medians) | same bits |",
                "|---|---|---|---|---|---|---|",
                *lines,
            ]
        )
        + "\n"
    )
    from cpu_info import emit

    return emit(text, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
