"""MLM pretraining: tiny runs (a few dozen steps) on a Potts chain and on a text file."""

import json

import pytest
import torch

import mlmprob
from mlmprob import MLMProbError
from mlmprob.synthetic import PottsChain, load_language
from mlmprob.training import SymbolMLM, SyntheticSource, TextSource, TrainConfig, read_result, train
from mlmprob.training.masking import corrupt, select_positions

pytestmark = pytest.mark.usefixtures("one_thread")


TINY = dict(
    hidden_size=16,
    num_layers=1,
    num_heads=2,
    intermediate_size=32,
    batch_size=16,
    lr=5e-3,
    warmup_steps=3,
    mask_rate=0.2,
    kl_sequences=16,
)


def potts():
    return PottsChain(4, 6, coupling=2.0, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("potts")
    cfg = TrainConfig(max_steps=30, eval_every=10, checkpoint_every=10, **TINY)
    return train(cfg, SyntheticSource(potts(), 256, 32), out, progress=False), out


def test_loss_goes_down_and_outputs_are_written(trained):
    res, out = trained
    assert res.done and res.step == 30 and len(res.train_losses) == 30
    first, last = sum(res.train_losses[:5]) / 5, sum(res.train_losses[-5:]) / 5
    assert last < first - 0.2
    h = res.history
    assert [r["step"] for r in h] == [10, 20, 30]
    assert h[-1]["heldout_loss"] < h[0]["heldout_loss"] and h[-1]["kl"] < h[0]["kl"]
    assert all(r["heldout_floor"] <= r["heldout_loss"] for r in h)  # the true conditionals are the floor
    for name in ("model.safetensors", "config.json", "trainer_state.json", "loss_curve.png", "language.safetensors"):
        assert (out / name).is_file(), name
    ckpts = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert ckpts == ["step-00000020", "step-00000030"]  # keep_checkpoints=2
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["done"] and state["config"]["max_steps"] == 30
    assert read_result(out).history == res.history


def test_saved_model_loads_and_scores(trained):
    _, out = trained
    m = mlmprob.load_mlm(str(out))
    lang = load_language(out / "language.safetensors")
    x = lang.sample(3, torch.Generator().manual_seed(0))
    enc = m.encode([" ".join(f"t{v}" for v in row) for row in x.tolist()])
    assert enc.input_ids.shape == (3, 8) and torch.equal(enc.input_ids[:, 1:-1], x + 5)
    p = mlmprob.pll(m, enc.input_ids)
    assert p.shape == (3,) and torch.isfinite(p).all()
    # the symbol view renormalises over the V symbols: the same logits, mass on special tokens dropped
    sym = SymbolMLM(m, lang.vocab_size, lang.length)
    assert torch.equal(sym.logits(x), m.logits(enc.input_ids)[:, 1:-1, 5:9])
    assert torch.all(mlmprob.pll(sym, x) >= p - 1e-5)
    assert torch.isfinite(mlmprob.pll(lang.as_mlm(), x)).all()


def test_resume_gives_the_same_result(tmp_path):
    cfg = TrainConfig(max_steps=8, eval_every=4, checkpoint_every=3, masking="dynamic", dropout=0.1, **TINY)
    src = SyntheticSource(potts(), 64, 16)
    full = train(cfg, src, tmp_path / "full", progress=False)
    part = train(cfg, src, tmp_path / "cut", progress=False, stop_after=5)
    assert not part.done and part.step == 5
    assert not (tmp_path / "cut" / "model.safetensors").exists()
    rest = train(cfg, src, tmp_path / "cut", progress=False)
    assert rest.resumed_from == 5 and rest.done
    assert rest.train_losses == full.train_losses
    assert rest.history == tuple(dict(h, elapsed_s=rest.history[i]["elapsed_s"]) for i, h in enumerate(full.history))
    from safetensors.torch import load_file

    a, b = load_file(tmp_path / "full" / "model.safetensors"), load_file(tmp_path / "cut" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # another configuration cannot resume this directory
    with pytest.raises(MLMProbError, match="different configuration.*lr"):
        train(
            TrainConfig(**{**cfg.to_dict(), "lr": 1e-2, "mask_split": cfg.mask_split}),
            src,
            tmp_path / "cut",
            progress=False,
        )
    with pytest.raises(MLMProbError, match="already holds"):
        train(cfg, src, tmp_path / "cut", progress=False, resume=False)


def _masks_seen(tmp_path, masking, monkeypatch):
    """Train 6 steps of 16 on 32 sequences (3 epochs) and record, per training example, the
    (inputs, labels) the loss saw at each visit."""
    from mlmprob.training import loop

    order, seen = [], {}
    indices, loss = loop._Batches.indices, loop._masked_lm_loss

    def spy_indices(self, step):
        idx = indices(self, step)
        order.append(idx)
        return idx

    def spy_loss(model, inputs, labels, pad_id):
        for i, x, y in zip(order[-1].tolist(), inputs, labels):
            seen.setdefault(i, []).append((x.clone(), y.clone()))
        return loss(model, inputs, labels, pad_id)

    monkeypatch.setattr(loop._Batches, "indices", spy_indices)
    monkeypatch.setattr(loop, "_masked_lm_loss", spy_loss)
    cfg = TrainConfig(max_steps=6, eval_every=6, checkpoint_every=6, masking=masking, **TINY)
    res = train(cfg, SyntheticSource(potts(), 32, 8), tmp_path / masking, progress=False)
    assert res.done and len(res.train_losses) == 6
    assert sorted(seen) == list(range(32)) and all(len(v) == 3 for v in seen.values())
    return seen


def test_static_masking_keeps_each_examples_mask(tmp_path, monkeypatch):
    """Static: every visit of an example sees the same corrupted input and labels. Dynamic: new
    masks per visit; with k = 1 of 6 positions a revisit repeats the position with probability 1/6,
    so among 32 examples x 2 revisits about 11 repeats are expected (s.d. 3): fewer than 32 is certain."""
    static = _masks_seen(tmp_path, "static", monkeypatch)
    for visits in static.values():
        (x0, y0), rest = visits[0], visits[1:]
        assert (y0 != -100).sum() == 1  # k = max(1, round(0.2 * 6)) = 1 selected
        assert all(torch.equal(x, x0) and torch.equal(y, y0) for x, y in rest)
    dynamic = _masks_seen(tmp_path, "dynamic", monkeypatch)
    same = sum(torch.equal(y, visits[0][1]) for visits in dynamic.values() for _, y in visits[1:])
    assert same < 32
    assert all((y != -100).sum() == 1 for visits in dynamic.values() for _, y in visits)


def test_text_run_with_wordpiece(tmp_path):
    text = tmp_path / "corpus.txt"
    words = "the cat sat on the mat while a dog ran after the cats and dogs".split()
    g = torch.Generator().manual_seed(0)
    # lines of different lengths: batches are trimmed to their longest row (labels sliced with them)
    lines = [
        " ".join(words[i] for i in torch.randint(len(words), (3 + n % 9,), generator=g).tolist()) for n in range(60)
    ]
    text.write_text("\n".join(lines) + "\n\n")
    cfg = TrainConfig(max_steps=4, eval_every=2, checkpoint_every=4, **{**TINY, "kl_sequences": 0})
    out = tmp_path / "run"
    res = train(cfg, TextSource([str(text)], vocab_size=40, max_length=16, heldout_fraction=0.1), out, progress=False)
    assert res.done and res.history[-1]["kl"] is None and res.history[-1]["heldout_floor"] is None
    m = mlmprob.load_mlm(str(out))
    enc = m.encode(["the cat sat on the mat"])
    assert torch.isfinite(mlmprob.pll(m, enc.input_ids)).all()
    assert m.max_length == 16
    with pytest.raises(MLMProbError, match="not found"):
        train(cfg, TextSource([str(tmp_path / "missing.txt")]), tmp_path / "x", progress=False)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"ok\n\xff\x00", r"text file '.*b.txt' is not UTF-8 text \(byte 0xff at offset 3\); is it a binary file\?"),
        (b"\xef\xbb\xbfok\nA\x00", r"text file '.*b.txt' holds a NUL byte at offset 7; is it a binary file\?"),
    ],
)
def test_a_binary_text_file_is_one_line_naming_the_byte(tmp_path, content, message):
    (tmp_path / "b.txt").write_bytes(content)
    with pytest.raises(MLMProbError, match=message) as e:
        TextSource([str(tmp_path / "b.txt")]).read_lines()
    assert "\n" not in str(e.value)


