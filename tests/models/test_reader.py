"""The model contract (issue 28, item 1): one typed Reader that a model is wrapped in once; algorithms read
its fields, and the forward budget lives in it rather than in every algorithm's signature."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import mlmprob
from mlmprob import ExactMLM, Reader, reader_of
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import LookupMLM

SRC = Path(mlmprob.__file__).resolve().parent


def test_a_plain_model_is_wrapped_with_its_defaults():
    m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    r = reader_of(m)
    assert isinstance(r, Reader) and r.wrapped is m
    assert (r.mask_id, r.vocab_size, r.pad_id, r.special_ids, r.proposal_ids) == (3, 3, None, frozenset(), None)
    assert r.device == torch.device("cpu") and r.dtype == torch.float32 and r.window is None
    assert r.pads_safely and r.head == "logits" and r.fused is None and r.model is None and not r.has_text
    assert reader_of(r) is r and reader_of(r, 64).batch_tokens == 64 and r.batch_tokens is None
    x = torch.tensor([[0, 3, 2], [1, 1, 0]])
    assert torch.equal(r.logits_at(x, torch.tensor([0, 1]), torch.tensor([1, 2])), m.logits(x)[[0, 1], [1, 2]])
    assert r.default_positions(x).tolist() == [[True, False, True], [True, True, True]]
    with pytest.raises(MLMProbError, match="no tokenizer"):
        r.encode(["abc"])
    with pytest.raises(MLMProbError, match="hidden_at"):
        r.hidden_at(x, torch.tensor([0]), torch.tensor([0]))


def test_not_a_model_and_a_bad_budget_are_refused():
    with pytest.raises(MLMProbError, match="not a masked LM"):
        reader_of(object())
    with pytest.raises(MLMProbError, match="batch_tokens must be positive"):
        reader_of(LookupMLM(vocab_size=3, length=3, seed=0), 0)


def test_lengths_come_from_the_padding_id_only():
    class Padded(LookupMLM):
        pad_id = 5  # a reserved id past the vocabulary (the tokenizer had no pad of its own)

    r = reader_of(Padded(vocab_size=3, length=4, seed=0))
    ids = torch.tensor([[0, 3, 3, 5], [3, 1, 5, 5]])  # the mask (3) at the end of a row is not padding
    assert r.lengths(ids).tolist() == [3, 2]
    assert r.foreign(torch.tensor([0, 2, 3, 5, 4, -1])).tolist() == [False, False, False, False, True, True]


def test_the_budget_reaches_the_forward_primitive():
    """Smaller budgets mean more sub-batches for the same reads, and the same numbers."""

    class Counting(LookupMLM):
        calls = 0

        def logits(self, input_ids):
            type(self).calls += 1
            return super().logits(input_ids)

    m = Counting(vocab_size=4, length=6, seed=1)
    ids = torch.randint(0, 4, (1, 6), generator=torch.Generator().manual_seed(0))
    Counting.calls = 0
    big = mlmprob.token_scores(reader_of(m, 10**6), ids).pll
    n_big = Counting.calls
    Counting.calls = 0
    small = mlmprob.token_scores(reader_of(m, 12), ids).pll  # 2 rows of 6 tokens per sub-batch
    assert (n_big, Counting.calls) == (1, 3)
    assert torch.allclose(big, small, atol=1e-6)


def test_load_mlm_returns_a_reader(tiny_bert_dir):
    m = mlmprob.load_mlm(str(tiny_bert_dir), dtype="float32", batch_tokens=512)
    assert isinstance(m, Reader) and m.batch_tokens == 512 and m.has_text and m.has_hidden
    assert m.pad_id == 0 and m.model is not None and m.proposal_ids is not None  # a protein BERT (20 residues)
    assert m.window == 160 and m.max_length is None and m.core is m.wrapped.inner  # long proteins: windows
    assert m.head == "shortcut" and m.pads_safely and m.fused is True and m.probe is not None
    assert m.with_budget(None).batch_tokens is None and m.batch_tokens == 512


# functions that may still take a budget: the primitive's own arithmetic, the reader, the jobs' and
# runners' configuration (they hand it to the reader they load), and provenance records
BUDGET_ALLOWED = {
    "rows_per_batch",
    "plan_groups",
    "auto_batch_tokens",
    "__init__",
    "with_budget",
    "reader_of",
    "load_mlm",
    "computed_with",
    "run_joints",
    "build_app",
    "packed_groups",
}


def test_no_algorithm_takes_a_budget_argument():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in BUDGET_ALLOWED:
                names = [a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs]
                if "batch_tokens" in names:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert not found, found


def test_gpu_budget_follows_the_cards_total_memory_not_its_free_memory(monkeypatch, tiny_bert):
    """A record longer than one sub-batch is cut where the budget says, so the budget must not move with the
    free memory (other processes, the allocator's cache): two readings of different free memory give one
    budget, a power of two; a card with more memory may give a larger one."""
    from types import SimpleNamespace

    from mlmprob.models import forward

    GiB = 1 << 30
    fake = SimpleNamespace(
        batch_tokens=None, device=torch.device("cuda"), model=tiny_bert.model, max_length=512, dtype=torch.float32
    )
    monkeypatch.setattr(forward, "reader_of", lambda mlm: fake)
    budgets = []
    for free, total in ((70 * GiB, 80 * GiB), (3 * GiB, 80 * GiB), (140 * GiB, 141 * GiB)):
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None, f=free, t=total: (f, t))
        budgets.append(forward.auto_batch_tokens(object()))
    assert budgets[0] == budgets[1] and budgets[2] >= budgets[0]
    assert all(b & (b - 1) == 0 and 1024 <= b <= 64 * forward.BUDGET_UNIT for b in budgets)
