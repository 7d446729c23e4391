"""Worked examples of mlmprob.designing's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_constraints_module():
    check_examples(
        "mlmprob.designing.constraints",
        """
        >>> c = Constraints.build("ANGS", AMINO_ACIDS, positions=(2, 3), max_mutations=1, forbid=("deamidation",),
        ...                       start_invalid=True)
        >>> c.violations("ANGS")
        ['forbidden motif deamidation (NG) at residue 2']
        >>> c.ok("ANQS"), c.ok("AQQS"), c.ok("CNQS")
        (True, False, False)
        >>> Constraints.build("ANGS", AMINO_ACIDS, forbid=("NG",), keep_parent_motifs=True).violations("NGGS")
        ['forbidden motif NG at residue 1']
        >>> Constraints.build("ANGS", AMINO_ACIDS, forbid=("deamidation",))
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: the parent violates a hard constraint: forbidden motif deamidation (NG) at residue 2 (pass start_invalid=True, --start-invalid, to start there anyway)
        """,
    )


def test_spec_module():
    check_examples(
        "mlmprob.designing.spec",
        """
        >>> DesignSpec(method="replica", temperatures=(1.0, 2.0)).settings()["temperatures"]
        [1.0, 2.0]
        >>> DesignSpec(positions=range(3, 5), allowed=[[3, "AG"]]).settings()["positions"]
        [3, 4]
        >>> DesignSpec(method="anneal", anneal_start=0.1, anneal_end=1.0)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: anneal_start must be at least anneal_end (the schedule cools), got 0.1 < 1.0
        >>> DesignSpec(temperatures=(1.0, 2.0))
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: temperatures is for method='replica', got (1.0, 2.0) with method='mh'
        """,
    )


def test_api_module():
    check_examples(
        "mlmprob.designing.api",
        """
        >>> import torch
        >>> from mlmprob import load_mlm
        >>> r = design(load_mlm("antiberty"), "EVQLVESGGGLVQPGGSLRLSCAAS", chains=2, steps=5, positions=(3, 4, 5),
        ...            max_mutations=2, forbid=("glycosylation", "NG"), generator=torch.Generator().manual_seed(0))
        >>> [len(row["sequence"]) for row in r.rows], r.names
        ([25, 25], ('antiberty',))
        >>> all(row["in_constraints"] and row["mutations"] <= 2 for row in r.rows)
        True
        """,
    )


def test_motifs_module():
    check_examples(
        "mlmprob.designing.motifs",
        """
        >>> check_motif("N[^P][ST]", "forbid", length=120)
        >>> check_motif("(A+)+D", "forbid")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: forbid motif '(A+)+D' repeats a group that holds a quantifier: matching it can take
        exponential time (regular expressions backtrack); repeat only fixed-length groups, e.g. (?:N[ST])+
        """,
    )


def test_api_check_batch():
    check_examples(
        "mlmprob.designing.api",
        """
        >>> check_batch(10 ** 6, 1, 20, 20)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: 1,000,000 chains of a 20-residue parent in one batch would keep about 27.4 GiB
        in memory, more than the ...: run fewer chains per call (each call's chains are independent), or mlmprob
        design, which runs one chain at a time
        """,
    )


def test_spec_check_weight():
    check_examples(
        "mlmprob.designing.spec",
        """
        >>> check_weight("hamming", 1e308)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: hamming must be a finite number no larger than 1e+09, got 1e+308
        """,
    )


def test_spec_parse_allowed():
    check_examples(
        "mlmprob.designing.spec",
        """
        >>> parse_allowed("31:STY")
        (31, 'STY')
        """,
    )


def test_motifs_motif_steps():
    check_examples(
        "mlmprob.designing.motifs",
        """
        >>> motif_steps([], 1, 120), motif_steps([8, 7], 1, 120), motif_steps([None, None], 1, 120)
        (121, 6776, 893101)
        """,
    )


def test_job_flat_row():
    check_examples(
        "mlmprob.designing.job",
        """
        >>> flat_row({"chain": 0, "energies": {"a": 1.0}, "total": 1.0})
        {'chain': 0, 'total': 1.0, 'energy_a': 1.0}
        """,
    )


def test_job_expert_labels():
    check_examples(
        "mlmprob.designing.job",
        """
        >>> expert_labels([("m", "local", 1.0), ("m", "raw", 0.5), ("n", "raw", 1.0)])
        ['m', 'm:raw', 'n']
        """,
    )


def test_job_chains_of():
    check_examples(
        "mlmprob.designing.job",
        """
        >>> chains_of(2)
        [Chain(id='chain0', number=0), Chain(id='chain1', number=1)]
        """,
    )


def test_api_group_size():
    check_examples(
        "mlmprob.designing.api",
        """
        >>> group_size(1, 122, 20)  # the trastuzumab VH
        5979
        """,
    )
