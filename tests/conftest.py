import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# MKL's strict reproducibility mode, as a user's process gets it when mlmprob is imported first (this file imports
# torch first, after which mlmprob turns the mode off: runtime/threads.py). The strict-mode tests of
# tests/models/test_invariant_ops.py claim it, and on an AMD EPYC without it MKL's threaded products moved.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

import pytest
import torch

from mlmprob.models.hf import HFMaskedLM
from mlmprob.models.tokenizers import ResidueTokenizer

TOKENS = ["<cls>", "<pad>", "<sep>", "<mask>"] + list("ACDEFGHIKL")


def tiny_tokenizer(max_length=40):
    return ResidueTokenizer(TOKENS, bos="<cls>", eos="<sep>", pad="<pad>", mask="<mask>", max_length=max_length)


def tiny_hf(kind="bert", seed=0, init=0.5):
    """A small random-weight HF masked LM of the given family behind HFMaskedLM (``init``: the weights' std)."""
    import transformers as tf

    torch.manual_seed(seed)  # weight init of test fixtures only
    V = len(TOKENS)
    common = dict(
        vocab_size=V,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=1,
        initializer_range=init,
    )  # large init: peaked, discriminating conditionals
    if kind == "bert":
        model = tf.BertForMaskedLM(tf.BertConfig(max_position_embeddings=64, **common))
        max_len = 64
    elif kind == "roberta":
        model = tf.RobertaForMaskedLM(tf.RobertaConfig(max_position_embeddings=66, type_vocab_size=1, **common))
        max_len = 64
    elif kind == "distilbert":
        model = tf.DistilBertForMaskedLM(
            tf.DistilBertConfig(
                vocab_size=V,
                dim=32,
                n_layers=2,
                n_heads=4,
                hidden_dim=64,
                dropout=0.0,
                attention_dropout=0.0,
                pad_token_id=1,
                max_position_embeddings=64,
                initializer_range=init,
            )
        )
        max_len = 64
    else:
        raise ValueError(kind)
    tok = tiny_tokenizer(max_len)
    return HFMaskedLM(model.eval(), tok, name=f"tiny-{kind}", proposal_ids=tok.residue_ids, max_length=max_len)


class OOMAbove:
    """Wraps a model; raises torch's out-of-memory error on any call with more than ``limit`` rows (through
    ``logits``, ``logits_at`` or the device hot path ``device_logits_at``, whichever the model has)."""

    def __init__(self, mlm, limit):
        self.mlm, self.limit, self.calls = mlm, limit, []
        self.mask_id, self.vocab_size = mlm.mask_id, mlm.vocab_size
        if hasattr(mlm, "logits_at"):
            self.logits_at = self._logits_at

    def __getattr__(self, name):
        if name == "mlm":
            raise AttributeError(name)
        return getattr(self.mlm, name)

    def _check(self, ids):
        self.calls.append(ids.shape[0])
        if ids.shape[0] > self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    def logits(self, ids):
        self._check(ids)
        return self.mlm.logits(ids)

    def _logits_at(self, ids, rows, cols):
        self._check(ids)
        return self.mlm.logits_at(ids, rows, cols)


class DeviceOOMAbove(OOMAbove):
    """``OOMAbove`` for a model with the device hot path: the primitive calls ``device_logits_at``."""

    def device_logits_at(self, ids, rows, cols):
        self._check(ids)
        return self.mlm.device_logits_at(ids, rows, cols)


@pytest.fixture(scope="session")
def tiny_bert():
    return tiny_hf("bert")


@pytest.fixture(scope="session")
def tiny_roberta():
    return tiny_hf("roberta")


@pytest.fixture(scope="session")
def antiberty():
    from mlmprob import load_mlm

    return load_mlm("antiberty")


@pytest.fixture(scope="session")
def sapiens_vh():
    from mlmprob import load_mlm

    return load_mlm("sapiens-vh")


