"""Variant effects: scores of mutants against a wild type (``score_variants``), saturation mutagenesis tables,
ProteinGym-style mutant strings, and the evaluation metrics of DMS benchmarks (from ``mlmprob.metrics.ranking``)."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "Estimate": "..metrics.ranking",
        "evaluate": "..metrics.ranking",
        "METHODS": ".spec",
        "score_variants": ".api",
        "EncodedVariants": ".mutations",
        "Mutation": ".mutations",
        "encode_variants": ".mutations",
        "parse_mutant": ".mutations",
        "parse_mutants": ".mutations",
        "ForwardCache": ".rows",
        "Saturation": ".saturation",
        "saturate": ".saturation",
        "write_csv": ".saturation",
        "write_heatmap": ".saturation",
        "VariantsSpec": ".spec",
    },
)