def test_masking_selects_k_per_row_and_splits():
    g = torch.Generator().manual_seed(0)
    ids = torch.arange(5, 25).reshape(2, 10)
    maskable = torch.ones(2, 10, dtype=torch.bool)
    maskable[1, 6:] = False  # a shorter row
    sel = select_positions(maskable, 0.3, g)
    assert sel.sum(1).tolist() == [3, 2] and not (sel & ~maskable).any()
    sel = select_positions(torch.ones(4000, 10, dtype=torch.bool), 0.5, g)
    ids = torch.randint(5, 25, (4000, 10), generator=g)
    x, y = corrupt(ids, sel, (0.6, 0.3, 0.1), 4, torch.arange(5, 25), g)
    assert torch.equal(y[sel], ids[sel]) and (y[~sel] == -100).all() and torch.equal(x[~sel], ids[~sel])
    n = int(sel.sum())
    frac_mask = float((x[sel] == 4).sum()) / n
    frac_same = float((x[sel] == ids[sel]).sum()) / n  # keep + random draws that hit the same token
    assert abs(frac_mask - 0.6) < 5 * (0.24 / n) ** 0.5
    assert abs(frac_same - (0.1 + 0.3 / 20)) < 5 * (0.1 / n) ** 0.5


def test_config_validation():
    with pytest.raises(MLMProbError, match="mask_rate"):
        TrainConfig(mask_rate=0.0)
    with pytest.raises(MLMProbError, match="mask_split"):
        TrainConfig(mask_split=(0.8, 0.1, 0.2))
    with pytest.raises(MLMProbError, match="masking"):
        TrainConfig(masking="sometimes")
    assert TrainConfig.from_dict(TrainConfig().to_dict()) == TrainConfig()


