"""Antibody regions for the samplers and commands: ``cdr_mask`` (``--cdr``: any of H1-H3, L1-L3, numbered by
:mod:`mlmprob.numbering`), and the older motif rule ``find_cdr_h3`` / ``cdr_h3_mask``, kept for the experiments run
with it (docs/results/numbering.md): CDR-H3 between the second cysteine (IMGT 104) and the Trp of ``W-G-x-G``
(IMGT 118); ``"imgt"`` the residues strictly between, ``"kabat"`` without the two after the cysteine.
"""

from __future__ import annotations

import re

import torch

from ..errors import MLMProbError
from ..numbering import cdr_span

_MOTIF = re.compile(r"W G . G".replace(" ", ""))
_MOTIF_LOOSE = re.compile(r"[WF]G.[GR]")
MAX_CDR3 = 40


def find_cdr_h3(seq: str, definition: str = "imgt") -> tuple[int, int]:
    """0-based half-open residue span ``(start, end)`` of CDR-H3 in ``seq``.

    >>> vh = ("EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    ...       "WGGDGFYAMDYWGQGTLVTVSS")
    >>> s, e = find_cdr_h3(vh); vh[s:e]
    'SRWGGDGFYAMDY'
    >>> s, e = find_cdr_h3(vh, "kabat"); vh[s:e]
    'WGGDGFYAMDY'
    """
    if definition not in ("imgt", "kabat"):
        raise MLMProbError(f"CDR definition must be 'imgt' or 'kabat', got {definition!r}")
    s = seq.strip().upper()
    hits = list(_MOTIF.finditer(s)) or list(_MOTIF_LOOSE.finditer(s))
    # the J-region motif is the last one with a plausible cysteine before it
    for m in reversed(hits):
        w = m.start()
        cands = [i for i in range(max(0, w - MAX_CDR3 - 1), w - 2) if s[i] == "C"]
        if not cands:
            continue
        preferred = [i for i in cands if i >= 2 and s[i - 2] in "YFH"]
        c = (preferred or cands)[0]
        start = c + 1 + (2 if definition == "kabat" else 0)
        if start < w:
            return start, w
    raise MLMProbError(
        "no CDR-H3 found: need the conserved Cys followed within "
        f"{MAX_CDR3} residues by the W-G-x-G motif (is this a heavy-chain variable domain?)"
    )


def cdr_h3_mask(seq: str, word_ids: torch.Tensor, definition: str = "imgt") -> torch.Tensor:
    """Bool mask over the tokens of one encoded sequence (``word_ids`` ``[L]``: residue index per
    token, -1 at special tokens) that covers CDR-H3.

    >>> vh = ("QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQGRVTMTTDTSTSTAYMELRSLRSDDTAVYYC"
    ...       "ARDGYWGQGTLVTVSS")
    >>> wid = torch.tensor([-1] + list(range(len(vh))) + [-1])
    >>> cdr_h3_mask(vh, wid).nonzero()[:, 0].tolist() == list(range(97, 102))   # "ARDGY", shifted by the CLS token
    True
    """
    start, end = find_cdr_h3(seq, definition)
    w = torch.as_tensor(word_ids)
    return (w >= start) & (w < end)


def residues_of(text: str) -> str:
    """The residue letters of a record's text as the numbering reads them: whitespace dropped, each
    masked token (``_``, ``[MASK]``, ``<mask>``, ``[MASK]x5``) an unknown residue ``X``."""
    from ..gaps import expand_gaps

    return "".join(expand_gaps(text, "X").split())


def cdr_mask(seq: str, word_ids: torch.Tensor, cdr: str = "H3", numbering: str = "imgt") -> torch.Tensor:
    """Bool mask over the tokens of one encoded sequence (``word_ids`` ``[L]``: residue index per token,
    -1 at special tokens) that covers ``cdr`` (``H1`` ... ``L3``) of ``seq``, numbered by the library
    (:func:`mlmprob.numbering.cdr_span`)."""
    start, end = cdr_span(residues_of(seq), cdr, numbering)
    w = torch.as_tensor(word_ids)
    return (w >= start) & (w < end)
