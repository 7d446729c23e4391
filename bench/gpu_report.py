"""The SDPA and ``torch.compile`` sections of ``bench/bench_gpu.py``, its deadline and its report."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ATTENTION_WORDS = ("flash", "fmha", "attention", "efficient", "cudnn", "sdpa", "scaled_dot_product", "softmax")


def sync_of(dev):
    import torch

    return torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)


def timed(fn, sync, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t)
    return out


def late(a, res: dict, what: str, need: float = 0.0) -> bool:
    """True (and ``what`` recorded as skipped) when less than ``need`` seconds are left before the deadline."""
    left = a.deadline - (time.monotonic() - a.t0)
    if left > need:
        return False
    res["skipped"].append(f"{what} (deadline: {left:.0f} s left, {need:.0f} s needed)")
    print(f"  skipped {what}: deadline", file=sys.stderr, flush=True)
    return True


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:200]


def attention_kernels(fn, device_type: str) -> list[str]:
    """The names of the attention-looking kernels (or CPU ops) one call of ``fn`` runs, by their total time."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device_type == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
    rows = []
    for ev in prof.key_averages():
        name = ev.key
        if any(w in name.lower() for w in ATTENTION_WORDS):
            t = getattr(ev, "device_time_total", 0) or getattr(ev, "cuda_time_total", 0) or ev.cpu_time_total
            rows.append((t, name))
    return [f"{n[:90]} ({t / 1000:.1f} ms)" for t, n in sorted(rows, reverse=True)[:4]]


