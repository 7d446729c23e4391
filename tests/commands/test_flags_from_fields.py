"""One declaration per setting (issue 51, item 1): the converted commands' (infill, variants, joints, design, score,
train) flags are made from their specs' fields
(:func:`mlmprob.fields.add_field_flags`): each flag comes from its field, its ``--help`` line shows the field's
default, and the command line and the API accept and refuse the same values at the bounds."""

from __future__ import annotations

import argparse
import dataclasses
import math

import pytest

from mlmprob.cli import build_parser
from mlmprob.designing.spec import DesignSpec
from mlmprob.errors import MLMProbError
from mlmprob.fields import default_text, flag_of
from mlmprob.infilling.spec import MAX_BEAM_SIZE, InfillSpec
from mlmprob.joints.spec import MAX_AG_STEPS, MAX_PAIRS, JointsSpec
from mlmprob.likelihood.spec import MAX_ORDERS, ScoreSpec
from mlmprob.settings import MAX_SEED
from mlmprob.training.config import TrainConfig
from mlmprob.variants.spec import VariantsSpec

REQUIRED = {
    "joints": ["--model", "m", "--data", "d.csv", "--out", "o"],
    "infill": ["A_C"],
    "variants": ["in.csv", "--wild-type", "MA"],
    "design": ["ACDE"],
    "score": ["in.txt"],
    "train": ["--out", "o", "--synthetic", "hmm"],
}
#: the other settings a design field goes with: the method that takes it (a cooling schedule: end <= start)
DESIGN_WITH = {
    "anneal_start": dict(method="anneal", anneal_end=1e-300),
    "anneal_end": dict(method="anneal"),
    "anneal_schedule": dict(method="anneal"),
    "swap_every": dict(method="replica"),
}


def _design(**kw):
    (name,) = kw
    return DesignSpec(**DESIGN_WITH.get(name, {}), **kw)


def _train(**kw):
    """A TrainConfig with one field set, its hidden size a multiple of its heads (one head, or as many)."""
    ((name, value),) = kw.items()
    if name == "hidden_size":
        kw["num_heads"] = 1
    elif name == "num_heads" and isinstance(value, int) and value > 0:
        kw["hidden_size"] = value
    return TrainConfig(**kw)


#: command -> (its spec, the spec made with some fields set, the fields whose flags are written by hand)
CONVERTED = {
    "infill": (InfillSpec, lambda **kw: InfillSpec(**kw), ()),
    "variants": (VariantsSpec, lambda **kw: VariantsSpec(**{"methods": ("chain",), **kw}), ()),
    "joints": (JointsSpec, lambda **kw: JointsSpec(**kw), ()),
    "design": (DesignSpec, _design, ()),
    "score": (ScoreSpec, lambda **kw: ScoreSpec(**kw), ()),
    "train": (TrainConfig, _train, ()),
}
#: values just inside and outside the specs' upper bounds (checked by the flags with the specs' own checks)
HIGH = [MAX_SEED, MAX_AG_STEPS, MAX_PAIRS, MAX_BEAM_SIZE, MAX_ORDERS]
INT_LOWS = [-(10**6), -2, -1, 0, 1, 2]
FLOAT_LOWS = [-1.0, -1e-300, 0.0, 1e-300, 1.0]
#: a field's open upper bound among the lows (dropout < 1): refused there by both, past the run of accepted lows
ABOVE = {"dropout": 1.0}


def field_flags(parser) -> dict[str, tuple]:
    """The flags of ``parser`` made from fields: each one's dest -> ``(spec class, field name)``."""
    return {a.dest: a.spec_field for a in parser._actions if hasattr(a, "spec_field")}


def _parser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _cases():
    for command, (spec, make, by_hand) in CONVERTED.items():
        for f in dataclasses.fields(spec):
            if f.name not in by_hand:
                yield command, spec, make, f


CASES = list(_cases())
IDS = [f"{c} {f.name}" for c, _, _, f in CASES]


