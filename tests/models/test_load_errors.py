"""A model folder that cannot be read is refused with one line naming the cause (exit status 2 in the CLI, no
traceback); pickles named by either index stay behind --allow-pickle; nothing turns on remote code."""

import ast
import builtins
import json
from pathlib import Path

import pytest
import torch
from conftest import save_tiny_bert

from mlmprob import load_mlm
from mlmprob.cli import main
from mlmprob.errors import ModelLoadError


class Touch:
    """Unpickling this calls ``open(path, "w")``: a pickle that runs code and leaves a file behind."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return builtins.open, (self.path, "w")


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "Traceback" not in err[0]
    return err[0]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("good"))


def copy_of(good, tmp_path, name="m") -> Path:
    d = tmp_path / name
    d.mkdir()
    for f in good.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    return d


def test_check_model_seq_longer_than_the_positions(good, capsys):
    assert main(["check-model", str(good), "--seq", "A" * 200]) == 2  # 202 tokens, 160 positions
    line = one_error_line(capsys)
    assert "sequence 1 has 202 tokens, more than the model's 160 positions" in line and "--seq" in line
    assert main(["check-model", str(good), "--seq", "A" * 158, "--positions", "2"]) == 0  # 160 tokens: fits


@pytest.mark.parametrize("content", [b"\x8a\x13random bytes" * 40, b"this is text, not weights\n" * 5, b""])
def test_a_model_safetensors_that_is_not_safetensors(good, tmp_path, capsys, content):
    d = copy_of(good, tmp_path)
    (d / "model.safetensors").write_bytes(content)
    with pytest.raises(ModelLoadError, match=r"model.safetensors: it is not a safetensors file") as e:
        load_mlm(str(d))
    assert "\n" not in str(e.value)
    seqs = tmp_path / "in.fasta"
    seqs.write_text(">a\nMKTAYIAK\n")
    assert main(["score", str(seqs), "--model", str(d), "--no-progress"]) == 2
    assert "model.safetensors: it is not a safetensors file" in one_error_line(capsys)
    assert main(["check-model", str(d)]) == 2
    assert "model.safetensors: it is not a safetensors file" in one_error_line(capsys)


def _grow_intermediate(d: Path) -> None:
    cfg = json.loads((d / "config.json").read_text())
    cfg["intermediate_size"] = 48  # the weights hold 32
    (d / "config.json").write_text(json.dumps(cfg))


def test_weights_whose_shapes_do_not_match_the_config(good, tmp_path, capsys):
    d = copy_of(good, tmp_path)
    _grow_intermediate(d)
    with pytest.raises(
        ModelLoadError,
        match=r"its weights do not match its config.json: bert\.encoder\.layer\.0\."
        r"intermediate\.dense\.bias has shape \[32\] in the weight files but "
        r"\[48\] by config.json \(and 2 more\)",
    ) as e:
        load_mlm(str(d))
    assert "\n" not in str(e.value)
    assert main(["check-model", str(d)]) == 2
    assert "do not match its config.json" in one_error_line(capsys)  # transformers' report held back too


def _to_pickles(d: Path, index: str | None) -> None:
    """Replace ``model.safetensors`` by two pickled shards named by ``index`` (or by one ``pytorch_model.bin``)."""
    from safetensors.torch import load_file

    state = load_file(d / "model.safetensors")
    (d / "model.safetensors").unlink()
    if index is None:
        torch.save(state, d / "pytorch_model.bin")
        return
    keys = sorted(state)
    shards = {
        "pytorch_model-00001-of-00002.bin": keys[: len(keys) // 2],
        "pytorch_model-00002-of-00002.bin": keys[len(keys) // 2 :],
    }
    for name, part in shards.items():
        torch.save({k: state[k] for k in part}, d / name)
    weight_map = {k: name for name, part in shards.items() for k in part}
    (d / index).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def test_a_pickled_shape_mismatch_is_one_line_too(good, tmp_path):
    d = copy_of(good, tmp_path)
    _to_pickles(d, None)
    _grow_intermediate(d)
    with pytest.raises(ModelLoadError, match="its weights do not match its config.json") as e:
        load_mlm(str(d), allow_pickle=True)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("index", ["model.safetensors.index.json", "pytorch_model.bin.index.json"])
def test_pickles_named_by_an_index_need_allow_pickle(good, tmp_path, capsys, index):
    want = load_mlm(str(good))
    d = copy_of(good, tmp_path)
    _to_pickles(d, index)
    with pytest.raises(
        ModelLoadError,
        match=r"only as a pickle \(pytorch_model-00001-of-00002.bin, "
        r"pytorch_model-00002-of-00002.bin\).*--allow-pickle",
    ) as e:
        load_mlm(str(d))
    assert "\n" not in str(e.value)
    assert main(["check-model", str(d)]) == 2
    assert "--allow-pickle" in one_error_line(capsys)
    m = load_mlm(str(d), allow_pickle=True)
    ids = m.encode(["MKTAYIAK"]).input_ids
    assert torch.equal(m.logits(ids), want.logits(ids))


def test_a_pickle_named_by_the_safetensors_index_never_runs(good, tmp_path):
    d = copy_of(good, tmp_path)
    _to_pickles(d, "model.safetensors.index.json")
    target = tmp_path / "payload-ran"
    torch.save({"bert.embeddings.word_embeddings.weight": Touch(target)}, d / "pytorch_model-00001-of-00002.bin")
    with pytest.raises(ModelLoadError, match="--allow-pickle"):
        load_mlm(str(d))
    with pytest.raises(
        ModelLoadError,
        match=r"refused to load .*pytorch_model-00001-of-00002.bin: it is not a "
        r"plain weights file \(it refers to io.open",
    ):
        load_mlm(str(d), allow_pickle=True)
    assert not target.exists()


def test_an_index_naming_a_file_outside_its_folder_or_missing(good, tmp_path):
    d = copy_of(good, tmp_path)
    (tmp_path / "elsewhere.safetensors").write_bytes((d / "model.safetensors").read_bytes())
    (d / "model.safetensors").unlink()
    index = d / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "../elsewhere.safetensors"}}))
    with pytest.raises(ModelLoadError, match="names a weight file outside its folder: '../elsewhere.safetensors'"):
        load_mlm(str(d))
    index.write_text(json.dumps({"weight_map": {"w": "model-00001-of-00002.safetensors"}}))
    with pytest.raises(ModelLoadError, match="names model-00001-of-00002.safetensors, which is missing"):
        load_mlm(str(d))
    index.write_text("{not json")
    with pytest.raises(ModelLoadError, match="model.safetensors.index.json is not a weights index"):
        load_mlm(str(d))


def test_a_hub_index_naming_pickles_is_refused(monkeypatch, tmp_path):
    import transformers.utils

    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "pytorch_model-00001-of-00002.bin"}}))
    monkeypatch.setattr(transformers.utils, "cached_file", lambda repo, name, **kw: str(index))
    with pytest.raises(
        ModelLoadError,
        match=r"names pytorch_model-00001-of-00002.bin, which is not a safetensors "
        r"file.*safetensors only",
    ):
        load_mlm("some-org/sharded-pickles-xyz")


def test_every_load_turns_remote_code_off(good, tmp_path, monkeypatch):
    """At run time: each Auto* load of a local folder (safetensors or pickles) says trust_remote_code=False."""
    import transformers

    seen = []
    for cls in (transformers.AutoTokenizer, transformers.AutoModelForMaskedLM, transformers.AutoConfig):
        real = cls.from_pretrained.__func__

        def spy(klass, *a, _real=real, _name=cls.__name__, **kw):
            seen.append((_name, kw.get("trust_remote_code")))
            return _real(klass, *a, **kw)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    d = copy_of(good, tmp_path)
    load_mlm(str(good))
    _to_pickles(d, "pytorch_model.bin.index.json")
    load_mlm(str(d), allow_pickle=True)
    names = {n for n, _ in seen}
    assert {"AutoTokenizer", "AutoModelForMaskedLM", "AutoConfig"} <= names
    assert all(flag is False for _, flag in seen), seen


def test_no_source_sets_remote_code_but_to_false():
    """In the source: every call naming trust_remote_code passes the constant False, and every Auto* load names
    it (AutoModel...from_pretrained directly or through models.weights.from_pretrained_checked)."""
    import mlmprob

    root = Path(mlmprob.__file__).parent
    for f in root.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.Call):
                continue
            kws = {k.arg: k.value for k in node.keywords}
            if "trust_remote_code" in kws:
                v = kws["trust_remote_code"]
                assert isinstance(v, ast.Constant) and v.value is False, f"{f}:{node.lineno}"
            fn = node.func
            auto = (
                isinstance(fn, ast.Attribute)
                and fn.attr == "from_pretrained"
                and isinstance(fn.value, ast.Name)
                and fn.value.id.startswith("Auto")
            )
            auto |= (
                isinstance(fn, ast.Name)
                and fn.id == "from_pretrained_checked"
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id.startswith("Auto")
            )
            if auto:
                assert "trust_remote_code" in kws, f"{f}:{node.lineno}: an Auto* load without trust_remote_code=False"


def _pad_is_a_residue(d: Path) -> Path:
    import transformers

    save_tiny_bert(d)
    transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False, pad_token="G").save_pretrained(str(d))
    return d


def test_a_pad_token_that_is_a_residue_is_one_refusal_shared_by_score_and_check_model(tmp_path, capsys):
    d = _pad_is_a_residue(tmp_path)
    with pytest.raises(ModelLoadError, match=r"pad token is 'G', which is also the residue G"):
        load_mlm(str(d))
    seqs = tmp_path / "in.fasta"
    seqs.write_text(">a\nMKTAYIAKQR\n")
    assert main(["score", str(seqs), "--model", str(d), "--no-progress"]) == 2
    from_score = one_error_line(capsys)
    assert main(["check-model", str(d)]) == 2
    from_check = one_error_line(capsys)
    assert from_score == from_check and "pad token is 'G'" in from_check
