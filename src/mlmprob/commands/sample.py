"""``mlmprob sample``: MH or degenerate-Gibbs chains from an MLM, optionally only over CDR-H3.

Writes ``run.jsonl`` (resumable: rerun the same command to continue a killed run), ``samples.fasta``
(the kept states), ``summary.json`` and ``trace.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..argtypes import nonnegative_float, nonnegative_int, positive_float, positive_int, probability
from ..errors import MLMProbError
from ..jsonl import dumps


def _block_size(text: str):
    """``K`` or ``START:END[:EPOCHS]`` (linear decrease, Goyal et al. App. D)."""

    parts = text.split(":")
    try:
        nums = [positive_int(p) for p in parts]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"block size must be K or START:END[:EPOCHS] with positive integers, "
                                         f"got {text!r}") from None
    if len(nums) == 1:
        return nums[0]
    if len(nums) in (2, 3):
        return ("linear", *nums)
    raise argparse.ArgumentTypeError(f"block size must be K or START:END[:EPOCHS], got {text!r}")


def parse_positions(text: str) -> list[int]:
    """``"3,5,10-12"`` -> ``[3, 5, 10, 11, 12]`` (0-based residue/word indices, ranges inclusive).

    >>> parse_positions("3,5,10-12")
    [3, 5, 10, 11, 12]
    """
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                a, b = part.split("-")
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise MLMProbError(f"--positions must be indices or ranges like 3,5,10-12; got {part!r}") from None
    if not out:
        raise MLMProbError("--positions is empty")
    return out


def register(sub) -> None:
    p = sub.add_parser("sample", help="MH / degenerate Gibbs sampling from an MLM's energy (Goyal et al. 2022)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    src = p.add_argument_group("input")
    src.add_argument("--seq", action="append", default=[], help="a sequence ('_' = mask); repeatable")
    src.add_argument("--input", help="file of sequences: text lines, FASTA, CSV/TSV (with --column)")
    src.add_argument("--column", help="sequence column of a CSV/TSV input")
    src.add_argument("--positions", help="free residue/word indices, 0-based, e.g. 3,5,10-12 (default: all)")
    src.add_argument("--cdr3", nargs="?", const="imgt", choices=("imgt", "kabat"),
                     help="free only CDR-H3 (conserved Cys ... W-G-x-G); the rest is clamped")
    from ..cli import add_allow_pickle_arg, add_model_args
    add_model_args(p)
    add_allow_pickle_arg(p)
    s = p.add_argument_group("sampler")
    s.add_argument("--method", choices=("mh", "gibbs"), default="mh",
                   help="Metropolis-Hastings with the MLM's conditionals as proposals, or degenerate Gibbs")
    s.add_argument("--energy", choices=("local", "raw"), default="local",
                   help="target energy: E_local (= -PLL) or E_raw (minus the sum of raw logits)")
    s.add_argument("--chains", type=positive_int, default=4, help="chains per input sequence")
    s.add_argument("--epochs", type=positive_int, default=20, help="epochs after burn-in")
    s.add_argument("--burn-in", type=nonnegative_int, default=5, help="epochs run first and not kept")
    s.add_argument("--thin", type=positive_int, default=1, help="keep every N-th epoch after burn-in")
    s.add_argument("--block-size", type=_block_size, default=1, help="K, or START:END[:EPOCHS] decreasing linearly")
    s.add_argument("--proposal-temperature", type=positive_float, default=1.0,
                   help="temperature of the proposal distribution (the MLM's conditionals)")
    s.add_argument("--top-p", type=probability, default=1.0,
                   help="nucleus: propose only from the top-p probability mass")
    s.add_argument("--target-temperature", type=positive_float, default=1.0,
                   help="temperature of the target distribution exp(-E / T)")
    s.add_argument("--anneal", type=nonnegative_float, default=0.0,
                   help="subtract this from the target temperature per epoch")
    s.add_argument("--temperature-floor", type=positive_float, default=0.05,
                   help="lowest target temperature annealing reaches")
    s.add_argument("--order", choices=("random", "l2r"), default="random",
                   help="order in which positions are visited within an epoch")
    s.add_argument("--init", choices=("given", "greedy", "random"), default="given",
                   help="initial state of the free positions: the input, the MLM's argmax, or random tokens")
    s.add_argument("--score-all", action="store_true", help="energy over all positions, not only the free ones")
    s.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the sampler's random generator")
    p.add_argument("--out", required=True, help="output folder (run.jsonl, samples.fasta, summary.json, trace.png)")
    p.add_argument("--no-plot", action="store_true", help="do not draw trace.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _diagnostic_notes(result) -> dict:
    """Why a diagnostic is missing (written as null): ``{"ess_note": ...}`` and the like."""
    import math

    kept = len(result.kept_epochs)
    notes = {}
    for key in ("ess", "rhat"):
        if not math.isfinite(getattr(result, key)):
            notes[f"{key}_note"] = (f"needs >= 4 kept epochs, got {kept}" if kept < 4
                                    else "the kept energy trace has no variance (or is not finite)")
    for key in ("accept_rate", "novel_rate"):
        if not math.isfinite(getattr(result, key)):
            notes[f"{key}_note"] = "no proposals after burn-in"
    return notes


def _read_inputs(args) -> list[tuple[str, str]]:
    seqs = [(f"seq{i + 1}", s) for i, s in enumerate(args.seq)]
    if args.input:
        from ..data import read_records
        seqs += [(r.id, r.seq) for r in read_records(args.input, "auto", args.column)]
    if not seqs:
        raise MLMProbError("no input: give --seq or --input")
    return seqs


def run(args) -> int:
    import torch

    from ..models import load_mlm
    from ..sampling import LinearAnneal, LinearBlockSize, sample
    from ..sampling.cdr import cdr_h3_mask
    from ..sampling.plots import plot_traces

    if args.positions and args.cdr3:
        raise MLMProbError("give --positions or --cdr3, not both")
    seqs = _read_inputs(args)
    mlm = load_mlm(args.model, args.device, args.dtype, allow_pickle=args.allow_pickle)
    enc = mlm.encode([s for _, s in seqs])
    ids, word_ids = enc.input_ids, enc.word_ids
    free = torch.zeros_like(ids, dtype=torch.bool)
    for i, (name, s) in enumerate(seqs):
        if args.cdr3:
            try:
                free[i] = cdr_h3_mask("".join(s.split()), word_ids[i], args.cdr3)
            except MLMProbError as e:
                raise MLMProbError(f"{name}: {e}") from None
        elif args.positions:
            want = parse_positions(args.positions)
            n_words = int(word_ids[i].max()) + 1
            bad = [w for w in want if not 0 <= w < n_words]
            if bad:
                raise MLMProbError(f"{name}: position {bad[0]} is outside its {n_words} residues/words")
            free[i] = torch.isin(word_ids[i], torch.tensor(want))
        else:
            free[i] = word_ids[i] >= 0
    reps = args.chains
    ids, free = ids.repeat_interleave(reps, 0), free.repeat_interleave(reps, 0)
    # identity is measured against the input when it has no masks at the free positions
    reference = None if (ids[free] == mlm.mask_id).any() else ids.clone()
    bs = args.block_size
    if isinstance(bs, tuple):
        _, start, end, *n = bs
        bs = LinearBlockSize(start, end, n[0] if n else args.burn_in + args.epochs)
    tt = args.target_temperature
    if args.anneal > 0:
        tt = LinearAnneal(args.target_temperature, args.anneal, args.temperature_floor)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(args.seed)
    result = sample(mlm, ids, method=args.method, energy=args.energy, epochs=args.epochs, burn_in=args.burn_in,
                    block_size=bs, proposal_temperature=args.proposal_temperature, top_p=args.top_p,
                    target_temperature=tt, order=args.order, positions=free, generator=g, init=args.init,
                    thin=args.thin, score_all=args.score_all, reference=reference, jsonl=out / "run.jsonl",
                    progress=not args.no_progress, batch_tokens=args.batch_tokens)
    with (out / "samples.fasta").open("w") as f:
        for s_idx, epoch in enumerate(result.kept_epochs.tolist()):
            for b in range(ids.shape[0]):
                name = seqs[b // reps][0]
                f.write(f">{name} chain={b % reps} epoch={epoch} e_local={float(result.energy_local[epoch, b]):.4f} "
                        f"e_raw={float(result.energy_raw[epoch, b]):.4f}\n{mlm.decode(result.samples[s_idx, b])}\n")
    summary = {"method": result.method, "energy": result.energy_kind, "chains": int(ids.shape[0]),
               "epochs": int(result.energy_local.shape[0]), "burn_in": result.burn_in,
               "accept_rate": result.accept_rate, "novel_rate": result.novel_rate, "ess": result.ess,
               "rhat": result.rhat, "forward_rows": result.forward_rows, "proposals": result.proposals,
               "final_energy_mean": float(result.energy[-1].mean()),
               "final_identity_mean": None if result.identity is None else float(result.identity[-1].mean())}
    summary.update(_diagnostic_notes(result))
    (out / "summary.json").write_text(dumps(summary, indent=2) + "\n")
    if not args.no_plot:
        plot_traces(result, out / "trace.png")
    print(dumps(summary))
    return 0
