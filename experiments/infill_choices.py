"""What the infilling experiments choose from: datasets and their gap regions, the methods (beam
searches, sampling baselines, ablations) with their table labels, the per-gap metrics, and how each
method runs on one gap (``run_method``). Shared by the runner (``infill_runner``), its tables
(``infill_tables``) and the pivot sweep (``infill_pivots``).
"""

from __future__ import annotations

import torch

from mlmprob.errors import MLMProbError
from mlmprob.infilling.baselines import BASELINES, sample_infill
from mlmprob.infilling.beam import beam_search, make_correction
from mlmprob.infilling.corrections import ContextScramble, RandomTokenSwap
from mlmprob.infilling.gap import InfillCandidate

from . import antibody_gaps, english_sets
from .english_gaps import ENGLISH_DATASETS, ENGLISH_REGIONS

BEAM_METHODS = {
    "hcb-l2r": ("hcb", "l2r"),
    "hcb-best": ("hcb", "best"),
    "standard-l2r": ("standard", "l2r"),
    "standard-best": ("standard", "best"),
}
ABLATIONS = ("ablation-scramble", "ablation-swap")
METHODS = tuple(BEAM_METHODS) + tuple(BASELINES) + ABLATIONS
LABELS = {
    "hcb-l2r": "HCB Left-to-Right",
    "hcb-best": "HCB Best-to-Worst",
    "standard-l2r": "Standard Left-to-Right",
    "standard-best": "Standard Best-to-Worst",
    "pure-sampling": "Pure sampling",
    "temperature-0.25": "Sampling with T=0.25",
    "temperature-0.5": "Sampling with T=0.50",
    "temperature-0.75": "Sampling with T=0.75",
    "nucleus-0.9": "Nucleus sampling, p=0.90",
    "ablation-scramble": "Ablation 1 (Context Scramble)",
    "ablation-swap": "Ablation 2 (Random Token Swap)",
}
METRICS = ("top1", "top5", "top10", "top20", "bleu", "identity")
ABLATION_ORDER = "l2r"  # the ablations modify HCB left-to-right

ANTIBODY_DATASETS = tuple(antibody_gaps.DATASETS)
DATASETS = ANTIBODY_DATASETS + ENGLISH_DATASETS
REGIONS = tuple(dict.fromkeys(antibody_gaps.REGIONS + ENGLISH_REGIONS))


def dataset_regions(dataset: str) -> tuple[str, ...]:
    """The gap regions a dataset has."""
    if dataset in ENGLISH_DATASETS:
        return ENGLISH_REGIONS
    if dataset in ANTIBODY_DATASETS:
        return antibody_gaps.DATASET_REGIONS[dataset]
    raise MLMProbError(f"unknown dataset {dataset!r}; use one of {', '.join(DATASETS)}")


def dataset_files(dataset: str) -> tuple[str, ...]:
    """The files of the shared data folder that a dataset reads.

    >>> dataset_files("gdpa1"), dataset_files("xsum")
    (('antibody/GDPa1_v1.2.csv',), ('snli_test.tsv', 'xsum_test.jsonl'))
    """
    if dataset in ENGLISH_DATASETS:
        return tuple(english_sets.FILES)
    if dataset in ANTIBODY_DATASETS:
        return (antibody_gaps.DATASETS[dataset],)
    raise MLMProbError(f"unknown dataset {dataset!r}; use one of {', '.join(DATASETS)}")


DATA_FILES = tuple(dict.fromkeys(f for d in DATASETS for f in dataset_files(d)))  # every dataset's files


def is_english(dataset: str) -> bool:
    return dataset in ENGLISH_DATASETS


def run_method(
    method: str,
    mlm,
    ids: torch.Tensor,
    positions: torch.Tensor,
    beam_size: int,
    generator: torch.Generator,
    scramble: ContextScramble | None = None,
) -> list[InfillCandidate]:
    """One method of the experiment on one gap."""
    if method in BEAM_METHODS:
        kind, order = BEAM_METHODS[method]
        return beam_search(mlm, ids, positions, correction=make_correction(mlm, kind), order=order, beam_size=beam_size)
    if method in BASELINES:
        cfg = BASELINES[method]
        return sample_infill(
            mlm,
            ids,
            positions,
            num_samples=beam_size,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            generator=generator,
        )
    if method == "ablation-scramble":
        make_correction(mlm, "hcb")  # the mask must be an output, as for HCB
        corr = scramble if scramble is not None else ContextScramble(mlm.mask_id, generator)
    elif method == "ablation-swap":
        make_correction(mlm, "hcb")
        corr = RandomTokenSwap(mlm.mask_id, mlm.vocab_size, generator)
    else:
        raise MLMProbError(f"unknown method {method!r}")
    return beam_search(mlm, ids, positions, correction=corr, order=ABLATION_ORDER, beam_size=beam_size)
