"""``SamplerSpec``: the settings of one sampling run, one frozen spec per method (``MHSpec``, ``GibbsSpec``,
``AncestralSpec``, ``SpeculativeSpec``, ``UnmaskSpec``, ``AdaptiveSpec``, ``MaskPredictSpec``), and the registry.

The spec is the only source of defaults; ``mlmprob sample``'s flags, what the rows record and what a resume compares
are derived from its fields. Adding a method: a spec class (``method`` redefined with ``shared_field("method",
NAME)``, its options as :func:`~.registry.option` fields), a factory ``(mlm, spec) -> kernel`` and one
``register(Method(NAME, Spec, factory, help, ...))`` in a module imported below."""

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
