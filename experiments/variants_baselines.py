"""Sequence-only baselines for variant effects and developability: BLOSUM62 substitution sums,
Hamming distance to the wild type, and Kyte-Doolittle hydrophobicity.

``BLOSUM62`` is the standard BLOSUM62 matrix (Henikoff & Henikoff 1992, half-bit units, as in
NCBI's table) over the 20 standard residues; ``KYTE_DOOLITTLE`` the hydropathy scale of Kyte &
Doolittle (1982). Both are typed in here from the published tables.

>>> BLOSUM62["W"]["W"], BLOSUM62["A"]["R"], KYTE_DOOLITTLE["I"]
(11, -1, 4.5)
>>> blosum_sum("WGGD", "WAGE"), hamming("WGGD", "WAGE"), round(kd_mean("WAGE"), 3)
(2, 2, -0.75)
"""

from __future__ import annotations

from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.errors import MLMProbError

ORDER = "ARNDCQEGHILKMFPSTWYV"  # the residues in the order of the published BLOSUM62 table
_ROWS = """
A  4 -1 -2 -2  0 -1 -1  0 -2 -1 -1 -1 -1 -2 -1  1  0 -3 -2  0
R -1  5  0 -2 -3  1  0 -2  0 -3 -2  2 -1 -3 -2 -1 -1 -3 -2 -3
N -2  0  6  1 -3  0  0  0  1 -3 -3  0 -2 -3 -2  1  0 -4 -2 -3
D -2 -2  1  6 -3  0  2 -1 -1 -3 -4 -1 -3 -3 -1  0 -1 -4 -3 -3
C  0 -3 -3 -3  9 -3 -4 -3 -3 -1 -1 -3 -1 -2 -3 -1 -1 -2 -2 -1
Q -1  1  0  0 -3  5  2 -2  0 -3 -2  1  0 -3 -1  0 -1 -2 -1 -2
E -1  0  0  2 -4  2  5 -2  0 -3 -3  1 -2 -3 -1  0 -1 -3 -2 -2
G  0 -2  0 -1 -3 -2 -2  6 -2 -4 -4 -2 -3 -3 -2  0 -2 -2 -3 -3
H -2  0  1 -1 -3  0  0 -2  8 -3 -3 -1 -2 -1 -2 -1 -2 -2  2 -3
I -1 -3 -3 -3 -1 -3 -3 -4 -3  4  2 -3  1  0 -3 -2 -1 -3 -1  3
L -1 -2 -3 -4 -1 -2 -3 -4 -3  2  4 -2  2  0 -3 -2 -1 -2 -1  1
K -1  2  0 -1 -3  1  1 -2 -1 -3 -2  5 -1 -3 -1  0 -1 -3 -2 -2
M -1 -1 -2 -3 -1  0 -2 -3 -2  1  2 -1  5  0 -2 -1 -1 -1 -1  1
F -2 -3 -3 -3 -2 -3 -3 -3 -1  0  0 -3  0  6 -4 -2 -2  1  3 -1
P -1 -2 -2 -1 -3 -1 -1 -2 -2 -3 -3 -1 -2 -4  7 -1 -1 -4 -3 -2
S  1 -1  1  0 -1  0  0  0 -1 -2 -2  0 -1 -2 -1  4  1 -3 -2 -2
T  0 -1  0 -1 -1 -1 -1 -2 -2 -1 -1 -1 -1 -2 -1  1  5 -2 -2  0
W -3 -3 -4 -4 -2 -2 -3 -2 -2 -3 -2 -3 -1  1 -4 -3 -2 11  2 -3
Y -2 -2 -2 -3 -2 -1 -2 -3  2 -1 -1 -2 -1  3 -3 -2 -2  2  7 -1
V  0 -3 -3 -3 -1 -2 -2 -3 -3  3  1 -2  1 -1 -2 -2  0 -3 -1  4
"""
BLOSUM62: dict[str, dict[str, int]] = {
    line.split()[0]: dict(zip(ORDER, map(int, line.split()[1:]), strict=True)) for line in _ROWS.strip().splitlines()
}

KYTE_DOOLITTLE: dict[str, float] = {
    "A": 1.8,
    "R": -4.5,
    "N": -3.5,
    "D": -3.5,
    "C": 2.5,
    "Q": -3.5,
    "E": -3.5,
    "G": -0.4,
    "H": -3.2,
    "I": 4.5,
    "L": 3.8,
    "K": -3.9,
    "M": 1.9,
    "F": 2.8,
    "P": -1.6,
    "S": -0.8,
    "T": -0.7,
    "W": -0.9,
    "Y": -1.3,
    "V": 4.2,
}


def _check_pair(wild_type: str, mutant: str) -> None:
    if len(wild_type) != len(mutant):
        raise MLMProbError(f"wild type and mutant differ in length ({len(wild_type)} vs {len(mutant)})")
    bad = set(wild_type + mutant) - set(AMINO_ACIDS)
    if bad:
        raise MLMProbError(f"non-standard residue {sorted(bad)[0]!r}: baselines take the 20 standard residues only")


def hamming(wild_type: str, mutant: str) -> int:
    """Number of positions where ``mutant`` differs from ``wild_type`` (same length)."""
    _check_pair(wild_type, mutant)
    return sum(a != b for a, b in zip(wild_type, mutant, strict=True))


def blosum_sum(wild_type: str, mutant: str) -> int:
    """Sum of BLOSUM62 scores ``B(w_i, m_i)`` over the mutated positions (0 for the wild type)."""
    _check_pair(wild_type, mutant)
    return sum(BLOSUM62[a][b] for a, b in zip(wild_type, mutant, strict=True) if a != b)


def kd_mean(seq: str) -> float:
    """Mean Kyte-Doolittle hydropathy of ``seq`` (GRAVY of a segment); higher = more hydrophobic."""
    if not seq:
        raise MLMProbError("hydropathy of an empty sequence")
    bad = set(seq) - set(AMINO_ACIDS)
    if bad:
        raise MLMProbError(f"non-standard residue {sorted(bad)[0]!r}: baselines take the 20 standard residues only")
    return sum(KYTE_DOOLITTLE[c] for c in seq) / len(seq)
