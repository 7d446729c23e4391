"""The protein alphabet, defined once: the 20 canonical amino acids as one-letter codes in alphabetical order (a
base module: it imports nothing of mlmprob)."""

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"


def is_protein(seq: str) -> bool:
    """Whether ``seq`` is a non-empty string of canonical amino acids only."""
    return bool(seq) and set(seq) <= set(AMINO_ACIDS)