def save_tiny_bert(d, init: float | None = None):
    """Save a tiny random BertForMaskedLM with a one-residue-per-word tokenizer in ``d`` for ``load_mlm(d)``
    (``init``: the weights' std; larger gives peaked, order-dependent conditionals)."""
    import transformers

    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("ACDEFGHIKLMNPQRSTVWY")
    (d / "vocab.txt").write_text("\n".join(toks) + "\n")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(0)  # test-only: the tiny model's random weights
    extra = {} if init is None else {"initializer_range": init}
    cfg = transformers.BertConfig(
        vocab_size=len(toks),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=160,
        **extra,
    )
    transformers.BertForMaskedLM(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    """A tiny random BertForMaskedLM with a one-residue-per-word tokenizer, saved for ``load_mlm(dir)``."""
    return save_tiny_bert(tmp_path_factory.mktemp("tinybert"))


def pytest_configure(config):
    """The whole session computes on one intra-op thread (``one_thread`` for every test): the tiny models and
    small tensors of the suite run no faster on more, and on a shared or 2-core CI machine the extra OpenMP
    threads spin against each other and against the subprocesses the tests start (measured: tests/infill and
    tests/joints take a third of the wall time on one thread). Subprocesses and worker processes keep their
    own defaults (``--threads``, ``threads_per_worker``)."""
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models and small tensor ops on a shared CPU run far faster on one thread; restored afterwards."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


ESM_VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>"] + list("LAGVSERTIDPKQNFYMHWCXBUZO.-") + ["<null_1>", "<mask>"]
PROTBERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("LAGVESIKRDTPNQFYMHCWXUBZO")


def save_esm(d, max_positions=18, **config):
    """A random-weight EsmForMaskedLM in the layout of ``facebook/esm2_*`` (ESM-2 vocabulary, rotary
    positions, token dropout) with its EsmTokenizer, saved in ``d``: window ``max_positions - 2``; ``config``
    overrides the tiny shape's ``EsmConfig`` fields by name."""
    import transformers as tf

    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(ESM_VOCAB))
    tok = tf.EsmTokenizer(str(d / "vocab.txt"))
    torch.manual_seed(0)  # test fixture weights
    fields = dict(
        vocab_size=len(ESM_VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
        position_embedding_type="rotary",
        pad_token_id=1,
        mask_token_id=len(ESM_VOCAB) - 1,
        token_dropout=True,
        initializer_range=0.5,
    )
    cfg = tf.EsmConfig(**(fields | config))
    tf.EsmForMaskedLM(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


def save_protbert(d, max_positions=24):
    """A random-weight BertForMaskedLM in the layout of ``Rostlab/prot_bert``: a BertTokenizer over
    single residues (input space-separated), ``do_lower_case=False``."""
    import transformers as tf

    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(PROTBERT_VOCAB) + "\n")
    tok = tf.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(1)  # test fixture weights
    cfg = tf.BertConfig(
        vocab_size=len(PROTBERT_VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
        initializer_range=0.5,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    tf.BertForMaskedLM(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


@pytest.fixture(scope="session")
def esm_dir(tmp_path_factory):
    return save_esm(tmp_path_factory.mktemp("esm"))


@pytest.fixture(scope="session")
def esm(esm_dir):
    from mlmprob import load_mlm

    return load_mlm(str(esm_dir))


@pytest.fixture(scope="session")
def protbert_dir(tmp_path_factory):
    return save_protbert(tmp_path_factory.mktemp("protbert"))


BENCH = __import__("pathlib").Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str):
    """The module ``bench/<name>.py`` (``bench/`` put on ``sys.path`` for its own imports; the module
    registered under its name unless one already is)."""
    import importlib.util
    import sys

    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


def shared_data_file(rel: str):
    """The path of ``rel`` inside the shared data folder (``$MLMPROB_DATA`` or a ``shared/data`` beside
    or above this checkout); skips the calling test, naming the file, when it is absent."""
    from pathlib import Path

    here = Path(__file__).resolve()
    env = os.environ.get("MLMPROB_DATA")
    roots = ([Path(env)] if env else []) + [Path.cwd().parent / "shared" / "data", Path.cwd() / "shared" / "data"]
    roots += [p / "shared" / "data" for p in here.parents]
    for root in roots:
        if (root / rel).is_file():
            return (root / rel).resolve()
    pytest.skip(f"needs the shared data file {rel} (set MLMPROB_DATA or put shared/data beside the checkout)")


def _no_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def strict_json(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity (not JSON)."""
    import json

    return json.loads(text, parse_constant=_no_constant)


def strict_jsonl(path) -> list:
    """Every non-blank line of a JSONL file, parsed strictly."""
    from pathlib import Path

    return [strict_json(line) for line in Path(path).read_text().splitlines() if line.strip()]


def pytest_terminal_summary(terminalreporter):
    """Print how many generated CLI cases the fuzz tests ran (issue 14: the count is printed)."""
    import sys

    for name, mod in list(sys.modules.items()):
        count = getattr(mod, "COUNT", None) if name.endswith("test_fuzz_cli") else None
        if count and count.get("cases"):
            terminalreporter.write_line(
                f"fuzz: {count['cases']} generated CLI cases run (tests/commands/test_fuzz_cli.py)"
            )
