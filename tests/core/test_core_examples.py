"""Worked examples of mlmprob's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_settings_module():
    check_examples(
        "mlmprob.settings",
        """
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Demo(Spec):
        ...     size: int = 1
        ...     names: tuple = ("a",)
        ...     def __post_init__(self):
        ...         check_int("size", self.size, 1, "a positive integer")
        >>> Demo(size=3).settings()
        {'size': 3, 'names': ['a']}
        >>> Demo().replace(size=0)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: size must be a positive integer, got 0
        """,
    )


def test_fields_module():
    check_examples(
        "mlmprob.fields",
        """
        >>> import argparse
        >>> from dataclasses import dataclass
        >>> from mlmprob.argtypes import positive_int
        >>> @dataclass(frozen=True)
        ... class Demo:
        ...     beam_size: int = option(5, "fills kept", type=positive_int, aliases=("-k",))
        ...     order: str = option("l2r", "the order", choices=("l2r", "best"))
        >>> p = argparse.ArgumentParser(prog="demo")
        >>> add_field_flags(p, Demo)
        >>> vars(p.parse_args(["-k", "3"])), vars(p.parse_args([]))
        ({'beam_size': 3}, {})
        >>> [a.help for a in p._actions[1:]]
        ['fills kept (default: 5)', 'the order (default: l2r)']
        """,
    )


def test_argtypes_module():
    check_examples(
        "mlmprob.argtypes",
        """
        >>> positive_int("3"), nonnegative_int("0"), positive_float("0.5"), probability("1"), finite_float("-2")
        (3, 0, 0.5, 1.0, -2.0)
        >>> positive_int("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a positive integer, got '0'
        >>> probability("nan")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a probability in (0, 1], got 'nan'
        """,
    )


def test_numbering_cdr_span():
    check_examples(
        "mlmprob.numbering",
        """
        >>> vl = ("DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPT"
        ...       "FGQGTKVEIK")
        >>> [vl[slice(*cdr_span(vl, c))] for c in ("L1", "L2", "L3")]
        ['QDVNTA', 'SAS', 'QQHYTTPPT']
        >>> cdr_span(vl, "H3")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: no CDR-H3: anarcism (IMGT numbering) finds only a kappa light-chain domain in
        'DIQMTQSPSSLSASVGDRVT...', not a heavy-chain (VH) one
        """,
    )


def test_argtypes_checked():
    check_examples(
        "mlmprob.argtypes",
        """
        >>> def check_tol(v):
        ...     if not 0 <= v < float("inf"):
        ...         raise MLMProbError(f"tol must be a finite number >= 0, got {v!r}")
        >>> checked(float, check_tol)("0")
        0.0
        >>> checked(float, check_tol)("nan")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a finite number >= 0, got nan
        """,
    )


def test_positions_resolve():
    check_examples(
        "mlmprob.positions",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.zeros(2, 2, 2))
        >>> resolve(m, torch.tensor([[0, 2, 1]]), [1, 2], TOKENS_AND_MASKS).tolist()
        [[False, True, True]]
        >>> resolve(m, torch.tensor([[0, 2, 1]]), [1, 2], TOKENS)
        Traceback (most recent call last):
        ...
        mlmprob.errors.PositionsError: position 1 of sequence 0 holds the mask token; a scored position needs a token
        """,
    )


def test_scoring_module():
    check_examples(
        "mlmprob.scoring",
        """
        >>> ScoreSpec(likelihood="loglik", n_orders=3).recorded()  # doctest: +NORMALIZE_WHITESPACE
        {'whole_word': False, 'per_token': False, 'likelihood': 'loglik', 'order': 'random', 'n_orders': 3, 'per_order': False,
        'seed': 0}
        >>> ScoreSpec(pll="one-pass", whole_word=True)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --pll one-pass gives per-sequence scores only (no --per-token, no --whole-word)
        """,
    )