def sdpa_section(a, res: dict, m: dict, variants: dict, ids, pos, dname: str, sync) -> None:
    """Per variant: the kernels torch picks, and each SDPA backend forced in turn (copies/s, or why not)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import mlmprob

    for vname, mlm in variants.items():
        if dname == "float32" and vname != "mlmprob":
            continue  # float32: the default path only (each call is 10x a bfloat16 one)
        if late(a, res, f"SDPA {m['mlm'].name} {dname} {vname}", 30):
            return
        row = {"model": m["mlm"].name, "dtype": dname, "variant": vname, "copies": int(pos.sum())}
        try:
            row["default_kernels"] = attention_kernels(
                lambda mlm=mlm: mlmprob.token_scores(mlm, ids, pos), ids.device.type
            )
        except Exception as e:  # the profiler is a report aid; its failure is recorded, not fatal
            row["default_kernels"] = [f"profiler failed: {_first_line(e)}"]
        ref = mlmprob.token_scores(mlm, ids, pos).log_prob
        for b in ("DEFAULT", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
            try:
                if b == "DEFAULT":
                    t = timed(lambda mlm=mlm: mlmprob.token_scores(mlm, ids, pos), sync, 1)
                    diff = 0.0
                else:
                    with sdpa_kernel([getattr(SDPBackend, b)]):
                        got = mlmprob.token_scores(mlm, ids, pos).log_prob
                        t = timed(lambda mlm=mlm: mlmprob.token_scores(mlm, ids, pos), sync, 1)
                    diff = float((got - ref).abs().max())
                row[b] = {"copies_per_s": int(pos.sum()) / min(t), "max_diff_vs_default": diff}
            except Exception as e:  # a backend that does not take these inputs: recorded
                row[b] = {"error": _first_line(e)}
            if ids.device.type == "cuda":
                torch.cuda.synchronize()
        res["sdpa"].append(row)
        write(a, res)


def _time_calls(fn, sync, n: int) -> float:
    ts = []
    for _ in range(n):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def compile_section(a, res: dict, m: dict, ids, pos, dname: str, sync) -> None:
    """``torch.compile(dynamic=False)`` of transformers' encoder and of mlmprob's fused forward against eager,
    on one fixed batch of masked copies (the hidden states only: the LM head is the same small product)."""
    import torch

    mlm = m["mlm"]
    rows = min(ids.shape[0] * (ids.shape[1] - 2), 16 if mlm.device.type == "cpu" else 128)
    L = ids.shape[1]
    x = ids[torch.arange(rows) % ids.shape[0]].clone()
    x[torch.arange(rows), 1 + torch.arange(rows) % (L - 2)] = mlm.mask_id
    x = x.to(mlm.device)
    am = torch.ones_like(x)
    base = mlm._base
    targets = {"transformers encoder": lambda f: f(input_ids=x, attention_mask=am)[0]}
    fns = {"transformers encoder": base}
    if mlm._fused is not None:
        targets["mlmprob fused forward"] = lambda f: f(x, am)
        fns["mlmprob fused forward"] = mlm._fused.hidden
    need = 100 if mlm.name.startswith("esm2-650M") else 60
    for what, call in targets.items():
        if late(a, res, f"compile {mlm.name} {dname} {what}", need):
            return
        row = {"model": mlm.name, "dtype": dname, "what": what, "rows": rows, "length": L}
        try:
            with torch.inference_mode():
                eager_out = call(fns[what])
                eager = _time_calls(lambda: call(fns[what]), sync, max(3, a.repeats))
                torch._dynamo.reset()
                cf = torch.compile(fns[what], dynamic=False)
                sync()
                t0 = time.perf_counter()
                comp_out = call(cf)
                sync()
                row["compile_s"] = time.perf_counter() - t0
                comp = _time_calls(lambda: call(cf), sync, max(3, a.repeats))
            row.update(
                eager_ms=eager * 1e3,
                compiled_ms=comp * 1e3,
                speedup=eager / comp,
                max_diff=float((eager_out.float() - comp_out.float()).abs().max()),
            )
        except Exception as e:  # compile failures are results here
            row["error"] = _first_line(e)
        res["compile"].append(row)
        write(a, res)


# ------------------------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------------------------
def _t(x: float) -> str:
    return f"{x / 1e12:.1f}"


def _e(x) -> str:
    return "" if x is None else f"{x:.2e}"


def render(res: dict) -> str:
    env = res["env"]
    out = ["# GPU check: PLL throughput and MFU (bench/bench_gpu.py)", "", f"Command: `{res['command']}`", ""]
    out += [f"- {k}: {v}" for k, v in env.items()] + [""]
    out += ["| dtype | matmul peak before (TFLOP/s) | after |", "| --- | --- | --- |"]
    for d, v in res["peaks"].items():
        out.append(f"| {d} | {_t(v)} | {_t(res['peaks_after'][d]) if d in res.get('peaks_after', {}) else ''} |")
    out += ["", "## Throughput (masked copies, one read each)", ""]
    out += [
        "| model | L | dtype | variant | copies | best s | copies/s | sequences/s | MFU | max / mean abs log p diff vs fp32 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in res["rows"]:
        out.append(
            f"| {r['model']} | {r['length']} | {r['dtype']} | {r['variant']} | {r['copies']} | {min(r['seconds']):.3f} "
            f"| {r['copies_per_s']:.0f} | {r['copies_per_s'] / (r['length'] - 2):.2f} | {100 * r['mfu']:.1f}% "
            f"| {_e(r['err_vs_fp32'])} / {_e(r['mean_err_vs_fp32'])} |"
        )
    out += ["", "## Naive loop (one batch-1 forward per position, whole LM head)", ""]
    out += [
        "| model | dtype | positions | copies/s | MFU | mlmprob speed-up | max abs diff vs mlmprob |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in res["naive"]:
        ours = next(
            (
                x
                for x in res["rows"]
                if x["model"] == r["model"] and x["dtype"] == r["dtype"] and x["variant"] == "mlmprob"
            ),
            None,
        )
        up = f"{ours['copies_per_s'] / r['copies_per_s']:.1f}x" if ours else ""
        out.append(
            f"| {r['model']} | {r['dtype']} | {r['positions']} | {r['copies_per_s']:.1f} | {100 * r['mfu']:.1f}% | {up} "
            f"| {_e(r['max_diff_vs_mlmprob'])} |"
        )
    out += ["", "## SDPA backends (copies/s; forced with torch.nn.attention.sdpa_kernel)", ""]
    for r in res["sdpa"]:
        out.append(
            f"- {r['model']} {r['dtype']} {r['variant']} ({r['copies']} copies); kernels: {'; '.join(r['default_kernels'])}"
        )
        for b in ("DEFAULT", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
            v = r.get(b, {})
            txt = (
                v.get("error")
                or f"{v.get('copies_per_s', 0):.0f} copies/s, max diff {_e(v.get('max_diff_vs_default'))}"
            )
            out.append(f"  - {b}: {txt}")
    out += ["", "## torch.compile (dynamic=False, one fixed batch)", ""]
    out += [
        "| model | dtype | what | rows x L | compile s | eager ms | compiled ms | speed-up | max diff |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in res["compile"]:
        if "error" in r:
            out.append(
                f"| {r['model']} | {r['dtype']} | {r['what']} | {r['rows']} x {r['length']} | failed: {r['error']} | | | | |"
            )
        else:
            out.append(
                f"| {r['model']} | {r['dtype']} | {r['what']} | {r['rows']} x {r['length']} | {r['compile_s']:.1f} "
                f"| {r['eager_ms']:.2f} | {r['compiled_ms']:.2f} | {r['speedup']:.2f}x | {_e(r['max_diff'])} |"
            )
    if res["skipped"]:
        out += ["", "Skipped (deadline): " + "; ".join(res["skipped"])]
    if "wall_s" in res:
        out += ["", f"Wall time of the whole script: {res['wall_s']:.0f} s."]
    return "\n".join(out) + "\n"


def write(a, res: dict) -> None:
    Path(a.out, "report.json").write_text(json.dumps(res, indent=1, default=str))
    Path(a.out, "report.md").write_text(render(res))
