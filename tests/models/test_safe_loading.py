"""Weights load only from safetensors or ``torch.load(weights_only=True)``; pickled weights need an
explicit opt-in, and a pickle that would run code is refused even then."""

import builtins
import json
import pickle

import pytest
import torch

from mlmprob import load_mlm
from mlmprob.cli import main
from mlmprob.errors import ModelLoadError


class Touch:
    """Unpickling this calls ``open(path, "w")``: a pickle that runs code and leaves a file behind."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return builtins.open, (self.path, "w")


def _tiny_dir(path, weights: str):
    """A tiny BERT folder whose weights are ``model.safetensors`` or only ``pytorch_model.bin``."""
    import transformers as tf
    from safetensors.torch import load_file

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    tf.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(path)
    torch.manual_seed(0)  # test-only weights
    model = tf.BertForMaskedLM(
        tf.BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=16,
        )
    )
    model.save_pretrained(path)
    if weights == "pickle":
        state = load_file(path / "model.safetensors")
        (path / "model.safetensors").unlink()
        torch.save(state, path / "pytorch_model.bin")
    return model.eval()


def test_pickled_weights_need_the_flag_and_load_with_weights_only(tmp_path):
    model = _tiny_dir(tmp_path, "pickle")
    with pytest.raises(ModelLoadError, match=r"only as a pickle \(pytorch_model.bin\).*--allow-pickle") as e:
        load_mlm(str(tmp_path))
    assert "\n" not in str(e.value)
    m = load_mlm(str(tmp_path), allow_pickle=True)
    ids = m.encode(["the cat sat"]).input_ids
    with torch.no_grad():
        assert torch.allclose(m.logits(ids), model(input_ids=ids).logits, atol=1e-6)


def test_safetensors_folder_loads_without_the_flag(tmp_path):
    model = _tiny_dir(tmp_path, "safetensors")
    m = load_mlm(str(tmp_path))
    ids = m.encode(["the cat"]).input_ids
    with torch.no_grad():
        assert torch.allclose(m.logits(ids), model(input_ids=ids).logits, atol=1e-6)


def test_code_in_a_pickle_never_runs(tmp_path):
    # the crafted pickle does run code under a plain unpickler: it creates its file
    control = tmp_path / "control-ran"
    pickle.loads(pickle.dumps({"w": Touch(control)}))
    assert control.exists()

    d = tmp_path / "model"
    d.mkdir()
    _tiny_dir(d, "pickle")
    target = tmp_path / "payload-ran"
    torch.save({"bert.embeddings.word_embeddings.weight": Touch(target)}, d / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="allow-pickle"):
        load_mlm(str(d))
    with pytest.raises(
        ModelLoadError, match=r"refused to load .*pytorch_model.bin: it is not a plain weights file"
    ) as e:
        load_mlm(str(d), allow_pickle=True)
    assert "\n" not in str(e.value)
    assert not target.exists()


def test_cli_allow_pickle_flag(tmp_path, capsys):
    d = tmp_path / "model"
    d.mkdir()
    _tiny_dir(d, "pickle")
    target = tmp_path / "payload-ran"
    seqs = tmp_path / "in.txt"
    seqs.write_text("the cat sat\n")
    assert main(["score", str(seqs), "--model", str(d), "--no-progress"]) == 2
    assert "--allow-pickle" in capsys.readouterr().err
    assert main(["score", str(seqs), "--model", str(d), "--no-progress", "--allow-pickle"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["id"] == "line1" and row["n_tokens"] == 3
    torch.save({"x": Touch(target)}, d / "pytorch_model.bin")
    assert main(["infill", "the _ sat", "--model", str(d), "--allow-pickle"]) == 2
    assert "not a plain weights file" in capsys.readouterr().err and not target.exists()


def test_no_remote_code_and_weights_only_everywhere():
    """No source file turns on remote code or a full unpickler."""
    from pathlib import Path

    import mlmprob

    root = Path(mlmprob.__file__).parent
    for f in root.rglob("*.py"):
        text = f.read_text()
        assert "trust_remote_code=True" not in text, f
        for line in text.splitlines():
            if "torch.load(" in line and not line.lstrip().startswith(("#", ">>>")):
                assert "weights_only=True" in line, f"{f}: {line.strip()}"
        if f.name != "ray_engine.py":  # it pickles its own results between actors and driver; reads no file
            assert "pickle.load" not in text, f


def test_antibody_loaders_use_weights_only(monkeypatch):
    calls = []
    real = torch.load

    def spy(*a, **kw):
        calls.append(kw.get("weights_only"))
        return real(*a, **kw)

    monkeypatch.setattr(torch, "load", spy)
    from mlmprob.models.antibody import load_antiberty, load_sapiens

    load_antiberty()
    load_sapiens("vh")
    assert calls == [True, True]


def test_hub_models_load_only_safetensors(monkeypatch):
    import transformers

    seen = {}

    def model_from_pretrained(where, **kw):
        seen.update(kw)
        raise OSError(
            f"{where} does not appear to have a file named model.safetensors or "
            "model.safetensors.index.json and thus cannot be loaded with `safetensors`."
        )

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda where, **kw: object())
    monkeypatch.setattr(transformers.AutoModelForMaskedLM, "from_pretrained", model_from_pretrained)
    with pytest.raises(ModelLoadError, match="has no safetensors weights.*--allow-pickle") as e:
        load_mlm("some-org/pickled-model-xyz")
    assert "\n" not in str(e.value)
    assert seen == {"use_safetensors": True, "trust_remote_code": False}


def test_the_pickle_refusal_is_our_own_line_and_never_advises_a_full_unpickler(tmp_path, capsys):
    d = tmp_path / "model"
    d.mkdir()
    _tiny_dir(d, "pickle")
    target = tmp_path / "payload-ran"
    torch.save({"x": Touch(target)}, d / "pytorch_model.bin")
    seqs = tmp_path / "in.txt"
    seqs.write_text("the cat sat\n")
    capsys.readouterr()
    assert main(["score", str(seqs), "--model", str(d), "--no-progress", "--allow-pickle"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and not target.exists()
    assert "it refers to io.open, which is not a tensor or plain data" in err, err
    assert "weights_only=False" not in err and "weights_only` set to `False" not in err and "\x1b" not in err, err
