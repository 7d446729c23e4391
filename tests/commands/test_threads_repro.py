"""float32 scores do not depend on the thread count (issue 28, item 4): ``--threads 1``, ``--threads 2``
and ``--workers 2`` write the same bits, for a 32-wide BERT and ESM-2 (the CLI end to end; the forward
passes at 1, 2 and 3 threads, 16 and 32 wide, fused and transformers' code: tests/models/test_thread_invariance.py).

Every forward runs its matrix products by single-threaded MKL in fixed blocks (mlmprob.runtime.threads);
MKL's own reproducibility mode (``MKL_CBWR=AUTO,STRICT``, set by ``import mlmprob``) alone was not enough
(docs/results/precision/threads_repro.md). Here ``MKL_CBWR`` is cleared, so the test shows that the
blocks alone suffice."""

import json
import os
import random
import subprocess
import sys

import pytest
import torch
from conftest import ESM_VOCAB

AA = "ACDEFGHIKLMNPQRSTVWY"


def _bert(d):
    import transformers as tf

    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AA)
    d.mkdir()
    (d / "vocab.txt").write_text("\n".join(toks) + "\n")
    torch.manual_seed(0)  # test fixture weights
    cfg = tf.BertConfig(
        vocab_size=len(toks),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=160,
        initializer_range=0.5,
    )
    tf.BertForMaskedLM(cfg).save_pretrained(str(d))
    tf.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False).save_pretrained(str(d))
    return d


def _esm(d):
    import transformers as tf

    d.mkdir()
    (d / "vocab.txt").write_text("\n".join(ESM_VOCAB))
    torch.manual_seed(0)  # test fixture weights
    cfg = tf.EsmConfig(
        vocab_size=len(ESM_VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=130,
        position_embedding_type="rotary",
        pad_token_id=1,
        mask_token_id=len(ESM_VOCAB) - 1,
        token_dropout=True,
        initializer_range=0.5,
    )
    tf.EsmForMaskedLM(cfg).save_pretrained(str(d))
    tf.EsmTokenizer(str(d / "vocab.txt")).save_pretrained(str(d))
    return d


@pytest.fixture(scope="module", params=["bert", "esm"])
def model_and_input(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"threads-{request.param}")
    model = (_bert if request.param == "bert" else _esm)(d / "model")
    rng = random.Random(0)
    inp = d / "in.txt"
    inp.write_text("\n".join("".join(rng.choice(AA) for _ in range(rng.randint(4, 60))) for _ in range(8)) + "\n")
    return model, inp


def _score(model, inp, *args, out=None, workers=None):
    """Start one ``mlmprob score`` process (the environment of the test); ``_rows`` reads what it wrote."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "MLMPROB_THREAD_INVARIANT")
    }
    env["PYTHONUNBUFFERED"] = "1"
    env["MKL_CBWR"] = ""  # MKL's reproducibility mode off: mlmprob's blocks alone
    cmd = (
        [
            sys.executable,
            "-m",
            "mlmprob",
            *args,
            "score",
            str(inp),
            "--model",
            str(model),
            "--device",
            "cpu",
            "--no-progress",
        ]
        + (["--out", str(out)] if out else [])
        + (["--workers", str(workers)] if workers else [])
    )
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out


def _rows(started):
    proc, out = started
    try:
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    text = out.read_text() if out else stdout
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 8
    return [(r["id"], repr(r["pll"]), repr(r["e_raw"])) for r in rows]


def test_threads_and_workers_give_the_same_bits(model_and_input, tmp_path):
    """The three runs are separate processes started together rather than one after another (each one's
    bits depend on its own thread count only, not on what else runs; their start-ups, single-threaded
    imports mostly, overlap on a second core)."""
    model, inp = model_and_input
    started = [
        _score(model, inp, "--threads", "1"),
        _score(model, inp, "--threads", "2"),
        _score(model, inp, out=tmp_path / "w.jsonl", workers=2),  # one thread per worker
    ]
    try:
        one, two, workers = (_rows(s) for s in started)
    finally:
        for proc, _ in started:
            proc.kill()
    assert two == one
    assert workers == one
