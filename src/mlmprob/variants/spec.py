"""``VariantsSpec``: the settings of a variant-effect run (``mlmprob variants``,
:class:`~mlmprob.variants.stream.VariantsJob`, :func:`~mlmprob.variants.score_variants`, the app), frozen and
validated once where it is made.

>>> s = VariantsSpec(methods=("hcb", "chain"), chain_orders=2)
>>> s.methods, s.settings()
(('hcb', 'chain'), {'methods': ['hcb', 'chain'], 'offset': 1, 'chain_orders': 2, 'chain_seed': 0})
>>> VariantsSpec().settings()          # chain's settings only when chain is asked for
{'methods': ['wt_marginals', 'masked_marginals', 'masked_marginals_all', 'hcb'], 'offset': 1}
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MLMProbError
from ..likelihood.spec import check_n_orders
from ..settings import Spec, check_int
from .api import check_methods
from .chain import CHAIN_ORDERS

DEFAULT_METHODS = ("wt_marginals", "masked_marginals", "masked_marginals_all", "hcb")
SATURATE_METHODS = ("wt_marginals", "masked_marginals")
CHAIN_FIELDS = ("chain_orders", "chain_seed")


@dataclass(frozen=True)
class VariantsSpec(Spec):
    """``methods``: the scores (:data:`mlmprob.variants.api.ALL_METHODS`, repeats dropped; None: every method of
    :data:`~mlmprob.variants.api.METHODS`); ``offset``: the number of the wild type's first residue in mutant
    strings; ``chain_orders`` and ``chain_seed``: the orders of ``chain`` (:func:`mlmprob.variants.chain.site_orders`)."""

    methods: tuple[str, ...] = DEFAULT_METHODS
    offset: int = 1
    chain_orders: int = CHAIN_ORDERS
    chain_seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "methods", check_methods(self.methods))
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise MLMProbError(f"offset must be an integer, got {self.offset!r}")
        check_n_orders(self.chain_orders)
        check_int("chain_seed", self.chain_seed, 0, "a non-negative integer")

    def uses(self, name: str) -> bool:
        return name not in CHAIN_FIELDS or "chain" in self.methods

    @classmethod
    def from_args(cls, args, **given) -> "VariantsSpec":
        """The spec of ``mlmprob variants``' arguments: ``--methods`` is comma-separated text (None: the defaults,
        those of ``--saturate`` with it)."""
        if "methods" not in given:
            text = getattr(args, "methods", None)
            if text is None:
                given["methods"] = SATURATE_METHODS if getattr(args, "saturate", False) else DEFAULT_METHODS
            else:
                given["methods"] = tuple(m.strip() for m in text.split(",") if m.strip())
                if not given["methods"]:
                    raise MLMProbError("--methods is empty: name one or more methods, or leave it out for the defaults")
        return super().from_args(args, **given)
