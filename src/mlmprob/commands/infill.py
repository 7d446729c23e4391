"""``mlmprob infill``: the top fills of a gap in one sequence, by standard or HCB beam search.

The gap is written in the sequence as ``[MASK]x5`` (five masked tokens), ``[MASK]`` / ``<mask>``
(one each) or ``_`` (one each), e.g. ``EVQLVESGGG_____QPGGSLRLSCAAS``.
"""

from __future__ import annotations

import argparse
import re

from ..argtypes import positive_int
from ..errors import MLMProbError
from ..jsonl import dumps

_GAP_RE = re.compile(r"(\[MASK\]|<mask>)(?:\s*[xX*]\s*(\d+))?", re.IGNORECASE)


def expand_gaps(text: str, mask_text: str = "_") -> str:
    """Write every gap of ``text`` as ``mask_text`` repeated once per masked token.

    >>> expand_gaps("AC[MASK]x3D<mask>E_")
    'AC___D_E_'
    >>> expand_gaps("the [MASK]x2 sat", "[MASK]")
    'the [MASK][MASK] sat'
    """
    def rep(m: re.Match) -> str:
        n = int(m.group(2)) if m.group(2) else 1
        if n < 1:
            raise MLMProbError(f"a gap of {n} tokens ({m.group(0)!r}); use a positive count")
        return "\0" * n
    out = _GAP_RE.sub(rep, text)
    if mask_text != "_":
        out = out.replace("_", "\0")
    return out.replace("\0", mask_text)


def _mask_text(mlm) -> str:
    from ..models.tokenizers import ResidueTokenizer

    tok = getattr(mlm, "tokenizer", None)
    if tok is None or isinstance(tok, ResidueTokenizer) or not hasattr(tok, "hf"):
        return "_"
    return tok.hf.mask_token


def parse_pivot(mlm, pivot: str | None) -> int | None:
    """``None`` (the mask), a token id, or a token string of the model's vocabulary."""
    if pivot is None or pivot.lower() in ("mask", "[mask]", "<mask>"):
        return None
    if pivot.lstrip("-").isdigit():
        return int(pivot)
    tok = getattr(mlm, "tokenizer", None)
    table = getattr(tok, "token_to_id", None)
    if table is not None and pivot in table:
        return table[pivot]
    hf = getattr(tok, "hf", None)
    if hf is not None:
        i = hf.convert_tokens_to_ids(pivot)
        if i is not None and i != hf.unk_token_id:
            return int(i)
    raise MLMProbError(f"pivot {pivot!r} is not a token of this model's vocabulary (give a token or an id)")


def register(sub) -> None:
    p = sub.add_parser("infill", help="fill a gap of known length (standard or HCB beam search)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sequence", help="sequence with a gap, e.g. EVQLV[MASK]x5GGLVQ or EVQLV_____GGLVQ")
    from ..cli import add_allow_pickle_arg, add_model_args
    add_model_args(p)
    add_allow_pickle_arg(p)
    p.add_argument("--method", default="hcb", choices=["hcb", "standard"], help="beam search score (default hcb)")
    p.add_argument("--order", default="l2r", choices=["l2r", "best"],
                   help="left to right, or best to worst (most confident position first); default l2r")
    p.add_argument("--beam-size", "-k", type=positive_int, default=5,
                   help="beam size = number of fills printed (default 5)")
    p.add_argument("--pivot", help="HCB pivot token or id (default: the mask token)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run)


def run(args) -> int:
    import torch

    from ..infill import infill
    from ..models import load_mlm

    mlm = load_mlm(args.model, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)
    text = expand_gaps(args.sequence, _mask_text(mlm))
    ids = mlm.encode([text]).input_ids
    positions = (ids[0] == mlm.mask_id).nonzero(as_tuple=True)[0]
    if len(positions) == 0:
        raise MLMProbError("the sequence has no gap; write it as [MASK]x5 or _____")
    cands = infill(mlm, ids, positions, method=args.method, order=args.order, beam_size=args.beam_size,
                   pivot=parse_pivot(mlm, args.pivot), batch_tokens=args.batch_tokens)
    rows = []
    for rank, c in enumerate(cands, start=1):
        full = ids[0].clone()
        full[positions] = torch.tensor(c.tokens)
        rows.append({"rank": rank, "fill": mlm.decode(list(c.tokens)), "score": c.score,
                     "tokens": list(c.tokens), "sequence": mlm.decode(full)})
    if args.json:
        print(dumps({"model": args.model, "method": args.method, "order": args.order,
                          "beam_size": args.beam_size, "pivot": args.pivot or "mask",
                          "positions": positions.tolist(), "candidates": rows}))
        return 0
    print(f"# {args.model}  method={args.method}  order={args.order}  beam={args.beam_size}  "
          f"gap={len(positions)} tokens at {positions.tolist()}")
    width = max(4, *(len(r["fill"]) for r in rows))
    print(f"{'rank':>4}  {'fill':<{width}}  {'score':>10}  sequence")
    for r in rows:
        print(f"{r['rank']:>4}  {r['fill']:<{width}}  {r['score']:>10.4f}  {r['sequence']}")
    return 0