def test_every_converted_flag_comes_from_its_field():
    for command, (spec, _, by_hand) in CONVERTED.items():
        made = field_flags(_parser(command))
        want = {f.name for f in dataclasses.fields(spec)} - set(by_hand)
        assert set(made) == want, command
        for name, (cls, field_name) in made.items():
            assert cls is spec and field_name == name
        actions = {a.dest: a for a in _parser(command)._actions}
        for name in want:
            f, a = spec.__dataclass_fields__[name], actions[name]
            assert a.option_strings[0] == flag_of(name, f.metadata)
            assert a.default in (argparse.SUPPRESS, f.default)  # left out: the spec's default
            for key in ("type", "choices", "nargs", "metavar"):
                if key in f.metadata:
                    assert getattr(a, key) == f.metadata[key], (command, name, key)


def test_no_hand_written_flag_repeats_a_converted_setting():
    """The settings written by hand are the declared ones (none now)."""
    for command, (spec, _, by_hand) in CONVERTED.items():
        made = field_flags(_parser(command))
        names = {f.name for f in dataclasses.fields(spec)}
        by_hand_flags = {a.dest for a in _parser(command)._actions if a.dest in names and a.dest not in made}
        assert by_hand_flags == set(by_hand), command


@pytest.mark.parametrize("command, spec, make, f", CASES, ids=IDS)
def test_the_help_line_shows_the_default(command, spec, make, f):
    parser = _parser(command)
    action = next(a for a in parser._actions if a.dest == f.name)
    line = " ".join(parser._get_formatter()._format_action(action).split())
    assert " ".join(f.metadata["help"].split()) in line
    shown = default_text(f.default, f.metadata).strip()
    if shown:
        assert " ".join(shown.split()) in line, line
        assert " ".join(shown.split()) in " ".join(parser.format_help().split())  # as --help prints it
    else:  # None or False: "not given", which the help words itself where it matters
        assert f.default in (None, False)


def _flag_accepts(command: str, flag: str, text: str, capsys) -> bool:
    try:
        _parser(command).parse_args([*REQUIRED[command], f"{flag}={text}"])
    except SystemExit as e:
        err = capsys.readouterr().err
        assert e.code == 2 and err.count("\n") == 1 and f"error: argument {flag}" in err, err
        return False
    return True


def _api_accepts(make, name: str, value) -> bool:
    try:
        make(**{name: value})
    except MLMProbError:
        return False
    return True


def _is_number(f) -> bool:
    """A field holding a number (not a tuple a flag reads from text, such as ``--positions`` or ``--mask-split``)."""
    return str(f.type).split(" | ")[0] in ("int", "float")


NUMERIC = [(c, s, m, f) for c, s, m, f in CASES if f.metadata.get("type") and "choices" not in f.metadata]
NUMERIC = [(c, s, m, f) for c, s, m, f in NUMERIC if _is_number(f)]


@pytest.mark.parametrize("command, spec, make, f", NUMERIC, ids=[f"{c} {f.name}" for c, _, _, f in NUMERIC])
def test_the_cli_and_the_api_agree_at_the_bounds(command, spec, make, f, capsys):
    """The lowest value the spec takes is taken by the flag, the one below it refused by both (no lowest: the
    flag takes the lowest tried too); at a spec's upper bound (the flags run the specs' own checks) both agree."""
    is_float = isinstance(f.default, float)
    lows = FLOAT_LOWS if is_float else INT_LOWS
    highs = [] if is_float else [v + d for v in HIGH for d in (0, 1)]
    if not is_float and f.metadata["type"].__name__ in ("positive_int", "nonnegative_int"):
        highs = []  # argtypes' own bound (argtypes.LIMIT): a typing mistake, where the spec has none
    flag = flag_of(f.name, f.metadata)
    got = {v: (_flag_accepts(command, flag, str(v), capsys), _api_accepts(make, f.name, v)) for v in lows + highs}
    differ = {v: f"flag {a}, api {b}" for v, (a, b) in got.items() if a != b}
    assert differ == {}, f"{command} {flag}: {differ}"
    accepted = [v for v in lows if got[v][1]]
    assert accepted, f"{command} {flag}: none of {lows} accepted"
    lowest = lows.index(accepted[0])
    assert all(got[v][1] for v in lows[lowest:] if v < ABOVE.get(f.name, math.inf))  # every value above the lowest
    assert all(got[v] == (False, False) for v in lows if v >= ABOVE.get(f.name, math.inf))  # up to its open bound
    if lowest > 0:  # a lower bound: the one below is refused by both
        assert got[lows[lowest - 1]] == (False, False)


