"""The PLL benchmark's worker (``bench_pll.py --worker METHOD``): one model, one method, in a fresh
process; times the scoring and reads the peak memory (Linux)."""

from __future__ import annotations

import gc
import json
import resource
import time
from pathlib import Path


# ----------------------------------------------------------------------------------------------
# memory helpers (Linux)
# ----------------------------------------------------------------------------------------------
def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def rss_bytes() -> int:
    return _status_kib("VmRSS") * 1024


def max_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def reset_peak() -> bool:
    """Reset the RSS high-water mark (Linux >= 4.0); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------------------------
# workers (fresh subprocess each)
# ----------------------------------------------------------------------------------------------
def _chunks(xs, k):
    k = k if k > 0 else max(len(xs), 1)  # 0: everything in one call
    for i in range(0, len(xs), k):
        yield xs[i : i + k]


def _antiberty_hf_tokenizer(tmp: Path):
    """A BertTokenizerFast over AntiBERTy's vocab.txt; texts are residues separated by spaces."""
    import importlib.util

    import transformers

    root = Path(list(importlib.util.find_spec("antiberty").submodule_search_locations)[0])
    d = tmp / "antiberty_tok"
    d.mkdir(exist_ok=True)
    (d / "vocab.txt").write_text((root / "trained_models" / "vocab.txt").read_text())
    return transformers.BertTokenizerFast.from_pretrained(str(d), do_lower_case=False, model_max_length=512)


def worker(a) -> dict:
    import torch

    torch.set_num_threads(a.threads)
    import mlmprob
    from mlmprob.models.reader import reader_of

    spec = json.loads(Path(a.spec).read_text())
    texts: list[str] = spec.get("texts", [])
    t0 = time.perf_counter()
    mlm = mlmprob.load_mlm(spec["model"])
    model = mlm.model
    pll_fn = None

    if a.worker == "mlmprob":

        def pll_fn(batch):
            ids = mlm.encode(batch).input_ids
            return mlmprob.token_scores(reader_of(mlm, a.batch_tokens), ids).pll.tolist()

    elif a.worker == "minicons":
        from minicons import scorer

        if spec["kind"] == "antiberty":
            hf_tok = _antiberty_hf_tokenizer(Path(a.spec).parent)
            texts = [" ".join(s) for s in texts]
            # the minicons tokenizer must give exactly mlmprob's ids
            ref = mlm.encode([t.replace(" ", "") for t in texts[:2]]).input_ids
            got = hf_tok([texts[0]])["input_ids"][0]
            assert got == [i for i in ref[0].tolist() if i != mlm.pad_id], "AntiBERTy tokenizers disagree"
        else:
            hf_tok = mlm.tokenizer.hf
        if not hasattr(hf_tok, "batch_encode_plus"):
            # minicons 0.3.39 calls tokenizer.batch_encode_plus, which transformers 5 removed; calling the
            # tokenizer on a list of texts is the same operation (same ids, padding, attention mask)
            hf_tok.batch_encode_plus = hf_tok.__call__
        mc = scorer.MaskedLMScorer(model, device="cpu", tokenizer=hf_tok, PLL_metric="original")

        def pll_fn(batch):
            return mc.sequence_score(batch, reduction=lambda x: x.sum(0).item(), PLL_metric="original")

    elif a.worker == "naive":
        from mlmprob.models.reader import reader_of

        @torch.inference_mode()
        def pll_fn(batch):
            enc = mlm.encode(batch)
            out = []
            for b in range(len(batch)):
                x = enc.input_ids[b, : int(enc.lengths[b])]
                total = 0.0
                for t in reader_of(mlm).default_positions(x[None])[0].nonzero()[:, 0].tolist():
                    y = x.clone()
                    y[t] = mlm.mask_id
                    logits = model(input_ids=y[None]).logits[0, t].double()
                    total += float(logits[x[t]] - logits.logsumexp(-1))
                out.append(total)
            return out

    elif a.worker == "mlmprob-long":
        ids = torch.tensor([spec["ids"]])
        positions = torch.arange(int(spec.get("copies", ids.shape[1])))  # one masked copy per position

        def pll_fn(_):
            return mlmprob.token_scores(reader_of(mlm, a.batch_tokens), ids, positions).pll.tolist()

        texts = ["<ids>"]
    else:
        raise SystemExit(f"unknown worker {a.worker!r}")

    load_s = time.perf_counter() - t0
    if a.limit > 0:
        texts = texts[: a.limit]
    gc.collect()
    load_peak = max_rss_bytes()
    if a.warmup:
        # one short forward pass: thread pools warm and every weight paged in (safetensors files are
        # memory-mapped), so that "delta" is what scoring itself adds
        warm = mlm.encode(spec["texts"][:1]).input_ids if spec.get("texts") else torch.tensor([spec["ids"][:16]])
        with torch.inference_mode():
            model(input_ids=warm)
        gc.collect()
    reset_ok = reset_peak()
    base = rss_bytes()
    times, cpu = [], []
    plls = None
    for _ in range(max(1, a.repeats)):
        r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        plls = [p for chunk in _chunks(texts, a.chunk) for p in pll_fn(chunk)]
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        times.append(time.perf_counter() - t)
        cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    peak = max_rss_bytes()
    best = min(range(len(times)), key=times.__getitem__)
    return {
        "method": a.worker,
        "kind": spec["kind"],
        "n": len(texts),
        "seconds": times[best],
        "all_seconds": times,
        "cpu_seconds": cpu[best],
        "seq_per_s": len(texts) / times[best],
        "seq_per_cpu_s": len(texts) / max(cpu[best], 1e-9),
        "rss_after_load": base,
        "peak": peak,
        "delta": max(peak - base, 0),
        "lifetime_peak": max(peak, load_peak),
        "peak_reset": reset_ok,
        "load_s": load_s,
        "pll": plls,
        "threads": torch.get_num_threads(),
    }
