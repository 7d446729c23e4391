"""Every CLI option has help text and a validated type; usage errors are one line, exit status 2."""

import argparse

import pytest

from mlmprob import argtypes
from mlmprob.cli import build_parser, main

# the fewest arguments each command parses with
REQUIRED = {
    "score": ["in.txt"],
    "calibrate": ["in.txt"],
    "demo": [],
    "sample": ["--out", "o"],
    "joints": ["--model", "m", "--data", "d", "--out", "o"],
    "infill": ["A_C"],
    "train": ["--out", "o", "--synthetic", "hmm"],
    "merge": ["--out", "o", "p"],
    "variants": ["in.csv", "--wild-type", "MA"],
    "app": [],
    "check-model": ["p"],
    "design": ["ACDE"],
}
PENDING: set[str] = set()  # options still typed plain int/float (none)

BAD = {
    argtypes.integer: ["1.5", "x", "10000000000"],
    argtypes.positive_int: ["0", "-1", "1.5", "nan", "x", "10000000000"],
    argtypes.nonnegative_int: ["-1", "2.5", "inf", "10000000000"],
    argtypes.thread_count: ["0", "-1", "1.5", "1025", "1000000000"],
    argtypes.positive_float: ["0", "-0.5", "nan", "inf", "-inf", "1e300"],
    argtypes.nonnegative_float: ["-0.5", "nan", "inf", "1e300"],
    argtypes.finite_float: ["nan", "inf", "-inf", "1e300", "x"],
    argtypes.probability: ["0", "-0.1", "1.01", "nan", "inf"],
    argtypes.open_fraction: ["0", "1", "nan", "-0.5"],
}
GOOD = {
    argtypes.integer: [("-3", -3), ("0", 0)],
    argtypes.positive_int: [("1", 1), ("12", 12)],
    argtypes.nonnegative_int: [("0", 0), ("7", 7)],
    argtypes.thread_count: [("1", 1), ("1024", 1024)],
    argtypes.positive_float: [("1e-10", 1e-10), ("2", 2.0)],
    argtypes.nonnegative_float: [("0", 0.0)],
    argtypes.finite_float: [("-3.5", -3.5)],
    argtypes.probability: [("1", 1.0), ("0.25", 0.25)],
    argtypes.open_fraction: [("0.05", 0.05)],
}


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def options():
    """(command, action) for every option of every command; command None for the top level."""
    parser = build_parser()
    out = [(None, a) for a in parser._actions]
    for name, sub in subparsers(parser).items():
        out += [(name, a) for a in sub._actions]
    return out


def test_every_command_is_walked():
    assert set(subparsers(build_parser())) == set(REQUIRED)


def test_every_option_has_help():
    missing = [
        f"{cmd or 'mlmprob'} {'/'.join(a.option_strings) or a.dest}"
        for cmd, a in options()
        if not a.help or a.help == argparse.SUPPRESS
    ]
    assert not missing, f"options without help: {missing}"


def test_help_is_plain_text_and_shows_every_default():
    """No reST markup (double backticks) reaches a terminal, and every option whose default is a value (not
    None: "not given", nor a switch's False) shows it, by the formatter or in its help's own words."""
    parser = build_parser()
    for name, sub in {"mlmprob": parser, **subparsers(parser)}.items():
        marked = [line for line in sub.format_help().splitlines() if "``" in line]
        assert marked == [], f"{name} --help shows reST markup: {marked}"
        fmt = sub._get_formatter()
        hidden = [
            a.option_strings[-1]
            for a in sub._actions
            if a.option_strings
            and a.help != argparse.SUPPRESS
            and a.default not in (None, False, argparse.SUPPRESS)
            and "default" not in fmt._format_action(a)
        ]
        assert hidden == [], f"{name} --help hides the defaults of {hidden}"


def test_every_numeric_option_has_a_validating_type():
    raw = [
        f"{cmd} {a.option_strings[0]}"
        for cmd, a in options()
        if a.type in (int, float) and a.option_strings[0] not in PENDING
    ]
    assert not raw, f"options typed plain int/float (no range check): {raw}"


@pytest.mark.parametrize("kind", list(BAD))
def test_argtypes_accept_and_reject(kind):
    for text, value in GOOD[kind]:
        assert kind(text) == value
    for text in BAD[kind]:
        with pytest.raises(argparse.ArgumentTypeError, match=f"^must be .*got '{text}'$"):
            kind(text)


