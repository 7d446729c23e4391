"""The design target's terms and constraints, its bad inputs (one line each) and the API."""

import pytest
import torch
from conftest import tiny_hf
from design_toys import PARENT, oracle, other_expert, toy_target

import mlmprob
from mlmprob import MLMProbError
from mlmprob.designing import Constraints, DesignSpec, Expert, Hamming, Oracle, mutant_string
from mlmprob.designing.api import build_target, run_design
from mlmprob.designing.constraints import PRESETS, motif_patterns


@pytest.fixture(scope="module")
def bert():
    return tiny_hf("bert", seed=1, init=0.25)


def test_each_expert_reads_the_string_through_its_own_tokenizer_and_agrees_with_energy(bert):
    other = other_expert()
    target = build_target([bert, Expert(other, kind="raw", name="o")], "ACEGK", DesignSpec())
    seqs = ["ACEGK", "GDCAK", "KKKKK"]
    E, rows = target.energies(target.encode(seqs), rows_of=0)
    for k, (m, kind) in enumerate([(bert, "local"), (other, "raw")]):
        want = mlmprob.energy(m, m.encode(seqs).input_ids, kind=kind)
        assert torch.allclose(E[:, k], want, rtol=0, atol=1e-9)
    # the proposal rows are the expert's single-site conditionals at the alphabet's letters
    ids = bert.encode(["AC_GK"]).input_ids
    logits = bert.logits(ids)[0, 3].double()
    letters = [bert.tokenizer.token_to_id[c] for c in target.alphabet]
    assert torch.allclose(rows[0, 2], logits[letters], atol=1e-5)
    assert target.alphabet == "ACDEFGHIKL"  # the letters both tokenizers read


def test_terms_report_their_own_values_and_the_total_is_weighted(bert):
    spec = DesignSpec(hamming=0.5)
    target = build_target([Expert(bert, weight=2.0), Oracle(oracle, weight=3.0, maximize=False)], "ACE", spec)
    E, _ = target.energies(target.encode(["ACE", "GCG"]))
    assert target.names == ("tiny-bert", "oracle", "hamming")
    assert E[:, 1].tolist() == pytest.approx(oracle(["ACE", "GCG"]))
    assert E[:, 2].tolist() == [0.0, 2.0]
    assert torch.allclose(target.total(E), 2 * E[:, 0] + 3 * E[:, 1] + 0.5 * E[:, 2])
    assert target.experts[0].expert.label == "tiny-bert"


def test_constraints_presets_and_mutant_strings():
    assert mutant_string("AKLV", "GKLR") == "A1G:V4R" and mutant_string("AK", "AK") == ""
    c = Constraints.build("ACDKC", positions=(1, 2, 4), forbid=("liabilities",), max_mutations=1)
    assert c.allowed[2] == "D" and len(c.allowed[0]) == 20
    assert c.ok("GCDKC")
    assert c.violations("NCSKC") == [
        "S at residue 3 is not allowed there (D)",
        "2 mutations from the parent, more than 1",
        "forbidden motif glycosylation (N[^P][ST]) at residue 1",
    ]
    assert c.violations("ACDGC") == ["forbidden motif isomerization (DG) at residue 3"]
    assert c.violations("ACDKA")[-1] == "an unpaired cysteine (1 C, an odd number)"
    assert [m[0] for m in motif_patterns(["liabilities"], "forbid")] == list(PRESETS)
    assert Constraints.build("AG", require=("G$",)).violations("GA") == ["required motif G$ is missing"]


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"allowed": ((2, "XZ"),)}, "position 2 has an empty allowed set"),
        ({"allowed": ((2, "G"),), "positions": (1,)}, "position 2 has an empty allowed set"),
        ({"forbid": ("N[ST",)}, "forbid motif 'N[ST' is not a valid regular expression"),
        ({"require": ("(",)}, "require motif '(' is not a valid regular expression"),
        ({"forbid": ("isomerization",)}, "the parent violates a hard constraint: forbidden motif isomerization"),
        ({"require": ("W",)}, "the parent violates a hard constraint: required motif W is missing"),
        ({"positions": (9,)}, "positions: position 9 is not a residue number in 1..4"),
    ],
)
def test_bad_constraints_are_one_line(bert, kw, message):
    with pytest.raises(MLMProbError) as e:
        build_target(bert, "ADGK", DesignSpec(**kw))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_empty_allowed_set_is_refused_by_the_spec():
    with pytest.raises(MLMProbError, match="position 3 has an empty allowed set"):
        DesignSpec(allowed=((3, ""),))


