"""Mutant strings in the ProteinGym format (``A23C:D45E``) and their token-level variants.

Residue ``n`` is ``sequence[n - offset]`` (``offset``: the number of the sequence's first residue, 1 by default).
Every mutation is checked (form, number, stated wild-type letter, mutant letter in the alphabet, no position twice),
errors naming the row and the mutation; ``A23A`` is accepted and adds 0."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..alphabet import AMINO_ACIDS
from ..errors import MLMProbError, TokenizationError
from ..models.protocol import MaskedLM
from ..models.reader import reader_of

_MUTATION = re.compile(r"(\D)(-?\d+)(\D)")


@dataclass(frozen=True)
class Mutation:
    """One substitution: ``index`` is the 0-based residue index into the sequence."""

    wt: str
    index: int
    mt: str

    def label(self, offset: int = 1) -> str:
        """``A23C``-style text (residue number ``index + offset``)."""
        return f"{self.wt}{self.index + offset}{self.mt}"


def parse_mutant(
    text: str, sequence: str, *, offset: int = 1, alphabet: str = AMINO_ACIDS, row=None
) -> tuple[Mutation, ...]:
    """The mutations of one mutant string, in the order written.

    >>> parse_mutant("A2C:K4E", "MAPKL")
    (Mutation(wt='A', index=1, mt='C'), Mutation(wt='K', index=3, mt='E'))
    >>> parse_mutant("A25C", "MAPKL", offset=24, row=7)
    (Mutation(wt='A', index=1, mt='C'),)
    >>> parse_mutant("A2J", "MAPKL", row=7)
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: row 7: mutant residue 'J' in 'A2J' is not in the alphabet ACDEFGHIKLMNPQRSTVWY
    """
    where = "" if row is None else f"row {row}: "
    if not isinstance(text, str):
        raise MLMProbError(f"{where}the mutant must be a string like 'A23C:D45E', got {type(text).__name__}")
    if not text.strip():
        raise MLMProbError(f"{where}empty mutant string")
    out, seen = [], set()
    for part in text.split(":"):
        part = part.strip()
        if not part:
            raise MLMProbError(f"{where}empty mutation in {text.strip()!r} (stray ':')")
        m = _MUTATION.fullmatch(part)
        if m is None:
            raise MLMProbError(
                f"{where}mutation {part!r} is not of the form A23C (wild-type letter, residue number, mutant letter)"
            )
        wt, number, mt = m.group(1), int(m.group(2)), m.group(3)
        index = number - offset
        if not 0 <= index < len(sequence):
            raise MLMProbError(
                f"{where}residue {number} of {part!r} is outside the sequence "
                f"(residues {offset}..{offset + len(sequence) - 1})"
            )
        if sequence[index] != wt:
            raise MLMProbError(
                f"{where}{part!r} states wild-type {wt!r} at residue {number}, but the sequence "
                f"has {sequence[index]!r} there"
            )
        if mt not in alphabet:
            raise MLMProbError(f"{where}mutant residue {mt!r} in {part!r} is not in the alphabet {alphabet}")
        if index in seen:
            raise MLMProbError(f"{where}residue {number} is mutated twice in {text.strip()!r}")
        seen.add(index)
        out.append(Mutation(wt, index, mt))
    return tuple(out)


def parse_mutants(
    texts: Sequence[str], sequence: str, *, offset: int = 1, alphabet: str = AMINO_ACIDS, rows: Sequence | None = None
) -> list[tuple[Mutation, ...]]:
    """``parse_mutant`` for each text; errors name ``rows[k]`` (default: the 0-based index ``k``)."""
    _check_sequence(sequence)
    if rows is not None and len(rows) != len(texts):
        raise MLMProbError(f"{len(rows)} row names for {len(texts)} mutants")
    return [
        parse_mutant(t, sequence, offset=offset, alphabet=alphabet, row=k if rows is None else rows[k])
        for k, t in enumerate(texts)
    ]


def _check_sequence(sequence: str) -> None:
    if not isinstance(sequence, str) or not sequence:
        raise MLMProbError("the wild-type sequence must be a non-empty string")
    if sequence != sequence.strip() or any(c.isspace() for c in sequence):
        raise MLMProbError("the wild-type sequence must be one string of residue letters, without white space")


@dataclass(frozen=True)
class EncodedVariants:
    """Token-level input of ``score_variants``: ``wild_type`` ids ``[L]``, ``variants`` as lists of ``(token
    position, token id)``; ``residue_positions[i]``: the token position of residue ``i``; ``mutations``: parsed."""

    wild_type: torch.Tensor
    variants: list[list[tuple[int, int]]]
    residue_positions: torch.Tensor
    mutations: list[tuple[Mutation, ...]]


def residue_positions(mlm: MaskedLM, sequence: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(wild-type ids [L], token position of each residue [len(sequence)])``; one token per residue."""
    _check_sequence(sequence)
    enc = mlm.encode([sequence])  # type: ignore[attr-defined]  # a loaded model encodes; MaskedLM does not say so
    ids = enc.input_ids[0][: int(reader_of(mlm).lengths(enc.input_ids[:1])[0])]
    words = enc.word_ids[0][: len(ids)]
    words = words[words >= 0]
    if len(words) != len(sequence) or not torch.equal(words, torch.arange(len(sequence))):
        raise MLMProbError(
            "this model's tokenizer does not give one token per residue; mutant strings need a residue-level model"
        )
    where = (enc.word_ids[0][: len(ids)] >= 0).nonzero()[:, 0]
    return ids, where


def letter_ids(mlm: MaskedLM, letters: str) -> dict[str, int]:
    """Token id of each one-letter residue."""
    try:
        _, pos = residue_positions(mlm, letters)
        ids = mlm.encode([letters]).input_ids[0]  # type: ignore[attr-defined]  # as in residue_positions
    except TokenizationError as e:
        raise MLMProbError(f"alphabet {letters!r} does not fit this model's vocabulary: {e}") from None
    return {c: int(ids[p]) for c, p in zip(letters, pos.tolist(), strict=True)}


def encode_variants(
    mlm: MaskedLM,
    sequence: str,
    mutants: Sequence[str],
    *,
    offset: int = 1,
    alphabet: str = AMINO_ACIDS,
    rows: Sequence | None = None,
) -> EncodedVariants:
    """Parse ``mutants`` against ``sequence`` and map them to the model's tokens.

    >>> import torch
    >>> from mlmprob.models.tokenizers import ResidueTokenizer
    >>> class Toy:  # any model with encode() works; this one only needs a residue tokenizer
    ...     tok = ResidueTokenizer(["<cls>", "<pad>", "<eos>", "<mask>"] + list(AMINO_ACIDS), bos="<cls>", eos="<eos>",
    ...                            pad="<pad>", mask="<mask>")
    ...     mask_id, pad_id, vocab_size = 3, 1, 24
    ...     def encode(self, texts): return self.tok.encode(texts)
    >>> ev = encode_variants(Toy(), "MAPK", ["A2C", "M1W:K4E"])
    >>> ev.wild_type.tolist(), ev.variants
    ([0, 14, 4, 16, 12, 2], [[(2, 5)], [(1, 22), (4, 7)]])
    """
    mutations = parse_mutants(mutants, sequence, offset=offset, alphabet=alphabet, rows=rows)
    ids, where = residue_positions(mlm, sequence)
    to_id = letter_ids(mlm, "".join(sorted(set(alphabet))))
    variants = [[(int(where[m.index]), to_id[m.mt]) for m in ms] for ms in mutations]
    return EncodedVariants(ids, variants, where, mutations)
