"""Worked examples of mlmprob.commands's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_common_spec_of():
    check_examples(
        "mlmprob.commands.common",
        """
        >>> from dataclasses import dataclass
        >>> from mlmprob.settings import Spec
        >>> @dataclass(frozen=True)
        ... class Demo(Spec):
        ...     size: int = 1
        ...     names: tuple = ("a",)
        >>> spec_of(Demo, argparse.Namespace(size=3, other=0)).settings()
        {'size': 3, 'names': ['a']}
        """,
    )


def test_sample_check_out():
    check_examples(
        "mlmprob.commands.sample",
        """
        >>> check_out("runs/x.tsv"), check_out("runs/tras_mh"), check_out("runs/v1.2")
        (None, None, None)
        >>> check_out("x.fasta")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --out 'x.fasta': give a folder (no suffix) for a run folder, or a .jsonl, .tsv or
        .parquet file for streamed rows
        """,
    )


def test_check_model_check_lengths():
    check_examples(
        "mlmprob.commands.check_model",
        """
        >>> _check_lengths([5, 202], 160)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: sequence 2 has 202 tokens, more than the model's 160 positions; check-model reads each
        sequence whole: give a shorter --seq
        """,
    )


def test_check_model_picked():
    check_examples(
        "mlmprob.commands.check_model",
        """
        >>> import torch
        >>> picked(torch.tensor([False, True, True, True, True, True, False]), 3)
        [1, 3, 5]
        """,
    )


def test_sample_is_streamed():
    check_examples(
        "mlmprob.commands.sample",
        """
        >>> is_streamed(None), is_streamed("runs/x.parquet"), is_streamed("runs/tras_mh")
        (True, True, False)
        """,
    )


def test_resume_positions_compact_numbers():
    check_examples(
        "mlmprob.commands.resume_positions",
        """
        >>> compact_numbers([10, 3, 11, 12, 5, 4])
        '3-5,10-12'
        """,
    )


def test_resume_positions_canonical_positions():
    check_examples(
        "mlmprob.commands.resume_positions",
        """
        >>> canonical_positions("12, 10-11,3"), canonical_positions(None)
        ('3,10-12', None)
        """,
    )


def test_design_parse_expert():
    check_examples(
        "mlmprob.commands.design",
        """
        >>> parse_expert("sapiens-vh:raw:0.5"), parse_expert("antiberty"), parse_expert("m:2")
        (('sapiens-vh', 'raw', 0.5), ('antiberty', 'local', 1.0), ('m', 'local', 2.0))
        """,
    )