def test_an_expert_that_cannot_read_the_parent(bert):
    with pytest.raises(MLMProbError, match="expert tiny-bert cannot read the parent: .*'M' at residue 2"):
        build_target(bert, "AMC", DesignSpec())


@pytest.mark.parametrize(
    "fn,message",
    [
        (lambda s: [1.0], "returned shape (1,) for 2 sequences"),
        (lambda s: [[1.0, 2.0], [3.0, 4.0]], "returned shape (2, 2) for 2 sequences"),
        (lambda s: [float("nan") if x == "GCE" else 0.0 for x in s], "returned nan for sequence GCE"),
        (lambda s: ["a", "b"], "must return one number per sequence"),
        (lambda s: 1 / 0, "the oracle raised ZeroDivisionError: division by zero"),  # was a traceback in the CLI
    ],
)
def test_a_bad_oracle_stops_the_run_naming_the_sequence(bert, fn, message):
    target = build_target([bert, Oracle(fn)], "ACE", DesignSpec())
    with pytest.raises(MLMProbError) as e:
        target.energies(target.encode(["ACE", "GCE"]))
    assert message in str(e.value)


def test_a_parent_outside_c_may_start_there_and_the_chains_enter_c(bert):
    spec = DesignSpec(forbid=("isomerization",), start_invalid=True, chains=8, steps=30, positions=(2, 3))
    r = mlmprob.design(bert, "ADGK", spec, generator=torch.Generator().manual_seed(0))
    assert sum(row["in_constraints"] for row in r.rows) >= 6
    assert all("DG" not in row["sequence"] for row in r.rows if row["in_constraints"])


def test_the_api_is_the_callable_package_with_overrides_and_is_reproducible(bert):
    kw = dict(chains=3, steps=6, positions=(2, 3), max_mutations=1)
    a = mlmprob.design([bert, oracle], "ACEK", generator=torch.Generator().manual_seed(5), **kw)
    b = mlmprob.design([bert, oracle], "ACEK", DesignSpec(**kw), generator=torch.Generator().manual_seed(5))
    assert a.rows == b.rows and a.names == ("tiny-bert", "oracle")
    for row in a.rows:
        assert row["mutations"] <= 1 and set(row["energies"]) == {"tiny-bert", "oracle"}
        assert row["mutant"] == mutant_string("ACEK", row["sequence"])
    assert a.stats["model_rows"] > 0 and len(a.stats["temperatures"]) == 1


def test_annealing_and_uniform_proposals_and_bad_proposals(bert):
    target, spec = toy_target(method="anneal", chains=6, steps=20, proposal="uniform", temperature=1.0)
    r = run_design(target, spec, torch.Generator().manual_seed(1))
    assert all(row["best_total"] <= row["total"] + 1e-12 for row in r.rows)
    assert spec.temperature_at(0) == 10.0 and spec.temperature_at(19) == pytest.approx(0.1)
    with pytest.raises(MLMProbError, match="the proposal must be one of the experts \\(first, other\\)"):
        toy_target(proposal="oracle")[1].kernel(target)
    with pytest.raises(MLMProbError, match="two terms are both named"):
        build_target([Expert(tiny_hf("bert", seed=1)), Expert(tiny_hf("bert", seed=2))], PARENT, DesignSpec())
    with pytest.raises(MLMProbError, match="no position may change"):
        run_design(
            build_target(target.terms[0], "ACE", DesignSpec(positions=(1,), allowed=((1, "A"),))),
            DesignSpec(),
            torch.Generator(),
        )


def test_terms_are_checked():
    with pytest.raises(MLMProbError, match="weight of term hamming must be a finite number"):
        Hamming(float("inf"))
    with pytest.raises(MLMProbError, match="a design term must be"):
        build_target([3], "ACE", DesignSpec())
    with pytest.raises(MLMProbError, match="temperatures must increase"):
        DesignSpec(method="replica", temperatures=(2.0, 1.0))
