"""Benchmark of the pairwise joints (mlmprob.joints).

1. Forward passes per pair, counted with a wrapper: exactly ``2|V'| + 1`` rows, in
   ``ceil((2|V'| + 1) / rows_per_batch(L, batch_tokens))`` batched calls.
2. Pairs/s on sapiens-vh and AntiBERTy (a few heavy-chain pairs, all five methods and metrics).
3. A 30k vocabulary (random-weight small BERT, vocab_size 30522): time per pair with a top-K
   candidate set, the measured rows/s at full-vocabulary projection, and the time a full
   ``|V'| = 30522`` pair takes (forward rows measured-rate x 61045; AG per step x (30522/K)^2).
   A full pair is not run: its two float64 [30522, 30522] tables need 15 GB.
4. The error of the top-K restriction, measured against the full 20-residue joint of sapiens-vh.

Usage: python bench/bench_joints.py [--data PATH] [--pairs 5] [--antiberty-pairs 2] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import torch

from mlmprob.batching import rows_per_batch
from mlmprob.joints import ag_joint, evaluate_conditionals, evaluate_pair, pair_conditionals
from mlmprob.joints.conditionals import topk_candidates
from mlmprob.models import load_mlm
from mlmprob.models.reader import reader_of  # noqa: E402


class CountingMLM:
    """Forwards to a MaskedLM and counts batched calls and rows (``logits`` and ``logits_at``)."""

    def __init__(self, mlm):
        self.mlm, self.calls, self.rows = mlm, 0, 0
        for k in ("mask_id", "vocab_size", "pad_id", "special_ids", "proposal_ids", "max_length"):
            setattr(self, k, getattr(mlm, k, None))

    def logits(self, ids):
        self.calls += 1
        self.rows += ids.shape[0]
        return self.mlm.logits(ids)

    def logits_at(self, ids, rows, cols):
        self.calls += 1
        self.rows += ids.shape[0]
        return self.mlm.logits_at(ids, rows, cols)


def heavy_chains(path: str, n: int, seed: int = 0) -> list[str]:
    with open(path, newline="") as f:
        seqs = [r["HC"].strip() for r in csv.DictReader(f) if (r.get("HC") or "").strip() not in ("", "na")]
    perm = torch.randperm(len(seqs), generator=torch.Generator().manual_seed(seed))
    return [seqs[int(i)] for i in perm[:n]]


def random_pairs(mlm, seqs: list[str], seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    for s in seqs:
        ids = mlm.encode([s]).input_ids[0]
        pos = reader_of(mlm).default_positions(ids[None])[0].nonzero(as_tuple=True)[0]
        a, b = sorted(int(pos[j]) for j in torch.randperm(len(pos), generator=g)[:2])
        yield ids, a, b


def bench_counting(mlm, seqs, batch_tokens=8192):
    out = []
    for ids, a, b in random_pairs(mlm, seqs[:3]):
        c = CountingMLM(mlm)
        pc = pair_conditionals(reader_of(c, batch_tokens), ids, a, b)
        K, L = pc.size, len(ids)
        expect_calls = math.ceil((2 * K + 1) / rows_per_batch(L, batch_tokens))
        assert c.rows == 2 * K + 1 == pc.n_forward, (c.rows, K)
        assert c.calls == expect_calls, (c.calls, expect_calls)
        out.append({"K": K, "L": L, "rows": c.rows, "calls": c.calls, "expected_calls": expect_calls})
    return out


def bench_model(mlm, seqs):
    recs, t0 = [], time.perf_counter()
    for ids, a, b in random_pairs(mlm, seqs):
        ev = evaluate_pair(mlm, ids, a, b)
        recs.append(ev.record())
    wall = time.perf_counter() - t0
    return {
        "pairs": len(recs),
        "pairs_per_s": len(recs) / wall,
        "seconds_per_pair": wall / len(recs),
        "forward_s_per_pair": sum(r["seconds_forward"] for r in recs) / len(recs),
        "K": recs[0]["K"],
        "rows_per_pair": recs[0]["n_forward"],
        "ag_steps": [r["ag_steps"] for r in recs],
        "ag_converged": all(r["ag_converged"] for r in recs),
    }


def random_bert_30k(L: int = 32):
    import transformers

    from mlmprob.models.hf import HFMaskedLM

    cfg = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        max_position_embeddings=128,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = transformers.BertForMaskedLM(cfg)
    tok = SimpleNamespace(mask_id=103, pad_id=0, special_ids=frozenset({0, 100, 101, 102, 103}))
    mlm = HFMaskedLM(model, tok, name="random-bert-30522", max_length=128)
    g = torch.Generator().manual_seed(1)
    ids = torch.cat([torch.tensor([101]), torch.randint(1000, 30000, (L - 2,), generator=g), torch.tensor([102])])
    return mlm, ids


def bench_30k(ks=(256, 1024), L=32):
    mlm, ids = random_bert_30k(L)
    V = mlm.vocab_size
    rows = []
    for k in ks:
        t0 = time.perf_counter()
        cands = topk_candidates(mlm, ids, 5, 6, k)
        pc = pair_conditionals(mlm, ids, 5, 6, cands)
        t_fwd = time.perf_counter() - t0
        ev = evaluate_conditionals(pc, seconds_forward=t_fwd)
        t_all = ev.seconds_total
        t1 = time.perf_counter()
        steps = 20
        ag_joint(pc, steps=steps)
        per_step = (time.perf_counter() - t1) / steps
        rate = (pc.n_forward + 1) / t_fwd
        rows.append(
            {
                "K": k,
                "rows": pc.n_forward + 1,
                "forward_s": t_fwd,
                "total_s": t_all,
                "rows_per_s": rate,
                "ag_steps": ev.ag.steps,
                "ag_s_per_step": per_step,
                "outside_mass_unary": pc.outside_mass["unary"],
                "full_V_forward_s_est": (2 * V + 1) / rate,
                "full_V_ag_s_per_step_est": per_step * (V / k) ** 2,
            }
        )
    return {"vocab_size": V, "L": L, "rows": rows}


def bench_topk_error(mlm, seqs, ks=(5, 10, 15)):
    """Top-K restriction vs the full candidate set: TV of the joints (top-K joint put on the full
    grid, zeros elsewhere), |change| of the gold pair log-probability, mass dropped."""
    out = {k: {"tv": {}, "dlogp": {}, "outside": [], "gold_lost": 0} for k in ks}
    n = 0
    for ids, a, b in random_pairs(mlm, seqs):
        full = evaluate_pair(mlm, ids, a, b)
        cf = full.conditionals.candidates.tolist()
        n += 1
        for k in ks:
            ev = evaluate_pair(mlm, ids, a, b, top_k=k)
            idx = torch.tensor([cf.index(t) for t in ev.conditionals.candidates.tolist()])
            o = out[k]
            o["outside"].append(ev.conditionals.outside_mass["unary"])
            o["gold_lost"] += ev.conditionals.gold_index is None
            for m, j in ev.joints.items():
                emb = torch.zeros(len(cf), len(cf), dtype=torch.float64)
                emb[idx[:, None], idx[None, :]] = j.exp()
                o["tv"].setdefault(m, []).append(0.5 * float((emb - full.joints[m].exp()).abs().sum()))
                if ev.conditionals.gold_index is not None:
                    o["dlogp"].setdefault(m, []).append(abs(ev.metrics[m].pair_logp - full.metrics[m].pair_logp))
    mean = lambda xs: sum(xs) / len(xs) if xs else math.nan  # noqa: E731
    return {
        k: {
            "pairs": n,
            "tv_mean": {m: mean(v) for m, v in o["tv"].items()},
            "abs_dlogp_gold_mean": {m: mean(v) for m, v in o["dlogp"].items()},
            "outside_mass_unary": mean(o["outside"]),
            "gold_outside_top_k": o["gold_lost"],
        }
        for k, o in out.items()
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/antibody/thera_sabdab.csv")
    )
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--antiberty-pairs", type=int, default=2)
    ap.add_argument("--skip-30k", action="store_true")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: on a shared, busy CPU more threads oversubscribe it)",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    seqs = heavy_chains(args.data, max(args.pairs, 3))
    res = {}

    sap = load_mlm("sapiens-vh")
    res["counting_sapiens_vh"] = bench_counting(sap, seqs)
    print("forward rows per pair (sapiens-vh):", res["counting_sapiens_vh"])
    res["sapiens_vh"] = bench_model(sap, seqs[: args.pairs])
    print("sapiens-vh:", res["sapiens_vh"])
    res["topk_error_sapiens_vh"] = bench_topk_error(sap, seqs[: args.pairs])
    for k, v in res["topk_error_sapiens_vh"].items():
        print(f"top-{k} vs full 20 (sapiens-vh):", v)
    if args.antiberty_pairs > 0:
        ab = load_mlm("antiberty")
        res["counting_antiberty"] = bench_counting(ab, seqs[:1])
        res["antiberty"] = bench_model(ab, seqs[: args.antiberty_pairs])
        print("antiberty:", res["antiberty"])
    if not args.skip_30k:
        res["bert_30k"] = bench_30k()
        for r in res["bert_30k"]["rows"]:
            print("random BERT 30522:", r)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
