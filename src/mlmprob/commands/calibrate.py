"""``mlmprob calibrate``: fit a model's one-pass PLL correction on sequences of the user's domain."""

from __future__ import annotations

import sys
from pathlib import Path

from ..argtypes import nonnegative_int, positive_int
from ..errors import MLMProbError
from ..runtime.inputs import iter_records
from .common import add_input_args, add_model_args, load_model_from_args


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="fit the one-pass PLL correction of a model (for score --pll one-pass)")
    p.add_argument("input", help="calibration sequences (any format score reads), from the domain you will score")
    add_input_args(p, ids=False)
    add_model_args(p)
    p.add_argument("--limit", type=positive_int, default=200, help="use the first N sequences")
    p.add_argument("--steps", type=positive_int, default=400, help="Adam steps of the fit")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the held-out split and minibatches")
    out = "where to write the correction (.safetensors; a .json description beside it)"
    beside = "default: one_pass.safetensors in the model's folder, where it is found by itself"
    p.add_argument("--out", help=f"{out}; {beside}")
    p.add_argument("--force", action="store_true", help="replace a correction file that exists at the output path")
    p.set_defaults(func=run)


def out_path(model: str, out: str | None) -> Path:
    """Where the correction is written: ``--out`` (a .safetensors file), else beside a local model."""
    from ..onepass.correction import FILE_STEM

    if out is not None:
        path = Path(out)
        if path.suffix != ".safetensors":
            raise MLMProbError(f"--out must end in .safetensors, got {out!r}")
        if path.is_dir():  # refused before the fit (safetensors' own error came after it, as a traceback)
            raise MLMProbError(f"--out {out!r} is a folder; give a file path ending in .safetensors")
        if path.parent.exists() and not path.parent.is_dir():
            raise MLMProbError(f"--out {out!r}: {str(path.parent)!r} is a file, not a folder")
        return path
    if Path(model).is_dir():
        return Path(model) / f"{FILE_STEM}.safetensors"
    raise MLMProbError(f"--out is needed: {model!r} is not a local model folder to write the correction beside")


def run(args) -> int:
    from itertools import islice

    from ..data import encode_records
    from ..onepass.fit import calibrate, check_steps

    check_steps(args.steps)  # before the model loads and the sequences are read
    path = out_path(args.model, args.out)
    if path.exists() and not args.force:  # refused before the fit, not found after it
        raise MLMProbError(f"{str(path)!r} exists (a correction fitted before): give --force to replace it")
    recs = list(islice(iter_records(args.input, args.format, args.column, None), args.limit))
    if not recs:
        raise MLMProbError(f"no sequences found in {args.input}")
    if len(recs) < 2:
        raise MLMProbError("calibrate needs at least 2 sequences (one is held out to measure the fit), got 1")
    mlm = load_model_from_args(args)
    seqs = [r.seq for r in recs]
    for r in recs:  # name a record the tokenizer rejects before the long reads start
        encode_records(mlm, [r])
    done = [0]

    def progress(k):
        done[0] += k
        print(f"\r{done[0]}/{len(seqs)} calibration sequences read", end="", file=sys.stderr)

    source = f"{Path(args.input).name}: first {len(seqs)} sequences"
    res = calibrate(mlm, seqs, steps=args.steps, seed=args.seed, source=source, progress=progress)
    print("", file=sys.stderr)
    path, meta = res.correction.save(path)
    kl = f"held-out KL {res.heldout_kl_before:.4f} (unmasked) -> {res.heldout_kl_after:.4f} nats/position"
    done_in = f"{len(seqs)} sequences, {res.seconds:.0f} s"
    print(f"one-pass correction for {args.model}: {kl}; {done_in} -> {path} (+ {meta.name})")
    return 0
