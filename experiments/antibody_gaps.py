"""Antibody heavy chains and the gaps the infilling experiments hide in them.

Datasets (read only from the shared data folder):

- ``gdpa1``: ``GDPa1_v1.2.csv``, column ``vh_protein_sequence``; CDR-H3 = the residues in AHo
  columns 107-138 of ``heavy_aligned_aho`` (whose ungapped string is the VH sequence).
- ``thera``: ``thera_sabdab.csv``, column ``HC`` (no alignment: random gaps only).

Gaps: ``random`` (anywhere in the chain) or ``cdrh3`` (wholly inside CDR-H3), ``k`` residues,
drawn with a ``torch.Generator`` (chain uniformly with replacement, then the start uniformly).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.alphabet import is_protein
from mlmprob.errors import MLMProbError

from .data_option import resolve_data_dir

AHO_CDRH3 = (107, 138)  # 1-based inclusive AHo columns
DATASETS = {"gdpa1": "antibody/GDPa1_v1.2.csv", "thera": "antibody/thera_sabdab.csv"}
REGIONS = ("random", "cdrh3")
DATASET_REGIONS = {"gdpa1": REGIONS, "thera": ("random",)}  # Thera-SAbDab has no alignment: no CDR-H3


@dataclass(frozen=True)
class Chain:
    """One heavy chain: ``id``, residues ``seq``, CDR-H3 as a residue span ``[start, end)`` or None."""

    id: str
    seq: str
    cdrh3: tuple[int, int] | None = None


@dataclass(frozen=True)
class GapSpec:
    """Residues ``seq[start:start + k]`` of chain ``chain_id`` hidden; ``gap_id`` numbers the draw."""

    gap_id: int
    chain_id: str
    seq: str
    start: int
    k: int
    region: str

    @property
    def gold(self) -> str:
        return self.seq[self.start : self.start + self.k]


def aho_span(aligned: str, first: int = AHO_CDRH3[0], last: int = AHO_CDRH3[1]) -> tuple[int, int] | None:
    """Residue span ``[start, end)`` of the ungapped sequence covered by 1-based alignment columns
    ``first..last``; None if those columns hold no residue.

    >>> aho_span("AB--CDE-F", 3, 6)   # columns 3..6 = "--CD" -> residues 2, 3
    (2, 4)
    """
    idx, start, end = 0, None, None
    for col, c in enumerate(aligned, start=1):
        if c == "-":
            continue
        if first <= col <= last:
            start = idx if start is None else start
            end = idx + 1
        idx += 1
    return None if start is None else (start, end)


def load_chains(dataset: str, data_dir: str | Path) -> list[Chain]:
    """Heavy chains of ``dataset`` (``gdpa1`` or ``thera``): 20-letter sequences only, first copy
    of each sequence kept."""
    if dataset not in DATASETS:
        raise MLMProbError(f"unknown dataset {dataset!r}; use one of {', '.join(DATASETS)}")
    path = resolve_data_dir(data_dir, [DATASETS[dataset]]) / DATASETS[dataset]
    chains, seen = [], set()
    with path.open(newline="") as f:
        for i, row in enumerate(csv.DictReader(f)):
            if dataset == "gdpa1":
                seq, cid = row["vh_protein_sequence"].strip(), row["antibody_id"]
                aligned = row["heavy_aligned_aho"].strip()
                cdr = aho_span(aligned) if aligned.replace("-", "") == seq else None
            else:
                seq, cid, cdr = row["HC"].strip(), row["Therapeutic"] or f"row{i + 1}", None
            if seq in seen or not is_protein(seq):
                continue
            seen.add(seq)
            chains.append(Chain(cid, seq, cdr))
    return chains


def sample_gaps(chains: list[Chain], k: int, n: int, region: str, generator: torch.Generator) -> list[GapSpec]:
    """``n`` gaps of ``k`` residues in ``region``.

    >>> ch = [Chain("a", "ACDEFGHIK", (3, 7))]
    >>> [g.gold for g in sample_gaps(ch, 4, 2, "cdrh3", torch.Generator().manual_seed(0))]
    ['EFGH', 'EFGH']
    """
    if region not in REGIONS:
        raise MLMProbError(f"unknown gap region {region!r}; use one of {', '.join(REGIONS)}")
    if region == "random":
        pool = [(c, 0, len(c.seq)) for c in chains if len(c.seq) >= k]
    else:
        pool = [(c, *c.cdrh3) for c in chains if c.cdrh3 is not None and c.cdrh3[1] - c.cdrh3[0] >= k]
    if not pool:
        raise MLMProbError(f"no chain has room for a {region} gap of {k} residues")
    out = []
    for i in range(n):
        c, lo, hi = pool[int(torch.randint(len(pool), (1,), generator=generator))]
        start = lo + int(torch.randint(hi - lo - k + 1, (1,), generator=generator))
        out.append(GapSpec(i, c.id, c.seq, start, k, region))
    return out
