"""log q([MASK] | context) at the gap positions (whole gap masked), 30 GDPa1 gaps of 5 residues per region:
the size and spread of the HCB correction term. Run from the repository root:
OMP_NUM_THREADS=1 python docs/results/infill/mask_logprob.py > docs/results/infill/mask_logprob.txt"""

import statistics

import torch

from experiments.infill_runner import ExperimentConfig, draw_data, gap_inputs
from mlmprob.data import shared_data_dir
from mlmprob.models import load_mlm

for name, dtype in (("antiberty", "bf16"), ("antiberty", None), ("sapiens-vh", None)):
    mlm = load_mlm(name, dtype=dtype)
    cfg = ExperimentConfig(models=(name,), regions=("random", "cdrh3"), lengths=(5,), n_gaps=30)
    _, gaps = draw_data(cfg, shared_data_dir())
    for region in ("random", "cdrh3"):
        vals, tops = [], []
        for g in gaps[(region, 5)]:
            ids, cols = gap_inputs(mlm, g)
            ids = ids.clone()
            ids[0, cols] = mlm.mask_id
            lp = torch.log_softmax(mlm.logits(ids)[0, cols].double(), -1)
            vals += lp[:, mlm.mask_id].tolist()
            tops += lp.max(-1).values.tolist()
        print(
            f"{name + ('@' + dtype if dtype else ''):15s} {region:6s} log q(mask) mean {statistics.mean(vals):7.2f} sd {statistics.stdev(vals):5.2f} "
            f"min {min(vals):7.2f} max {max(vals):7.2f} | log q(best residue) mean {statistics.mean(tops):6.2f}"
        )
