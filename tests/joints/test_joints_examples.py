"""Worked examples of mlmprob.joints's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_constructions_pivot_pair():
    check_examples(
        "mlmprob.joints.constructions",
        """
        >>> pivot_pair([3, 4]), pivot_pair((torch.tensor(1), 2))
        ((3, 4), (1, 2))
        >>> pivot_pair(5)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: pivot must be a pair of token ids (a_id, b_id) or None (the mode), got 5
        """,
    )


def test_plots_pnll_by_distance():
    check_examples(
        "mlmprob.joints.plots",
        """
        >>> recs = [{"distance": 0, "metrics": {m: {"pair_logp": -2.0} for m in LABELS}}]
        >>> labels, counts, pnll = pnll_by_distance(recs)
        >>> labels[0], counts[:2], pnll["ag"][0]
        ('0', [1, 0], 1.0)
        """,
    )


def test_records_restore_nonfinite():
    check_examples(
        "mlmprob.joints.records",
        """
        >>> r = restore_nonfinite({"ci_gap": None, "metrics": {"mlm": {"pair_logp": None, "akl": 0.5, "gkl": None}}})
        >>> r["ci_gap"], r["metrics"]["mlm"]
        (nan, {'pair_logp': -inf, 'akl': 0.5, 'gkl': nan})
        """,
    )


def test_job_pair_units():
    check_examples(
        "mlmprob.joints.job",
        """
        >>> [u.id for u in pair_units(("random", "contiguous"), 2)]
        ['random/0', 'contiguous/0', 'random/1', 'contiguous/1']
        """,
    )
