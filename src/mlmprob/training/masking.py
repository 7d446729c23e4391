"""Select ``k = max(1, round(rate * n))`` tokens per sequence and corrupt them (mask / random / keep)."""

from __future__ import annotations

import torch

from ..runtime import seeds


def derive_seed(seed: int, *keys) -> int:
    """A 63-bit seed for one stream of randomness, e.g. ``derive_seed(seed, "mask", step)``
    (``runtime.seeds.derive_seed(seed, "stream", *keys)``)."""
    return seeds.derive_seed(seed, "stream", *keys)


def generator_for(seed: int, *keys) -> torch.Generator:
    return seeds.seeded_generator(seed, "stream", *keys)


def n_selected(n_maskable: torch.Tensor, rate: float) -> torch.Tensor:
    """``k_i = max(1, floor(rate * n_i + 1/2))``, capped at ``n_i`` (0 for rows with no maskable token)."""
    k = torch.floor(rate * n_maskable.double() + 0.5).long().clamp(min=1)
    return torch.minimum(k, n_maskable)


def _first(maskable: torch.Tensor, k: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bool ``[B, L]``: the first ``k_i`` maskable positions of row ``i`` in a uniformly random order."""
    B, L = maskable.shape
    scores = torch.rand(B, L, generator=generator).masked_fill(~maskable, 2.0)  # non-maskable positions sort last
    rank = torch.empty(B, L, dtype=torch.long).scatter_(1, scores.argsort(dim=1), torch.arange(L).expand(B, L).clone())
    return rank < k[:, None]


def select_positions(maskable: torch.Tensor, rate: float, generator: torch.Generator) -> torch.Tensor:
    """Bool ``[B, L]``: exactly ``k_i`` positions chosen uniformly among the maskable ones of row ``i``."""
    return _first(maskable, n_selected(maskable.sum(1), rate), generator)


def select_uniform(maskable: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bool ``[B, L]``: ``k_i`` uniform on ``1..n_i`` positions chosen uniformly among the ``n_i`` maskable
    ones of row ``i`` (the masking of masked diffusion models: every masking rate equally likely)."""
    n = maskable.sum(1)
    u = torch.rand(len(n), generator=generator, dtype=torch.float64)
    return _first(maskable, torch.minimum((u * n).floor().long() + 1, n), generator)


def corrupt(
    input_ids: torch.Tensor,
    selected: torch.Tensor,
    split: tuple[float, float, float],
    mask_id: int,
    replace_ids: torch.Tensor,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and labels for the MLM loss: each selected token becomes ``mask_id`` (share ``split[0]``),
    a uniform token of ``replace_ids`` (``split[1]``) or stays (``split[2]``); labels are the original
    ids at selected positions and -100 elsewhere. Draws the same random numbers whatever the split."""
    u = torch.rand(input_ids.shape, generator=generator)
    random_tok = replace_ids[torch.randint(len(replace_ids), input_ids.shape, generator=generator)]
    p_mask, p_random, _ = split
    inputs = input_ids.clone()
    inputs = torch.where(selected & (u < p_mask), torch.full_like(inputs, mask_id), inputs)
    inputs = torch.where(selected & (u >= p_mask) & (u < p_mask + p_random), random_tok, inputs)
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    return inputs, labels