def test_cli_train_synthetic(tmp_path, capsys):
    from mlmprob import cli

    args = cli.build_parser()
    if "train" not in cli.COMMANDS:  # until the lead wires the command in
        sub = next(a for a in args._actions if a.__class__.__name__ == "_SubParsersAction")
        from mlmprob.commands import train as train_cmd

        train_cmd.register(sub)
    ns = args.parse_args(
        [
            "train",
            "--out",
            str(tmp_path),
            "--synthetic",
            "hmm",
            "--vocab-size",
            "5",
            "--length",
            "6",
            "--n-train",
            "32",
            "--n-heldout",
            "8",
            "--hidden",
            "16",
            "--layers",
            "1",
            "--intermediate",
            "32",
            "--steps",
            "2",
            "--batch-size",
            "8",
            "--eval-every",
            "2",
            "--kl-sequences",
            "4",
            "--no-progress",
            "--mask-split",
            "0.8,0.1,0.1",
        ]
    )
    assert ns.func(ns) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["done"] and summary["step"] == 2 and summary["heldout_floor"] is None and summary["kl"] > 0


def test_masked_lm_loss_equals_the_hf_loss():
    from transformers import BertConfig, BertForMaskedLM

    from mlmprob.training.loop import _masked_lm_loss

    torch.manual_seed(0)
    model = BertForMaskedLM(
        BertConfig(
            vocab_size=20,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=12,
            pad_token_id=0,
        )
    ).eval()
    ids = torch.randint(5, 20, (4, 10))
    ids[1, 7:] = 0
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    labels[0, 5] = ids[0, 5]
    inputs = ids.masked_fill(labels != -100, 4)
    ref = model(input_ids=inputs, attention_mask=(inputs != 0).long(), labels=labels).loss
    assert torch.allclose(_masked_lm_loss(model, inputs, labels, 0), ref, atol=1e-6)


def test_bf16_precision_trains_and_is_validated(tmp_path):
    cfg = TrainConfig(max_steps=3, eval_every=3, checkpoint_every=3, precision="bf16", **TINY)
    res = train(cfg, SyntheticSource(potts(), 32, 8), tmp_path, progress=False)
    assert res.done and all(torch.isfinite(torch.tensor(res.train_losses)))
    # the autocast changes the numbers: bf16 and fp32 runs differ (so the option is really applied)
    ref = train(
        TrainConfig(max_steps=3, eval_every=3, checkpoint_every=3, **TINY),
        SyntheticSource(potts(), 32, 8),
        tmp_path / "fp32",
        progress=False,
    )
    assert res.train_losses != ref.train_losses
    with pytest.raises(MLMProbError, match="precision"):
        TrainConfig(precision="fp16")
