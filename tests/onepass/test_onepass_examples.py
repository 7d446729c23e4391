"""Worked examples of mlmprob.onepass's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_spec_module():
    check_examples(
        "mlmprob.onepass.spec",
        """
        >>> PLLSpec(method="fast")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: unknown PLL method 'fast'; use one of exact, one_pass, unmasked
        >>> OnePassSpec().method, OnePassSpec(correction="c.safetensors").settings()
        ('one_pass', {'method': 'one_pass', 'correction': 'c.safetensors'})
        """,
    )


def test_correction_calibrate_hint():
    check_examples(
        "mlmprob.onepass.correction",
        """
        >>> class M: name = "my/hub-model"
        >>> calibrate_hint(M())  # doctest: +NORMALIZE_WHITESPACE
        "no one-pass correction for model 'my/hub-model': fit one with `mlmprob calibrate SEQUENCES --model my/hub-model
        --out C.safetensors`, then pass correction='C.safetensors' (CLI: --correction C.safetensors)"
        """,
    )


def test_scoring_spearman():
    check_examples(
        "mlmprob.onepass.scoring",
        """
        >>> spearman([1, 2, 3, 4], [10, 20, 40, 30])
        0.8
        """,
    )
