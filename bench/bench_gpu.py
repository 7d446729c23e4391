"""GPU check (issue 40 §2): PLL throughput and MFU of a random-weight ESM-2 650M at L = 512 and BERT-base at
L = 128, in bfloat16 and float32, side by side in one process:

- **peaks**: the best rate of square ``n x n`` matrix products in each dtype (float32 as torch runs it by
  default: TF32 off), measured before and after the models;
- **mlmprob**: ``mlmprob.token_scores`` over a fixed number of masked copies (one read each), through
  mlmprob's fused forward as it runs by default (a half-precision model on a GPU attends in its own dtype),
  the same with float32 attention (``half_attention=False``), and transformers' own forward (``fused=False``);
  MFU = copies x model FLOPs per copy / (time x peak), model FLOPs as in ``bench/scale_lib.py`` (encoder
  linears at every position, the two attention products, the LM head at the read);
- **naive**: one forward of one masked copy per position (batch 1, the whole LM head), the loop a first
  implementation would write; its log-probabilities are checked against mlmprob's;
- **error**: each variant's per-position log-probabilities against the float32 model's on one sequence;
- **SDPA**: the attention kernel torch picks (profiler kernel names) and each backend forced in turn;
- **compile**: ``torch.compile`` of transformers' forward against eager, one fixed shape (compile time too).

Every section checks a wall-clock deadline before it starts and the report (``report.json`` and
``report.md`` in ``--out``) is rewritten after each, so a run cut short still returns what it measured.

    python bench/bench_gpu.py --out gpu_out                 # on a CUDA machine (about 4 minutes on an H200)
    python bench/bench_gpu.py --dry-run --out gpu_dry       # CPU, tiny sizes: every step, about a minute
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_report as report  # noqa: E402
from bench_scale import ESM_CONFIGS, build_model, copy_batch  # noqa: E402
from scale_lib import copy_flops, model_flop_counts  # noqa: E402

ESM_CONFIGS.setdefault(
    "esm2-8M", dict(hidden_size=320, num_hidden_layers=6, num_attention_heads=20, intermediate_size=1280)
)

# (model, length, {dtype: masked copies timed}, naive positions) for the device run and the dry run
CASES = {
    "gpu": [
        ("bert-base", 128, {"bfloat16": 8064, "float32": 2016}, 64),
        ("esm2-650M", 512, {"bfloat16": 1020, "float32": 170}, 32),
    ],
    "dry": [("bert-base", 32, {"bfloat16": 30, "float32": 30}, 4), ("esm2-8M", 64, {"bfloat16": 62, "float32": 62}, 4)],
}


def peak(dev, dtype, n: int, reps: int) -> float:
    """Median FLOP/s of ``reps`` ``n x n`` products (after 3 warm-ups) on random data."""
    import torch

    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(n, n, device=dev, generator=g).to(dtype)
    b = torch.randn(n, n, device=dev, generator=g).to(dtype)
    sync = report.sync_of(dev)
    for _ in range(3):
        a @ b
    return 2.0 * n**3 / statistics.median(report.timed(lambda: a @ b, sync, reps))


def environment(dev) -> dict:
    import torch
    import transformers

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "transformers": transformers.__version__,
        "device": str(dev),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "commit": os.environ.get("MLMPROB_COMMIT", ""),
    }
    if dev.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(dev)
        env["memory_gib"] = round(torch.cuda.get_device_properties(dev).total_memory / 2**30, 1)
        try:
            q = "name,driver_version,clocks.max.sm,power.limit"
            env["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            env["nvidia_smi"] = f"unavailable: {e}"
    else:
        env["cpu"] = platform.processor() or platform.machine()
    return env


def variants(m: dict, dtype) -> dict:
    """The wrapped models to time on one set of weights: mlmprob's fused forward as it runs by default (on a
    GPU a half-precision model attends in its own dtype), the same with float32 attention (half dtypes only),
    and transformers' forward."""
    import torch

    import mlmprob

    base = m["mlm"]
    out = {"mlmprob": base}
    if dtype in (torch.bfloat16, torch.float16) and base._fused is not None:
        wide = mlmprob.HFMaskedLM(base.model, base.tokenizer, name=base.name, max_length=base.max_length)
        wide._fused.half_attention = False
        out["mlmprob float32 attention"] = wide
    out["transformers forward"] = mlmprob.HFMaskedLM(
        base.model, base.tokenizer, name=base.name, max_length=base.max_length, fused=False
    )
    return out


def naive_loop(model, ids, positions, mask_id: int):
    """Per-position log-probabilities of ``ids[0]`` at ``positions``: one batch-1 forward per position."""
    import torch

    out = []
    dev = next(model.parameters()).device
    with torch.inference_mode():
        for p in positions:
            x = ids[:1].clone().to(dev)
            x[0, p] = mask_id
            logits = model(input_ids=x, attention_mask=torch.ones_like(x)).logits[0, p].float()
            out.append(logits.log_softmax(-1)[int(ids[0, p])])
    return torch.stack(out).cpu()


