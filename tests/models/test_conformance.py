"""Conformance with every masked LM of the installed transformers (issue 28): a tiny random model of each
architecture, saved with ``save_pretrained`` and a tokenizer and read back with ``load_mlm(folder,
dtype="float32")``, gives the numbers of an independent brute-force loop over the plain transformers model
(one unpadded sequence at a time, one position masked, ``log_softmax`` there): ``pll``, ``token_scores``,
``loglik(order="l2r")`` and the samplers' single-site conditionals, alone and in a padded batch, and a
sequence of the maximum length (one token more is refused).

Each tiny model is built once per module and kept; the reference is the model as built (before saving), so
the loader's reading of the saved folder is checked too. The brute-force reference forwards the masked
copies of one sequence together (one length, no padding, no attention mask) and caches them, since
several checks read the same conditionals.

Architectures that cannot be built here are listed in ``conformance_models.NOT_BUILT`` (and skipped with
the reason); a known wrong-number case is marked xfail(strict=False) with its reason (none today; the
table shows it as a known issue). ``VARIANTS`` adds
layouts beyond an architecture's default (ESM with learned absolute positions, ESM-1b's).
``docs/models_table.py`` turns a run of this module into the table of docs/models.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance_models import MASK, NOT_BUILT, VARIANTS, build_model  # noqa: E402

transformers = pytest.importorskip("transformers")
from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES  # noqa: E402

TYPES = sorted(MODEL_FOR_MASKED_LM_MAPPING_NAMES) + sorted(VARIANTS)
SEQS = ["the cat sat on the mat", "a dog ran", "big red sun and sky"]  # three lengths: a padded batch
TOL = 1e-5
ALLOWED = torch.arange(5, 30)  # the words: loglik normalises over the proposal alphabet (no special ids)

# wrong numbers before the load-time probe (models/probe.py), which now finds and fixes them; each is tested
# below (test_probe_findings) and in the checks above, which would fail without the fallback
PAD_FIXED = ("fnet", "funnel", "nystromformer", "yoso", "convbert")  # ignore the attention mask
HEAD_FIXED = ("bart", "mbart", "mvp", "neomme", "modernvbert", "ultravbert")  # head module is not the whole head


class Reference:
    """Brute force over the plain transformers model: ``log_softmax`` at ``t`` of one unpadded sequence with
    ``t`` (and ``masked``) masked. The masked copies of one sequence asked for together run as one batch of
    that one length (no padding, no attention mask); each answer is cached."""

    def __init__(self, model):
        self.model, self.cache = model, {}

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, queries) -> list[torch.Tensor]:
        """``queries``: ``(t, masked)`` pairs on the sequence ``x`` ``[L]``."""
        key = tuple(x.tolist())
        queries = [(t, tuple(m)) for t, m in queries]
        todo = list(dict.fromkeys(q for q in queries if (key, q) not in self.cache))
        if todo:
            y = x[None].repeat(len(todo), 1)
            for i, (t, masked) in enumerate(todo):
                y[i, [t, *masked]] = MASK
            logits = self.model(input_ids=y).logits
            for i, (t, masked) in enumerate(todo):
                self.cache[key, (t, masked)] = logits[i, t].double().log_softmax(-1)
        return [self.cache[key, q] for q in queries]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """``model_type -> (mlm, Reference) or reason``, built on first use (one thread while they run)."""
    cache: dict = {}
    root = tmp_path_factory.mktemp("conformance")
    n = torch.get_num_threads()
    torch.set_num_threads(1)

    def get(model_type):
        if model_type not in cache:
            from mlmprob import load_mlm
            from mlmprob.errors import MLMProbError

            folder = root / model_type
            ref, why = build_model(model_type, folder)
            if why is None:
                try:
                    mlm = load_mlm(str(folder), device="cpu", dtype="float32")
                except MLMProbError as e:  # refused with a clear error: a result, not a wrong number
                    why = f"refused by load_mlm: {e}"
                else:
                    cache[model_type] = (mlm, Reference(ref))
            if why is not None:
                cache[model_type] = why
        got = cache[model_type]
        if isinstance(got, str):
            pytest.skip(got)
        return got

    yield get
    torch.set_num_threads(n)


def batch(mlm):
    enc = mlm.encode(SEQS)
    return enc.input_ids, enc.lengths.tolist()


def inner(L: int) -> range:
    return range(1, L - 1)  # [CLS] ... [SEP]


@pytest.mark.parametrize("model_type", TYPES)
def test_pll_and_token_scores(models, model_type):
    import mlmprob

    mlm, ref = models(model_type)
    ids, lengths = batch(mlm)
    scores = mlmprob.token_scores(mlm, ids)
    pll = mlmprob.pll(mlm, ids)
    for b, L in enumerate(lengths):
        x = ids[b, :L]
        lps = ref(x, [(t, ()) for t in inner(L)])
        want = torch.tensor([float(lp[x[t]]) for t, lp in zip(inner(L), lps)], dtype=torch.float64)
        got = scores.log_prob[b, 1 : L - 1]
        assert torch.allclose(got, want, atol=TOL, rtol=0), (model_type, b, (got - want).abs().max())
        assert abs(float(pll[b]) - float(want.sum())) < 10 * TOL
        alone = float(mlmprob.pll(mlm, x[None])[0])
        assert abs(alone - float(want.sum())) < 10 * TOL


@pytest.mark.parametrize("model_type", TYPES)
def test_loglik_l2r(models, model_type):
    import mlmprob

    mlm, ref = models(model_type)
    ids, lengths = batch(mlm)
    got = mlmprob.loglik(mlm, ids, order="l2r").per_order[:, 0]
    for b, L in enumerate(lengths):
        x = ids[b, :L]
        want = 0.0  # step t: positions >= t masked, normalised over the words
        for t, lp in zip(inner(L), ref(x, [(t, range(t + 1, L - 1)) for t in inner(L)])):
            lp = lp[ALLOWED]
            want += float(lp[int(x[t]) - 5] - lp.logsumexp(-1))
        assert abs(float(got[b]) - want) < 10 * TOL, (model_type, b, float(got[b]) - want)


@pytest.mark.parametrize("model_type", TYPES)
def test_sampler_conditionals(models, model_type):
    """The single-site conditionals the MH/Gibbs kernels read (``site_logits``: the chains of a call
    share sub-batches, so rows of different lengths are padded together)."""
    from mlmprob.sampling.forward import site_logits

    mlm, ref = models(model_type)
    ids, lengths = batch(mlm)
    select = torch.zeros(ids.shape, dtype=torch.bool)
    for b, L in enumerate(lengths):
        select[b, 1 : L - 1] = True
    logits, _ = site_logits(mlm, ids, select)
    for b, L in enumerate(lengths):
        x = ids[b, :L]
        for t, want in zip(inner(L), ref(x, [(t, ()) for t in inner(L)])):
            got = logits[b, t].double().log_softmax(-1)
            assert torch.allclose(got, want, atol=TOL, rtol=0), (model_type, b, t, (got - want).abs().max())


@pytest.mark.parametrize("model_type", TYPES)
def test_maximum_length(models, model_type):
    """A sequence of the model's maximum length is scored right; one token more is refused clearly."""
    import mlmprob
    from mlmprob.errors import MLMProbError

    mlm, ref = models(model_type)
    n = mlm.max_length
    if n is None:
        pytest.skip("no length limit")
    words = ["the", "cat", "sat", "on", "a", "mat"]
    ids = mlm.encode([" ".join(words[i % 6] for i in range(n - 2))]).input_ids
    assert ids.shape[1] == n
    got = mlmprob.token_scores(mlm, ids, positions=[1, n // 2, n - 2]).log_prob[0]
    x, reads = ids[0], (1, n // 2, n - 2)
    for t, want in zip(reads, ref(x, [(t, ()) for t in reads])):
        assert abs(float(got[t]) - float(want[x[t]])) < TOL
    with pytest.raises(MLMProbError):
        mlmprob.pll(mlm, torch.cat([ids, ids[:, -1:]], 1))


@pytest.mark.parametrize("model_type", TYPES)
def test_probe_findings(models, model_type, record_property):
    """The load-time probe finds the wrong shortcuts of exactly the families known to need a fallback
    (its notes go to docs/models.md through the junit ``probe`` property)."""
    mlm, _ = models(model_type)
    res = mlm.probe
    record_property("probe", "; ".join(n.split(": ", 1)[1].split(" (")[0] for n in res.notes))
    head_fixed = mlm.head == "full" and any("LM head" in n for n in res.notes)
    assert head_fixed == (model_type in HEAD_FIXED), res
    if model_type in PAD_FIXED:
        assert not mlm.pads_safely, res
    elif model_type != "mobilebert":  # at this tiny config MobileBERT happens to honour padding
        assert mlm.pads_safely, res


def test_every_architecture_is_listed():
    """Every architecture the installed transformers registers is either built here or says why not."""
    assert set(NOT_BUILT) <= set(TYPES)
    assert len(TYPES) >= 40


def test_unpadded_sub_batches(models, monkeypatch):
    """A model that does not honour padding gets sub-batches of rows of one length from the forward
    primitive (models/forward.py), so its fast path never sees a padded row."""
    from mlmprob.sampling.forward import site_logits

    mlm, _ = models("fnet")
    assert not mlm.pads_safely
    seen = []
    real = mlm.device_logits_at

    def spy(ids, rows, cols):
        seen.append(ids.clone())
        return real(ids, rows, cols)

    monkeypatch.setattr(mlm, "device_logits_at", spy)
    monkeypatch.setattr(mlm, "logits_at", lambda ids, rows, cols: spy(ids, rows, cols).cpu())
    ids, lengths = batch(mlm)
    select = ids > 4
    site_logits(mlm, ids, select)
    assert seen and all(not bool((x == mlm.pad_id).any()) for x in seen)
    assert sorted({x.shape[1] for x in seen}) == sorted(set(lengths))


def test_length_limit_is_measured(models, monkeypatch):
    """The limit comes from the model's position table and the offset its family reads from, measured on
    one short forward (``mlmprob.models.length``): it holds where the config declares more positions than
    the table serves (Nyströmformer reads its table from row 2, which no padding row declares), and a model
    whose forward cannot be measured falls back to the offset the table declares (RoBERTa: after its
    padding row)."""
    from mlmprob.models.length import declared_offset, max_length_of, position_tables

    nystrom = models("nystromformer")[0].model
    ((_, table),) = position_tables(nystrom)
    assert declared_offset(table) == 0 and table.num_embeddings == 42
    monkeypatch.setattr(nystrom.config, "max_position_embeddings", 1000)
    assert max_length_of(nystrom) == 40
    roberta = models("roberta")[0].model
    assert max_length_of(roberta) == 39

    def fails(*args, **kwargs):
        raise RuntimeError("needs more than input_ids")

    monkeypatch.setattr(roberta, "forward", fails)
    assert max_length_of(roberta) == 39
