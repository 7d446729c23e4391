"""``mlmprob score``: PLL / E_local / E_raw of every sequence in a file, written as it goes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..argtypes import positive_int
from ..data import FORMATS, read_records
from ..errors import MLMProbError
from ..jsonl import dumps, trim_partial_line

TSV_FIELDS = ("id", "n_tokens", "pll", "pll_per_token", "e_local", "e_raw")


def register(sub) -> None:
    p = sub.add_parser("score", help="pseudo-log-likelihood and raw-logit energy of sequences",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("input", help="text file (one sequence per line), FASTA, CSV or TSV")
    p.add_argument("--format", default="auto", choices=FORMATS, help="input format (auto: by file extension)")
    p.add_argument("--column", help="sequence column of a CSV/TSV file")
    p.add_argument("--id-column", help="identifier column of a CSV/TSV file")
    from ..cli import add_allow_pickle_arg, add_model_args
    add_model_args(p)
    add_allow_pickle_arg(p)
    p.add_argument("--out", "-o", help="output file, .jsonl or .tsv (default: JSONL on stdout)")
    p.add_argument("--per-token", action="store_true", help="also write per-token log-probabilities and raw logits")
    p.add_argument("--whole-word", action="store_true", help="whole-word l2r PLL (Kauf & Ivanova 2023)")
    p.add_argument("--limit", type=positive_int, help="score only the first N records")
    p.add_argument("--resume", action="store_true", help="skip ids already in --out and append")
    p.add_argument("--skip-invalid", action="store_true", help="skip records the tokenizer rejects, with a warning")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _done_ids(path: Path, tsv: bool) -> set[str]:
    if not path.exists():
        return set()
    ids = set()
    for i, line in enumerate(path.read_text().splitlines()):
        if not line.strip():
            continue
        if tsv:
            if i > 0:
                ids.add(line.split("\t")[0])
        else:
            try:
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError):
                pass  # a line cut by a kill is scored again
    return ids


def run(args) -> int:
    from tqdm import tqdm

    from ..models import load_mlm
    from ..scoring import score_records

    records = read_records(args.input, args.format, args.column, args.id_column)
    if args.limit is not None:
        records = records[: args.limit]
    if not records:
        raise MLMProbError(f"no sequences found in {args.input}")
    out_path = Path(args.out) if args.out else None
    tsv = bool(out_path and out_path.suffix.lower() == ".tsv")
    if tsv and args.per_token:
        raise MLMProbError("--per-token needs JSONL output (per-token lists do not fit a TSV row)")
    if out_path and out_path.exists() and not args.resume:
        raise MLMProbError(f"{out_path} exists; pass --resume to continue it or choose another --out")
    done = _done_ids(out_path, tsv) if (out_path and args.resume) else set()
    todo = [r for r in records if r.id not in done]
    mlm = load_mlm(args.model, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)

    if out_path:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        trim_partial_line(out_path)  # drop a half-written last line left by a kill
        fh = out_path.open("a")
        if tsv and not done:
            fh.write("\t".join(TSV_FIELDS) + "\n")
    else:
        fh = sys.stdout
    bar = tqdm(total=len(todo), unit="seq", disable=args.no_progress or len(todo) < 2, file=sys.stderr)
    skipped = []
    try:
        for s in score_records(mlm, todo, whole_word=args.whole_word, per_token=args.per_token,
                               batch_tokens=args.batch_tokens, skip_invalid=args.skip_invalid,
                               on_skip=lambda r, why: skipped.append((r.id, why)), progress=bar.update):
            if tsv:
                fh.write("\t".join(str(getattr(s, k)) for k in TSV_FIELDS) + "\n")
            else:
                fh.write(dumps(s.to_dict(args.per_token)) + "\n")
            fh.flush()
    finally:
        bar.close()
        if fh is not sys.stdout:
            fh.close()
    for rid, why in skipped:
        print(f"warning: skipped record {rid!r}: {why}", file=sys.stderr)
    if out_path:
        print(f"scored {len(todo) - len(skipped)} sequences with {args.model} -> {out_path}"
              + (f" ({len(done)} already there)" if done else ""), file=sys.stderr)
    return 0
