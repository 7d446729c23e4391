"""Where PLL time goes: the operator-time breakdown of ``token_scores`` for one benchmark model.

Explains the MFU figures of docs/results/bench_scale.md: the MFU counts only the FLOPs of linear
layers and of attention's two matmuls, so time in element-wise work (rotary embeddings, GELU, residual
adds, layer norms) and in attention kernels with small heads lowers it without any idle time.

    python bench/profile_pll.py --model esm2-35M --length 128 --copies 32 --out docs/results/bench_scale_profile.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_scale import build_model, copy_batch  # noqa: E402

GROUPS = (
    (
        "linear layers (addmm, mm, bmm, matmul; int8 linear_dynamic)",
        ("aten::addmm", "aten::mm", "aten::bmm", "aten::matmul", "quantized::linear_dynamic"),
    ),
    ("attention kernel (SDPA)", ("aten::_scaled_dot_product",)),
    (
        "element-wise (mul, add, div, neg, erf/GELU, softmax)",
        (
            "aten::mul",
            "aten::add",
            "aten::div",
            "aten::neg",
            "aten::erf",
            "aten::gelu",
            "aten::softmax",
            "aten::_softmax",
            "aten::log_softmax",
            "aten::_log_softmax",
            "aten::sub",
        ),
    ),
    ("layer norm", ("aten::native_layer_norm",)),
    (
        "copies and reshapes (copy_, cat, index, to)",
        (
            "aten::copy_",
            "aten::cat",
            "aten::index",
            "aten::_to_copy",
            "aten::clone",
            "aten::masked_fill",
            "aten::where",
        ),
    ),
)


def group_of(name: str) -> str:
    for label, prefixes in GROUPS:
        if any(name.startswith(p) for p in prefixes):
            return label
    return "other"


def op_times(fn) -> dict[str, float]:
    """Self CPU time (microseconds) of each operator in one call of ``fn`` under ``torch.profiler``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {ev.key: float(ev.self_cpu_time_total) for ev in prof.key_averages()}


def group_shares(times: dict[str, float]) -> dict[str, float]:
    """Share of each of ``GROUPS`` (and "other") in the total of ``times`` (from :func:`op_times`).

    >>> group_shares({"aten::addmm": 3.0, "aten::gelu": 1.0})["element-wise (mul, add, div, neg, erf/GELU, softmax)"]
    0.25
    """
    share: dict[str, float] = {}
    for k, t in times.items():
        share[group_of(k)] = share.get(group_of(k), 0.0) + t
    total = sum(share.values()) or 1.0
    return {label: share.get(label, 0.0) / total for label, _ in GROUPS + (("other", ()),)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="antiberty,esm2-35M,bert-base", help="comma-separated models of bench_scale.py")
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--copies", type=int, default=32)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--out", default="docs/results/bench_scale_profile.md")
    a = p.parse_args(argv)
    import torch

    import mlmprob

    torch.set_num_threads(a.threads)
    command = "python " + " ".join(
        shlex.quote(x) for x in ["bench/profile_pll.py"] + list(sys.argv[1:] if argv is None else argv)
    )
    load0 = os.getloadavg()
    lines = [
        "# Where PLL time goes (operator profile)",
        "",
        f"Command: `{command}`",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}; torch {torch.__version__}; {a.threads} threads; "
        f"load average at the start {load0[0]:.1f}",
        f"- each model: `token_scores` on {a.copies} masked copies of length {a.length} (random weights as in "
        "bench_scale.py), one warm-up call, then one profiled call; shares of the operators' self CPU time.",
        "- The MFU of bench_scale.md credits only the FLOPs of the linear layers and attention's two matmuls; "
        "the other rows are work it does not count.",
        "",
    ]
    header = "| model | " + " | ".join(label for label, _ in GROUPS) + " | other |"
    lines += [header, "|---|" + "---:|" * (len(GROUPS) + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            m = build_model(name, torch.device("cpu"), torch.float32, 0, Path(tmp))
            ids, pos = copy_batch(m, a.length, a.copies, torch.Generator().manual_seed(0))
            mlmprob.token_scores(m["mlm"], ids, pos)
            share = group_shares(op_times(lambda: mlmprob.token_scores(m["mlm"], ids, pos)))
            cells = [f"{100 * v:.0f}%" for v in share.values()]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
            print(lines[-1], file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    lines += [
        "",
        f"Load average at the end {load1[0]:.1f}. Shares are of CPU time, so they hold under load better "
        "than wall-clock rates do.",
    ]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(f"written {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
