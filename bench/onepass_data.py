"""The antibody and English sets of the one-pass report: calibration (part of Thera-SAbDab; English: the
first half of wikitext-2 valid) and held-out sets (GDPa1, Jain-137; English: wikitext-2 test), disjoint.

Thera-SAbDab chains whose sequence appears in GDPa1 or Jain-137 are dropped from calibration, so the
held-out chains are never seen by the fit."""

from __future__ import annotations

import csv
from pathlib import Path

from mlmprob.data import shared_data_dir

AA = set("ACDEFGHIKLMNPQRSTVWY")


def _col(path: Path, name: str) -> list[str]:
    with open(path, newline="") as f:
        return [row[name].strip() for row in csv.DictReader(f) if row.get(name)]


def _clean(seqs) -> list[str]:
    out, seen = [], set()
    for s in seqs:
        s = s.strip().upper()
        if s and set(s) <= AA and 80 <= len(s) <= 140 and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def antibody_sets(chain: str = "H") -> dict[str, list[str]]:
    """``{"calibration": [...], "gdpa1": [...], "jain137": [...]}`` of VH (``H``) or VL (``L``) chains."""
    d = shared_data_dir()
    if d is None:
        raise FileNotFoundError("the shared data folder is missing")
    d = d / "antibody"
    gdpa1 = _clean(_col(d / "GDPa1_v1.2.csv", "vh_protein_sequence" if chain == "H" else "vl_protein_sequence"))
    jain = _clean(_col(d / "jain137.csv", "VH" if chain == "H" else "VL"))
    held = set(gdpa1) | set(jain)
    thera = [s for s in _clean(_col(d / "thera_sabdab.csv", "HC" if chain == "H" else "LC")) if s not in held]
    return {"calibration": thera, "gdpa1": gdpa1, "jain137": jain}


def english_sets(n_words=(8, 40)) -> dict[str, list[str]]:
    """Sentences of wikitext-2: calibration from the valid split, held out from the test split."""
    d = shared_data_dir()
    if d is None:
        raise FileNotFoundError("the shared data folder is missing")

    def lines(name):
        out = []
        for line in (d / name).read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("=") and n_words[0] <= len(line.split()) <= n_words[1]:
                out.append(line)
        return out

    return {"calibration": lines("wikitext2_valid.txt"), "heldout": lines("wikitext2_test.txt")}
