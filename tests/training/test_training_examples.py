"""Worked examples of mlmprob.training's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_masking_corrupt():
    check_examples(
        "mlmprob.training.masking",
        """
        >>> g = torch.Generator().manual_seed(0)
        >>> ids = torch.tensor([[5, 6, 7, 8]])
        >>> sel = torch.tensor([[False, True, False, True]])
        >>> x, y = corrupt(ids, sel, (1.0, 0.0, 0.0), 4, torch.tensor([5, 6, 7, 8]), g)
        >>> x.tolist(), y.tolist()
        ([[5, 4, 7, 4]], [[-100, 6, -100, 8]])
        """,
    )


def test_wordpiece_learn_vocab():
    check_examples(
        "mlmprob.training.wordpiece",
        """
        >>> learn_vocab({"abab": 3, "ab": 1, "ba": 1}, 10, ["[UNK]"])
        ['[UNK]', 'a', 'b', '##a', '##b', 'ab', '##ab', 'abab', 'ba']
        >>> learn_vocab({"xyz": 1}, 1, ["[UNK]"])      # all characters bare, non-initial ones also with ##
        ['[UNK]', 'x', 'y', 'z', '##y', '##z']
        """,
    )


def test_masking_select_uniform():
    check_examples(
        "mlmprob.training.masking",
        """
        >>> sel = select_uniform(torch.ones(4000, 5, dtype=torch.bool), torch.Generator().manual_seed(0))
        >>> counts = torch.bincount(sel.sum(1), minlength=6)
        >>> int(counts[0]), bool((counts[1:] - 800).abs().max() < 100)       # k = 1..5, each about 4000 / 5 times
        (0, True)
        """,
    )


def test_wordpiece_words_of():
    check_examples(
        "mlmprob.training.wordpiece",
        """
        >>> sorted(words_of(["The cat, the CAT."]).items())
        [(',', 1), ('.', 1), ('cat', 2), ('the', 2)]
        """,
    )


def test_masking_n_selected():
    check_examples(
        "mlmprob.training.masking",
        """
        >>> n_selected(torch.tensor([0, 1, 6, 10, 20]), 0.15).tolist()
        [0, 1, 1, 2, 3]
        """,
    )


def test_masking_derive_seed():
    check_examples(
        "mlmprob.training.masking",
        """
        >>> derive_seed(0, "mask", 3) == derive_seed(0, "mask", 3) != derive_seed(0, "mask", 4)
        True
        """,
    )


def test_data_split_heldout():
    check_examples(
        "mlmprob.training.data",
        """
        >>> split_heldout(["a", "b", "c", "d"], 0.25, 0)[1] == split_heldout(["a", "b", "c", "d"], 0.25, 0)[1]
        True
        """,
    )
