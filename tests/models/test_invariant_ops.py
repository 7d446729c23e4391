"""The fast thread-invariant products of issue 37 (mlmprob.runtime.threads): large products on MKL's threads
in its strict mode, small ones and every product without it in fixed blocks, attention in fixed blocks of
batch rows on the pool; the same bits at 1-4 threads, and close to torch's own kernels."""

import pytest
import torch
import torch.nn.functional as F

from mlmprob.runtime import threads as rt

blocked = rt.blocked_attention

pytestmark = pytest.mark.skipif(not rt.available(), reason="torch without MKL: nothing is guaranteed")


def _at_threads(fn) -> dict[int, torch.Tensor]:
    before = torch.get_num_threads()
    try:
        out = {}
        for t in (1, 2, 3, 4):
            torch.set_num_threads(t)
            with torch.inference_mode():
                out[t] = fn()
        return out
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("strict", [True, False], ids=["strict-cnr", "blocks"])
def test_linear_both_paths_same_bits(monkeypatch, strict):
    monkeypatch.setattr(rt, "strict_cnr", lambda: strict)
    g = torch.Generator().manual_seed(1)
    for rows, k, n in [(rt.ROWS + 1, 64, 33), (3 * rt.ROWS - 7, 96, 160), (2000, 128, 64)]:
        x, w, b = torch.randn(rows, k, generator=g), torch.randn(n, k, generator=g), torch.randn(n, generator=g)
        got = _at_threads(lambda x=x, w=w, b=b: rt.linear(x, w, b))
        assert all(torch.equal(got[1], got[t]) for t in (2, 3, 4)), (rows, k, n)
        assert torch.allclose(got[1], F.linear(x, w, b), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("strict", [True, False], ids=["strict-cnr", "blocks"])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float", "bool-2d"])
def test_attention_same_bits_and_close_to_torch(monkeypatch, mask_kind, strict):
    """Both paths: torch's fused kernel in MKL's strict mode, the blocks on the pool without it."""
    monkeypatch.setattr(rt, "strict_cnr", lambda: strict)
    fused = []
    monkeypatch.setattr(rt, "blocked_attention", lambda *a: fused.append(False) or blocked(*a))
    g = torch.Generator().manual_seed(2)
    b, h, lq, lk, d = 37, 3, 29, 31, 8  # several blocks of batch rows (ATTENTION_CHUNK patched below)
    q, k, v = (torch.randn(b, h, n, d, generator=g) for n in (lq, lk, lk))
    mask = None
    if mask_kind is not None:
        keep = torch.rand(b, 1, 1, lk, generator=g) > 0.3
        keep[..., 0] = True
        keep[0] = False  # a fully masked batch row: zeros, as torch's math kernel gives
        mask = keep if mask_kind == "bool" else (~keep).float() * -1e4
        if mask_kind == "bool-2d":  # one mask for every batch row and head
            mask = torch.rand(lq, lk, generator=g) > 0.3
            mask[:, 0] = True
    old = rt.ATTENTION_CHUNK
    rt.ATTENTION_CHUNK = lq * lk * 4  # blocks of 4 batch rows
    try:
        got = _at_threads(lambda: rt.attention(q, k, v, attn_mask=mask, scale=0.3))
    finally:
        rt.ATTENTION_CHUNK = old
    assert all(torch.equal(got[1], got[t]) for t in (2, 3, 4))
    assert fused == ([] if strict else [False] * 4)  # which path ran, at each of the four thread counts
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
    assert torch.allclose(got[1], ref, rtol=1e-4, atol=1e-5)


def test_attention_falls_back_for_what_it_does_not_cover(monkeypatch):
    q = torch.randn(2, 2, 5, 4)
    causal = rt.attention(q, q, q, is_causal=True)
    assert torch.allclose(causal, F.scaled_dot_product_attention(q, q, q, is_causal=True), atol=1e-6)
    monkeypatch.setenv("MLMPROB_THREAD_INVARIANT", "0")
    assert torch.equal(rt.attention(q, q, q), F.scaled_dot_product_attention(q, q, q))


def test_forward_mode_routes_linear_and_attention(monkeypatch):
    """Inside a forward (``invariant_method``), ``F.linear`` and ``F.scaled_dot_product_attention`` go to the
    invariant products; int8 models keep torch's own."""
    calls = []
    monkeypatch.setattr(rt, "linear", lambda *a: calls.append("linear") or F.linear(*a))
    monkeypatch.setattr(rt, "attention", lambda *a, **k: calls.append("attention") or torch.zeros(1))

    class M:
        device, dtype = torch.device("cpu"), torch.float32

        @rt.invariant_method
        def forward(self, x):
            F.linear(x, torch.ones(2, 3))
            return F.scaled_dot_product_attention(x[None, None], x[None, None], x[None, None])

    M().forward(torch.ones(4, 3))
    assert calls == ["linear", "attention"]
    M.dtype = torch.int8
    calls.clear()
    M().forward(torch.ones(4, 3))
    assert calls == []


def test_rotary_same_bits_at_three_threads():
    """ESM's rotary embedding in the exact path: torch's complex multiplication gave other bits at 3 threads
    (its vectorised and scalar loops round differently) on tensors large enough to be split; the real
    arithmetic used under thread invariance does not."""
    from mlmprob.models.fused import FusedEsm

    fz = object.__new__(FusedEsm)
    fz.head_dim = 24
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(32, 34, 20, 24, generator=g), torch.randn(32, 34, 20, 24, generator=g)
    angle = torch.arange(34.0)[:, None] * torch.rand(12, generator=g)[None, :]
    rot = torch.polar(torch.ones_like(angle), angle)
    got = _at_threads(lambda: torch.cat([t.flatten() for t in fz._position(q, k, rot, None, exact=True)]))
    assert all(torch.equal(got[1], got[t]) for t in (2, 3, 4))
    plain = torch.cat([t.flatten() for t in fz._position(q, k, rot, None)])
    assert torch.allclose(got[1], plain, atol=1e-5)


@pytest.mark.parametrize(
    "code, strict, value",
    [
        ("import mlmprob", True, "AUTO,STRICT"),  # mlmprob first: MKL starts in its strict mode
        ("import torch, mlmprob", False, ""),  # torch first: MKL may have started; off, for workers too
    ],
)
def test_the_strict_mode_is_claimed_only_where_mkl_can_have_read_it(code, strict, value):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    probe = f"{code}; import os; from mlmprob.runtime.threads import strict_cnr; print(strict_cnr(), os.environ['MKL_CBWR'])"
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    assert out.stdout.split("\n")[0] == f"{strict} {value}"


@pytest.mark.parametrize("strict", [True, False], ids=["strict-cnr", "blocks"])
def test_small_row_products_in_column_blocks_same_bits(monkeypatch, strict):
    """Products of at most ``ROWS`` rows (the last layer at the reads, the LM heads, BERT-base's ``[32, 768] x
    [768, 30522]`` decoder included) in fixed blocks of output columns on the threads: the same bits at 1-4
    threads, the same blocks at every thread count, and F.linear's values within float32 rounding."""
    monkeypatch.setattr(rt, "strict_cnr", lambda: strict)
    seen: list[list] = []
    run = rt.run_blocks
    monkeypatch.setattr(rt, "run_blocks", lambda fn, starts: seen.append(list(starts)) or run(fn, starts))
    g = torch.Generator().manual_seed(4)
    for lead, k, n, bias in [((32,), 768, 30522, True), ((4, 8), 768, 3072, True), ((rt.ROWS,), 96, 1000, False)]:
        x, w = torch.randn(*lead, k, generator=g), torch.randn(n, k, generator=g) / k**0.5
        b = torch.randn(n, generator=g) if bias else None
        seen.clear()
        got = _at_threads(lambda x=x, w=w, b=b: rt.linear(x, w, b))
        width = rt.column_width(x.numel() // k, k, n)
        assert seen == [list(range(0, n, width))] * 4 and len(seen[0]) > 1, (lead, k, n)
        assert all(torch.equal(got[1], got[t]) for t in (2, 3, 4)), (lead, k, n)
        assert got[1].shape == (*lead, n)
        assert torch.allclose(got[1], F.linear(x, w, b), rtol=1e-5, atol=1e-5)


def test_column_width_fixed_by_the_shape():
    for rows, k, n in [(1, 16, 8), (1, 768, 768), (32, 768, 768), (32, 768, 30522), (256, 3072, 768), (7, 5, 100000)]:
        w = rt.column_width(rows, k, n)
        blocks = -(-n // w)
        assert w % 64 == 0 and 1 <= blocks <= rt.COLUMN_BLOCKS
        assert blocks == 1 or rows * k * w >= rt.COLUMN_WORK


def test_run_blocks_runs_every_task_once_and_restores_the_threads():
    import threading

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        done, lock = [], threading.Lock()

        def task(s):
            with lock:
                done.append((s, torch.get_num_threads()))

        rt.run_blocks(task, list(range(40)))
        assert sorted(s for s, _ in done) == list(range(40))
        assert {n for _, n in done} == {1}  # torch's kernels serial in every thread that took a task
        assert torch.get_num_threads() == 3

        def fail(s):
            if s == 7:
                raise ValueError("seven")

        with pytest.raises(ValueError, match="seven"):
            rt.run_blocks(fail, list(range(10)))
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_rotary_real_arithmetic_rounds_as_the_products_of_halves():
    """The exact rotary (factors ``[c | c]``, ``[s | s]`` over whole rows) gives the bits of ``(a c - b s, a s +
    b c)`` from the halves, for the full layers and the last layer at the reads, at 1-4 threads."""
    from mlmprob.models.fused import FusedEsm

    fz = object.__new__(FusedEsm)
    fz.head_dim = 24
    g = torch.Generator().manual_seed(5)
    qkv = torch.randn(6, 34, 3, 4, 24, generator=g)  # q and k as the fused Q/K/V's views
    angle = torch.arange(34.0)[:, None] * torch.rand(12, generator=g)[None, :]
    rot = torch.polar(torch.ones_like(angle), angle)
    rows, cols = torch.arange(6), torch.randint(0, 34, (6,), generator=g)

    def halves(x, r):
        a, b, out = x[..., :12], x[..., 12:], torch.empty(x.shape)
        out[..., 0::2], out[..., 1::2] = a * r.real - b * r.imag, a * r.imag + b * r.real
        return out

    def both():
        full = fz._position(qkv[:, :, 0], qkv[:, :, 1], rot, None, exact=True)
        reads = fz._position(qkv[rows, cols, 0].unsqueeze(1), qkv[rows, :, 1], rot, cols, exact=True)
        return full + reads

    got = _at_threads(both)
    want = (
        halves(qkv[:, :, 0], rot[:, None, :]),
        halves(qkv[:, :, 1], rot[:, None, :]),
        halves(qkv[rows, cols, 0].unsqueeze(1), rot[cols][:, None, None, :]),
        halves(qkv[rows, :, 1], rot[:, None, :]),
    )
    for t in (1, 2, 3, 4):
        assert all(torch.equal(a, b) for a, b in zip(got[t], want, strict=True)), t


def test_direct_products_suspend_the_routing_of_the_forward(monkeypatch):
    """The fused forward calls the invariant products itself and suspends the routing of ``invariant_method``
    (about 2.4 us per torch call); it comes back after, and outside a forward there is nothing to suspend."""
    calls = []
    monkeypatch.setattr(rt, "linear", lambda *a: calls.append("linear") or F.linear(*a))

    class M:
        device, dtype = torch.device("cpu"), torch.float32

        @rt.invariant_method
        def forward(self, x):
            with rt.direct_products():
                F.linear(x, torch.ones(2, 3))
                self.inner(x)
                F.linear(x, torch.ones(2, 3))
            return F.linear(x, torch.ones(2, 3))

        @rt.invariant_method
        def inner(self, x):  # a forward inside: routed again
            return F.linear(x, torch.ones(2, 3))

    M().forward(torch.ones(4, 3))
    assert calls == ["linear", "linear"]
    with rt.direct_products():
        assert F.linear(torch.ones(1, 3), torch.ones(2, 3)).shape == (1, 2)
    assert calls == ["linear", "linear"]
