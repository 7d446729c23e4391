"""Variant effects: scores of mutants against a wild type (``score_variants``), saturation
mutagenesis tables, ProteinGym-style mutant strings, and the evaluation metrics of DMS benchmarks."""

from .api import METHODS, score_variants
from .rows import ForwardCache

__all__ = ["METHODS", "ForwardCache", "score_variants"]