CHOICES = [(c, s, m, f) for c, s, m, f in CASES if "choices" in f.metadata]


@pytest.mark.parametrize("command, spec, make, f", CHOICES, ids=[f"{c} {f.name}" for c, _, _, f in CHOICES])
def test_the_cli_and_the_api_take_the_same_choices(command, spec, make, f, capsys):
    flag = flag_of(f.name, f.metadata)
    for choice in f.metadata["choices"]:
        value = (choice,) if f.metadata.get("nargs") else choice
        assert _flag_accepts(command, flag, choice, capsys) and _api_accepts(make, f.name, value), (flag, choice)
    value = ("nosuch",) if f.metadata.get("nargs") else "nosuch"
    assert not _flag_accepts(command, flag, "nosuch", capsys) and not _api_accepts(make, f.name, value)


def test_a_flag_left_out_leaves_the_spec_default():
    from mlmprob.commands.common import spec_of
    from mlmprob.commands.design import design_spec
    from mlmprob.commands.variants import variants_spec

    assert spec_of(InfillSpec, _parser("infill").parse_args(REQUIRED["infill"])) == InfillSpec()
    assert design_spec(_parser("design").parse_args(REQUIRED["design"])) == DesignSpec()
    joints = _parser("joints").parse_args(REQUIRED["joints"])
    assert spec_of(JointsSpec, joints) == JointsSpec() and joints.format == "auto"  # read before it
    assert variants_spec(_parser("variants").parse_args(REQUIRED["variants"])) == VariantsSpec()
    assert spec_of(ScoreSpec, _parser("score").parse_args(REQUIRED["score"])) == ScoreSpec()
    assert spec_of(TrainConfig, _parser("train").parse_args(REQUIRED["train"])) == TrainConfig()


#: flags that read text into a tuple: (command, flag, text, the field's value from it, a text the flag refuses)
TEXT = [
    ("design", "--positions", "2-4,7", (2, 3, 4, 7), "4-2"),
    ("design", "--allowed", "31:STY", ((31, "STY"),), "x:STY"),
    ("design", "--forbid", "N[^P][ST]", ("N[^P][ST]",), None),
    ("design", "--require", "C", ("C",), None),
    ("variants", "--methods", " hcb, chain ,", ("hcb", "chain"), "hcb,nosuch"),
    ("train", "--mask-split", "0.8,0.1,0.1", (0.8, 0.1, 0.1), "0.5,0.5,0.5"),
]


@pytest.mark.parametrize("command, flag, text, value, bad", TEXT, ids=[f"{c} {f}" for c, f, *_ in TEXT])
def test_a_text_flag_gives_the_value_the_api_takes(command, flag, text, value, bad, capsys):
    from mlmprob.commands.common import spec_of
    from mlmprob.commands.design import design_spec
    from mlmprob.commands.variants import variants_spec

    spec, make, _ = CONVERTED[command]
    name = flag[2:].replace("-", "_")
    args = _parser(command).parse_args([*REQUIRED[command], flag, text])
    made = {"design": design_spec, "variants": variants_spec}.get(command, lambda a: spec_of(spec, a))(args)
    assert tuple(getattr(made, name)) == value == tuple(getattr(make(**{name: value}), name))
    if bad is not None:
        assert not _flag_accepts(command, flag, bad, capsys)


def test_variants_seed_is_bounded_by_a_generators_range(capsys):
    assert _flag_accepts("variants", "--seed", str(MAX_SEED), capsys)
    assert not _flag_accepts("variants", "--seed", str(MAX_SEED + 1), capsys)
    assert not _flag_accepts("variants", "--seed", "-1", capsys)
