"""Red team, third round (issue 49) on design: a resume that notices an edited oracle, capped expert weights, motifs of
bounded cost (no nested quantifiers, counts up to 10,000, upper-case residues), the same model as two experts, an
oracle that raises SystemExit, and a chain count whose batch would not fit in memory. Tiny random BERTs only."""

from __future__ import annotations

import json
import uuid

import pytest
import torch
from conftest import tiny_hf

from mlmprob import MLMProbError
from mlmprob.cli import main
from mlmprob.designing import DesignSpec, Expert, Hamming, Oracle, design
from mlmprob.designing.constraints import Constraints, motif_patterns

PARENT = "EVQLVESGGGLVQPGGSLRLS"
VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYW"
    "GQGTLVTVSS"
)  # trastuzumab VH


def _design(model, *extra, parent=PARENT) -> list[str]:
    return ["design", parent, "--model", str(model), "--chains", "2", "--steps", "2", "--device", "cpu"] + [
        "--no-progress",
        *map(str, extra),
    ]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def _oracle_module(tmp_path, monkeypatch, body: str) -> tuple[str, object]:
    """A module of its own (a fresh name: nothing cached) holding ``f``, importable from ``tmp_path``."""
    name = f"redteam3_oracle_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:f", path


# -- item 2: an edited oracle is noticed on resume ------------------------------------------------------------------
def test_resume_refuses_an_edited_oracle(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    oracle, path = _oracle_module(tmp_path, monkeypatch, "def f(seqs):\n    return [s.count('G') for s in seqs]\n")
    out = tmp_path / "d.jsonl"
    argv = _design(tiny_bert_dir, "--oracle", oracle, "--allow-code", "--out", out)
    assert main(argv) == 0
    config = json.loads(out.with_name("d.jsonl.meta.json").read_text())["config"]
    assert config["oracle_sha256"].startswith("sha256:")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0  # the same source: resumed
    capsys.readouterr()
    path.write_text("def f(seqs):\n    return [-s.count('G') for s in seqs]\n")
    assert main([*argv, "--resume"]) == 2
    err = _one_line(capsys)
    assert f"oracle {oracle}" in err and "changed" in err, err


# -- item 4: weights capped, an oracle's overflow named, maximize a bool ---------------------------------------------
def test_an_expert_weight_is_capped_like_hamming(tiny_bert_dir, capsys):
    assert main(_design(tiny_bert_dir, "--expert", f"{tiny_bert_dir}:local:1e308")) == 2
    err = _one_line(capsys)
    assert "--expert" in err and "no larger than 1e+09" in err, err
    with pytest.raises(SystemExit) as e:  # argparse's own refusal: the same cap
        main(_design(tiny_bert_dir, "--hamming", "1e308"))
    assert e.value.code == 2 and "no larger than 1e+09" in _one_line(capsys)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: Expert(m, weight=1e308),
        lambda m: Oracle(len, weight=-1e10),
        lambda m: Hamming(1e300),
        lambda m: DesignSpec(hamming=1e308),
    ],
)
def test_the_api_caps_weights_too(make):
    with pytest.raises(MLMProbError, match="no larger than"):
        make(tiny_hf("bert"))


def test_an_oracle_value_beyond_float_is_one_error_naming_it():
    with pytest.raises(MLMProbError, match="oracle big returned a number too large"):
        Oracle(lambda seqs: [10**400 for _ in seqs], name="big").energies(["ACD"])


@pytest.mark.parametrize("value", ["no", 1, None])
def test_maximize_must_be_a_bool(value):
    with pytest.raises(MLMProbError, match="maximize must be True or False"):
        Oracle(len, maximize=value)


