"""Scale benchmark (issue 12 §6): PLL throughput and MFU, mlmprob vs minicons, worker scaling, streaming memory.

Side by side in one run, each with its exact command line in the report:

1. PLL throughput and MFU (model FLOPs / (time x the matmul peak measured in the same process just before
   and after)) for AntiBERTy (real weights), a random-weight ESM-2 (``EsmForMaskedLM``; the 35M
   configuration on CPU, 650M and 3B on GPU) and a random-weight BERT-base (vocabulary 30522), at lengths
   128 and 512, in each dtype ``--dtype auto`` may pick on the device (plus float32 on CPU). A fixed number
   of masked copies per (model, length) is timed through ``mlmprob.token_scores(mlm, ids, positions)``.
2. mlmprob vs minicons' ``MaskedLMScorer``: full PLL of the same sequences with the same model object.
3. Scaling of ``mlmprob score``: 1 -> 2 worker processes on CPU (and 1 worker x 2 threads), or 1 -> N GPUs
   with ``--devices``, on a small random BERT saved to a temp dir; efficiency = t1 / (N x tN).
4. Streaming memory: peak RSS of ``mlmprob score`` over few vs many short sequences through a tiny model.

Each model of section 1-2 runs in a fresh worker process (this script with ``--worker pll``); sections 3-4
run the ``mlmprob`` CLI in subprocesses. The report goes to ``--out`` (markdown).

    pip install minicons        # benchmark only, not a dependency of mlmprob
    nice -n 10 python bench/bench_scale.py                       # CPU, about 30 minutes on 2 shared cores
    python bench/bench_scale.py --quick --out /tmp/scale.md      # about a minute: checks the script works
    python bench/bench_scale.py --device cuda --devices cuda:0,cuda:1,cuda:2,cuda:3   # a GPU machine
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_lib as lib  # noqa: E402

from mlmprob.alphabet import AMINO_ACIDS  # noqa: E402

ESM_CONFIGS = {  # the published ESM-2 shapes (Lin et al. 2023); weights here are random
    "esm2-35M": dict(hidden_size=480, num_hidden_layers=12, num_attention_heads=20, intermediate_size=1920),
    "esm2-650M": dict(hidden_size=1280, num_hidden_layers=33, num_attention_heads=20, intermediate_size=5120),
    "esm2-3B": dict(hidden_size=2560, num_hidden_layers=36, num_attention_heads=40, intermediate_size=10240),
}
ESM_TOKENS = ["<cls>", "<pad>", "<eos>", "<unk>"] + list("LAGVSERTIDPKQNFYMHWCXBUZO") + [".", "-", "<null_1>", "<mask>"]
# the layout of tests/conftest.py tiny_bert_dir
RESIDUE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AMINO_ACIDS)
# flag -> (CPU default, GPU default, --quick)
DEFAULTS = {
    "models": ("antiberty,esm2-35M,bert-base", "antiberty,esm2-650M,esm2-3B,bert-base", None),
    "lengths": ("128,512", "128,512", "128,512"),
    "copies": ("32,8", "4096,2048", "8,2"),
    "repeats": (2, 3, 1),
    "peak_n": (2048, 8192, 1024),
    "peak_reps": (5, 20, 3),
    "minicons_n": (1, 2, 1),
    "minicons_lengths": ("128", "128,512", "32"),
    "minicons_rounds": (1, 3, 1),
    "scale_n": (600, 4000, 16),
    "scale_len": (20, 128, 24),
    "scale_shape": ("256,4,4,1024", "1024,24,16,4096", "256,4,4,1024"),
    "scale_rounds": (2, 2, 1),
    "stream_sizes": ("100,10000,1000000", "100,10000,1000000", "100,1000,20000"),
}


# ----------------------------------------------------------------------------------------------
# models and data (worker side)
# ----------------------------------------------------------------------------------------------
def _bert_tokenizer(tokens: list[str], tmp: Path, **special):
    """A BertTokenizerFast over ``tokens``: texts are tokens joined by spaces (what minicons needs)."""
    import transformers

    d = Path(tempfile.mkdtemp(dir=tmp))
    (d / "vocab.txt").write_text("\n".join(tokens) + "\n")
    tok = transformers.BertTokenizerFast.from_pretrained(str(d), do_lower_case=False, **special)
    tok.batch_encode_plus = tok.__call__  # minicons 0.3.39 calls it; transformers 5 removed it (same operation)
    return tok


def build_model(name: str, device, dtype, seed: int, tmp: Path) -> dict:
    """The wrapped model, a minicons tokenizer, the token list, the ids random bodies draw from, cls/sep."""
    import torch
    import transformers as tf

    import mlmprob
    from mlmprob.models.tokenizers import HFTokenizer

    if name == "antiberty":
        mlm = mlmprob.load_mlm("antiberty", device=device, dtype=dtype)
        t = mlm.tokenizer
        tok = _bert_tokenizer(t.tokens, tmp)
        return dict(mlm=mlm, tok=tok, tokens=t.tokens, body=t.residue_ids, cls=t.bos_id, sep=t.eos_id)
    if name in ESM_CONFIGS:
        cfg = tf.EsmConfig(
            vocab_size=len(ESM_TOKENS),
            max_position_embeddings=1026,
            position_embedding_type="rotary",
            token_dropout=True,
            mask_token_id=32,
            pad_token_id=1,
            emb_layer_norm_before=False,
            layer_norm_eps=1e-5,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            **ESM_CONFIGS[name],
        )
        tokens, cls_, body = ESM_TOKENS, tf.EsmForMaskedLM, [ESM_TOKENS.index(c) for c in AMINO_ACIDS]
        special = dict(cls_token="<cls>", sep_token="<eos>", pad_token="<pad>", mask_token="<mask>", unk_token="<unk>")
        max_len = 1024
    elif name == "bert-base":
        tokens = RESIDUE_VOCAB[:5] + [f"w{i}" for i in range(5, 30522)]
        cfg = tf.BertConfig(
            vocab_size=30522,
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            pad_token_id=0,
        )
        cls_, body, special, max_len = tf.BertForMaskedLM, list(range(5, 30522)), {}, 512
    else:
        raise SystemExit(f"unknown model {name!r}; choose from antiberty, bert-base, {', '.join(ESM_CONFIGS)}")
    torch.manual_seed(seed)  # benchmark script, not library code: fixed random weights
    with torch.device(device):
        model = cls_(cfg).eval()
    model = model.to(dtype)
    tok = _bert_tokenizer(tokens, tmp, **special)
    mlm = mlmprob.HFMaskedLM(model, HFTokenizer(tok, max_length=max_len), name=name, max_length=max_len)
    return dict(mlm=mlm, tok=tok, tokens=tokens, body=body, cls=tok.cls_token_id, sep=tok.sep_token_id)


def random_ids(m: dict, n: int, length: int, gen):
    import torch

    body = torch.tensor(m["body"])[torch.randint(len(m["body"]), (n, length - 2), generator=gen)]
    return torch.cat([torch.full((n, 1), m["cls"]), body, torch.full((n, 1), m["sep"])], 1)


def copy_batch(m: dict, length: int, copies: int, gen):
    """``ceil(copies / (L-2))`` random sequences of ``length`` tokens and a bool mask of ``copies`` positions."""
    import torch

    n = math.ceil(copies / (length - 2))
    ids = random_ids(m, n, length, gen)
    pos = torch.zeros(ids.shape, dtype=torch.bool)
    pos[:, 1:-1] = True
    flat = pos.flatten()
    flat[flat.nonzero()[copies:, 0]] = False
    return ids, flat.view(ids.shape)


def pll_worker(a) -> dict:
    import torch

    import mlmprob
    from mlmprob.runtime.device import DTYPES

    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    lengths = [int(x) for x in a.lengths.split(",")]
    copies = [int(x) for x in a.copies.split(",")]
    out = {"rows": [], "peaks": [], "minicons": []}
    tmp_dir = tempfile.TemporaryDirectory(prefix="bench_scale_w_")  # the tokenizers' vocab files; removed at exit
    tmp = Path(tmp_dir.name)
    for k, dname in enumerate(a.dtypes.split(",")):
        dtype = DTYPES[dname]
        m = build_model(a.model, dev, dtype, a.seed, tmp)
        mlm, counts = m["mlm"], lib.model_flop_counts(m["mlm"].model)
        gen = torch.Generator().manual_seed(a.seed)
        warm, wpos = copy_batch(m, lengths[0], 2, gen)
        mlmprob.token_scores(mlm, warm, wpos)  # thread pools and allocator warm
        before, cpu_before = lib.matmul_peak(dev, dtype, a.peak_n, a.peak_reps)
        rows = []
        for L, c in zip(lengths, copies):
            ids, pos = copy_batch(m, L, c, gen)
            times, cpus = [], []
            for _ in range(a.repeats):
                sync()
                t, cp = time.perf_counter(), time.process_time()
                mlmprob.token_scores(mlm, ids, pos)
                times.append(time.perf_counter() - t)
                cpus.append(time.process_time() - cp)
            rows.append(
                {
                    "model": a.model,
                    "device": str(dev),
                    "dtype": dname,
                    "length": L,
                    "copies": c,
                    "seconds": min(times),
                    "all_seconds": times,
                    "params": counts["params"],
                    "cpu_seconds": min(cpus) if dev.type == "cpu" else None,
                    "flops_per_copy": lib.copy_flops(
                        counts["p_enc"], counts["p_head"], counts["hidden"], counts["layers"], L
                    ),
                    **counts,
                }
            )
            print(f"  {a.model} {dname} L={L}: {c} copies in {min(times):.2f} s", file=sys.stderr, flush=True)
        after, cpu_after = lib.matmul_peak(dev, dtype, a.peak_n, a.peak_reps)
        for r in rows:
            r.update(peak_before=before, peak_after=after, peak_cpu_before=cpu_before, peak_cpu_after=cpu_after)
        out["rows"] += rows
        out["peaks"].append(
            {
                "model": a.model,
                "device": str(dev),
                "dtype": dname,
                "n": a.peak_n,
                "before": before,
                "after": after,
                "cpu_before": cpu_before,
                "cpu_after": cpu_after,
            }
        )
        if k == 0 and a.minicons_n > 0:
            out["minicons"] += minicons_compare(a, m, dev, dname, gen)
        del m, mlm
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    tmp_dir.cleanup()
    return out


def minicons_compare(a, m: dict, dev, dname: str, gen) -> list[dict]:
    """Full PLL of the same sequences: mlmprob (all in one call) vs minicons (one sequence per call)."""
    from minicons import scorer

    mc = scorer.MaskedLMScorer(m["mlm"].model, device=str(dev), tokenizer=m["tok"], PLL_metric="original")
    out = []
    for L in [int(x) for x in a.minicons_lengths.split(",")]:
        if a.model == "bert-base" and L > 128:
            continue  # minicons would hold 510 x 512 x 30522 logits at once (32 GB in float32)
        try:
            out.append(_minicons_one(a, m, mc, dev, dname, L, gen))
        except Exception as e:  # noqa: BLE001 - e.g. out of memory in minicons' full-logit pass: report it
            out.append(
                {
                    "model": a.model,
                    "device": str(dev),
                    "dtype": dname,
                    "length": L,
                    "n": a.minicons_n,
                    "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}",
                }
            )
    return out


def _minicons_one(a, m: dict, mc, dev, dname: str, L: int, gen) -> dict:
    import mlmprob

    mlm, tok = m["mlm"], m["tok"]
    ids = random_ids(m, a.minicons_n, L, gen)
    texts = [" ".join(m["tokens"][i] for i in row[1:-1].tolist()) for row in ids]
    assert tok(texts)["input_ids"] == ids.tolist(), "the minicons tokenizer does not give mlmprob's ids"
    best = {"mlmprob": float("inf"), "minicons": float("inf")}
    cpu = dict(best)
    res = {}
    for r in range(a.minicons_rounds):
        for meth in ["mlmprob", "minicons"] if r % 2 == 0 else ["minicons", "mlmprob"]:
            t, cp = time.perf_counter(), time.process_time()
            if meth == "mlmprob":
                res[meth] = mlmprob.token_scores(mlm, ids).pll.tolist()
            else:
                res[meth] = [
                    mc.sequence_score([s], reduction=lambda x: x.sum(0).item(), PLL_metric="original")[0] for s in texts
                ]
            best[meth] = min(best[meth], time.perf_counter() - t)
            cpu[meth] = min(cpu[meth], time.process_time() - cp)
    diff = max(abs(x - y) for x, y in zip(res["mlmprob"], res["minicons"]))
    row = {
        "model": a.model,
        "device": str(dev),
        "dtype": dname,
        "length": L,
        "n": a.minicons_n,
        "mlmprob_s": best["mlmprob"] / a.minicons_n,
        "minicons_s": best["minicons"] / a.minicons_n,
        "max_diff": diff,
        **({"mlmprob_cpu": cpu["mlmprob"], "minicons_cpu": cpu["minicons"]} if dev.type == "cpu" else {}),
    }
    print(
        f"  {a.model} minicons L={L}: mlmprob {best['mlmprob']:.2f} s, minicons {best['minicons']:.2f} s",
        file=sys.stderr,
        flush=True,
    )
    return row


# ----------------------------------------------------------------------------------------------
# sections 3-4: the mlmprob CLI in subprocesses (driver side)
# ----------------------------------------------------------------------------------------------
def _show(cmd: list[str], tmp: Path) -> str:
    text = " ".join(shlex.quote(x) for x in cmd).replace(str(tmp), "$TMP")
    return text.replace(shlex.quote(sys.executable), "python").replace(sys.executable, "python")


def run_cli(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes, from wait4's rusage of that very child) of one CLI run."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{err.decode()[-2000:]}")
    return wall, ru.ru_maxrss * 1024


def save_bert(d: Path, hidden: int, layers: int, heads: int, inter: int, seed: int, max_pos: int) -> Path:
    """A random BertForMaskedLM over the residue vocabulary (tests/conftest.py tiny_bert_dir layout)."""
    import torch
    import transformers

    d.mkdir(parents=True)
    (d / "vocab.txt").write_text("\n".join(RESIDUE_VOCAB) + "\n")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(seed)  # benchmark script: fixed random weights
    cfg = transformers.BertConfig(
        vocab_size=len(RESIDUE_VOCAB),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        max_position_embeddings=max_pos,
    )
    transformers.BertForMaskedLM(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


def write_residues(path: Path, n: int, lo: int, hi: int, seed: int) -> Path:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            f.write(" ".join(rng.choices(AMINO_ACIDS, k=rng.randint(lo, hi))) + "\n")
    return path


def scaling_section(a, tmp: Path) -> dict:
    hidden, layers, heads, inter = (int(x) for x in a.scale_shape.split(","))
    mdir = save_bert(tmp / "scale_model", hidden, layers, heads, inter, a.seed, max(160, a.scale_len + 8))
    data = write_residues(tmp / "scale.txt", a.scale_n, a.scale_len, a.scale_len, a.seed)
    base = [sys.executable, "-m", "mlmprob"]
    tail = ["score", str(data), "--model", str(mdir), "--dtype", "auto", "--no-progress"]
    if a.device == "cpu":
        unit, n = "CPU worker processes", 2
        configs = [
            ("1 worker x 1 thread", ["--threads", "1"], ["--workers", "1"]),
            ("2 workers x 1 thread", ["--threads", "1"], ["--workers", "2"]),
            ("1 worker x 2 threads", ["--threads", "2"], ["--workers", "1"]),
        ]
    else:
        devs = a.devices.split(",")
        unit, n = "GPUs", len(devs)
        configs = [("1 GPU", [], ["--devices", devs[0]]), (f"{n} GPUs", [], ["--devices", ",".join(devs)])]
    rows = []
    for label, pre, post in configs:
        cmd = base + pre + tail + post
        rows.append(
            {"label": label, "cmd": _show(cmd, tmp) + " --out $TMP/out.jsonl", "walls": [], "startups": [], "argv": cmd}
        )
    for r in range(a.scale_rounds):
        for k, row in enumerate(rows) if r % 2 == 0 else reversed(list(enumerate(rows))):
            startup, _ = run_cli(row["argv"] + ["--limit", "2", "--out", str(tmp / f"startup_{k}_{r}.jsonl")])
            wall, _ = run_cli(row["argv"] + ["--out", str(tmp / f"scale_{k}_{r}.jsonl")])
            row["walls"].append(wall)
            row["startups"].append(startup)
            print(f"  scaling {row['label']}: {wall:.1f} s (start-up {startup:.1f} s)", file=sys.stderr, flush=True)
    for row in rows:
        row["wall"], row["startup"] = min(row["walls"]), min(row.pop("startups"))
    one = rows[0]
    for row in rows[1:]:
        k = n if row is rows[1] else 2
        row["eff"] = one["wall"] / (k * row["wall"])
        net1, netk = one["wall"] - one["startup"], row["wall"] - row["startup"]
        row["eff_net"] = net1 / (k * netk) if min(net1, netk) > 0.1 * one["wall"] else None  # else start-up dominates
    desc = (
        f"`mlmprob score` over {a.scale_n} random sequences of {a.scale_len} residues (space-separated) with a "
        f"random BertForMaskedLM ({hidden} hidden x {layers} layers x {heads} heads, intermediate {inter}, "
        f"vocabulary {len(RESIDUE_VOCAB)}) saved to a temp dir; {a.scale_rounds} round(s), order alternating, "
        f"best wall time counts. Wall times are of the whole command, start-up included (interpreter, imports, "
        f"model load, and with several workers the spawned processes' own imports and loads); 'start-up s' is "
        f"the best wall time of the same command with `--limit 2`, run just before it in each round. Efficiency = t(1) / (k x t(k)) for k = "
        f"{n} {unit} (and, for 1 worker x 2 threads, k = 2 threads)."
    )
    return {
        "unit": unit,
        "n": n,
        "n_seqs": a.scale_n,
        "rows": [{k: v for k, v in r.items() if k != "argv"} for r in rows],
        "efficiency": rows[1]["eff"],
        "efficiency_net": rows[1]["eff_net"],
        "desc": desc,
    }


def stream_section(a, tmp: Path) -> dict:
    mdir = save_bert(tmp / "tiny_model", 16, 1, 2, 32, a.seed, 160)
    rows = []
    for n in [int(x) for x in a.stream_sizes.split(",")]:
        data = write_residues(tmp / f"stream_{n}.txt", n, a.stream_min, a.stream_max, a.seed)
        cmd = [
            sys.executable,
            "-m",
            "mlmprob",
            "--threads",
            "1",
            "score",
            str(data),
            "--model",
            str(mdir),
            "--device",
            "cpu",
            "--dtype",
            "float32",
            "--out",
            str(tmp / f"stream_{n}.jsonl"),
            "--no-progress",
        ]
        wall, rss = run_cli(cmd)
        rows.append({"n": n, "wall": wall, "rss": rss, "cmd": _show(cmd, tmp)})
        print(f"  streaming {n:,}: {wall:.1f} s, peak RSS {rss / 2**20:.0f} MiB", file=sys.stderr, flush=True)
        data.unlink()
        (tmp / f"stream_{n}.jsonl").unlink()
    small, large = rows[-2], rows[-1]
    desc = (
        f"`mlmprob score` (one process, one thread, JSONL output) over generated sequences of {a.stream_min}.."
        f"{a.stream_max} random residues through a tiny random BertForMaskedLM (16 hidden, 1 layer, the "
        f"tests/conftest.py tiny_bert_dir layout). Peak RSS is the child's own `ru_maxrss` from `os.wait4` "
        f"(interpreter, torch and model included). Goal ratio: {large['n']:,} vs {small['n']:,} sequences."
    )
    return {"rows": rows, "small": small["n"], "large": large["n"], "ratio": large["rss"] / small["rss"], "desc": desc}


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------
def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="docs/results/bench_scale.md", help="markdown report path")
    p.add_argument("--quick", action="store_true", help="tiny sizes everywhere (about a minute): a smoke run")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:i] for sections 1-2")
    p.add_argument("--devices", help="GPUs for section 3 (default: every visible GPU when --device is cuda)")
    p.add_argument("--sections", default="pll,scaling,stream", help="subset of pll (with minicons), scaling, stream")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads in sections 1-2")
    p.add_argument(
        "--dtypes", help="comma-separated (default: what --dtype auto picks on the device, plus float32 on CPU)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stream-min", type=int, default=8, help="shortest streamed sequence (residues)")
    p.add_argument("--stream-max", type=int, default=16, help="longest streamed sequence (residues)")
    for key in DEFAULTS:
        p.add_argument(
            "--" + key.replace("_", "-"),
            type=type(DEFAULTS[key][0]),
            help=f"default {DEFAULTS[key][0]} on CPU, {DEFAULTS[key][1]} on GPU, {DEFAULTS[key][2]} with --quick",
        )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    gpu = a.device.startswith("cuda")
    for key, (cpu_v, gpu_v, quick_v) in DEFAULTS.items():
        if getattr(a, key) is None:
            setattr(a, key, quick_v if (a.quick and quick_v is not None) else (gpu_v if gpu else cpu_v))
    return a


def worker_cmd(a, model: str) -> list[str]:
    flags = [
        "--worker",
        "pll",
        "--model",
        model,
        "--device",
        a.device,
        "--dtypes",
        a.dtypes,
        "--threads",
        str(a.threads),
        "--seed",
        str(a.seed),
    ]
    for key in (
        "lengths",
        "copies",
        "repeats",
        "peak_n",
        "peak_reps",
        "minicons_n",
        "minicons_lengths",
        "minicons_rounds",
    ):
        flags += ["--" + key.replace("_", "-"), str(getattr(a, key))]
    return [sys.executable, os.path.abspath(__file__)] + flags


def main(argv=None) -> int:
    a = parse(argv)
    if a.worker:
        print("RESULT " + json.dumps(pll_worker(a)), flush=True)
        return 0
    import importlib.metadata as md

    import torch
    import transformers

    from mlmprob.runtime.device import auto_dtype

    dev = torch.device(a.device)
    if dev.type == "cuda" and not a.devices:
        a.devices = ",".join(f"cuda:{i}" for i in range(torch.cuda.device_count()))
    if not a.dtypes:
        ds = [str(auto_dtype(dev)).replace("torch.", "")]
        a.dtypes = ",".join(dict.fromkeys((ds + ["float32"]) if dev.type == "cpu" else ds))
    sections = set(a.sections.split(","))
    if "pll" in sections and a.minicons_n > 0:
        try:
            import minicons  # noqa: F401
        except ImportError:
            sys.exit("minicons is not installed: pip install minicons (benchmark only), or --minicons-n 0")
    command = "python " + " ".join(
        shlex.quote(x) for x in [os.path.relpath(__file__)] + list(sys.argv[1:] if argv is None else argv)
    )
    if os.nice(0) > 0:
        command = f"nice -n {os.nice(0)} " + command
    cpu = lib.cpu_facts()
    flags = ", ".join(f"{f} {'yes' if cpu[f] else 'no'}" for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16"))
    gpus = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    )
    meta = {
        "command": command,
        "quick": a.quick,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "threads": a.threads,
        "machine": f"{cpu['model']}, {os.cpu_count()} logical CPUs ({flags}); Python {platform.python_version()}; "
        f"GPUs: {', '.join(gpus) or 'none'}",
        "devices": f"{a.device} ({a.dtypes})" + (f"; scaling over {a.devices}" if dev.type == "cuda" else ""),
        "load_start": lib.loadavg(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    try:
        meta["minicons"] = md.version("minicons")
    except md.PackageNotFoundError:
        meta["minicons"] = "not installed"
    if dev.type != "cuda":
        meta["no_gpu_note"] = (
            "CPU only: no GPU was measured in this run, so the GPU goals (ESM-2 650M/3B in bf16, "
            "MFU and the ratio over minicons on an H100/H200, 1 -> N GPU scaling) are not measured. "
            "Run with `--device cuda` on a GPU machine for them."
        )
    started = time.perf_counter()
    pll, peaks, mc, failures, cmds = [], [], [], [], []
    res = {"scaling": None, "stream": None}
    order = [x for x in ("pll", "scaling", "stream") if x in sections]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(pending):  # after every section, so that a run cut short still leaves what it measured
        meta.update(
            pll_commands=cmds,
            failures=failures,
            load_end=lib.loadavg(),
            wall_s=time.perf_counter() - started,
            pending=pending,
        )
        text = lib.render_report(meta, pll, peaks, mc, res["scaling"], res["stream"])
        out.write_text(text)
        out.with_suffix(".json").write_text(
            json.dumps(  # the raw numbers, for a later look or re-rendering
                {"meta": meta, "pll": pll, "peaks": peaks, "minicons": mc, **res}, indent=1
            )
            + "\n"
        )
        return text

    with tempfile.TemporaryDirectory(prefix="bench_scale_") as td:
        tmp = Path(td)
        for k, section in enumerate(order):
            save(order[k:])
            print(f"section {section}", file=sys.stderr, flush=True)
            if section == "pll":
                for model in a.models.split(","):
                    cmd = worker_cmd(a, model)
                    cmds.append(_show(cmd, tmp).replace(os.path.abspath(__file__), os.path.relpath(__file__)))
                    print(f"  PLL worker: {model}", file=sys.stderr, flush=True)
                    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
                    lines = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
                    if p.returncode != 0 or not lines:
                        print(f"  {model} failed (exit {p.returncode})", file=sys.stderr)
                        failures.append(f"PLL worker for {model} failed (exit code {p.returncode}); see its stderr")
                        continue
                    r = json.loads(lines[-1][len("RESULT ") :])
                    pll += r["rows"]
                    peaks += r["peaks"]
                    mc += r["minicons"]
                    save(order[k:])
            elif section == "scaling":
                res["scaling"] = scaling_section(a, tmp)
            else:
                res["stream"] = stream_section(a, tmp)
    text = save([])
    print(text)
    print(f"written {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
