"""Shared pieces of the real-data variant-effect experiment (``variants_data``): the data sets, the
fixed ordering of the trastuzumab CDR-H3 library, the result-file layout and its readers.

The library (Mason et al. 2021, ``antibody/mHER_H3_AgPos.csv`` / ``_AgNeg.csv``, column ``AASeq``):
sequences are deduplicated within each file and those present in both files dropped; each class is
shuffled with ``torch.randperm`` under ``seed`` and the two are interleaved (binder, non-binder,
binder, ...), the surplus of the larger class last. Any prefix of ``2 n`` variants (``n`` at most
the smaller class) therefore holds ``n`` of each class, and a smaller subsample is nested in a larger
one. The wild type's own CDR-H3, were it listed, is left out (it has no mutation). Full VH =
``FRAMEWORK + AASeq + TAIL``; the wild type's CDR-H3 is ``WT_CDR``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.alphabet import is_protein
from mlmprob.errors import MLMProbError
from mlmprob.jsonl import dumps
from mlmprob.runtime.config_check import check_config
from mlmprob.runtime.log import RunMeta, read_log

FRAMEWORK = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
TAIL = "YWGQGTLVTVSS"
WT_CDR = "WGGDGFYAMD"
POS_CSV, NEG_CSV = "antibody/mHER_H3_AgPos.csv", "antibody/mHER_H3_AgNeg.csv"
GDPA1_CSV, JAIN_CSV = "antibody/GDPa1_v1.2.csv", "antibody/jain137.csv"
GDPA1_ASSAYS = (
    "Titer",
    "Purity",
    "SEC %Monomer",
    "SMAC",
    "HIC",
    "HAC",
    "PR_CHO",
    "PR_Ova",
    "AC-SINS_pH6.0",
    "AC-SINS_pH7.4",
    "Tonset",
    "Tm1",
    "Tm2",
)
LIBRARY_FILE = "library.json"
RUNS_FILE = "runs.jsonl"
SET_KINDS = ("pll", "loglik")  # what a developability-set group scores: PLL, or the l2r chain rule


@dataclass(frozen=True)
class Library:
    """The ordered CDR-H3 variants (``cdrs``), their labels (1 binder, 0 non-binder) and provenance."""

    cdrs: list[str]
    labels: list[int]
    seed: int
    n_pos_raw: int
    n_neg_raw: int
    n_both: int

    @property
    def sha1(self) -> str:
        return hashlib.sha1("\n".join(f"{c},{y}" for c, y in zip(self.cdrs, self.labels)).encode()).hexdigest()

    def mutations(self, i: int) -> int:
        return sum(a != b for a, b in zip(self.cdrs[i], WT_CDR))

    def meta(self) -> dict:
        return {
            "seed": self.seed,
            "n": len(self.cdrs),
            "n_pos": sum(self.labels),
            "n_neg": len(self.labels) - sum(self.labels),
            "rows_pos_file": self.n_pos_raw,
            "rows_neg_file": self.n_neg_raw,
            "in_both_files_dropped": self.n_both,
            "sha1": self.sha1,
            "labels": "".join(map(str, self.labels)),
            "mutations": "".join(format(self.mutations(i), "x") for i in range(len(self.cdrs))),
        }


def _read_column(path: Path, column: str) -> list[str]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and column not in rows[0]:
        raise MLMProbError(f"{path}: no column {column!r}")
    return [r[column].strip().upper() for r in rows if r.get(column)]


def load_library(data: Path, seed: int = 0) -> Library:
    """The ordered library from ``data`` (the shared data folder)."""
    pos_raw, neg_raw = _read_column(data / POS_CSV, "AASeq"), _read_column(data / NEG_CSV, "AASeq")
    both = set(pos_raw) & set(neg_raw)
    classes = []
    for raw in (pos_raw, neg_raw):
        seqs = sorted(set(raw) - both - {WT_CDR})  # the wild type itself has no mutation to score
        bad = [s for s in seqs if len(s) != len(WT_CDR) or not is_protein(s)]
        if bad:
            raise MLMProbError(f"CDR-H3 {bad[0]!r} is not {len(WT_CDR)} standard residues")
        perm = torch.randperm(len(seqs), generator=torch.Generator().manual_seed(seed)).tolist()
        classes.append([seqs[i] for i in perm])
    pos, neg = classes
    cdrs, labels = [], []
    for i in range(max(len(pos), len(neg))):
        for seqs, y in ((pos, 1), (neg, 0)):
            if i < len(seqs):
                cdrs.append(seqs[i])
                labels.append(y)
    return Library(cdrs, labels, seed, len(pos_raw), len(neg_raw), len(both))


@dataclass(frozen=True)
class AssayedAntibody:
    """One antibody of a developability set: id, VH, and its assay values (None when missing)."""

    id: str
    vh: str
    assays: dict


def _number(x: str):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def load_assay_set(data: Path, name: str) -> tuple[list[AssayedAntibody], list[str]]:
    """``name`` in {"gdpa1", "jain"}: the antibodies whose VH has only standard residues, and the
    assay names. Jain-137's blank row and footnote are dropped (rows without a VH)."""
    if name == "gdpa1":
        path, id_col, vh_col = data / GDPA1_CSV, "antibody_name", "vh_protein_sequence"
    elif name == "jain":
        path, id_col, vh_col = data / JAIN_CSV, "Name", "VH"
    else:
        raise MLMProbError(f"unknown assay set {name!r}; use gdpa1 or jain")
    with path.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if not rows or vh_col not in rows[0]:
        raise MLMProbError(f"{path}: no column {vh_col!r}")
    if name == "gdpa1":
        assays = [a for a in GDPA1_ASSAYS if a in rows[0]]
    else:
        assays = [c for c in rows[0] if c and c not in (id_col, vh_col, "VL")]
    out = []
    for r in rows:
        vh = (r.get(vh_col) or "").strip().upper()
        if not is_protein(vh):
            continue
        out.append(AssayedAntibody(r[id_col].strip(), vh, {a: _number(r.get(a)) for a in assays}))
    return out, assays


# -- result files -----------------------------------------------------------------------------------


def result_path(out: Path, model: str, group: str) -> Path:
    """``mher-<model>-<group>.jsonl`` for library groups, ``<set>-<model>-<kind>.jsonl`` for the groups
    ``<set>_<kind>`` of a set (kind ``pll`` or ``loglik``)."""
    safe = model.replace("/", "_")
    for kind in SET_KINDS:
        if group.endswith("_" + kind):
            return out / f"{group[: -len(kind) - 1]}-{safe}-{kind}.jsonl"
    return out / f"mher-{safe}-{group}.jsonl"


def read_chunks(path: Path) -> list[dict]:
    """The chunk lines of a result file; a half-written last line (a kill) is dropped."""
    return list(read_log(path))


def encode_chunk(chunk: dict) -> str:
    """A chunk's line in its result file (compact strict JSON)."""
    return dumps(chunk, separators=(",", ":"))


def write_library_meta(out: Path, lib: Library) -> None:
    """Write ``library.json``, or check that an existing one describes the same ordered library."""
    store = RunMeta(out / LIBRARY_FILE, key=None)
    meta = lib.meta()
    if store.path.exists():
        check_config(out, store.load(), meta, keys=("sha1", "seed"))
        return
    store.save(meta)


def read_library_meta(out: Path) -> dict:
    path = out / LIBRARY_FILE
    if not path.exists():
        raise MLMProbError(f"{path} not found: run the experiment first")
    return json.loads(path.read_text())