# -- item 5 and 7: motifs of bounded cost ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "motif,message",
    [
        ("(.+)+Z", "repeats a group that holds a quantifier"),
        ("(A+)+D", "repeats a group that holds a quantifier"),
        ("(?:A|AA)+D", "repeats a group that holds an alternation"),
        ("(A{1,3}){5}D", "repeats a group that holds a quantifier"),
        ("A{99999999999}", "a repetition count above 10,000"),
        ("A{20000}", "a repetition count above 10,000"),
        ("C{3,20001}", "a repetition count above 10,000"),
        ("ng", "lower-case letter 'n': motifs match upper-case residues"),
        ("N[st]", "lower-case letter 's': motifs match upper-case residues"),
        ("[a-z]G", "lower-case letter 'a': motifs match upper-case residues"),
    ],
)
@pytest.mark.parametrize("what", ["forbid", "require"])
def test_a_motif_of_unbounded_cost_or_wrong_case_is_refused(motif, message, what):
    with pytest.raises(MLMProbError, match=f"{what} motif") as e:
        DesignSpec(**{what: (motif,)})
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--forbid", "(.+)+Z"], "forbid motif '(.+)+Z' repeats a group that holds a quantifier"),
        (["--forbid", "(A+)+D", "--keep-parent-motifs"], "repeats a group that holds a quantifier"),
        (["--require", "(A+)+C"], "require motif '(A+)+C' repeats a group that holds a quantifier"),
        (["--forbid", "a{99999999999}"], "a repetition count above 10,000"),
        (["--forbid", "ng"], "lower-case letter 'n': motifs match upper-case residues"),
        (["--forbid", ".*.*.*.*Z"], "up to about"),
    ],
)
def test_the_cli_refuses_such_motifs_before_any_model_loads(extra, message, capsys):
    parent = VH if ".*" in extra[1] or "(.+)" in extra[1] else "A" * 28 + "C"
    assert main(["design", parent, "--model", "no-such-model-folder", "--no-progress", *extra]) == 2
    err = _one_line(capsys)
    assert message in err, err


def test_motifs_that_cost_little_still_work():
    ok = ["NG", "N[^P][ST]", "C.{3,10}W", "(?:N[ST]){2}", "[A-H]+G", ".*Z", "(?i)NG", "\\w"]
    assert len(motif_patterns(ok, "forbid", length=len(VH))) == len(ok)
    c = Constraints.build("ACDEFGC", forbid=("liabilities", "GGG"), require=("C.E",))
    assert c.ok("ACDEFGC") and not c.ok("ACDGGGC")


def test_the_cost_bound_scales_with_the_parent():
    motif_patterns([".*.*.*Z"], "forbid", length=60)  # a short parent: cheap
    with pytest.raises(MLMProbError, match="forbid motif '.*.*.*Z' would take up to about"):
        motif_patterns([".*.*.*Z"], "forbid", length=1000)


# -- item 9: the same model as two experts ------------------------------------------------------------------------------
def test_the_same_model_local_and_raw_is_two_named_experts(tiny_bert_dir, capsys):
    m = str(tiny_bert_dir)
    assert main(_design(tiny_bert_dir, "--expert", m, "--expert", f"{m}:raw:0.5")) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {f"energy_{m}", f"energy_{m}:raw"} <= set(rows[0]) and len(rows) == 2


def test_the_same_model_and_kind_twice_is_refused_naming_the_rule(tiny_bert_dir, capsys):
    m = str(tiny_bert_dir)
    assert main(_design(tiny_bert_dir, "--expert", m, "--expert", f"{m}:local:2")) == 2
    err = _one_line(capsys)
    assert "given twice with energy local" in err and "one --expert" in err, err