def model_rows(a, name: str, length: int, copies: dict, n_naive: int, dev, tmp: Path, res: dict) -> None:
    """Every dtype and variant of one model: timings, MFU, errors against float32, the naive loop."""
    import torch

    import mlmprob
    from mlmprob.runtime.device import DTYPES

    sync = report.sync_of(dev)
    reference = None  # float32 per-position log-probs of the check sequence
    for dname in ("float32", "bfloat16"):
        if report.late(a, res, f"{name} {dname}"):
            return
        dtype = DTYPES[dname]
        m = build_model(name, dev, dtype, a.seed, tmp)
        counts = model_flop_counts(m["mlm"].model)
        fpc = copy_flops(counts["p_enc"], counts["p_head"], counts["hidden"], counts["layers"], length)
        gen = torch.Generator().manual_seed(a.seed)
        ids, pos = copy_batch(m, length, copies[dname], gen)
        check = ids[:1]
        cpos = torch.zeros_like(check, dtype=torch.bool)
        cpos[0, 1 : 1 + min(a.check_positions, length - 2)] = True
        pk = res["peaks"][dname]
        for vname, mlm in variants(m, dtype).items():
            mlmprob.token_scores(mlm, ids[:1], pos[:1])  # warm: kernels chosen, allocator grown
            lp = mlmprob.token_scores(mlm, check, cpos).log_prob[cpos].double()
            if dname == "float32" and vname == "mlmprob":
                reference = lp
            t = report.timed(lambda mlm=mlm: mlmprob.token_scores(mlm, ids, pos), sync, a.repeats)
            best = min(t)
            res["rows"].append(
                dict(
                    model=name,
                    length=length,
                    dtype=dname,
                    variant=vname,
                    copies=int(pos.sum()),
                    seconds=t,
                    copies_per_s=int(pos.sum()) / best,
                    flops_per_copy=fpc,
                    params=counts["params"],
                    mfu=int(pos.sum()) * fpc / best / pk,
                    err_vs_fp32=None if reference is None else float((lp - reference).abs().max()),
                    mean_err_vs_fp32=None if reference is None else float((lp - reference).abs().mean()),
                )
            )
            print(f"  {name} {dname} {vname}: {int(pos.sum()) / best:.0f} copies/s", file=sys.stderr, flush=True)
        nv = list(range(1, 1 + n_naive))
        naive = naive_loop(m["mlm"].model, ids, nv, m["mlm"].mask_id)  # warm-up pass
        sync()
        t0 = time.perf_counter()
        naive = naive_loop(m["mlm"].model, ids, nv, m["mlm"].mask_id)
        sync()
        tn = time.perf_counter() - t0
        one = torch.zeros_like(ids[:1], dtype=torch.bool)
        one[0, nv] = True
        ours = mlmprob.token_scores(m["mlm"], ids[:1], one).log_prob[one].double()
        res["naive"].append(
            dict(
                model=name,
                length=length,
                dtype=dname,
                positions=n_naive,
                seconds=tn,
                copies_per_s=n_naive / tn,
                mfu=n_naive * fpc / tn / pk,
                max_diff_vs_mlmprob=float((naive.double() - ours).abs().max()),
            )
        )
        if a.sdpa and name == a.sdpa_model:
            report.sdpa_section(a, res, m, variants(m, dtype), check, cpos, dname, sync)
        if a.compile and name in a.compile_models and dname == "bfloat16":
            report.compile_section(a, res, m, ids, pos, dname, sync)
        del m
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        report.write(a, res)


def parse(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny models and sizes: every step once")
    ap.add_argument("--out", required=True, help="folder for report.json and report.md")
    ap.add_argument("--deadline", type=float, default=420.0, help="seconds after which no new section starts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peak-n", type=int, default=8192)
    ap.add_argument("--no-sdpa", dest="sdpa", action="store_false")
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--compile-models", default="esm2-650M", help="comma-separated; their bfloat16 forward compiled")
    ap.add_argument("--check-positions", type=int, default=128, help="positions of the error check and SDPA rows")
    a = ap.parse_args(argv)
    a.device = "cpu" if a.dry_run else "cuda"
    a.cases = CASES["dry" if a.dry_run else "gpu"]
    a.sdpa_model = a.cases[-1][0]
    a.compile_models = a.compile_models.split(",") + (["esm2-8M"] if a.dry_run else [])
    if a.dry_run:
        a.peak_n, a.repeats = 256, 1
    a.t0 = time.monotonic()
    return a


def main(argv=None) -> int:
    import torch

    a = parse(argv)
    dev = torch.device(a.device)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    res = {"command": " ".join(["python", "bench/bench_gpu.py", *sys.argv[1:]]), "env": environment(dev)}
    res.update(peaks={}, peaks_after={}, rows=[], naive=[], sdpa=[], compile=[], skipped=[])
    for dname, dt in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        res["peaks"][dname] = peak(dev, dt, a.peak_n, 10 if dev.type == "cuda" else 2)
    report.write(a, res)
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as tmp:
        for name, length, copies, n_naive in a.cases:
            model_rows(a, name, length, copies, n_naive, dev, Path(tmp), res)
    for dname, dt in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        res["peaks_after"][dname] = peak(dev, dt, a.peak_n, 10 if dev.type == "cuda" else 2)
    res["wall_s"] = time.monotonic() - a.t0
    report.write(a, res)
    print(Path(a.out, "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
