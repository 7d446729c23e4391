"""A flag that sets a spec field accepts and refuses exactly the values the spec does: the flag's type runs the
spec's own check (``argtypes.checked``), so ``mlmprob joints --ag-tol 0`` and ``JointsSpec(ag_tol=0.0)`` agree."""

import pytest

from mlmprob.cli import build_parser
from mlmprob.errors import MLMProbError
from mlmprob.infilling.spec import InfillSpec
from mlmprob.joints.evaluate import PairSpec
from mlmprob.joints.spec import JointsSpec
from mlmprob.variants.spec import VariantsSpec

REQUIRED = {
    "joints": ["--model", "m", "--data", "d.csv", "--out", "o"],
    "infill": ["A_C"],
    "variants": ["in.csv", "--wild-type", "MA"],
}
FLOATS = ["0", "0.0", "1e-300", "1e-10", "2", "-1", "-1e-300", "nan", "inf", "-inf", "1e300", "x"]
INTS = ["0", "1", "50", "-1", "1.5", "20000", "200000", "2000000", "10000000000", "99999999999999999999", "nan", "x"]
PAIRS = [  # (command, flag, the spec made with the field set to a value)
    ("joints", "--ag-tol", lambda v: JointsSpec(ag_tol=v)),
    ("joints", "--ag-tol", lambda v: PairSpec(ag_tol=v)),
    ("joints", "--ag-steps", lambda v: JointsSpec(ag_steps=v)),
    ("joints", "--ag-steps", lambda v: PairSpec(ag_steps=v)),
    ("joints", "--ag-max-steps", lambda v: JointsSpec(ag_max_steps=v)),
    ("joints", "--ag-max-steps", lambda v: PairSpec(ag_max_steps=v)),
    ("joints", "--seed", lambda v: JointsSpec(seed=v)),
    ("infill", "--beam-size", lambda v: InfillSpec(beam_size=v)),
    ("variants", "--chain-orders", lambda v: VariantsSpec(methods=("chain",), chain_orders=v)),
    ("variants", "--chain-seed", lambda v: VariantsSpec(methods=("chain",), chain_seed=v)),
    ("variants", "--offset", lambda v: VariantsSpec(offset=v)),
]


def _value(text: str):
    """The Python value a user of the API would pass for ``text``."""
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def _spec_accepts(make, text: str) -> bool:
    try:
        make(_value(text))
    except MLMProbError:
        return False
    return True


def _flag_accepts(parser, command: str, flag: str, text: str, capsys) -> bool:
    try:
        parser.parse_args([command, *REQUIRED[command], f"{flag}={text}"])
    except SystemExit as e:
        err = capsys.readouterr().err
        assert e.code == 2 and err.count("\n") == 1 and err.startswith(f"error: argument {flag}"), err
        return False
    return True


@pytest.mark.parametrize("command, flag, make", PAIRS, ids=[f"{c} {f} {i}" for i, (c, f, _) in enumerate(PAIRS)])
def test_the_flag_and_the_spec_accept_the_same_values(command, flag, make, capsys):
    parser = build_parser()
    texts = FLOATS if flag == "--ag-tol" else INTS
    got = {t: (_flag_accepts(parser, command, flag, t, capsys), _spec_accepts(make, t)) for t in texts}
    differ = {
        t: f"flag {'accepts' if a else 'refuses'}, spec {'accepts' if b else 'refuses'}"
        for t, (a, b) in got.items()
        if a != b
    }
    assert differ == {}, f"{command} {flag}: {differ}"
    assert any(a for a, _ in got.values()) and not all(a for a, _ in got.values())


def test_an_ag_tolerance_of_zero_runs_to_the_cap():
    """0 is a tolerance the algorithm reads: no update moves the joint by less than 0, so AG never stops early."""
    import torch

    from mlmprob import ExactMLM
    from mlmprob.joints.conditionals import pair_conditionals
    from mlmprob.joints.constructions import ag_joint

    assert JointsSpec(ag_tol=0.0).ag_tol == 0.0
    pc = pair_conditionals(ExactMLM(torch.tensor([[0.97, 0.01], [0.01, 0.01]]).log()), torch.tensor([0, 0]), 0, 1)
    run = ag_joint(pc, tol=0.0, max_steps=7)
    assert run.steps == 7 and not run.converged
