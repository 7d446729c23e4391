"""``mlmprob demo``: the main job on the embedded default model (AntiBERTy), with a short report."""

from __future__ import annotations

import argparse
import time

# Public variable-domain heavy chains (trastuzumab's VH is also given in the shared data README).
DEMO_HEAVY = {
    "trastuzumab": "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS",
}


def register(sub) -> None:
    p = sub.add_parser("demo", help="score antibodies with AntiBERTy and print a short report",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    from ..cli import add_model_args
    add_model_args(p)
    p.add_argument("--n", type=int, default=3, help="heavy chains from Thera-SAbDab to score besides trastuzumab")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def demo_records(n: int):
    from ..data import Record, read_records, shared_data_dir

    recs = [Record(k, v) for k, v in DEMO_HEAVY.items()]
    data = shared_data_dir()
    if data is not None and (data / "antibody" / "thera_sabdab.csv").exists() and n > 0:
        rows = read_records(data / "antibody" / "thera_sabdab.csv", "csv", "HC", "Therapeutic")
        recs += [r for r in rows if set(r.seq) <= set("ACDEFGHIKLMNPQRSTVWY")][:n]
    return recs


def run(args) -> int:
    from ..models import load_mlm
    from ..scoring import score_records

    t0 = time.perf_counter()
    mlm = load_mlm(args.model, device=args.device, dtype=args.dtype)
    print(f"mlmprob demo: model {mlm.name} ({sum(p.numel() for p in mlm.model.parameters()) / 1e6:.1f}M parameters, "
          f"vocabulary {mlm.vocab_size}), loaded in {time.perf_counter() - t0:.1f}s\n")

    print("1. Sequence scores (pseudo-log-likelihood, E_local = -PLL, E_raw = -sum of raw logits)")
    print(f"   {'antibody':<16}{'length':>7}{'PLL':>10}{'PLL/res':>9}{'E_raw':>10}{'secs':>7}")
    worst = None
    for r in demo_records(args.n):
        t = time.perf_counter()
        (s,) = list(score_records(mlm, [r], per_token=True, batch_tokens=args.batch_tokens))
        print(f"   {s.id[:15]:<16}{s.n_tokens:>7}{s.pll:>10.2f}{s.pll_per_token:>9.3f}{s.e_raw:>10.1f}"
              f"{time.perf_counter() - t:>7.1f}")
        if worst is None:
            worst = s
    lows = sorted(range(worst.n_tokens), key=lambda i: worst.token_log_prob[i])[:5]
    print(f"\n   least expected residues of {worst.id} (position: residue, log q):")
    print("   " + ", ".join(f"{i + 1}:{worst.tokens[i]} {worst.token_log_prob[i]:.2f}" for i in sorted(lows)))
    print(f"\ndone in {time.perf_counter() - t0:.1f}s")
    return 0