def test_positions_word_mask():
    check_examples(
        "mlmprob.positions",
        """
        >>> w = torch.tensor([-1, 0, 1, 1, 2, -1])                  # CLS, word 1, word 2 (two tokens), word 3, SEP
        >>> word_mask(w, [2, 3]).tolist()
        [False, False, True, True, True, False]
        >>> word_mask(w, [4], "--positions")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --positions: position 4 is outside the sequence's 3 residues/words
        """,
    )


def test_positions_parse_numbers():
    check_examples(
        "mlmprob.positions",
        """
        >>> parse_numbers("3, 5,10-12")
        [3, 5, 10, 11, 12]
        >>> parse_numbers("0,4", "--positions")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --positions: position 0; positions count from 1: they are residue/word numbers, 1-based
        as in mutation strings like A23G (sample --positions was 0-based in earlier versions)
        """,
    )


def test_positions_default_mask():
    check_examples(
        "mlmprob.positions",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.zeros(2, 2, 2))                       # ids 0, 1; mask id 2
        >>> ids = torch.tensor([[0, 2, 1]])
        >>> default_mask(m, ids, TOKENS).tolist(), default_mask(m, ids, TOKENS_AND_MASKS).tolist()
        ([[True, False, True]], [[True, True, True]])
        >>> default_mask(m, ids, WORDS_AND_MASKS, word_ids=torch.tensor([[-1, -1, 0]])).tolist()
        [[False, True, True]]
        """,
    )


def test_gaps_gap_tokens():
    check_examples(
        "mlmprob.gaps",
        """
        >>> gap_tokens("AC[MASK]x3D<mask>E_")
        5
        >>> gap_tokens("EV[MASK]x999999999999GG", 160)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: a gap of 999,999,999,999 tokens ('[MASK]x999999999999') is longer than the model
        reads (160 tokens at most)
        """,
    )


def test_errors_exit_status():
    check_examples(
        "mlmprob.errors",
        """
        >>> import contextlib, io
        >>> def bad():
        ...     raise MLMProbError("no such thing")
        >>> with contextlib.redirect_stderr(io.StringIO()) as err:
        ...     status = exit_status(bad)
        >>> status, err.getvalue(), exit_status(lambda: None)
        (2, 'error: no such thing\\n', 0)
        """,
    )


def test_energies_energies_from_logits():
    check_examples(
        "mlmprob.energies",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))   # mask id 2
        >>> ids = torch.tensor([[1, 1]])
        >>> rows = torch.stack([m.logits(torch.tensor([[2, 1]]))[0, 0], m.logits(torch.tensor([[1, 2]]))[0, 1]])
        >>> e_local, e_raw = energies_from_logits(rows[None], ids, torch.ones(1, 2, dtype=torch.bool))
        >>> bool(e_local == energy(m, ids)), bool(e_raw == energy(m, ids, kind="raw"))
        (True, True)
        """,
    )


def test_argtypes_device_list():
    check_examples(
        "mlmprob.argtypes",
        """
        >>> device_list("cuda:0, cuda:1")
        'cuda:0, cuda:1'
        >>> device_list("cpu,meta")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be devices like cuda:0,cuda:1, each auto or a device of type cpu, cuda, mps,
        got 'meta'
        """,
    )


def test_settings_check_ladder():
    check_examples(
        "mlmprob.settings",
        """
        >>> check_ladder([1, 2.5])
        (1, 2.5)
        >>> check_ladder((2.0, 1.0))
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: temperatures must increase from the target's, got (2.0, 1.0)
        """,
    )


def test_numbering_parse_cdr():
    check_examples(
        "mlmprob.numbering",
        """
        >>> parse_cdr("h3"), parse_cdr("CDR-L1"), parse_cdr(" cdrh2 ")
        ('H3', 'L1', 'H2')
        >>> parse_cdr("H4")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: unknown CDR 'H4': use one of H1, H2, H3, L1, L2, L3
        """,
    )


