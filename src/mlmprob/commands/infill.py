"""``mlmprob infill``: the top fills of gaps of known length, by standard or HCB beam search.

The gap is written in the sequence as ``[MASK]x5`` (five masked tokens), ``[MASK]`` / ``<mask>``
(one each) or ``_`` (one each), e.g. ``EVQLVESGGG_____QPGGSLRLSCAAS``.

One SEQUENCE: prints a table (or ``--json``). ``--input FILE``: every record of a text/FASTA/CSV/TSV/
JSONL/Parquet file, streamed to ``--out`` (JSONL on stdout by default), one row per gap with its
ranked fills and scores; resumable, shardable, parallel. ``--gaps joint`` (default): all masked
tokens of a record form one gap, row id = record id; ``--gaps each``: every contiguous gap is filled
on its own (the record's other gaps stay masked), row id = ``RECORD/gapK``. A row's (and ``--json``'s)
``positions`` are the gap's 1-based residue/word numbers (each ``_`` counts as one), ``token_indices``
its 0-based token indices.
"""

from __future__ import annotations

import argparse

from ..errors import MLMProbError
from ..fields import add_field_flags
from ..gaps import count_gaps, expand_gaps, gap_tokens
from ..infilling.spec import GAP_MODES, InfillSpec
from ..jsonl import dumps
from ..numbering import cdr_span, mask_residues
from ..runtime.inputs import Record
from .common import add_dedupe_arg, add_input_args, add_model_args, add_runtime_args, model_spec, spec_of
from .regions import add_cdr_args, cdr_config, resolve_cdr

TSV_FIELDS = tuple(
    "id record gap length positions token_indices method order beam_size pivot fills scores tokens".split()
)
#: The flags of ``--input`` alone, with their defaults, in the order a refusal names the first one given.
_STREAM_ONLY = dict(out=None, resume=False, shard=None, workers=None, devices=None, engine="local", ray_address=None)
_STREAM_ONLY.update(skip_invalid=False, column=None, id_column=None, format="auto", gaps="joint", dedupe=False)


