"""``mlmprob train``: MLM pretraining on a synthetic language (exact ground truth) or on text files."""

from __future__ import annotations

from ..argtypes import (
    device_name,
    finite_float,
    nonnegative_float,
    nonnegative_int,
    open_fraction,
    positive_float,
    positive_int,
)
from ..fields import add_field_flags
from ..jsonl import dumps
from ..synthetic.kinds import KINDS
from ..training.config import TrainConfig
from .common import out_folder, spec_of

#: The flags made from :class:`~mlmprob.training.config.TrainConfig`'s fields, by ``--help`` group.
MODEL_FLAGS = (
    "hidden_size num_layers num_heads intermediate_size dropout precision max_steps batch_size lr warmup_steps "
    "weight_decay grad_clip"
).split()
MASKING_FLAGS = "mask_rate mask_split masking seed eval_every checkpoint_every keep_checkpoints kl_sequences".split()


def register(sub) -> None:
    p = sub.add_parser(
        "train",
        help="pretrain a BERT masked LM on a synthetic language or text files",
        description="Rerunning with the same --out continues from the last checkpoint.",
    )
    p.add_argument("--out", "-o", required=True, help="output directory (model, checkpoints, loss_curve.png)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--synthetic", choices=KINDS, help="train on exact samples of a random synthetic language")
    text = "train on text files, one sequence per line (- or /dev/stdin: standard input)"
    src.add_argument("--text", nargs="+", metavar="FILE", help=text)
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
    held = "share of the text lines held out for evaluation"
    g.add_argument("--heldout-fraction", type=open_fraction, default=0.05, help=held)
    g.add_argument("--cased", action="store_true", help="keep case (default: lowercase)")
    add_field_flags(p.add_argument_group("model and optimisation"), TrainConfig, MODEL_FLAGS)
    g = p.add_argument_group("masking and bookkeeping")
    add_field_flags(g, TrainConfig, MASKING_FLAGS)
    g.add_argument("--stop-after", type=positive_int, help="stop (with a checkpoint) after this many steps in total")
    g.add_argument("--device", type=device_name, default="cpu", help="torch device, e.g. cpu, cuda")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..models.loading import parse_device
    from ..synthetic.io import make_language
    from ..training.data import SyntheticSource, TextSource
    from ..training.loop import train

    out = out_folder(args.out)
    config = spec_of(TrainConfig, args)  # a flag left out: the config's default
    source: SyntheticSource | TextSource
    if args.synthetic:
        shape = {k: getattr(args, k) for k in ("coupling", "field_scale", "n_states", "concentration", "rows")}
        lang = make_language(args.synthetic, args.vocab_size, args.length, args.language_seed, **shape)
        source = SyntheticSource(lang, args.n_train, args.n_heldout)
    else:
        sizes = (args.tokenizer_vocab_size, args.max_length, args.heldout_fraction)
        source = TextSource(args.text, *sizes, lowercase=not args.cased)
    run = dict(device=parse_device(args.device), progress=not args.no_progress, stop_after=args.stop_after)
    result = train(config, source, out, **run)
    head = {"out": str(result.out_dir), "step": result.step, "done": result.done, "resumed_from": result.resumed_from}
    print(dumps({**head, **{k: v for k, v in result.final.items() if k != "lr"}}))
    return 0
