"""Antibody regions from a numbering library: the six CDRs (H1-H3, L1-L3) of a heavy or light chain.

The chain is numbered in IMGT by `anarcism <https://pypi.org/project/anarcism/>`_ (an scFv's heavy CDRs from its
VH, light ones from its VL). ``scheme``: ``"imgt"`` for all six, or ``"kabat"`` for CDR-H3 only (IMGT 107-117).
``cdr_span(seq, "H3")`` is the 0-based half-open span; no antibody domain, the other chain or a CDR cut by the
sequence's end is one :class:`~mlmprob.errors.MLMProbError` line."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .errors import MLMProbError

CDRS = ("H1", "H2", "H3", "L1", "L2", "L3")
SCHEMES = ("imgt", "kabat")
LIBRARY = "anarcism"
# the region labels of the library around CDR k (1, 2, 3): the framework before and after it
_FLANKS = {1: ("FR1", "FR2"), 2: ("FR2", "FR3"), 3: ("FR3", "FR4")}
_CHAINS = {"H": ("H",), "L": ("K", "L")}  # a CDR's chain letter -> the library's chain types
_CHAIN_NAMES = {"H": "heavy-chain (VH)", "K": "kappa light-chain", "L": "lambda light-chain"}
_CHAIN_NAMES |= {c: f"TCR {name}" for c, name in zip("ABGD", ("alpha", "beta", "gamma", "delta"), strict=True)}
_KABAT_H3 = (107, 117)  # Kabat H95-H102 in IMGT positions
_NAME = re.compile(r"(?:CDR)?[-_ ]?([HL])([123])", re.IGNORECASE)


def parse_cdr(text: str) -> str:
    """A CDR's name as ``CDRS`` spells it (``H3``), from ``h3``, ``CDR-H3``, ``cdrh3`` and the like."""
    m = _NAME.fullmatch(str(text).strip())
    if not m:
        raise MLMProbError(f"unknown CDR {text!r}: use one of {', '.join(CDRS)}")
    return f"{m.group(1).upper()}{m.group(2)}"


def is_cdr_name(text: str) -> bool:
    """Whether ``text`` names a CDR (``H3``, ``CDR-L1``, ...)."""
    return _NAME.fullmatch(str(text).strip()) is not None


def check_scheme(cdr: str, scheme: str) -> None:
    """Refuse a definition the library cannot give for ``cdr``."""
    if scheme not in SCHEMES:
        raise MLMProbError(
            f"--numbering must be one of {', '.join(SCHEMES)}, got {scheme!r} "
            "(anarcism numbers in IMGT; Chothia is not available)"
        )
    if scheme == "kabat" and cdr != "H3":
        raise MLMProbError(
            f"--numbering kabat gives CDR-H3 only (Kabat H95-H102 = IMGT 107-117): {LIBRARY} numbers "
            f"in IMGT alone, so Kabat and Chothia CDR-{cdr} are not available; use --numbering imgt"
        )


@dataclass(frozen=True)
class Residue:
    """One numbered residue: 0-based ``index``, IMGT ``position``/``insertion``, ``region`` (``FR1`` ... ``FR4``)."""

    index: int
    position: int
    insertion: str
    region: str


@dataclass(frozen=True)
class Domain:
    """One variable domain: ``chain`` (``H``, ``K``, ``L``, or a TCR chain), ``species`` and its residues."""

    chain: str
    species: str
    residues: tuple[Residue, ...]

    def cdr(self, k: int, scheme: str = "imgt") -> tuple[int, int] | None:
        """The span of CDR ``k`` (1, 2, 3); None when a flanking framework is missing (the CDR is cut by the
        sequence's start or end) or the CDR has no residue."""
        before, after = _FLANKS[k]
        regions = {r.region for r in self.residues}
        inside = [r for r in self.residues if r.region == f"CDR{k}"]
        if scheme == "kabat":
            inside = [r for r in inside if _KABAT_H3[0] <= r.position <= _KABAT_H3[1]]
        if before not in regions or after not in regions or not inside:
            return None
        return inside[0].index, inside[-1].index + 1


