"""``mlmprob train``: MLM pretraining on a synthetic language (exact ground truth) or on text files."""

from __future__ import annotations

import argparse

from ..argtypes import (
    device_name,
    dropout_rate,
    finite_float,
    nonnegative_float,
    nonnegative_int,
    open_fraction,
    positive_float,
    positive_int,
    probability,
)
from ..jsonl import dumps


def _split(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected three comma-separated numbers, got {text!r}") from None
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected three comma-separated numbers (mask,random,keep), got {text!r}")
    return parts


def register(sub) -> None:
    from ..synthetic.kinds import KINDS

    p = sub.add_parser(
        "train",
        help="pretrain a BERT masked LM on a synthetic language or text files",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Rerunning with the same --out continues from the last checkpoint.",
    )
    p.add_argument("--out", "-o", required=True, help="output directory (model, checkpoints, loss_curve.png)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--synthetic", choices=KINDS, help="train on exact samples of a random synthetic language")
    src.add_argument(
        "--text",
        nargs="+",
        metavar="FILE",
        help="train on text files, one sequence per line (- or /dev/stdin: standard input)",
    )
    g = p.add_argument_group("synthetic language")
    g.add_argument("--vocab-size", type=positive_int, default=10, help="symbols V")
    g.add_argument("--length", type=positive_int, default=12, help="sequence length T")
    g.add_argument("--coupling", type=finite_float, default=1.0, help="Potts coupling J (dependency strength)")
    g.add_argument("--field-scale", type=nonnegative_float, default=1.0, help="Potts field standard deviation")
    g.add_argument("--rows", type=positive_int, default=2, help="grid rows (grid: length = rows x columns)")
    g.add_argument("--n-states", type=positive_int, default=4, help="HMM hidden states")
    g.add_argument("--concentration", type=positive_float, default=0.5, help="HMM Dirichlet concentration")
    g.add_argument("--language-seed", type=nonnegative_int, default=0, help="seed of the language's parameters")
    g.add_argument("--n-train", type=positive_int, default=10000, help="training sequences sampled")
    g.add_argument("--n-heldout", type=positive_int, default=1000, help="held-out sequences sampled")
    g = p.add_argument_group("text")
    g.add_argument("--tokenizer-vocab-size", type=positive_int, default=1000, help="WordPiece vocabulary size")
    g.add_argument("--max-length", type=positive_int, default=128, help="tokens per sequence, special tokens included")
    g.add_argument(
        "--heldout-fraction", type=open_fraction, default=0.05, help="share of the text lines held out for evaluation"
    )
    g.add_argument("--cased", action="store_true", help="keep case (default: lowercase)")
    g = p.add_argument_group("model and optimisation")
    g.add_argument("--hidden", type=positive_int, default=64, help="hidden size")
    g.add_argument("--layers", type=positive_int, default=2, help="transformer layers")
    g.add_argument("--heads", type=positive_int, default=2, help="attention heads")
    g.add_argument("--intermediate", type=positive_int, default=128, help="feed-forward size")
    g.add_argument("--dropout", type=dropout_rate, default=0.0, help="dropout rate")
    g.add_argument(
        "--precision",
        choices=("fp32", "bf16"),
        default="fp32",
        help="bf16: bfloat16 autocast in the training forward pass (fast on AMX CPUs and GPUs)",
    )
    g.add_argument("--steps", type=positive_int, default=1000, help="optimiser steps in total")
    g.add_argument("--batch-size", type=positive_int, default=64, help="sequences per step")
    g.add_argument("--lr", type=positive_float, default=1e-3, help="peak learning rate (AdamW)")
    g.add_argument("--warmup", type=nonnegative_int, default=100, help="linear warm-up steps")
    g.add_argument("--weight-decay", type=nonnegative_float, default=0.01, help="AdamW weight decay")
    g.add_argument("--grad-clip", type=nonnegative_float, default=1.0, help="gradient-norm clip (0 = off)")
    g = p.add_argument_group("masking and bookkeeping")
    g.add_argument(
        "--mask-rate", type=probability, default=0.15, help="fraction of tokens selected per sequence (>= 1)"
    )
    g.add_argument(
        "--mask-split", type=_split, default=(1.0, 0.0, 0.0), help="mask,random,keep shares of the selected tokens"
    )
    g.add_argument(
        "--masking",
        choices=("dynamic", "static"),
        default="dynamic",
        help="dynamic: new masks every step; static: one fixed mask per sequence",
    )
    g.add_argument("--seed", type=nonnegative_int, default=0, help="init, data order, masks, dropout, data sampling")
    g.add_argument("--eval-every", type=positive_int, default=100, help="steps between held-out evaluations")
    g.add_argument("--checkpoint-every", type=positive_int, default=500, help="steps between checkpoints")
    g.add_argument("--keep-checkpoints", type=positive_int, default=2, help="checkpoints kept on disk")
    g.add_argument(
        "--kl-sequences", type=nonnegative_int, default=256, help="held-out sequences for the exact KL (synthetic)"
    )
    g.add_argument("--stop-after", type=positive_int, help="stop (with a checkpoint) after this many steps in total")
    g.add_argument("--device", type=device_name, default="cpu", help="torch device, e.g. cpu, cuda")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..models.loading import parse_device
    from ..synthetic.io import make_language
    from ..training.config import TrainConfig
    from ..training.data import SyntheticSource, TextSource
    from ..training.loop import train
    from .common import out_folder

    out = out_folder(args.out)
    config = TrainConfig(
        hidden_size=args.hidden,
        num_layers=args.layers,
        num_heads=args.heads,
        intermediate_size=args.intermediate,
        dropout=args.dropout,
        max_steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_steps=args.warmup,
        weight_decay=args.weight_decay,
        grad_clip=args.grad_clip,
        mask_rate=args.mask_rate,
        mask_split=args.mask_split,
        masking=args.masking,
        seed=args.seed,
        eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every,
        keep_checkpoints=args.keep_checkpoints,
        kl_sequences=args.kl_sequences,
        precision=args.precision,
    )
    source: SyntheticSource | TextSource
    if args.synthetic:
        lang = make_language(
            args.synthetic,
            args.vocab_size,
            args.length,
            args.language_seed,
            coupling=args.coupling,
            field_scale=args.field_scale,
            n_states=args.n_states,
            concentration=args.concentration,
            rows=args.rows,
        )
        source = SyntheticSource(lang, args.n_train, args.n_heldout)
    else:
        source = TextSource(
            args.text, args.tokenizer_vocab_size, args.max_length, args.heldout_fraction, lowercase=not args.cased
        )
    result = train(
        config,
        source,
        out,
        device=parse_device(args.device),
        progress=not args.no_progress,
        stop_after=args.stop_after,
    )
    summary = {
        "out": str(result.out_dir),
        "step": result.step,
        "done": result.done,
        "resumed_from": result.resumed_from,
        **{k: v for k, v in result.final.items() if k != "lr"},
    }
    print(dumps(summary))
    return 0
