"""Each precision against float32: speed, share of that precision's matmul peak, error (issue 21 §1).

    PYTHONPATH=src:bench python bench/precision_all.py --threads 1 --out docs/results/precision/all_dtypes.md

Per model, the same sequences are scored (exact PLL, one masked copy per position) with the weights in
float32, int8 (``--dtype int8``: encoder linears W8A8), bfloat16 and float16; the precisions of one model
run interleaved over ``--rounds`` rounds (medians). The matmul peak of each precision is timed in the same
run (a [2048, H] x [H, 4H] product; int8 through the same ``Int8Linear`` kernel), and the share of it is
the model's linear-layer FLOPs (2 x linear parameters x tokens of every masked copy) per second over that
peak. Errors vs float32: per scored token |d log q| (mean, p99, max) and per sequence |d PLL|, and the
Spearman of the sequences' PLL with float32's.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch
from cpu_info import describe
from onepass_data import antibody_sets, english_sets

import mlmprob
from mlmprob.models.precision import Int8Linear
from mlmprob.onepass.scoring import spearman


def matmul_peak(dtype: str, hidden: int, reps: int = 5) -> float:
    """GFLOP/s of a [2048, H] x [H, 4H] product in ``dtype`` on this CPU now."""
    lin = torch.nn.Linear(hidden, 4 * hidden)
    x = torch.randn(2048, hidden)
    if dtype == "int8":
        f, inp = Int8Linear.from_linear(lin), x
    else:
        dt = getattr(torch, dtype)
        f, inp = lin.to(dt), x.to(dt)
    with torch.inference_mode():
        f(inp)
        t0 = time.perf_counter()
        for _ in range(reps):
            f(inp)
        t = (time.perf_counter() - t0) / reps
    return 2 * 2048 * hidden * 4 * hidden / t / 1e9


def linear_params(mlm) -> int:
    base = getattr(mlm.model, mlm.model.base_model_prefix)
    n = 0
    for m in base.modules():
        if isinstance(m, torch.nn.Linear):
            n += m.weight.numel()
        elif isinstance(m, Int8Linear):
            n += m.in_features * m.out_features
    return n


def save_random_bert_base(root: Path, sizes: tuple[int, int, int, int] = (12, 768, 12, 3072)) -> Path:
    """A random-weight BERT-base (``sizes``: 12 layers, hidden 768, 12 heads, FFN 3072; std-0.02 init, seed 0)
    with en-small's English tokenizer (vocabulary 8192), saved for ``load_mlm(folder)``."""
    import shutil

    import transformers as tf

    from mlmprob.models.loading import EN_SMALL_DIR

    d = root / ("bert-base-en" if sizes == (12, 768, 12, 3072) else "bert-{}-{}-{}-{}".format(*sizes))
    if (d / "model.safetensors").is_file():
        return d
    d.mkdir(parents=True, exist_ok=True)
    cfg = tf.BertConfig.from_pretrained(str(EN_SMALL_DIR))
    cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size = sizes
    cfg.max_position_embeddings = 512
    torch.manual_seed(0)  # benchmark weights
    tf.BertForMaskedLM(cfg).eval().save_pretrained(str(d))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(EN_SMALL_DIR / f, d / f)
    return d


def measure(
    model: str,
    seqs: list[str],
    dtypes: list[str],
    rounds: int,
    label: str | None = None,
    positions: list[int] | None = None,
) -> list[str]:
    """Rows of the table for ``model`` (a name or folder; ``label`` in the table), exact PLL of ``seqs`` at
    ``positions`` (default: every position) in each of ``dtypes``, interleaved over ``rounds``."""
    mlms = {dt: mlmprob.load_mlm(model, device="cpu", dtype=dt) for dt in dtypes}
    ids = mlms["float32"].encode(seqs).input_ids
    times = {dt: [] for dt in dtypes}
    scores = {}
    for r in range(rounds):
        for dt in dtypes if r % 2 == 0 else dtypes[::-1]:
            t0 = time.perf_counter()
            scores[dt] = mlmprob.token_scores(mlms[dt], ids, positions)
            times[dt].append(time.perf_counter() - t0)
            print(f"{label or model} round {r} {dt}: {times[dt][-1]:.1f} s", file=sys.stderr, flush=True)
    ref = scores["float32"]
    sel = ref.positions
    lens = (
        (ids != mlms["float32"].pad_id).sum(1)
        if mlms["float32"].pad_id is not None
        else torch.full((len(seqs),), ids.shape[1])
    )
    copy_tokens = int((sel.sum(1) * lens).sum())  # tokens of every masked copy
    hidden = int(mlms["float32"].model.config.hidden_size)
    flops = 2 * linear_params(mlms["float32"]) * copy_tokens
    rows = []
    for dt in dtypes:
        t = statistics.median(times[dt])
        peak = matmul_peak(dt, hidden)
        d = (scores[dt].log_prob - ref.log_prob)[sel].abs()
        dp = (scores[dt].pll - ref.pll).abs()
        rows.append(
            f"| {label or model} | {dt} | {int(sel.sum()) / t:.1f} | {statistics.median(times['float32']) / t:.2f} | "
            f"{flops / t / 1e9:.1f} / {peak:.1f} = {flops / t / 1e9 / peak:.0%} | {d.mean():.4f} | "
            f"{d.quantile(0.99):.4f} | {d.max():.4f} | {dp.mean():.3f} | {dp.max():.3f} | "
            f"{spearman(scores[dt].pll, ref.pll):.4f} |"
        )
    return rows