@functools.lru_cache(maxsize=4096)
def number(seq: str) -> tuple[Domain, ...]:
    """The antibody and TCR variable domains of ``seq`` (residue letters, ``X``: unknown), numbered in IMGT."""
    try:
        import anarcism
    except ImportError:
        raise MLMProbError(f"antibody numbering needs the {LIBRARY} package: pip install {LIBRARY}") from None
    try:
        result = anarcism.number_sequence(seq)
    except anarcism.AnarcismError as e:
        raise MLMProbError(f"cannot number {_short(seq)}: {str(e).replace(' (sequence)', '')}") from None

    def residues(d) -> tuple[Residue, ...]:
        return tuple(Residue(r.sequence_index, r.position, r.insertion_code, r.region) for r in d.numbering)

    return tuple(Domain(d.chain_type, d.species, residues(d)) for d in result.domains)


def _short(seq: str) -> str:
    return repr(seq if len(seq) <= 24 else seq[:20] + "...")


def _domain(seq: str, cdr: str) -> Domain:
    """The first domain of ``seq`` of the chain of ``cdr`` (``H``, or ``L``: kappa or lambda)."""
    domains = number(seq)
    for d in domains:
        if d.chain in _CHAINS[cdr[0]]:
            return d
    want = "heavy-chain (VH)" if cdr[0] == "H" else "light-chain (VL)"
    found = (
        f"only a {' and a '.join(_CHAIN_NAMES.get(d.chain, d.chain) for d in domains)} domain in "
        f"{_short(seq)}, not a {want} one"
        if domains
        else f"no antibody variable domain in {_short(seq)}"
    )
    raise MLMProbError(f"no CDR-{cdr}: {LIBRARY} (IMGT numbering) finds {found}")


def cdr_span(seq: str, cdr: str = "H3", scheme: str = "imgt") -> tuple[int, int]:
    """0-based half-open residue span ``(start, end)`` of ``cdr`` (``H1`` ... ``L3``) in ``seq``."""
    cdr = parse_cdr(cdr)
    check_scheme(cdr, scheme)
    seq = "".join(str(seq).split()).upper()
    span = _domain(seq, cdr).cdr(int(cdr[1]), scheme)
    if span is None:
        raise MLMProbError(
            f"CDR-{cdr} of {_short(seq)} is incomplete: the numbered domain starts or ends inside it "
            "(a truncated variable domain?)"
        )
    return span


def cdr_spans(seq: str, scheme: str = "imgt") -> dict[str, tuple[int, int]]:
    """Every CDR its domains hold whole (``"kabat"``: CDR-H3 alone) by name; raises when ``seq`` has none."""
    seq = "".join(str(seq).split()).upper()
    out: dict[str, tuple[int, int]] = {}
    for d in number(seq):
        for letter, types in _CHAINS.items():
            if d.chain in types and not any(c.startswith(letter) for c in out):
                for k in (1, 2, 3):
                    if scheme == "kabat" and (letter, k) != ("H", 3):
                        continue
                    if (span := d.cdr(k, scheme)) is not None:
                        out[f"{letter}{k}"] = span
    if not out:
        raise MLMProbError(
            f"no CDR: {LIBRARY} (IMGT numbering) finds no antibody variable domain with a whole CDR in {_short(seq)}"
        )
    return {c: out[c] for c in CDRS if c in out}


def mask_residues(text: str, span: tuple[int, int], mask: str = "_") -> str:
    """``text`` with its residues ``span[0]`` to ``span[1] - 1`` (non-whitespace characters) written as ``mask``."""
    out, i = [], 0
    for ch in text:
        out.append(ch if ch.isspace() or not span[0] <= i < span[1] else mask)
        i += not ch.isspace()
    return "".join(out)
