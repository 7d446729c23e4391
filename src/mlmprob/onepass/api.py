"""``mlmprob.pll``: exact PLL (:func:`mlmprob.energy.pll`) or, on request, its one-pass estimate."""

from __future__ import annotations

import torch

from ..energy import pll as exact_pll
from ..errors import MLMProbError
from .estimate import METHODS, one_pass_token_scores


def pll(mlm, input_ids, positions=None, *, word_ids=None, method: str = "exact", correction=None) -> torch.Tensor:
    """Log pseudo-likelihood ``sum_t log q_t(x_t | x with t masked)`` per sequence, ``[B]`` (float64).

    ``method="exact"`` (the default) runs one masked copy per position: see :func:`mlmprob.energy.pll`
    for ``positions`` and ``word_ids`` (the forward budget is the model reader's). ``method="one_pass"``
    estimates it from one unmasked pass with the model's fitted correction (shipped for the built-in models; ``mlmprob
    calibrate`` fits one for any other; ``correction`` names a file to use instead), and
    ``method="unmasked"`` reads the unmasked pass without correction. Both are estimates.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> round(float(pll(m, torch.tensor([[1, 1]]))), 4)
    -0.9651
    >>> pll(m, torch.tensor([[1, 1]]), method="fast")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: unknown PLL method 'fast'; use one of exact, one_pass, unmasked
    """
    if method not in METHODS:
        raise MLMProbError(f"unknown PLL method {method!r}; use one of {', '.join(METHODS)}")
    if method == "exact":
        return exact_pll(mlm, input_ids, positions, word_ids=word_ids)
    if word_ids is not None:
        raise MLMProbError(f"method {method!r} has no whole-word variant; use method='exact'")
    return one_pass_token_scores(mlm, input_ids, positions, method=method, correction=correction).pll
