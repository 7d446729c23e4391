"""Worked examples of mlmprob.metrics's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_ranking_auroc_within():
    check_examples(
        "mlmprob.metrics.ranking",
        """
        >>> k = torch.tensor([1., 1, 2, 2])
        >>> float(auroc_within(torch.tensor([0., 1, 5, 4]), torch.tensor([0., 1, 0, 1]) + 2 * k))
        0.5
        >>> float(auroc_within(-k, torch.tensor([0., 1, 0, 1]) + 2 * k))
        0.5
        """,
    )
