"""Variant effects: scores of mutants against a wild type (``score_variants``), saturation
mutagenesis tables, ProteinGym-style mutant strings, and the evaluation metrics of DMS benchmarks (from ``mlmprob.metrics.ranking``)."""

from ..metrics.ranking import Estimate, evaluate
from .api import METHODS, score_variants
from .mutations import EncodedVariants, Mutation, encode_variants, parse_mutant, parse_mutants
from .rows import ForwardCache
from .saturate import Saturation, saturate, write_csv, write_heatmap
from .spec import VariantsSpec

__all__ = ["METHODS", "ForwardCache", "score_variants", "Estimate", "evaluate", "EncodedVariants", "Mutation",
           "encode_variants", "parse_mutant", "parse_mutants", "Saturation", "saturate", "write_csv", "write_heatmap",
           "VariantsSpec"]
