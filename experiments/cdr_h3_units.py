"""The CDR-H3 experiment's data: the antibodies (heavy chains with a CDR-H3 found, ``load_antibodies``) and
their encoded units with warm starts and native energies (``prepare_units``), for ``cdr_h3_runner``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.alphabet import is_protein
from mlmprob.errors import MLMProbError
from mlmprob.models.protocol import MaskedLM
from mlmprob.models.reader import reader_of

from .cdr_h3_common import RunOptions


@dataclass(frozen=True)
class Antibody:
    """A heavy chain and its CDR-H3 residue span ``[start, end)``."""

    name: str
    hc: str
    start: int
    end: int

    @property
    def cdr(self) -> str:
        return self.hc[self.start : self.end]


def load_antibodies(
    path: str | Path,
    n: int,
    column: str = "HC",
    id_column: str | None = "Therapeutic",
    definition: str = "imgt",
    max_residues: int | None = None,
) -> list[Antibody]:
    """The first ``n`` rows (file order) whose ``column`` holds only the 20 standard residues and
    whose CDR-H3 ``find_cdr_h3`` locates (and no longer than ``max_residues``)."""
    from mlmprob.data import read_records
    from mlmprob.sampling.cdr import find_cdr_h3

    out = []
    for rec in read_records(path, "csv", column, id_column):
        seq = rec.seq.strip().upper()
        if not is_protein(seq):
            continue
        if max_residues is not None and len(seq) > max_residues:
            continue
        try:
            s, e = find_cdr_h3(seq, definition)
        except MLMProbError:
            continue
        out.append(Antibody(rec.id, seq, s, e))
        if len(out) == n:
            break
    if len(out) < n:
        raise MLMProbError(f"{path}: only {len(out)} heavy chains with a CDR-H3 found, {n} asked for")
    return out


@dataclass(frozen=True)
class Units:
    """Encoded inputs of a set of units (antibodies, or the one unconditional sequence)."""

    names: list[str]
    native: list[str | None]
    ids: torch.Tensor  # [N, L] native (or all-mask) ids
    free: torch.Tensor  # [N, L]
    warm: torch.Tensor  # [N, L] warm start
    native_scores: list[dict | None]
    warm_scores: list[dict]


def _texts_for(mlm, seqs: Sequence[str]) -> list[str]:
    from mlmprob.models.tokenizers import ResidueTokenizer

    tok = reader_of(mlm).tokenizer
    return list(seqs) if isinstance(tok, ResidueTokenizer) else [" ".join(s) for s in seqs]


class Alphabet:
    """Token id -> residue letter, for the ids the samplers may place."""

    def __init__(self, mlm):
        from mlmprob.sampling.proposals import allowed_ids

        self.chars = {int(i): mlm.decode([int(i)]).replace(" ", "") for i in allowed_ids(mlm).nonzero()[:, 0]}

    def text(self, ids_row: torch.Tensor, free_row: torch.Tensor) -> str:
        return "".join(self.chars.get(int(t), "?") for t in ids_row[free_row].tolist())


def unit_scores(mlm, ids: torch.Tensor, free: torch.Tensor) -> list[dict]:
    from mlmprob.energies import token_scores

    s = token_scores(mlm, ids, free)
    return [{"e_local": float(a), "e_raw": float(b)} for a, b in zip(s.e_local.tolist(), s.e_raw.tolist())]


def prepare_units(
    mlm: MaskedLM, antibodies: Sequence[Antibody] | None, opts: RunOptions, definition: str = "imgt"
) -> Units:
    """Encode the antibodies (CDR-H3 free) or, with ``antibodies=None``, one all-mask sequence of
    ``opts.uncond_length`` residues; compute the warm starts and the native energies."""
    from mlmprob.sampling.cdr import cdr_h3_mask
    from mlmprob.sampling.init import initialize

    mlm = reader_of(mlm, opts.batch_tokens)
    if antibodies is None:
        enc = mlm.encode(_texts_for(mlm, ["A" * opts.uncond_length]))
        free = enc.word_ids >= 0
        ids = enc.input_ids.masked_fill(free, mlm.mask_id)
        warm, _ = initialize(mlm, ids, free, "greedy")
        return Units([f"all-mask-L{opts.uncond_length}"], [None], ids, free, warm, [None], unit_scores(mlm, warm, free))
    enc = mlm.encode(_texts_for(mlm, [a.hc for a in antibodies]))
    free = torch.stack([cdr_h3_mask(a.hc, enc.word_ids[i], definition) for i, a in enumerate(antibodies)])
    for a, f in zip(antibodies, free):
        if int(f.sum()) != a.end - a.start:
            raise MLMProbError(f"{a.name}: CDR-H3 has {a.end - a.start} residues but {int(f.sum())} tokens")
    warm, _ = initialize(mlm, enc.input_ids, free, "greedy")
    return Units(
        [a.name for a in antibodies],
        [a.cdr for a in antibodies],
        enc.input_ids,
        free,
        warm,
        unit_scores(mlm, enc.input_ids, free),
        unit_scores(mlm, warm, free),
    )


def subset_units(units: Units, keep: list[int]) -> Units:
    idx = torch.tensor(keep, dtype=torch.long)
    return Units(
        [units.names[i] for i in keep],
        [units.native[i] for i in keep],
        units.ids[idx],
        units.free[idx],
        units.warm[idx],
        [units.native_scores[i] for i in keep],
        [units.warm_scores[i] for i in keep],
    )
