"""The command line answers ``--help``, ``COMMAND --help``, ``--version`` and usage errors without importing
torch, transformers or numpy (issue 37 §3): the parsers read only light modules (the specs, their choices and
defaults), and the package namespaces import their public names on first use (:mod:`mlmprob.lazy`).
How long that takes is measured by ``bench/bench_cli_startup.py``, not here."""

import json
import subprocess
import sys

import pytest

from mlmprob.cli import COMMANDS

HEAVY = ("torch", "transformers", "numpy")
PROBE = f"""
import contextlib, io, json, sys
from mlmprob.cli import main
status = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            status.append(main(argv))
        except SystemExit as e:
            status.append(e.code)
print(json.dumps({{"status": status, "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""


def _probe(argvs: list[list[str]]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return json.loads(out)


def test_help_version_and_usage_errors_import_no_torch():
    names = [c.replace("_", "-") for c in COMMANDS]
    argvs = [
        ["--help"],
        ["--version"],
        ["nosuchcommand"],
        ["score", "x.fasta", "--no-such-option"],
        *[[name, "--help"] for name in names],
    ]
    got = _probe(argvs)
    assert got["heavy"] == [], got
    assert got["status"][:4] == [0, 0, 2, 2] and set(got["status"][4:]) == {0}, got


@pytest.mark.parametrize("argv", [["score", "--help"], ["sample", "--help"]])
def test_the_probe_sees_torch_once_a_command_runs_its_model(argv):
    """The check can fail: the same probe, after reading a name that needs torch, reports it."""
    got = _probe([argv, ["--version"]])
    assert got["heavy"] == []
    import_torch = subprocess.run(
        [sys.executable, "-c", "import mlmprob; mlmprob.pll; import sys; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert import_torch.stdout.strip() == "True"
