"""The examples the app's tabs open with: an antibody heavy chain (or the model's letters), or English sentences."""

from __future__ import annotations

from ..models.reader import reader_of

VH = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYCAK"


def _is_residue_model(mlm) -> bool:
    from ..models.tokenizers import ResidueTokenizer

    return isinstance(reader_of(mlm).tokenizer, ResidueTokenizer)


def examples(mlm) -> dict[str, str | int]:
    """The text each tab shows first: an antibody heavy chain for a residue model, English otherwise."""
    if _is_residue_model(mlm):
        letters = getattr(reader_of(mlm).tokenizer, "residues", "")
        seq = VH if set(VH) <= set(letters) else (letters * 3)[:24]
        n = len(seq)
        ex: dict[str, str | int] = {
            "score": seq,
            "wt": seq,
            "mutant": f"{seq[1]}2{'A' if seq[1] != 'A' else 'C'}:{seq[4]}5{'A' if seq[4] != 'A' else 'C'}",
            "infill": seq[: n // 2 - 2] + "____" + seq[n // 2 + 2 :],
            "infill_pos": "",
            "sample": seq,
            "positions": f"{n // 2 - 2}-{n // 2 + 2}",
            "a": n // 2,
            "b": n // 2 + 2,
        }
        if seq == VH:  # CDR-H1 to sample; the last two residues (the start of CDR-H3) as the pair
            ex.update(positions="H1", a=n - 1, b=n)
        return ex
    return {
        "score": "The cat sat on the mat.\nThe mat sat on the cat.",
        "wt": "",
        "mutant": "",
        "infill": "The cat ____ on the mat.",
        "infill_pos": "",
        "sample": "The cat sat on the mat.",
        "positions": "2-4",
        "a": 2,
        "b": 3,
    }
