"""float32 results do not depend on the thread count (issue 28, item 4): the same bits at 1, 2 and 3
threads, in one process (``torch.set_num_threads``), for ESM-2, BERT and RoBERTa, 16 and 32 wide, through
mlmprob's fused forward and transformers' own code, at sequence lengths 1-60 (odd ones included), for the
exact PLL (the last layer at the read positions), the full logits of a padded batch and the one-pass hidden
states. 3 threads on a 2-core machine still changes how MKL splits a product.

Without :mod:`mlmprob.runtime.threads` (``MLMPROB_THREAD_INVARIANT=0``) these models' products differ
between the thread counts on this project's AMD EPYC (docs/results/precision/threads_repro.md)."""

import random

import pytest
import torch
import torch.nn.functional as F
from conftest import TOKENS, tiny_tokenizer

import mlmprob
from mlmprob.models.hf import HFMaskedLM
from mlmprob.runtime import threads as rt

pytestmark = pytest.mark.skipif(not rt.available(), reason="torch without MKL: nothing is guaranteed")

THREADS = (1, 2, 3)
LENGTHS = (1, 2, 3, 5, 8, 17, 31, 33, 60)


def _model(kind: str, width: int, fused: bool) -> HFMaskedLM:
    import transformers as tf

    torch.manual_seed(0)  # test fixture weights
    common = dict(
        vocab_size=len(TOKENS),
        hidden_size=width,
        num_hidden_layers=2,
        num_attention_heads=2 if width == 16 else 4,
        intermediate_size=2 * width,
        pad_token_id=1,
        initializer_range=0.5,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    if kind == "esm":
        model = tf.EsmForMaskedLM(
            tf.EsmConfig(
                max_position_embeddings=66,
                position_embedding_type="rotary",
                mask_token_id=TOKENS.index("<mask>"),
                token_dropout=True,
                **common,
            )
        )
    elif kind == "bert":
        model = tf.BertForMaskedLM(tf.BertConfig(max_position_embeddings=64, **common))
    else:
        model = tf.RobertaForMaskedLM(tf.RobertaConfig(max_position_embeddings=66, type_vocab_size=1, **common))
    tok = tiny_tokenizer(64)
    mlm = HFMaskedLM(model.eval(), tok, name=f"{kind}{width}", proposal_ids=tok.residue_ids, max_length=64, fused=fused)
    assert (mlm._fused is not None) == fused
    return mlm


def _outputs(mlm: HFMaskedLM) -> list[torch.Tensor]:
    rng = random.Random(0)
    letters = "ACDEFGHIKL"
    seqs = ["".join(rng.choice(letters) for _ in range(n)) for n in LENGTHS]
    out = []
    for s in seqs:
        out.append(mlmprob.pll(mlm, mlm.encode([s]).input_ids))
    batch = mlm.encode(seqs).input_ids  # right-padded to 62 tokens
    out.append(mlm.logits(batch))
    rows = torch.arange(batch.shape[0]).repeat_interleave(3)
    cols = torch.tensor([1, 2, 3] * batch.shape[0])
    out.append(mlm.hidden_at(batch, rows, cols))
    return out


def _by_threads(mlm) -> dict[int, list[torch.Tensor]]:
    before = torch.get_num_threads()
    try:
        res = {}
        for t in THREADS:
            torch.set_num_threads(t)
            res[t] = _outputs(mlm)
        return res
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "transformers"])
@pytest.mark.parametrize("kind,width", [("esm", 16), ("esm", 32), ("bert", 16), ("bert", 32), ("roberta", 32)])
def test_same_bits_at_any_thread_count(kind, width, fused):
    res = _by_threads(_model(kind, width, fused))
    for t in THREADS[1:]:
        for a, b in zip(res[1], res[t]):
            assert torch.equal(a, b), f"{kind}{width}: {t} threads differ from 1 by {(a - b).abs().max():.3g}"


def test_linear_same_bits_at_any_thread_count():
    """The product itself, at the shapes where MKL's threaded sgemm moved (at most 32 rows) and past the
    block size (blocks on several threads)."""
    g = torch.Generator().manual_seed(0)
    before = torch.get_num_threads()
    try:
        for rows, k, n in [
            (4, 32, 16),
            (5, 64, 17),
            (31, 32, 32),
            (32, 16, 33),
            (3, 512, 512),
            (rt.ROWS + 1, 64, 96),
            (3 * rt.ROWS - 7, 32, 64),
        ]:
            x, w, b = torch.randn(rows, k, generator=g), torch.randn(n, k, generator=g), torch.randn(n, generator=g)
            got = {}
            for t in (1, 2, 3, 4):
                torch.set_num_threads(t)
                with torch.inference_mode():
                    got[t] = rt.linear(x, w, b)
                with rt.sequential_blas():
                    got[-t] = F.linear(x, w, b)
            for t in (2, 3, 4):
                assert torch.equal(got[t], got[1]) and torch.equal(got[-t], got[-1]), (rows, k, n, t)
            assert torch.allclose(got[1], F.linear(x, w, b), rtol=1e-5, atol=1e-4)
    finally:
        torch.set_num_threads(before)


def test_linear_falls_back(monkeypatch):
    """Gradients, other dtypes and the switch off: torch's own ``F.linear``."""
    x, w = torch.randn(300, 8, requires_grad=True), torch.randn(4, 8)
    y = rt.linear(x, w)
    y.sum().backward()
    assert x.grad is not None
    assert rt.linear(x.detach().bfloat16(), w.bfloat16()).dtype == torch.bfloat16
    monkeypatch.setenv("MLMPROB_THREAD_INVARIANT", "0")
    assert not rt.enabled()
    with rt.sequential_blas():  # a no-op when off
        assert torch.equal(rt.linear(x.detach(), w), F.linear(x.detach(), w))


def test_sequential_blas_restores_and_nests():
    set_local = rt._mkl_set_local()
    before = set_local(0)
    try:
        with rt.sequential_blas():
            with rt.sequential_blas():
                assert set_local(1) == 1
            assert set_local(1) == 1
        assert set_local(0) == 0  # back to MKL's global setting
    finally:
        set_local(before)
