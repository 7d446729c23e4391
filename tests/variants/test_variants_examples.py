"""Worked examples of mlmprob.variants's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_units_variant_of():
    check_examples(
        "mlmprob.variants.units",
        """
        >>> variant_of(VariantUnit("x", 3, sequence="MCPKL"), "MAPKL")
        (Mutation(wt='A', index=1, mt='C'),)
        >>> variant_of(VariantUnit("x", 3, sequence="MCPK"), "MAPKL")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: row 3 ('x'): the sequence has 4 residues, the wild type 5
        """,
    )


def test_units_read_wild_type():
    check_examples(
        "mlmprob.variants.units",
        """
        >>> read_wild_type("MKT" * 100)[:6]
        'MKTMKT'
        >>> read_wild_type("mkt")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --wild-type 'mkt' has lower-case letters; residues are upper-case letters
        """,
    )


def test_spec_module():
    check_examples(
        "mlmprob.variants.spec",
        """
        >>> s = VariantsSpec(methods=("hcb", "chain"), chain_orders=2)
        >>> s.methods, s.settings()
        (('hcb', 'chain'), {'methods': ['hcb', 'chain'], 'offset': 1, 'chain_orders': 2, 'chain_seed': 0})
        >>> VariantsSpec().settings()          # chain's settings only when chain is asked for
        {'methods': ['wt_marginals', 'masked_marginals', 'masked_marginals_all', 'hcb'], 'offset': 1}
        """,
    )


def test_report_small_sample_warning():
    check_examples(
        "mlmprob.variants.report",
        """
        >>> small_sample_warning({"m": {"n": 2}})  # doctest: +NORMALIZE_WHITESPACE
        'warning: only 2 scored rows with a label: too few for a bootstrap interval (the intervals shown mean little; use at
        least 10 rows)'
        >>> small_sample_warning({"m": {"n": 50}}) is None
        True
        """,
    )


def test_chain_site_orders():
    check_examples(
        "mlmprob.variants.chain",
        """
        >>> four = [1, 2, 3, 4]
        >>> site_orders([3, 5]), len(site_orders(four, 6)), site_orders(four, 6) == site_orders(four, 6)
        ([[3, 5], [5, 3]], 6, True)
        """,
    )


def test_units_saturation_units():
    check_examples(
        "mlmprob.variants.units",
        """
        >>> [u.id for u in saturation_units("MA", alphabet="ACM")]
        ['M1A', 'M1C', 'A2C', 'A2M']
        """,
    )


def test_units_mutant_label():
    check_examples(
        "mlmprob.variants.units",
        """
        >>> mutant_label((Mutation("A", 1, "C"), Mutation("K", 3, "E")), offset=24)
        'A25C:K27E'
        """,
    )


def test_stream_window_start():
    check_examples(
        "mlmprob.variants.stream",
        """
        >>> window_start([3], 10, None), window_start([3], 10, 4), window_start([8, 9], 10, 4), window_start([0], 10, 4)
        (0, 1, 6, 0)
        """,
    )


def test_spec_parse_methods():
    check_examples(
        "mlmprob.variants.spec",
        """
        >>> parse_methods(" hcb, chain ,")
        ('hcb', 'chain')
        """,
    )