def test_numbering_check_scheme():
    check_examples(
        "mlmprob.numbering",
        """
        >>> check_scheme("H3", "kabat")
        >>> check_scheme("L1", "kabat")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: --numbering kabat gives CDR-H3 only (Kabat H95-H102 = IMGT 107-117): anarcism numbers
        in IMGT alone, so Kabat and Chothia CDR-L1 are not available; use --numbering imgt
        """,
    )


def test_numbering_module():
    check_examples(
        "mlmprob.numbering",
        """
        >>> vh = ("EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
        ...       "WGGDGFYAMDYWGQGTLVTVSS")
        >>> s, e = cdr_span(vh, "H3"); vh[s:e]
        'SRWGGDGFYAMDY'
        >>> {name: vh[s:e] for name, (s, e) in cdr_spans(vh).items()}
        {'H1': 'GFNIKDTY', 'H2': 'IYPTNGYT', 'H3': 'SRWGGDGFYAMDY'}
        """,
    )


def test_lazy_module():
    check_examples(
        "mlmprob.lazy",
        """
        >>> import sys, types
        >>> pkg = sys.modules["demo_pkg"] = types.ModuleType("demo_pkg")
        >>> pkg.__getattr__, pkg.__dir__, pkg.__all__ = exports("demo_pkg", {"dumps": "json", "decoder": "json.decoder"})
        >>> pkg.__getattr__("dumps")({"a": 1}), pkg.__all__
        ('{"a": 1}', ['dumps', 'decoder'])
        >>> del sys.modules["demo_pkg"]
        """,
    )


def test_energies_as_row():
    check_examples(
        "mlmprob.energies",
        """
        >>> as_row(torch.tensor([[3, 4]])).tolist()
        [3, 4]
        >>> as_row(torch.zeros(2, 2, dtype=torch.long), "wild_type")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: wild_type must have shape [L] or [1, L] with L > 0, got (2, 2)
        """,
    )


def test_batching_read_logits():
    check_examples(
        "mlmprob.batching",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
        >>> x = torch.tensor([[2, 1], [1, 2]])                 # id 2 is the mask: p(x1 | x2 = 1), p(x2 | x1 = 1)
        >>> read_logits(m, x, torch.tensor([0, 1]), torch.tensor([0, 1])).log_softmax(-1).exp()[:, :2]
        tensor([[0.3333, 0.6667],
                [0.4286, 0.5714]])
        """,
    )


def test_argtypes_device_name():
    check_examples(
        "mlmprob.argtypes",
        """
        >>> device_name("cuda:1"), device_name(" cpu ")
        ('cuda:1', 'cpu')
        >>> device_name("meta")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be auto or a device of type cpu, cuda, mps (cuda:1: one GPU), got 'meta'
        """,
    )


def test_energies_check_input_ids():
    check_examples(
        "mlmprob.energies",
        """
        >>> check_input_ids(None, ["EVQL"])  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: input_ids must be integer token ids [B, L], got list ['EVQL']: encode text first
        (mlm.encode(["EVQL..."]).input_ids)
        """,
    )


def test_energies_as_input_ids():
    check_examples(
        "mlmprob.energies",
        """
        >>> as_input_ids(None, ["EVQL", [5, 6]])  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: input_ids mixes text and token ids: give sequences (strings) or token ids [B, L],
        not both
        """,
    )


def test_settings_check_count():
    check_examples(
        "mlmprob.settings",
        """
        >>> check_count("beam_size", 10 ** 9, 10_000, "each is a model row")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: beam_size must be at most 10,000 (each is a model row), got 1000000000
        """,
    )


def test_gaps_expand_gaps():
    check_examples(
        "mlmprob.gaps",
        """
        >>> expand_gaps("AC[MASK]x3D<mask>E_")
        'AC___D_E_'
        >>> expand_gaps("the [MASK]x2 sat", "[MASK]")
        'the [MASK][MASK] sat'
        """,
    )


def test_energies_pll():
    check_examples(
        "mlmprob.energies",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
        >>> round(float(pll(m, torch.tensor([[1, 1]]))), 4)  # log(2/3) + log(4/7)
        -0.9651
        """,
    )


