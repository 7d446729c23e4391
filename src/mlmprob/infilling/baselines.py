"""Sampling baselines with the forward passes of beam search (Calef et al., sec. 5.4): ``num_samples`` hypotheses
extended like a beam, the extensions *drawn* without replacement (Gumbel top-k) in proportion to ``q~(w | h) / H``
(tempered, nucleus-truncated); ranked by the standard chain-rule score, comparable with beam search's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..runtime.seeds import check_generator
from ..sampling.options import ProposalConfig
from ..sampling.proposals import proposal_log_probs
from .corrections import Standard
from .gap import InfillCandidate, check_beam_size, check_order, prepare_gap
from .search import run_search


@dataclass(frozen=True)
class SamplingConfig:
    """A proposal for the sampling baselines: temperature, then nucleus truncation."""

    temperature: float = 1.0
    top_p: float | None = None

    def __post_init__(self):
        if not self.temperature > 0:
            raise MLMProbError(f"temperature must be positive, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise MLMProbError(f"top_p must lie in (0, 1], got {self.top_p}")

    @property
    def proposal(self) -> ProposalConfig:
        """The same proposal as the samplers' ``ProposalConfig`` (``top_p`` None is 1)."""
        return ProposalConfig(self.temperature, 1.0 if self.top_p is None else self.top_p)


#: The paper's baselines (Table 1): name -> proposal.
BASELINES = {
    "pure-sampling": SamplingConfig(),
    "temperature-0.25": SamplingConfig(temperature=0.25),
    "temperature-0.5": SamplingConfig(temperature=0.5),
    "temperature-0.75": SamplingConfig(temperature=0.75),
    "nucleus-0.9": SamplingConfig(top_p=0.9),
}


def proposal_logp(logp: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Rows of ``log q`` ``[N, n]`` -> tempered, renormalised, nucleus-truncated ``log q~`` (float64), by the package's
    one proposal function (``sampling.proposals.proposal_log_probs``: its nucleus keeps the most probable tokens up to
    and including the one at which the mass reaches ``top_p``, ties going to the lower candidate index)."""
    return proposal_log_probs(logp, config=config.proposal)


def _sampling_select(config: SamplingConfig, generator: torch.Generator):
    def select(scores, cand_logp, parent, n_parents, width):
        # every parent has one query this step: renormalise its candidates' log q per parent
        logw = torch.empty_like(cand_logp)
        for h in parent.unique().tolist():  # n_parents <= width: a short loop
            sel = parent == h
            logw[sel] = proposal_logp(cand_logp[sel][None], config)[0]
        logw = logw - torch.log(torch.tensor(float(n_parents), dtype=logw.dtype))
        u = torch.rand(len(logw), generator=generator, dtype=torch.float64).clamp_min(1e-300)
        keys = logw - torch.log(-torch.log(u))  # Gumbel top-k: draws without replacement
        finite = int(torch.isfinite(logw).sum())
        return torch.topk(keys, min(width, finite)).indices

    return select


def sample_infill(
    mlm: MaskedLM,
    input_ids,
    positions: Sequence[int] | torch.Tensor,
    *,
    num_samples: int = 5,
    temperature: float = 1.0,
    top_p: float | None = None,
    order: str = "l2r",
    generator: torch.Generator | None = None,
) -> list[InfillCandidate]:
    """``num_samples`` sampled fills (distinct), ranked by standard chain-rule score, best first.

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.zeros(3, 3, 3))
    >>> out = sample_infill(m, [0, 3, 3], [1, 2], num_samples=4, generator=torch.Generator().manual_seed(0))
    >>> len(out), len({c.tokens for c in out})
    (4, 4)
    """
    if generator is None:
        raise MLMProbError("sample_infill needs a torch.Generator (generator=torch.Generator().manual_seed(...))")
    check_generator(generator)
    config = SamplingConfig(temperature, top_p)
    gap = prepare_gap(mlm, input_ids, positions)
    width, select = check_beam_size(num_samples, "num_samples"), _sampling_select(config, generator)
    return run_search(mlm, gap, width=width, order=check_order(order), correction=Standard(), select=select)
