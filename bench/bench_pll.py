"""PLL scoring benchmark: mlmprob vs a naive loop vs minicons' MaskedLMScorer.

Measures, side by side in one run, the throughput (sequences/s) and peak memory (RSS) of three
ways to compute the pseudo-log-likelihood PLL(x) = sum_t log q_t(x_t | x with t masked):

- ``mlmprob``  ``mlmprob.token_scores(mlm, ids, batch_tokens=...)``: masked copies bucketed by length,
  sub-batched under a token budget, LM head applied only at the masked position of each copy;
- ``minicons`` ``minicons.scorer.MaskedLMScorer.sequence_score`` (PLL_metric "original"): all masked
  copies of the sentences passed in one call go through one forward pass with full ``[N, L, V]`` logits;
- ``naive``    the literal definition: one masked copy per forward pass, full logits.

on two models:

- ``english``: a BERT (``transformers.BertConfig``, vocabulary 30522, random weights from a fixed seed,
  default 4 layers x 256 hidden) with a WordPiece tokenizer trained here, offline, on the English text
  files of ../shared/data (``tokenizers.BertWordPieceTokenizer``, 30522 entries), saved to a temp
  dir and loaded back through ``mlmprob.load_mlm(dir)`` (the Hugging Face adapter path);
- ``antiberty``: ``mlmprob.load_mlm("antiberty")`` on heavy chains from thera_sabdab.csv. minicons needs a
  Hugging Face tokenizer: a ``BertTokenizerFast`` over AntiBERTy's own vocab.txt (no lower-casing) applied
  to the residues joined by spaces gives exactly the ids of mlmprob's residue tokenizer
  ([CLS] r1 ... rn [SEP]); the minicons scorer gets the very same ``BertForMaskedLM`` object.

Each (model, method) runs in a fresh subprocess (this script re-invoked with ``--worker``), in
rounds (method order reversed every other round, best round counts; the slow naive loop runs once,
on the first few sequences). "peak" is the worker's peak RSS while scoring (model and runtime
included: ``getrusage`` ``ru_maxrss`` after resetting the high-water mark through
/proc/self/clear_refs once the model is loaded) and "delta" is that peak minus the RSS right after
loading. Throughput is reported per wall-clock second and per CPU-second of the worker (steadier on
a shared machine). The PLLs of the methods are cross-checked on the same sequences.

A last worker scores one English sequence of exactly 512 tokens with a BERT-base-sized random model
(768 hidden, 12 layers, vocabulary 30522), one masked copy per position, and checks the lifetime
peak RSS of the process (loading included) against 2 GiB. By default only the first 32 of the 512
copies are scored: they form sub-batches of the same shape as the rest, so the peak barely moves
(a full run measured 1.34 GiB, against 1.27 GiB for 64 copies); ``--mem-copies -1`` scores all 512
(about 7 minutes alone on two idle cores, 11 minutes on a busy machine).

minicons 0.3.39 calls ``tokenizer.batch_encode_plus``, which transformers 5 removed; the tokenizer
instance handed to minicons gets ``batch_encode_plus = __call__`` (the same operation).

Code: this script runs the rounds and is the command line (and, with ``--worker``, each worker's entry
point); ``pll_inputs.py`` builds the models and picks the sequences, ``pll_worker.py`` scores and
measures in the worker, ``pll_report.py`` writes the markdown.

    nice -n 10 python bench/bench_pll.py        # defaults: about 10 minutes on 2 shared CPU cores
    python bench/bench_pll.py --en-n 4 --en-naive-n 1 --ab-n 1 --ab-rounds 1 --mem-copies 16 --out q.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# sibling modules: bench/ is on sys.path when this file runs as a script (as it does for its workers too)
from pll_inputs import GIB, METHODS, VOCAB, antibody_texts, build_english, english_texts, long_ids, train_tokenizer
from pll_report import _loadavg, report
from pll_worker import worker

from mlmprob.batching import DEFAULT_BATCH_TOKENS


def _chunk_for(method: str, args, minicons_batch: int) -> int:
    return {"mlmprob": args.mlmprob_chunk, "minicons": minicons_batch}.get(method, 1)


def _calls(args, minicons_batch: int) -> str:
    mp = (
        "all sequences in one mlmprob call"
        if args.mlmprob_chunk <= 0
        else f"{args.mlmprob_chunk} sequences per mlmprob call"
    )
    return f"{mp} (batch_tokens={args.batch_tokens}), {minicons_batch} per minicons call, naive: one masked copy per forward pass"


def run_worker(method: str, spec_path: Path, args, *, chunk: int, repeats: int, limit: int = 0) -> dict:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        method,
        "--spec",
        str(spec_path),
        "--threads",
        str(args.threads),
        "--batch-tokens",
        str(args.batch_tokens),
        "--chunk",
        str(chunk),
        "--repeats",
        str(repeats),
        "--limit",
        str(limit),
    ] + ([] if args.warmup else ["--no-warmup"])
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-15:]
        print(f"  [{method}] failed (exit {p.returncode}):\n    " + "\n    ".join(tail), flush=True)
        return {"method": method, "error": tail[-1] if tail else f"exit {p.returncode}"}
    r = json.loads(lines[-1][len("RESULT ") :])
    print(
        f"  {method:9s} n={r['n']:3d} {r['seq_per_s']:8.3f} seq/s {r['seq_per_cpu_s']:8.3f} seq/CPU-s  peak {r['peak'] / 2**20:7.0f} MiB  "
        f"delta {r['delta'] / 2**20:7.0f} MiB  ({time.perf_counter() - t:.0f} s wall)",
        flush=True,
    )
    return r


def run_rounds(methods: list[str], spec: Path, args, *, rounds: int, minicons_batch: int, naive_n: int) -> list[dict]:
    """Every method in a fresh process per round, the order reversed every other round; the naive
    loop runs in the first round only. Best time (and best CPU time) over the rounds, largest peak."""
    runs: dict[str, list[dict]] = {m: [] for m in methods}
    for r in range(max(1, rounds)):
        order = methods if r % 2 == 0 else methods[::-1]
        for m in order:
            if m == "naive" and r > 0:
                continue
            runs[m].append(
                run_worker(
                    m,
                    spec,
                    args,
                    chunk=_chunk_for(m, args, minicons_batch),
                    repeats=1,
                    limit=naive_n if m == "naive" else 0,
                )
            )
    out = []
    for m in methods:
        good = [x for x in runs[m] if "error" not in x]
        if not good:
            out.append(runs[m][0])
            continue
        best = dict(min(good, key=lambda x: x["seconds"]))
        best["seq_per_cpu_s"] = max(x["seq_per_cpu_s"] for x in good)
        for k in ("peak", "delta", "lifetime_peak"):
            best[k] = max(x[k] for x in good)
        best["all_seconds"] = [x["seconds"] for x in good]
        best["rounds"] = len(good)
        out.append(best)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--out", default="docs/results/bench_pll.md", help="markdown report path")
    p.add_argument("--threads", type=int, default=2, help="torch threads per worker")
    p.add_argument(
        "--batch-tokens",
        type=int,
        default=DEFAULT_BATCH_TOKENS,
        help="mlmprob token budget per sub-batch (default: the library default)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random English model weights")
    p.add_argument("--no-warmup", dest="warmup", action="store_false", help="time the first call too")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ",".join(METHODS))
    p.add_argument(
        "--mlmprob-chunk",
        type=int,
        default=0,
        help="sequences per mlmprob call (0: all in one call; mlmprob batches masked copies itself "
        "under --batch-tokens)",
    )
    g = p.add_argument_group("English model (random weights, vocabulary 30522)")
    g.add_argument("--en-n", type=int, default=32, help="number of wiki103 sentences (0 skips)")
    g.add_argument("--en-min-tokens", type=int, default=12)
    g.add_argument("--en-max-tokens", type=int, default=64)
    g.add_argument("--en-hidden", type=int, default=256)
    g.add_argument("--en-layers", type=int, default=4)
    g.add_argument("--en-heads", type=int, default=4)
    g.add_argument("--en-intermediate", type=int, default=1024)
    g.add_argument(
        "--en-minicons-batch",
        type=int,
        default=4,
        help="sentences per minicons call (each call is one forward pass over all their masked copies)",
    )
    g.add_argument(
        "--en-rounds",
        type=int,
        default=2,
        help="rounds of fresh worker processes (mlmprob and minicons; naive runs once); the best counts",
    )
    g.add_argument("--en-naive-n", type=int, default=4, help="sentences scored by the naive loop (0: all)")
    g = p.add_argument_group("AntiBERTy")
    g.add_argument("--ab-n", type=int, default=4, help="number of heavy chains from thera_sabdab.csv (0 skips)")
    g.add_argument("--ab-minicons-batch", type=int, default=2, help="chains per minicons call")
    g.add_argument("--ab-rounds", type=int, default=3, help="as --en-rounds")
    g.add_argument(
        "--ab-naive-n",
        type=int,
        default=1,
        help="chains scored by the naive loop (0: all); it runs about 10x slower than the others",
    )
    g = p.add_argument_group("512-token memory test (BERT-base size: 768 hidden, 12 layers, 12 heads, vocab 30522)")
    g.add_argument("--long-tokens", type=int, default=512, help="length of the sequence, special tokens included")
    g.add_argument(
        "--mem-copies",
        type=int,
        default=32,
        help="score the first N positions (masked copies); every sub-batch has the same shape, so the "
        "peak is reached in the first one. -1: all --long-tokens positions (about 7 min alone on "
        "2 idle cores); 0: skip the test",
    )
    # worker mode
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    p.add_argument("--chunk", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        print("RESULT " + json.dumps(worker(args)), flush=True)
        return 0

    command = "python " + " ".join(
        shlex.quote(x) for x in [os.path.relpath(__file__)] + list(sys.argv[1:] if argv is None else argv)
    )
    if os.nice(0) > 0:
        command = f"nice -n {os.nice(0)} " + command
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = set(methods) - set(METHODS)
    if bad:
        p.error(f"unknown methods {sorted(bad)}; choose from {', '.join(METHODS)}")
    if "minicons" in methods:
        try:
            import minicons  # noqa: F401
        except ImportError:
            p.error("minicons is not installed: pip install minicons (benchmark only), or --methods mlmprob,naive")

    import importlib.metadata as md

    import torch
    import transformers

    def ver(name):
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "not installed"

    env = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "minicons": ver("minicons"),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "load_start": _loadavg(),
    }
    started = time.perf_counter()
    sections, long = [], None
    with tempfile.TemporaryDirectory(prefix="bench_pll_") as td:
        tmp = Path(td)
        need_en = args.en_n > 0 or args.mem_copies != 0
        if need_en:
            print("training the WordPiece tokenizer (vocabulary 30522) ...", flush=True)
            tok_dir = train_tokenizer(tmp)

        if args.en_n > 0:
            texts = english_texts(tok_dir, args.en_n, args.en_min_tokens, args.en_max_tokens)
            mdir = build_english(
                tmp, args.en_hidden, args.en_layers, args.en_heads, args.en_intermediate, args.seed, "english", tok_dir
            )
            spec = tmp / "english.json"
            spec.write_text(json.dumps({"kind": "english", "model": str(mdir), "texts": texts}))
            n_params = sum(x.numel() for x in transformers.BertForMaskedLM.from_pretrained(str(mdir)).parameters())
            import transformers as tf

            tk = tf.BertTokenizerFast.from_pretrained(str(tok_dir))
            lens = [len(tk(t)["input_ids"]) for t in texts]
            title = f"English BERT, vocabulary {VOCAB}, random weights"
            print(f"{title}: {len(texts)} sentences", flush=True)
            res = run_rounds(
                methods,
                spec,
                args,
                rounds=args.en_rounds,
                minicons_batch=args.en_minicons_batch,
                naive_n=args.en_naive_n,
            )
            sections.append(
                {
                    "title": title,
                    "results": res,
                    "desc": (
                        f"BertForMaskedLM {args.en_hidden} hidden x {args.en_layers} layers x {args.en_heads} heads "
                        f"(intermediate {args.en_intermediate}), {n_params / 1e6:.1f}M parameters, seed {args.seed}, "
                        f"loaded through `mlmprob.load_mlm(dir)`; WordPiece tokenizer trained offline (30522 entries). "
                        f"{len(texts)} wiki103 sentences of {min(lens)}..{max(lens)} tokens (mean {sum(lens) / len(lens):.1f}, "
                        f"special tokens included); {_calls(args, args.en_minicons_batch)}; "
                        f"{args.en_rounds} round(s)."
                    ),
                }
            )

        if args.ab_n > 0:
            texts = antibody_texts(args.ab_n)
            spec = tmp / "antiberty.json"
            spec.write_text(json.dumps({"kind": "antiberty", "model": "antiberty", "texts": texts}))
            title = "AntiBERTy (26M parameters, vocabulary 25)"
            print(f"{title}: {len(texts)} heavy chains", flush=True)
            res = run_rounds(
                methods,
                spec,
                args,
                rounds=args.ab_rounds,
                minicons_batch=args.ab_minicons_batch,
                naive_n=args.ab_naive_n,
            )
            sections.append(
                {
                    "title": title,
                    "results": res,
                    "desc": (
                        f'`mlmprob.load_mlm("antiberty")`; the first {len(texts)} heavy chains (HC) of thera_sabdab.csv, '
                        f"{min(map(len, texts))}..{max(map(len, texts))} residues; {_calls(args, args.ab_minicons_batch)}; "
                        f"{args.ab_rounds} round(s). minicons gets the same BertForMaskedLM object and a "
                        f"BertTokenizerFast over AntiBERTy's vocab.txt (residues joined by spaces; checked to give the "
                        f"same ids as mlmprob's tokenizer)."
                    ),
                }
            )

        if args.mem_copies != 0:
            copies = args.long_tokens if args.mem_copies < 0 else min(args.mem_copies, args.long_tokens)
            mdir = build_english(tmp, 768, 12, 12, 3072, args.seed, "english_base", tok_dir)
            ids = long_ids(tok_dir, args.long_tokens)
            spec = tmp / "long.json"
            spec.write_text(json.dumps({"kind": "english-base", "model": str(mdir), "ids": ids, "copies": copies}))
            print(f"512-token memory test: {len(ids)} tokens, {copies} masked copies, BERT-base size", flush=True)
            long = run_worker("mlmprob-long", spec, args, chunk=1, repeats=1)
            long["copies"] = copies
            if "error" not in long:
                print(f"  lifetime peak RSS {long['lifetime_peak'] / GIB:.2f} GiB", flush=True)

    env["load_end"] = _loadavg()
    text = report(args, command, env, sections, long)
    text += f"\nTotal wall time of the run: {time.perf_counter() - started:.0f} s.\n"
    print()
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
