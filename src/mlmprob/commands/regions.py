"""The ``--cdr REGION`` / ``--numbering`` options of ``sample``, ``infill`` and ``variants``: one of the six
CDRs of an antibody chain, found by numbering it (:mod:`mlmprob.numbering`, anarcism)."""

from __future__ import annotations

from ..argtypes import checked
from ..errors import MLMProbError
from ..numbering import CDRS, SCHEMES, check_scheme, parse_cdr


def add_cdr_args(group, what: str) -> None:
    """``--cdr`` and ``--numbering``; ``what``: what the region does."""
    scfv = "an scFv gives heavy CDRs from its VH, light ones from its VL"
    cdr = f"{what}: this CDR of the antibody chain, found by numbering it with anarcism ({scfv})"
    metavar = "{" + ",".join(CDRS) + "}"
    group.add_argument("--cdr", type=checked(parse_cdr), metavar=metavar, help=cdr)  # H3, h3, CDR-H3 -> H3
    kabat = "kabat for H3 only (Kabat H95-H102 = IMGT 107-117). anarcism numbers in IMGT, so no Chothia"
    numbering = f"CDR definition of --cdr (default imgt): imgt for all six; {kabat}"
    group.add_argument("--numbering", choices=SCHEMES, help=numbering)


def resolve_cdr(args) -> tuple[str, str] | None:
    """``(cdr, numbering)`` of the parsed options (``--numbering`` by default imgt), or None without ``--cdr``
    (where a ``--numbering`` is refused)."""
    if args.cdr is None:
        if args.numbering is not None:
            raise MLMProbError("--numbering is the CDR definition of --cdr; give --cdr too")
        return None
    numbering = args.numbering or "imgt"
    check_scheme(args.cdr, numbering)
    return args.cdr, numbering


def cdr_config(region: tuple[str, str] | None) -> dict:
    """The keys a run's stored configuration gains with a region (none without one, so older outputs resume)."""
    return {} if region is None else {"cdr": region[0], "numbering": region[1]}