def test_every_typed_option_rejects_bad_values_in_one_line(capsys):
    parser = build_parser()  # built once: parsing only reads it
    checked = 0
    for cmd, a in options():
        if cmd is None or a.type not in BAD:
            continue
        for text in BAD[a.type][:3]:
            with pytest.raises(SystemExit) as e:
                parser.parse_args([cmd, *REQUIRED[cmd], f"{a.option_strings[0]}={text}"])
            assert e.value.code == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and err.startswith(f"error: argument {'/'.join(a.option_strings)}: must be")
            assert "usage:" not in err
            checked += 1
    assert checked > 3 * 50  # sample, joints, infill, train, demo and score --limit


@pytest.mark.parametrize(
    "argv,msg",
    [
        (
            ["sample", "--out", "o", "--chains", "0"],
            "error: argument --chains: must be a positive integer, got '0' (see: mlmprob sample --help)",
        ),
        (["score", "x.txt", "--limit", "-1"], "error: argument --limit: must be a positive integer, got '-1'"),
        (
            ["sample", "--out", "o", "--top-p", "nan"],
            "error: argument --top-p: must be a probability in (0, 1], got 'nan'",
        ),
        (
            ["sample", "--out", "o", "--block-size", "0"],
            "error: argument --block-size: block size must be K or START:END",
        ),
        (["infill", "A_C", "-k", "0"], "error: argument --beam-size/-k: must be a positive integer"),
        (
            ["train", "--out", "o", "--synthetic", "hmm", "--lr", "1e300"],
            "error: argument --lr: must be a positive number no larger",
        ),
        (
            ["--threads", "0", "demo"],
            "error: argument --threads: must be a positive integer, got '0' (see: mlmprob --help)",
        ),
        (  # OpenMP would size a pool of a billion threads (about 200 GB) before any work
            ["--threads", "1000000000", "demo"],
            "error: argument --threads: must be a positive integer no larger than 1,024, got '1000000000'",
        ),
        (["joints", "--model", "m"], "error: the following arguments are required: --out"),
        (["sample", "--out", "o", "--method", "hmc"], "error: argument --method: invalid choice: 'hmc'"),
        (["nosuchcommand"], "error: argument COMMAND: invalid choice: 'nosuchcommand'"),
        (["score", "x.txt", "--no-such-option"], "error: unrecognized arguments: --no-such-option"),
    ],
)
def test_usage_errors_are_one_line(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(msg) and err.count("\n") == 1, err


def test_experiment_entry_points_answer_help(capsys):
    """Every ``python -m experiments.X`` entry point has a ``main(argv)`` whose ``--help``
    exits 0 with a usage line (no traceback, nothing run)."""
    import importlib
    import pkgutil

    import experiments as exp

    seen = []
    for info in pkgutil.iter_modules(exp.__path__):
        mod = importlib.import_module(f"experiments.{info.name}")
        if '__name__ == "__main__"' not in open(mod.__file__).read():
            continue
        seen.append(info.name)
        assert callable(getattr(mod, "main", None)), f"{info.name}: no main(argv)"
        with pytest.raises(SystemExit) as e:
            mod.main(["--help"])
        assert e.value.code == 0, info.name
        assert "usage:" in capsys.readouterr().out, info.name
    assert "ground_truth_report" in seen and len(seen) >= 5


def experiment_parsers() -> dict[str, argparse.ArgumentParser]:
    """The argument parser of every ``python -m experiments.X`` entry point, caught as its ``main``
    parses (nothing runs: the parse is cut short)."""
    import importlib
    import pkgutil

    import experiments as exp

    class Caught(Exception):
        pass

    found = {}
    real = argparse.ArgumentParser.parse_args

    def catch(self, *a, **k):
        found[name] = self
        raise Caught

    for info in pkgutil.iter_modules(exp.__path__):
        mod = importlib.import_module(f"experiments.{info.name}")
        if not hasattr(mod, "main"):
            continue
        name = info.name
        argparse.ArgumentParser.parse_args = catch
        try:
            mod.main(["--help"])
        except Caught:
            pass
        except SystemExit:
            pass
        finally:
            argparse.ArgumentParser.parse_args = real
    return found


def test_every_experiment_option_is_validated():
    """The CLI's rules walk the experiment runners too: a range-checked type and help text for every option."""
    parsers = experiment_parsers()
    assert len(parsers) >= 6
    raw = [
        f"{n} {a.option_strings[0]}"
        for n, p in parsers.items()
        for a in p._actions
        if a.option_strings and a.type in (int, float)
    ]
    assert not raw, f"experiment options typed plain int/float (no range check): {raw}"
    missing = [
        f"{n} {'/'.join(a.option_strings)}"
        for n, p in parsers.items()
        for a in p._actions
        if a.option_strings and not a.help
    ]
    assert not missing, f"experiment options without help: {missing}"