def test_cli_os_error_message():
    check_examples(
        "mlmprob.cli",
        """
        >>> os_error_message(OSError(28, "No space left on device", "out.jsonl"))
        'cannot read or write out.jsonl: No space left on device'
        >>> os_error_message(FileNotFoundError(2, "No such file or directory", "a.tmp", None, "a"))
        'cannot read or write a.tmp -> a: No such file or directory'
        """,
    )


def test_jsonl_json_safe():
    check_examples(
        "mlmprob.jsonl",
        """
        >>> import torch
        >>> json_safe({"a": float("nan"), "b": [1.5, float("-inf"), (torch.tensor(2.0), torch.tensor([1, 2]))]})
        {'a': None, 'b': [1.5, None, [2.0, [1, 2]]]}
        """,
    )


def test_energies_target_scores():
    check_examples(
        "mlmprob.energies",
        """
        >>> lp, raw = target_scores(torch.tensor([[0.0, 2.0]]), torch.tensor([1]))
        >>> round(float(lp[0]), 4), float(raw[0])
        (-0.1269, 2.0)
        """,
    )


def test_energies_row_sum():
    check_examples(
        "mlmprob.energies",
        """
        >>> x = torch.tensor([[0.1, 0.2, 0.3, 1e-17, 0.7, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
        >>> bool(row_sum(x) == row_sum(x[:, :5]))
        True
        """,
    )


def test_settings_json_value():
    check_examples(
        "mlmprob.settings",
        """
        >>> json_value(("a", (1, 2))), json_value(None)
        (['a', [1, 2]], None)
        """,
    )


def test_positions_word_positions():
    check_examples(
        "mlmprob.positions",
        """
        >>> word_positions(torch.tensor([-1, 0, 1, 1, 2, -1]), [3, 2])
        [2, 3, 4]
        """,
    )


def test_positions_token_numbers():
    check_examples(
        "mlmprob.positions",
        """
        >>> token_numbers(torch.tensor([-1, 0, 1, 1, -1, -1, 4, -1]), torch.tensor([2, 5, 6, 7, 9, 9, 8, 3]), 9)
        [0, 1, 2, 2, 3, 4, 5, 0]
        """,
    )


def test_numbering_mask_residues():
    check_examples(
        "mlmprob.numbering",
        """
        >>> mask_residues("ACDEF", (1, 3)), mask_residues("A C D E F", (1, 3))
        ('A__EF', 'A _ _ E F')
        """,
    )


def test_numbering_is_cdr_name():
    check_examples(
        "mlmprob.numbering",
        """
        >>> is_cdr_name("cdr-h3"), is_cdr_name("3-5")
        (True, False)
        """,
    )


def test_jsonl_dumps():
    check_examples(
        "mlmprob.jsonl",
        """
        >>> dumps({"ess": float("nan"), "n": 3})
        '{"ess": null, "n": 3}'
        """,
    )


def test_gaps_count_gaps():
    check_examples(
        "mlmprob.gaps",
        """
        >>> count_gaps("AC___D<mask>E"), count_gaps("the [MASK] [MASK]x2 sat _"), count_gaps("ACDE")
        (2, 2, 0)
        """,
    )


def test_defaults_module():
    check_examples(
        "mlmprob.defaults",
        """
        >>> MODEL, DEVICE, DTYPE, VARIANTS_MODEL
        ('antiberty', 'auto', 'weights', 'sapiens-vh')
        """,
    )


def test_cli_plain():
    check_examples(
        "mlmprob.cli",
        r"""
        >>> plain("``mlmprob infill``: see :func:`~mlmprob.infill` and :class:`mlmprob.InfillSpec`")
        'mlmprob infill: see infill and mlmprob.InfillSpec'
        """,
    )


def test_alphabet_module():
    check_examples(
        "mlmprob.alphabet",
        """
        >>> len(AMINO_ACIDS), is_protein("EVQLV"), is_protein("EVQLX"), is_protein("")
        (20, True, False, False)
        """,
    )