# -- item 8: an oracle that raises SystemExit ----------------------------------------------------------------------------
def test_an_oracle_raising_system_exit_is_one_line_exit_2(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    oracle, _ = _oracle_module(tmp_path, monkeypatch, "def f(seqs):\n    raise SystemExit(3)\n")
    assert main(_design(tiny_bert_dir, "--oracle", oracle, "--allow-code")) == 2
    assert "the oracle raised SystemExit(3)" in _one_line(capsys)


@pytest.mark.parametrize("exc", [SystemExit(3), GeneratorExit()])
def test_the_api_names_a_system_exit_of_the_oracle(exc):
    def f(seqs):
        raise exc

    with pytest.raises(MLMProbError, match=f"the oracle raised {type(exc).__name__}"):
        Oracle(f).energies(["ACD"])


def test_keyboard_interrupt_still_interrupts():
    def f(seqs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Oracle(f).energies(["ACD"])


# -- item 6: the chains' batch is sized before it is allocated ------------------------------------------------------------
def test_a_million_chains_run_in_groups_that_fit_before_allocating(monkeypatch):
    """A million chains were one 7 GB batch (then a failure); they run in groups of at most GROUP_BYTES, the first
    group sized before anything is allocated (the group is stopped here at once)."""
    from mlmprob.designing import api

    sizes = []

    def first_group(target, spec, generator, on_step, meter, C):
        sizes.append(C)
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "_run_group", first_group)
    with pytest.raises(KeyboardInterrupt):
        design(tiny_hf("bert"), "ACDEFGHIKLACDEFGHIKL", chains=1_000_000, steps=1, generator=torch.Generator())
    letters = len(api.build_target(tiny_hf("bert"), "ACDEFGHIKLACDEFGHIKL", DesignSpec()).alphabet)
    assert sizes == [api.group_size(1, 20, letters)] and 1_000 < sizes[0] < 1_000_000
    assert api.batch_bytes(sizes[0], 20, letters) <= api.GROUP_BYTES


def test_chains_in_groups_are_the_groups_run_one_after_another(monkeypatch):
    """Seven chains at two temperatures in groups of three: the rows are, rung by rung, those of runs of 3, 3 and 1
    chains on the one generator, in one batch's layout (rung-major), and the stats add up."""
    from mlmprob.designing import api

    mlm, kw = tiny_hf("bert"), dict(steps=3, method="replica", temperatures=(1.0, 2.0), swap_every=1)
    ref, g = [], torch.Generator().manual_seed(5)
    for n in (3, 3, 1):
        ref.append(design(mlm, "ACDEFGHIK", chains=n, generator=g, **kw))
    letters = len(api.build_target(mlm, "ACDEFGHIK", DesignSpec()).alphabet)
    monkeypatch.setattr(api, "GROUP_BYTES", 3 * api.batch_bytes(2, 9, letters))
    got = design(mlm, "ACDEFGHIK", chains=7, generator=torch.Generator().manual_seed(5), **kw)
    want = [row for rung in (0, 1) for r in ref for row in r.rows if row["temperature"] == kw["temperatures"][rung]]
    assert [row["sequence"] for row in got.rows] == [row["sequence"] for row in want]
    assert [row["total"] for row in got.rows] == [row["total"] for row in want]
    assert [row["acceptance"] for row in got.rows] == [row["acceptance"] for row in want]
    assert [row["chain"] for row in got.rows] == list(range(14))
    for rung in (0, 1):
        moved = sum(r.stats["temperatures"][rung]["proposals_moved"] for r in ref)
        assert got.stats["temperatures"][rung]["proposals_moved"] == moved
    one = design(mlm, "ACDEFGHIK", chains=7, generator=torch.Generator().manual_seed(5), **{**kw, "steps": 1})
    assert len(one.rows) == 14


def test_the_batch_is_checked_against_the_memory_available(monkeypatch):
    from mlmprob.runtime import capacity

    monkeypatch.setattr(capacity, "available_memory", lambda: 64 << 20)
    with pytest.raises(MLMProbError, match="5,000 chains .* MiB of memory available"):
        design(tiny_hf("bert"), "ACDEFGHIKLACDEFGHIKL", chains=5000, steps=1, generator=torch.Generator())
    r = design(tiny_hf("bert"), "ACDEFGHIKL", chains=2, steps=1, generator=torch.Generator().manual_seed(0))
    assert len(r.rows) == 2


def test_resume_with_every_position_spelled_as_a_range(tiny_bert_dir, tmp_path, capsys):
    """``--positions 1-L`` (every residue, the default) on resume was refused as a changed option (issue 49, item 9);
    it is the default, stored as such, and gives the same rows."""
    whole = f"1-{len(PARENT)}"
    out, ref = tmp_path / "o.jsonl", tmp_path / "ref.jsonl"
    base = ["design", PARENT, "--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress", "--steps", "2"]
    assert main([*base, "--chains", "2", "--out", str(out)]) == 0
    assert main([*base, "--chains", "4", "--out", str(out), "--resume", "--positions", whole]) == 2  # chains differ
    capsys.readouterr()
    assert main([*base, "--chains", "2", "--out", str(out), "--resume", "--positions", whole]) == 0
    assert main([*base, "--chains", "2", "--out", str(ref), "--positions", whole]) == 0
    meta = json.loads((tmp_path / "ref.jsonl.meta.json").read_text())["config"]
    assert meta["positions"] is None
    strip = lambda p: [{k: v for k, v in json.loads(x).items() if "time" not in k} for x in p.read_text().splitlines()]  # noqa: E731
    assert strip(out) == strip(ref)
    capsys.readouterr()
    assert main([*base, "--chains", "2", "--out", str(out), "--resume", "--positions", "1-3"]) == 2
    assert "positions" in _one_line(capsys)
