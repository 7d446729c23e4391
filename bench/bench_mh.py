"""Proposals per second: the MH kernel (cached single-site conditionals) vs a literal
implementation of Goyal et al.'s Algorithm 1 (2T + 1 masked forward rows per proposal).

Same run, same model, same chains, same generator seed; the report also says whether both
kernels ended in the same states. The default model is Sapiens-VH (offline wheel); ``--model
random`` builds a small random BERT with an amino-acid vocabulary in memory, and any name
``load_mlm`` accepts works. Exits with status 1 if the speed-up is below ``--require`` (default 2).

The reuse kernel forwards at most T - 1 rows per single-site proposal (none when the proposal
repeats the current token) against 2T + 1, so the speed-up is above 2 for any T and grows with
how often a trained model re-proposes the current token. Measured on a 2-core CPU, 1 thread,
8 chains, T = 20 free residues of a 111-token VH, one epoch: sapiens-vh 3.9x (16.6 vs 4.2
proposals/s, 11.8 vs 41 rows per proposal, identical chains); random BERT 2.1x (near-uniform
conditionals: almost every proposal is new and accepted).

    python bench/bench_mh.py --threads 1 --epochs 1
    python bench/bench_mh.py --model random
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.sampling import LiteralMH, MetropolisHastings
from mlmprob.sampling.init import resolve_free

HCDR3_CONTEXT = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"


def tiny_bert(hidden: int, layers: int, seed: int):
    from transformers import BertConfig, BertForMaskedLM

    from mlmprob.models import HFMaskedLM, ResidueTokenizer

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AMINO_ACIDS)
    tok = ResidueTokenizer(tokens, bos="[CLS]", eos="[SEP]", pad="[PAD]", mask="[MASK]", unk="[UNK]", max_length=256)
    torch.manual_seed(seed)  # benchmark script: random weights of the throw-away model
    cfg = BertConfig(
        vocab_size=len(tokens),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 32),
        intermediate_size=4 * hidden,
        max_position_embeddings=256,
    )
    return HFMaskedLM(
        BertForMaskedLM(cfg), tok, name=f"random-bert-{hidden}x{layers}", proposal_ids=tok.residue_ids, max_length=256
    )


def run_kernel(kernel, ids, free, steps: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    state = kernel.init(ids, free)
    rows0 = state.forward_rows
    n_prop = n_acc = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        state, info = kernel.step(state, g)
        n_prop += int(info.active.sum())
        n_acc += int(info.accepted.sum())
    dt = time.perf_counter() - t0
    return {
        "proposals": n_prop,
        "seconds": dt,
        "proposals_per_s": n_prop / dt,
        "accept_rate": n_acc / n_prop,
        "rows_per_proposal": (state.forward_rows - rows0) / n_prop,
    }, state


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="sapiens-vh", help="a load_mlm name or directory, or 'random'")
    ap.add_argument("--hidden", type=int, default=128, help="random model only")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--free", type=int, default=20, help="free residues (the C-terminal part of a VH prefix)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--energy", choices=("local", "raw"), default="local")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--require", type=float, default=2.0)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.model == "random":
        mlm = tiny_bert(args.hidden, args.layers, args.seed)
    else:
        from mlmprob import load_mlm

        mlm = load_mlm(args.model)
    seq = HCDR3_CONTEXT + "WGGDGFYAMDY"
    enc = mlm.encode([seq] * args.chains)
    ids = enc.input_ids
    L = ids.shape[1]
    positions = list(range(L - 1 - args.free, L - 1))  # the last residues before the end token
    free = resolve_free(mlm, ids, positions)
    steps = args.epochs * args.free
    common = dict(energy=args.energy, order="l2r")
    fast, fast_state = run_kernel(MetropolisHastings(mlm, **common), ids, free, steps, args.seed)
    lit, lit_state = run_kernel(LiteralMH(mlm, **common), ids, free, steps, args.seed)
    speedup = fast["proposals_per_s"] / lit["proposals_per_s"]
    report = {
        "model": getattr(mlm, "name", type(mlm).__name__),
        "chains": args.chains,
        "T_free": args.free,
        "sequence_tokens": L,
        "steps": steps,
        "threads": torch.get_num_threads(),
        "mh_cached": fast,
        "literal_algorithm_1": lit,
        "speedup": speedup,
        "same_final_states": float((fast_state.ids == lit_state.ids).all(-1).double().mean()),
    }
    print(json.dumps(report, indent=2))
    if speedup < args.require:
        print(f"speed-up {speedup:.2f} is below the required {args.require}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
