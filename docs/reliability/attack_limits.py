"""Issue 35's cases of memory, hangs and model files: a size option of 1e9 must be clamped or refused before it
sizes anything (run under a memory limit and a time limit), a damaged or foreign model file must be one error
line, and the messages name the real cause (standard input's cases: ``attack_stdin.py``).

Each function yields its cases one by one (a case's set-up runs just before it): :class:`Case` objects,
judged by ``attack_harness.run_case``, or finished records (dicts)."""

from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import time
from pathlib import Path

from attack_harness import (
    AA,
    VH,
    Case,
    GiB,
    fasta,
    in_process,
    jsonl_rows,
    model_args,
    setup,
)

SEQ24 = "ACDEFGHIKLMNPQRSTVWYACDE"
MEMORY = {resource.RLIMIT_AS: 6 * GiB}  # a run that sizes memory from a user's number fails here, not the machine


def _rows(n: int):
    return lambda out, err: None if len(jsonl_rows(out)) >= n else f"{len(jsonl_rows(out))} rows, expected {n}"


def _capped(out: str, err: str) -> str | None:
    """A problem unless a warning says the processes were capped by the cores or the memory."""
    said = [x for x in err.lower().splitlines() if "capped" in x and ("core" in x or "memory" in x)]
    return None if said else "not capped by the cores or the memory"


def limit_cases(d: Path, model: Path):
    """Size options of 1e9, NaN probabilities, caps and up-front checks."""
    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    sample = ["sample", "--seq", SEQ24, "--epochs", "1", "--chains", "1", *m]
    yield Case(
        "sample speculative --draft-k 1000000000",
        [*sample, "--method", "speculative", "--draft-k", "1000000000"],
        expect="ok",
        check=_rows(1),
        limits=MEMORY,
        timeout=180,
        group="limits",
    )
    yield Case(
        "sample unmask --remask 0 --remask-steps 1000000000",
        [*sample, "--method", "unmask", "--remask", "0", "--remask-steps", "1000000000"],
        expect="any",
        says=("remask",),
        limits=MEMORY,
        timeout=90,
        group="limits",
    )
    yield Case(
        "sample unmask --top-p 1e-12 --score margin",
        [*sample, "--method", "unmask", "--top-p", "1e-12", "--score", "margin"],
        expect="ok",
        check=_rows(1),
        group="limits",
    )
    cores = len(os.sched_getaffinity(0))
    devices = ",".join(["cpu"] * (cores + 1))  # one more than the cores, on more chunks than devices
    yield Case(
        f"--devices {devices} (cores + 1) on {16 * (cores + 2)} records (capped like --workers)",
        ["score", fasta(d / "many.fasta", 16 * (cores + 2), lo=8, hi=12), *m, "--devices", devices],
        expect="ok",
        subprocess=True,
        timeout=300,
        group="limits",
        check=_capped,
    )
    out = d / "saturate.jsonl"
    yield Case(
        "variants --saturate --limit 5 -o x",
        [
            "variants",
            "--wild-type",
            VH[:30],
            "--saturate",
            "--limit",
            "5",
            "--methods",
            "wt_marginals",
            *m,
            "--out",
            out,
        ],
        expect="any",
        says=("--limit",),
        group="limits",
    )


def _copy(model: Path, d: Path, name: str) -> Path:
    folder = d / name
    shutil.copytree(model, folder)
    return folder


def _pad_is_a_residue(model: Path, d: Path) -> Path:
    """The tiny model, its tokenizer's pad token the residue ``A``."""
    import transformers

    folder = _copy(model, d, "pad-is-A")
    tok = transformers.BertTokenizerFast(str(folder / "vocab.txt"), do_lower_case=False, pad_token="A")
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / f).unlink(missing_ok=True)
    tok.save_pretrained(str(folder))
    cfg = json.loads((folder / "config.json").read_text())
    cfg["pad_token_id"] = tok.convert_tokens_to_ids("A")
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


class _Payload:
    """A pickle that asks for a call (``os.getcwd``, harmless): a loader that runs it would run anything."""

    def __reduce__(self):
        return (os.getcwd, ())


def model_cases(d: Path, model: Path):
    """Model folders that are damaged or foreign, and the checks that must agree about them."""
    import torch
    from safetensors.torch import load_file

    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    good = fasta(d / "good.fasta", 4, seed=6)
    long_seq = "".join(AA[i % 20] for i in range(300))
    yield Case(
        "check-model --seq longer than the model's positions",
        ["check-model", model, "--seq", long_seq],
        says=("long|at most|position|length",),
        group="models",
    )
    folder = _copy(model, d, "not-safetensors")
    (folder / "model.safetensors").write_bytes(b"these are not safetensors weights\n" * 8)
    yield Case(
        "a model.safetensors that is not safetensors",
        ["score", good, *model_args(folder)],
        says=("safetensors|weights",),
        group="models",
    )
    folder = _copy(model, d, "wrong-shapes")
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(hidden_size=32, intermediate_size=64)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    yield Case(
        "weights whose shapes do not match config.json",
        ["score", good, *model_args(folder)],
        says=("weights|shape|size|config",),
        group="models",
    )
    folder = _copy(model, d, "index-names-a-pickle")
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {k: "pytorch_model.bin" for k in state}})
    )
    yield Case(
        "model.safetensors.index.json naming a pickle, no --allow-pickle",
        ["score", good, *model_args(folder)],
        says=("pickle",),
        group="models",
    )

    run = d / "train-run"
    train = _train_argv(run)
    setup(d, [*train, "--stop-after", "2"])
    for f in (run / "checkpoints").glob("step-*/optimizer.pt"):
        f.write_bytes(pickle.dumps(_Payload()))
    yield Case("resumed training whose optimizer.pt is a pickle", train, says=("optimizer",), group="models")

    yield _agree(d, m, _pad_is_a_residue(model, d), good)


def _train_argv(run: Path) -> list:
    """A tiny synthetic training run into ``run`` (4 steps, a checkpoint every 2)."""
    return [
        "train",
        "--synthetic",
        "potts",
        "--vocab-size",
        "4",
        "--length",
        "6",
        "--n-train",
        "64",
        "--n-heldout",
        "16",
        "--hidden",
        "16",
        "--layers",
        "1",
        "--heads",
        "2",
        "--intermediate",
        "32",
        "--steps",
        "4",
        "--batch-size",
        "8",
        "--warmup",
        "0",
        "--eval-every",
        "2",
        "--checkpoint-every",
        "2",
        "--kl-sequences",
        "0",
        "--no-progress",
        "--out",
        run,
    ]


def _agree(d: Path, m: list, folder: Path, good: Path) -> dict:
    """``score`` and ``check-model`` on a model whose pad token is a residue: both refuse, or both accept."""
    t = time.monotonic()
    score = in_process(["score", good, *model_args(folder)], d)
    check = in_process(["check-model", folder], d)
    tb = any("Traceback" in r[2] for r in (score, check))
    agree = (score[0] == 0) == (check[0] == 0)
    outcome = (
        "traceback"
        if tb
        else "ok"
        if agree
        else (f"misleading: score status {score[0]}, check-model status {check[0]}")
    )
    last = lambda r: r[2].strip().splitlines()[-1][:150] if r[2].strip() else ""  # noqa: E731
    return {
        "group": "models",
        "case": "a pad token that is a residue: score and check-model agree",
        "expect": "agree",
        "status": [score[0], check[0]],
        "outcome": outcome,
        "stderr": f"score: {last(score)} | check-model: {last(check)}",
        "s": round(time.monotonic() - t, 2),
    }