def register(sub) -> None:
    short = "fill gaps of known length (standard or HCB beam search), one or a file"
    p = sub.add_parser("infill", help=short, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sequence", nargs="?", help="one sequence with a gap, e.g. EVQLV[MASK]x5GGLVQ or EVQLV_____GGLVQ")
    formats = "text (one per line), FASTA, CSV/TSV, JSONL or Parquet, optionally .gz"
    p.add_argument("--input", "-i", help=f"file of sequences with gaps: {formats} (instead of SEQUENCE)")
    add_input_args(p, of="--input")
    add_dedupe_arg(p)
    add_model_args(p)
    add_field_flags(p, InfillSpec, ("method", "order", "beam_size", "pivot"))  # the spec's fields
    joint = "all masked tokens of a record are one gap (joint, id = record id)"
    each = "each contiguous gap is its own unit (each, id = RECORD/gapK)"
    p.add_argument("--gaps", default="joint", choices=GAP_MODES, help=f"--input: {joint} or {each}; default joint")
    add_cdr_args(p, "the gap is this region of a complete sequence (filled with as many residues)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table (one SEQUENCE)")
    p.add_argument("--out", "-o", help="--input: output file, .jsonl, .tsv or .parquet (default: JSONL on stdout)")
    skip = "--input: skip records without a valid gap (or that the tokenizer rejects), with a warning"
    p.add_argument("--skip-invalid", action="store_true", help=skip)
    add_runtime_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    spec = spec_of(InfillSpec, args)  # --method, --order, --beam-size, --pivot
    if (args.sequence is None) == (args.input is None):
        raise MLMProbError("give one SEQUENCE or --input FILE" + (", not both" if args.input else ""))
    region = resolve_cdr(args)
    if region and args.gaps != "joint":
        raise MLMProbError("--cdr makes one gap per record; leave out --gaps each")
    if args.input is None:
        for name, default in _STREAM_ONLY.items():
            if getattr(args, name) != default:
                raise MLMProbError(f"--{name.replace('_', '-')} needs --input FILE (it streams a file of sequences)")
        return _run_one(args, spec, region)
    if args.json:
        raise MLMProbError("--json is for one SEQUENCE; with --input every row is JSON unless --out is .tsv/.parquet")
    return _run_stream(args, spec, region)


def _run_one(args, spec, region) -> int:
    import torch

    from ..infilling.beam import infill, score_meaning
    from ..infilling.stream import mask_text as _mask_text
    from ..positions import token_numbers

    gap_tokens(args.sequence)  # an absurd gap ([MASK]x999999999) refused before the model loads
    mlm = model_spec(args).load(args.device)
    sequence, native = _region_gap(args.sequence, region) if region else (args.sequence, None)
    text = expand_gaps(sequence, _mask_text(mlm), mlm.max_length)  # the gap checked before it is written out
    enc = mlm.encode([text])
    ids = enc.input_ids
    positions = (ids[0] == mlm.mask_id).nonzero(as_tuple=True)[0]
    if len(positions) == 0:
        raise MLMProbError("the sequence has no gap; write it as [MASK]x5 or _____")
    cands = infill(mlm, ids, positions, spec)
    numbers = [token_numbers(enc.word_ids[0], ids[0], mlm.mask_id)[t] for t in positions.tolist()]
    rows = []
    for rank, c in enumerate(cands, start=1):
        full = ids[0].clone()
        full[positions] = torch.tensor(c.tokens)
        tokens = list(c.tokens)
        rows.append(dict(rank=rank, fill=mlm.decode(tokens), score=c.score, tokens=tokens, sequence=mlm.decode(full)))
    if args.json:
        head = {"model": args.model, **spec.recorded(), "positions": numbers, "token_indices": positions.tolist()}
        cdr = {"cdr": region[0], "numbering": region[1], "native": native} if native else {}
        print(dumps({**head, "candidates": rows, **cdr}))
        return 0
    title = f"# {args.model}  method={spec.method}  order={spec.order}  beam={spec.beam_size}  gap={len(positions)}"
    cdr_note = f"  CDR-{region[0]} ({region[1]}) native={native}" if native else ""
    print(f"{title} tokens at positions {numbers} (1-based){cdr_note}")
    print(f"# score: {score_meaning(spec.method, spec.pivot)}")
    width = max(4, *(len(r["fill"]) for r in rows))
    print(f"{'rank':>4}  {'fill':<{width}}  {'score':>10}  sequence")
    for r in rows:
        print(f"{r['rank']:>4}  {r['fill']:<{width}}  {r['score']:>10.4f}  {r['sequence']}")
    return 0


def _run_stream(args, spec, region) -> int:
    from ..infilling.stream import InfillJob, iter_gap_units
    from ..runtime.command import StreamCommand, run_command, stored_config
    from ..runtime.unique import UniqueIds
    from .common import input_file, report_done, run_options

    opts = run_options(args)
    inputs = input_file(args)
    assert inputs is not None  # INPUT is a required argument
    unique = UniqueIds(args.dedupe)

    def units():
        records = unique(inputs.records())
        return region_units(records, region) if region else iter_gap_units(records, args.gaps)

    job = InfillJob(model_spec=model_spec(args), spec=spec, skip_invalid=args.skip_invalid)
    before = {"input": inputs.source, "positions_base": 1, "format": inputs.format, "column": inputs.column}
    before.update(id_column=inputs.id_column, gaps=args.gaps)
    after = {**({"dedupe": True} if args.dedupe else {}), **cdr_config(region)}
    config = stored_config("infill", job.model_spec, spec, before, after)
    how: dict = dict(fields=TSV_FIELDS, input=inputs.path, empty=f"no sequences found in {inputs.shown}", skip_label="")
    done = run_command(StreamCommand(job, units, config, unit_name="gap", chunk_size=4, **how), opts)
    report_done(f"filled {done.written} gaps with {args.model}", done, args.out, opts.shard, unique=unique)
    return 0


def _region_gap(text: str, region: tuple[str, str]) -> tuple[str, str]:
    """``text`` (a complete sequence) with the residues of ``region`` written as ``_``, and those residues."""
    if count_gaps(text):
        raise MLMProbError(f"--cdr {region[0]} makes the CDR the gap: give a complete sequence, without ____ or [MASK]")
    residues = "".join(text.split())
    span = cdr_span(residues, *region)
    return mask_residues(text, span), residues[span[0] : span[1]]


def region_units(records, region: tuple[str, str]):
    """The gap units of ``records`` (complete sequences) whose gap is the CDR ``region``; a record that does
    not number is a unit carrying the error (raised, or skipped with --skip-invalid)."""
    from ..infilling.stream import GapUnit, iter_gap_units

    for r in records:
        try:
            masked, _ = _region_gap(r.seq, region)
        except MLMProbError as e:
            yield GapUnit(r.id, r.id, r.seq, None, 0, str(e))
            continue
        yield from iter_gap_units([Record(r.id, masked)])


def expected_ids(config: dict, limit: int | None = None):
    """The gap ids a streamed run with this stored ``config`` covers, for ``mlmprob merge``'s input check."""
    from ..infilling.stream import iter_gap_units
    from .common import stored_inputs

    return (u.id for u in iter_gap_units(stored_inputs(config).records(), config.get("gaps", "joint")))
