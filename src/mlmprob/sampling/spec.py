"""``SamplerSpec``: the settings of one sampling run, one small frozen spec per method, and the one registry
that maps a method's name to its spec, its kernel factory and what its results report.

``SamplerSpec(method=NAME, ...)`` returns the method's own spec (``MHSpec``, ``GibbsSpec``, ``AncestralSpec``,
``SpeculativeSpec``, ``UnmaskSpec``, ``AdaptiveSpec``, ``MaskPredictSpec``): the shared fields
(:class:`~.registry.SamplerSpec`) and its own. An option the method does not take is refused in one line
(:class:`~.registry.NotForMethod`, which
the CLI words with its flags); an unknown keyword names the valid ones. The spec is the only source of
defaults (20 epochs; 5 of burn-in for mh and gibbs, 0 for the independent draws). ``mlmprob sample``'s flags
and their ``--help`` groups are made from the fields' metadata (``commands/sampler_args.py``); what the rows
record (:meth:`~.registry.SamplerSpec.settings`) and what a resume compares
(:meth:`~.registry.SamplerSpec.run_config`) are derived from the same fields.

Adding a method: a spec class deriving from ``SamplerSpec`` (or ``DrawSpec``, ``MCMCSpec``) with ``method``
redefined (``shared_field("method", NAME)``) and its options as :func:`~.registry.option` fields; a factory
``(mlm, spec) -> kernel`` (``init(ids, free, epoch=0)``, ``step(state, generator) -> (state, StepInfo)``); one
``register(Method(NAME, Spec, factory, help, ...))``, in a module imported below. Nothing else names it.

>>> s = SamplerSpec(method="ancestral", epochs=3, order="l2r")
>>> type(s).__name__, s.settings()["order"], "tokens_per_step" in s.settings(), "anneal" in s.settings()
('AncestralSpec', 'l2r', True, False)
>>> SamplerSpec(method="gibbs").burn_in, SamplerSpec(method="ancestral").burn_in, SamplerSpec().epochs
(5, 0, 20)
>>> SamplerSpec(method="mh", draft_k=2)
Traceback (most recent call last):
...
mlmprob.sampling.registry.NotForMethod: draft_k is for method='speculative', got 2 with method='mh'
"""

from __future__ import annotations

from . import mcmc_methods  # noqa: F401  (registers mh and gibbs, first: the registry's order is --method's)
from .draw_methods import (  # noqa: F401  (registers ancestral, speculative, unmask, adaptive, mask-predict)
    AdaptiveSpec,
    AncestralSpec,
    DecoderSpec,
    DrawSpec,
    MaskPredictSpec,
    SpeculativeSpec,
    UnmaskSpec,
)
from .mcmc_methods import BlockLike, GibbsSpec, MCMCSpec, MHSpec, block_text  # noqa: F401
from .registry import (  # noqa: F401
    MAX_RUN_BYTES,
    REGISTRY,
    Method,
    NotForMethod,
    ProposalSpec,
    SamplerSpec,
    method_of,
    option,
    option_names,
    register,
)

METHODS = tuple(REGISTRY)  # the built-in methods (a method registered later is in REGISTRY)
