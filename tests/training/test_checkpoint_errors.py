"""``train`` resumed from a checkpoint it cannot trust or read: one line naming the file, exit status 2, no
traceback; a pickle in ``optimizer.pt`` never runs."""

import builtins

import pytest
import torch

from mlmprob.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")


class Touch:
    """Unpickling this calls ``open(path, "w")``: a pickle that runs code and leaves a file behind."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return builtins.open, (self.path, "w")


def _args(out, stop_after):
    return [
        "train",
        "--synthetic",
        "potts",
        "--out",
        str(out),
        "--steps",
        "6",
        "--checkpoint-every",
        "3",
        "--stop-after",
        str(stop_after),
        "--hidden",
        "16",
        "--layers",
        "1",
        "--heads",
        "2",
        "--intermediate",
        "32",
        "--batch-size",
        "8",
        "--n-train",
        "64",
        "--n-heldout",
        "16",
        "--kl-sequences",
        "8",
        "--eval-every",
        "3",
        "--no-progress",
    ]


@pytest.fixture
def stopped(tmp_path, capsys):
    """A run stopped at step 3, its checkpoint ``step-00000003``."""
    out = tmp_path / "run"
    assert main(_args(out, 3)) == 0
    capsys.readouterr()
    return out, out / "checkpoints" / "step-00000003"


def _one_error_line(capsys) -> str:
    err = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.strip() and not line.startswith(("Loading weights", "Writing model"))
    ]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_pickle_in_optimizer_pt_is_one_line_and_never_runs(stopped, tmp_path, capsys):
    out, ckpt = stopped
    target = tmp_path / "payload-ran"
    torch.save({"state": {0: Touch(target)}, "param_groups": []}, ckpt / "optimizer.pt")
    assert main(_args(out, 6)) == 2
    line = _one_error_line(capsys)
    assert f"refused to load {ckpt / 'optimizer.pt'}: it is not a plain optimizer state" in line
    assert "it refers to io.open" in line and "another --out" in line
    assert "weights_only=False" not in line and not target.exists()


def test_an_optimizer_state_that_does_not_fit_is_one_line(stopped, capsys):
    out, ckpt = stopped
    torch.save({"state": {}, "param_groups": [{"params": [0]}]}, ckpt / "optimizer.pt")
    assert main(_args(out, 6)) == 2
    assert f"{ckpt / 'optimizer.pt'} does not fit this model's optimizer" in _one_error_line(capsys)
    torch.save([1, 2], ckpt / "optimizer.pt")
    assert main(_args(out, 6)) == 2
    assert "holds a list, not an optimizer state" in _one_error_line(capsys)


def test_a_checkpoint_model_that_is_not_safetensors_is_one_line(stopped, capsys):
    out, ckpt = stopped
    (ckpt / "model.safetensors").write_bytes(b"not safetensors\n" * 8)
    assert main(_args(out, 6)) == 2
    assert f"cannot load {ckpt / 'model.safetensors'}: it is not a safetensors file" in _one_error_line(capsys)


def test_the_refusal_is_the_only_stderr_line_of_the_command(stopped, tmp_path):
    """As a user's shell sees it (a real process): no transformers loading bar and no torch warning about the
    pickle's protocol beside the one ``error:`` line (the attack script counts any other line as a wrong refusal)."""
    import os
    import pickle
    import subprocess
    import sys

    out, ckpt = stopped
    (ckpt / "optimizer.pt").write_bytes(pickle.dumps({"state": {0: Touch(tmp_path / "payload-ran")}}, protocol=4))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mlmprob", "--threads", "1", *_args(out, 6)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: refused to load"), proc.stderr
    assert not (tmp_path / "payload-ran").exists()
