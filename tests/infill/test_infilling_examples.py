"""Worked examples of mlmprob.infilling's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_spec_module():
    check_examples(
        "mlmprob.infilling.spec",
        """
        >>> InfillSpec(beam_size=3).settings()
        {'method': 'hcb', 'order': 'l2r', 'beam_size': 3, 'pivot': 'mask'}
        >>> InfillSpec(method="standard", pivot="A")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --pivot: the pivot is used only by method='hcb'
        """,
    )


def test_beam_module():
    check_examples(
        "mlmprob.infilling.beam",
        """
        >>> import torch
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
        >>> best = infill(m, [m.mask_id, m.mask_id], [0, 1], method="standard", beam_size=4)
        >>> [(c.tokens, round(c.score, 4)) for c in best]   # standard = exact log p on ExactMLM
        [((1, 1), -0.9163), ((1, 0), -1.204), ((0, 1), -1.6094), ((0, 0), -2.3026)]
        """,
    )


def test_spec_check_beam_size():
    check_examples(
        "mlmprob.infilling.spec",
        """
        >>> check_beam_size(10 ** 9)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: beam_size must be at most 10,000 (each fill kept is a model row per step and a row of
        the result), got 1000000000
        """,
    )


def test_beam_score_meaning():
    check_examples(
        "mlmprob.infilling.beam",
        """
        >>> score_meaning("standard")
        'log-probability of the fill in nats (chain rule: sum of log q(fill token | context), <= 0)'
        >>> score_meaning("hcb")
        'log-ratio in nats, not a probability (sum of log q(fill token) - log q(mask) per position; > 0: beats mask)'
        """,
    )


def test_baselines_proposal_logp():
    check_examples(
        "mlmprob.infilling.baselines",
        """
        >>> lp = torch.log(torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64))
        >>> proposal_logp(lp, SamplingConfig(top_p=0.7)).exp().round(decimals=6).tolist()
        [[0.625, 0.375, 0.0]]
        """,
    )


def test_stream_iter_gap_units():
    check_examples(
        "mlmprob.infilling.stream",
        """
        >>> [u.id for u in iter_gap_units([Record("a", "A__C_D"), Record("b", "AC")], "each")]
        ['a/gap1', 'a/gap2', 'b']
        """,
    )


def test_stream_gap_runs():
    check_examples(
        "mlmprob.infilling.stream",
        """
        >>> gap_runs([3, 4, 5, 9, 11, 12])
        [[3, 4, 5], [9], [11, 12]]
        """,
    )


def test_search_top_k_select():
    check_examples(
        "mlmprob.infilling.search",
        """
        >>> top_k_select(torch.tensor([0.1, 0.9, 0.5]), None, None, 1, 2).tolist()
        [1, 2]
        """,
    )


def test_exhaustive_enumerate_fills():
    check_examples(
        "mlmprob.infilling.exhaustive",
        """
        >>> enumerate_fills(torch.tensor([4, 7]), 2).tolist()
        [[4, 4], [4, 7], [7, 4], [7, 7]]
        """,
    )