def english_sentences(n: int) -> list[str]:
    """The first ``n`` wikitext-2 test sentences of at most 25 words that fit 64 en-small tokens."""
    sents = [s for s in english_sets()["heldout"] if len(s.split()) <= 25][: n * 2]
    m = mlmprob.load_mlm("en-small")
    ok = []
    for s in sents:
        try:
            if m.encode([s]).input_ids.shape[1] <= 64:
                ok.append(s)
        except mlmprob.MLMProbError:
            pass
    return ok[:n]


def run_models(a, four: list[str]) -> list[str]:
    rows = []
    if a.sentences:
        rows += measure("en-small", english_sentences(a.sentences), four, a.rounds)
    if a.bert_base:
        folder = save_random_bert_base(Path(a.weights))
        rows += measure(str(folder), english_sentences(a.bert_base), four, a.rounds, label="bert-base (random weights)")
    if a.esm_chains and Path(a.esm).is_dir():
        rows += measure(a.esm, antibody_sets("H")["gdpa1"][: a.esm_chains], four, a.rounds)
    if a.esm150_chains:
        from bench_cpu import save_random_esm

        folder = save_random_esm("esm2-150M", Path(a.weights))
        rows += measure(
            str(folder),
            antibody_sets("H")["gdpa1"][: a.esm150_chains],
            four,
            a.rounds,
            label=f"esm2-150M (random weights, first {a.esm150_positions} residues)",
            positions=list(range(1, a.esm150_positions + 1)),
        )
    if a.antiberty:
        rows += measure("antiberty", antibody_sets("H")["gdpa1"][: a.antiberty], ["float32", "int8"], a.rounds)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--antiberty", type=int, default=2, help="GDPa1 VH chains for AntiBERTy (float32, int8)")
    ap.add_argument("--esm", default="/tmp/mlmprob_bench_cpu/esm2-8M", help="a random ESM-2 folder (bench_cpu.py)")
    ap.add_argument("--esm-chains", type=int, default=2)
    ap.add_argument("--sentences", type=int, default=20, help="wikitext-2 test sentences for en-small")
    ap.add_argument("--bert-base", type=int, default=0, help="wikitext-2 test sentences for a random BERT-base")
    ap.add_argument("--esm150-chains", type=int, default=0, help="GDPa1 VH chains for a random ESM-2 150M")
    ap.add_argument("--esm150-positions", type=int, default=8, help="ESM-2 150M: score the first K residues")
    ap.add_argument("--weights", default="/tmp/mlmprob_bench_cpu", help="where the random models are saved")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    load0 = os.getloadavg()
    four = ["float32", "int8", "bfloat16", "float16"]
    rows = run_models(a, four)
    load1 = os.getloadavg()
    lines = [
        "# Precisions against float32: speed, matmul-peak share, error",
        "",
        f"Command: `{shlex.join(['python', 'bench/precision_all.py'] + (argv if argv is not None else sys.argv[1:]))}`",
        f"Machine: {describe()}; {a.threads} thread(s); load average {load0[0]:.1f} at start, {load1[0]:.1f} at end: a loaded, shared "
        "2-core machine, so the precisions of a model ran interleaved and the ratios are the result.",
        "",
        "Throughput: scored positions (masked copies) per second, exact PLL. Peak share: the model's linear-layer "
        "GFLOP/s over the matmul GFLOP/s of that precision timed in the same run. Errors vs float32 in nats.",
        "",
        "| model | precision | copies/s | speed vs float32 | GFLOP/s / matmul peak | mean abs d per token | p99 | "
        "max | mean abs d PLL | max | Spearman PLL vs float32 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    text = "\n".join(lines + rows) + "\n"
    from cpu_info import emit

    return emit(text, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
