"""MCMC diagnostics over ``[chains, samples]`` (float64): ``effective_sample_size`` (Stan's multi-chain ESS, Geyer's
initial monotone sequence, no rank normalisation), ``split_rhat`` (Gelman et al., BDA3) and ``reference_identity``.
"""

from __future__ import annotations

import math

import torch


def _autocovariance(x: torch.Tensor) -> torch.Tensor:
    """Biased autocovariance of each row of ``x`` ``[C, N]`` at lags ``0..N-1``."""
    N = x.shape[1]
    xc = x - x.mean(1, keepdim=True)
    n_fft = 1 << (2 * N - 1).bit_length()
    f = torch.fft.rfft(xc, n=n_fft)
    return torch.fft.irfft(f * f.conj(), n=n_fft)[:, :N] / N


def _chains(x) -> torch.Tensor:
    """``x`` as float64 ``[C, N]`` (one chain when given ``[N]``)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    return x[None] if x.dim() == 1 else x


def effective_sample_size(x) -> float:
    """ESS of ``x`` ``[C, N]`` (C chains, N draws each); ``nan`` if fewer than 4 draws or no variance.

    >>> g = torch.Generator().manual_seed(0)
    >>> iid = torch.randn(4, 1000, generator=g, dtype=torch.float64)
    >>> 3000 < effective_sample_size(iid) < 5000
    True
    """
    x = _chains(x)
    C, N = x.shape
    if N < 4:
        return math.nan
    acov = _autocovariance(x)
    chain_var = acov[:, 0] * N / (N - 1)
    W = chain_var.mean()
    var_plus = W * (N - 1) / N + (x.mean(1).var() if C > 1 else 0.0)
    if not var_plus > 0:
        return math.nan
    rho = 1.0 - (W - acov.mean(0)) / var_plus
    rho[0] = 1.0
    total, prev = 0.0, math.inf
    for k in range(N // 2):
        p = float(rho[2 * k] + rho[2 * k + 1])
        if p < 0:
            break
        prev = min(prev, p)  # initial monotone sequence
        total += prev
    tau = max(-1.0 + 2.0 * total, 1.0 / math.log10(C * N + 10))  # cap as in Stan: ESS <= N log10(N)
    return C * N / tau


def split_rhat(x) -> float:
    """Split-R-hat of ``x`` ``[C, N]``; ``nan`` for fewer than 4 draws or zero within-chain variance.

    >>> g = torch.Generator().manual_seed(0)
    >>> same = torch.randn(4, 500, generator=g, dtype=torch.float64)
    >>> abs(split_rhat(same) - 1) < 0.02
    True
    >>> split_rhat(same + torch.arange(4.0)[:, None]) > 1.5     # chains stuck at different levels
    True
    """
    x = _chains(x)
    C, N = x.shape
    if N < 4:
        return math.nan
    n = N // 2
    halves = torch.cat([x[:, :n], x[:, N - n :]], 0)
    W = halves.var(1).mean()
    if not W > 0:
        return math.nan
    B = n * halves.mean(1).var()
    var_plus = (n - 1) / n * W + B / n
    return float(torch.sqrt(var_plus / W))


def reference_identity(ids: torch.Tensor, reference: torch.Tensor, free: torch.Tensor) -> torch.Tensor:
    """Fraction of the free positions of each row ``[B]`` whose token equals the reference's.

    >>> reference_identity(torch.tensor([[1, 2, 3]]), torch.tensor([1, 0, 3]), torch.tensor([[False, True, True]]))
    tensor([0.5000], dtype=torch.float64)
    """
    ref = reference.expand_as(ids)
    same = ((ids == ref) & free).sum(-1).double()
    return same / free.sum(-1).clamp(min=1).double()
