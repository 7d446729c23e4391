"""Worked examples of mlmprob.app's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_compute_positions_or_cdr():
    check_examples(
        "mlmprob.app.compute",
        """
        >>> vh = ("EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
        ...       "WGGDGFYAMDYWGQGTLVTVSS")
        >>> positions_or_cdr(vh, "h1"), positions_or_cdr(vh, "3-5")
        ([26, 27, 28, 29, 30, 31, 32, 33], [3, 4, 5])
        """,
    )


def test_compute_parse_sequences():
    check_examples(
        "mlmprob.app.compute",
        """
        >>> [(r.id, r.seq) for r in parse_sequences(">a x\\nAC\\nDE\\n>b\\nKL")]
        [('a', 'ACDE'), ('b', 'KL')]
        >>> [r.id for r in parse_sequences("the cat sat\\n\\na dog ran")]
        ['seq1', 'seq2']
        """,
    )


def test_render_colour():
    check_examples(
        "mlmprob.app.render",
        """
        >>> _colour(0.0), _colour(-2.5), _colour(-50.0)
        ('rgb(255,255,255)', 'rgb(234,147,148)', 'rgb(214,39,40)')
        """,
    )


def test_designer_parse_experts():
    check_examples(
        "mlmprob.app.designer",
        """
        >>> parse_experts([["antiberty", "local", 1], ["", "", ""], ["sapiens-vh", "raw", "0.5"], ["x", "local", 0]])
        [('antiberty', 'local', 1.0), ('sapiens-vh', 'raw', 0.5)]
        """,
    )


def test_designer_highlighted():
    check_examples(
        "mlmprob.app.designer",
        """
        >>> highlighted("ACD", "AGD")
        'A<mark class="mlmprob-mut" title="C2G">G</mark>D'
        """,
    )


def test_compute_clean_wild_type():
    check_examples(
        "mlmprob.app.compute",
        """
        >>> clean_wild_type(">wt\\nev ql\\nVE")
        'EVQLVE'
        """,
    )
