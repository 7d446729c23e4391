"""Fit the one-pass corrections shipped for the built-in models (src/mlmprob/onepass/fitted/).

    PYTHONPATH=src:bench python bench/calibrate_builtin.py antiberty --n 150
    PYTHONPATH=src:bench python bench/calibrate_builtin.py sapiens-vh --n 150

Calibration: the first ``--n`` chains of Thera-SAbDab (file order; chains also in GDPa1 / Jain-137 dropped)
for the antibody models; wikitext-2 valid sentences for en-small.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from onepass_data import antibody_sets, english_sets

from mlmprob import load_mlm
from mlmprob.onepass import calibrate
from mlmprob.onepass.correction import FITTED_DIR


def _fits(mlm, s: str) -> bool:
    from mlmprob.errors import TokenizationError

    try:
        return mlm.encode([s]).input_ids.shape[1] <= 64
    except TokenizationError:
        return False


def calibration_sequences(model: str, n: int, mlm) -> tuple[list[str], str]:
    if model == "en-small":
        seqs = [s for s in english_sets()["calibration"] if _fits(mlm, s)]
        return seqs[:n], f"wikitext2_valid.txt, first {n} sentences of 8-40 words that fit 64 tokens"
    chain = "L" if model == "sapiens-vl" else "H"
    col = "LC" if chain == "L" else "HC"
    return (
        antibody_sets(chain)["calibration"][:n],
        f"thera_sabdab.csv column {col}, first {n} unique chains of 80-140 residues not in GDPa1/Jain-137",
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=("antiberty", "sapiens-vh", "sapiens-vl", "en-small"))
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--out-dir", default=str(FITTED_DIR))
    a = p.parse_args(argv)
    torch.set_num_threads(int(torch.get_num_threads()))
    mlm = load_mlm(a.model, device="cpu", dtype="float32")
    seqs, source = calibration_sequences(a.model, a.n, mlm)
    t0 = time.time()
    r = calibrate(
        mlm,
        seqs,
        steps=a.steps,
        source=source,
        progress=lambda k: print(f"  +{k} sequences ({time.time() - t0:.0f} s)", file=sys.stderr),
    )
    path, meta = r.correction.save(Path(a.out_dir) / f"{a.model}.safetensors")
    print(
        f"{a.model}: {len(seqs)} sequences, held-out KL {r.heldout_kl_before:.4f} -> {r.heldout_kl_after:.4f} "
        f"nats/position, {r.seconds:.0f} s -> {path}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
