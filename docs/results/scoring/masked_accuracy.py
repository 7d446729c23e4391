"""Masked-residue accuracy and mean top-1 probability of the antibody models on the first eight
Thera-SAbDab heavy chains. Run from the repository root: python docs/results/scoring/masked_accuracy.py"""

import csv

import torch

import mlmprob
from mlmprob.batching import iter_masked_logits
from mlmprob.models.reader import reader_of

hc = [r["HC"] for r in csv.DictReader(open("../shared/data/antibody/thera_sabdab.csv")) if r["HC"]][:8]
for name in ("antiberty", "sapiens-vh"):
    m = mlmprob.load_mlm(name)
    e = m.encode(hc)
    r, c = reader_of(m).default_positions(e.input_ids).nonzero(as_tuple=True)
    hit = 0
    top = []
    for idx, lg in iter_masked_logits(m, e.input_ids, r, c):
        hit += int((lg.argmax(-1) == e.input_ids[r[idx], c[idx]]).sum())
        top.append(lg.double().softmax(-1).max(-1).values)
    print(
        name,
        "masked-residue accuracy",
        round(hit / len(r), 3),
        "mean top-1 probability",
        round(float(torch.cat(top).mean()), 3),
    )
