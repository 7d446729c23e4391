"""GPU follow-up to ``bench/bench_gpu.py`` (issue 40 §2): where the time of ESM-2 650M bf16 goes, and what
``torch.compile`` and larger sub-batches give mlmprob's fused forward with half-precision attention.

1. **profile**: the CUDA kernels of one ``token_scores`` call (128 masked copies of L = 512), by total time;
2. **sub-batch**: copies/s and MFU of ``token_scores`` at token budgets of 64 to 512 rows of 512 tokens;
3. **compile**: the fused forward compiled (``torch.compile(dynamic=False)``) inside ``token_scores``, and
   transformers' encoder compiled, at the default sub-batch (128 rows), against eager.

    python bench/gpu_probe.py --out gpu_probe               # a CUDA machine, about 3 minutes on an H200
    python bench/gpu_probe.py --dry-run --out gpu_probe_dry  # CPU, tiny model: every step once
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_report as report  # noqa: E402
from bench_gpu import environment, peak, variants  # noqa: E402
from bench_scale import build_model, copy_batch  # noqa: E402
from scale_lib import copy_flops, model_flop_counts  # noqa: E402


def profile_kernels(fn, dev, top: int = 18) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "self_device_time_total", 0) if dev.type == "cuda" else ev.self_cpu_time_total
        if t:
            rows.append((t, ev.count, ev.key))
    total = sum(t for t, _, _ in rows) or 1
    return [
        f"{100 * t / total:5.1f}%  {t / 1000:8.2f} ms  x{c:<5d} {k[:110]}"
        for t, c, k in sorted(rows, reverse=True)[:top]
    ]


def main(argv=None) -> int:
    import tempfile

    import torch

    import mlmprob
    from mlmprob.models.forward import rows_per_batch
    from mlmprob.models.reader import reader_of

    ap = argparse.ArgumentParser()
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=200.0)
    ap.add_argument("--rotary", action="store_true", help="only: the rotary's two paths, alternated")
    a = ap.parse_args(argv)
    a.t0, a.repeats = time.monotonic(), 2
    dev = torch.device("cpu" if a.dry_run else "cuda")
    name, L, copies = ("esm2-8M", 64, 124) if a.dry_run else ("esm2-650M", 512, 1020)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    res: dict = {"command": " ".join(["python", "bench/gpu_probe.py", *sys.argv[1:]]), "env": environment(dev)}
    res.update(peak=peak(dev, torch.bfloat16, 256 if a.dry_run else 8192, 10), skipped=[])
    sync = report.sync_of(dev)
    out = Path(a.out, "probe.json")
    with tempfile.TemporaryDirectory() as tmp:
        m = build_model(name, dev, torch.bfloat16, 0, Path(tmp))
        half = variants(m, torch.bfloat16)["mlmprob"]
        counts = model_flop_counts(m["mlm"].model)
        fpc = copy_flops(counts["p_enc"], counts["p_head"], counts["hidden"], counts["layers"], L)
        ids, pos = copy_batch(m, L, copies, torch.Generator().manual_seed(0))
        one = pos.clone()
        one.view(-1)[one.view(-1).nonzero()[128:, 0]] = False
        mlmprob.token_scores(half, ids[:1], one[:1])
        res["profile"] = profile_kernels(lambda: mlmprob.token_scores(half, ids[:1], one[:1]), dev)
        out.write_text(json.dumps(res, indent=1))

        def rate(mlm) -> dict:
            mlmprob.token_scores(mlm, ids[:1], pos[:1])
            t = min(report.timed(lambda: mlmprob.token_scores(mlm, ids, pos), sync, a.repeats))
            n = int(pos.sum())
            return {"copies_per_s": n / t, "mfu": n * fpc / t / res["peak"]}

        if a.rotary:  # the rotary in real arithmetic (thread invariance on) against one complex product (off)
            import os

            res["rotary"] = {}
            for r in range(2):
                for flag in ("1", "0") if r == 0 else ("0", "1"):
                    os.environ["MLMPROB_THREAD_INVARIANT"] = flag
                    got = rate(half)
                    key = "real (invariant on)" if flag == "1" else "complex (invariant off)"
                    res["rotary"].setdefault(key, []).append(got)
            os.environ["MLMPROB_THREAD_INVARIANT"] = "0"
            res["rotary"]["complex: profile"] = profile_kernels(
                lambda: mlmprob.token_scores(half, ids[:1], one[:1]), dev, 8
            )
            os.environ["MLMPROB_THREAD_INVARIANT"] = "1"
            out.write_text(json.dumps(res, indent=1))
            print(json.dumps(res["rotary"], indent=1))
            return 0
        res["sub_batch"] = {}
        for rows in (8, 16) if a.dry_run else (64, 128, 256, 512):
            if report.late(a, res, f"sub-batch {rows}", 20):
                break
            budget = rows * L
            while rows_per_batch(L, budget) < rows:
                budget *= 2
            res["sub_batch"][rows] = {
                "budget": budget,
                "rows": rows_per_batch(L, budget),
                **rate(reader_of(half, budget)),
            }
            out.write_text(json.dumps(res, indent=1))
        res["compile"] = {}
        if not report.late(a, res, "compile fused", 90):
            fused = half._fused
            eager_hidden = fused.hidden
            try:
                ref = mlmprob.token_scores(half, ids[:2], pos[:2]).log_prob
                t0 = time.perf_counter()
                fused.hidden = torch.compile(eager_hidden, dynamic=False)
                got = mlmprob.token_scores(half, ids[:2], pos[:2]).log_prob  # full sub-batches and a last one
                res["compile"]["fused_first_calls_s"] = time.perf_counter() - t0
                res["compile"]["fused max diff vs eager"] = float((got - ref).abs().max())
                res["compile"]["fused compiled"] = rate(half)
            except Exception as e:  # a compile failure is a result
                res["compile"]["fused error"] = f"{type(e).__name__}: {str(e)[:300]}"
            finally:
                fused.hidden = eager_hidden
            res["compile"]["fused eager"] = rate(half)
            out.write_text(json.dumps(res, indent=1))
    res["wall_s"] = time.monotonic() - a.t0
    out.write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
