"""The design target measured against the truth: two tiny BERTs trained on ground-truth languages (an HMM and a
Potts chain, ``make_trained_experts.py``; weights in ``data/``), each read through its own residue tokenizer, a
callable term, Hamming and hard constraints (allowed residues per position, at most three mutations, the
isomerisation preset ``DG`` and the motif ``K.K`` forbidden), on a space small enough to enumerate (339 sequences of
the 960 the allowed sets give)."""

from __future__ import annotations

import json
from pathlib import Path

from mlmprob.designing import DesignSpec, Expert, Oracle
from mlmprob.designing.api import build_target
from mlmprob.models.hf import HFMaskedLM
from mlmprob.models.tokenizers import ResidueTokenizer
from mlmprob.training.wordpiece import SPECIALS

DATA = Path(__file__).resolve().parent / "data"
PARENT = "ACDEG"
ALLOWED = ((1, "ACDE"), (2, "CDEGK"), (3, "ADGK"), (4, "ACEK"), (5, "DEG"))
CONSTRAINTS = dict(allowed=ALLOWED, max_mutations=3, forbid=("isomerization", "K.K"))
TERMS = ("hmm", "potts", "oracle", "hamming")


def trained_expert(name: str) -> HFMaskedLM:
    """The expert ``name`` (``hmm`` or ``potts``) as written by ``make_trained_experts.py``: its BERT, and a residue
    tokenizer whose letters stand for the language's symbols in the order of the file's ``letters``."""
    import transformers as tf
    from safetensors import safe_open

    path = DATA / f"{name}.safetensors"
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
        weights = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open is not a mapping
    cfg, length = json.loads(meta["train_config"]), json.loads(meta["language"])["length"]
    tokens = list(SPECIALS) + list(meta["letters"])
    tok = ResidueTokenizer(tokens, bos="[CLS]", eos="[SEP]", pad="[PAD]", mask="[MASK]", max_length=length + 2)
    config = tf.BertConfig(
        vocab_size=len(tokens),
        hidden_size=cfg["hidden_size"],
        num_hidden_layers=cfg["num_layers"],
        num_attention_heads=cfg["num_heads"],
        intermediate_size=cfg["intermediate_size"],
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=length + 2,
        type_vocab_size=1,
        pad_token_id=0,
    )
    model = tf.BertForMaskedLM(config)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    assert not unexpected and set(missing) <= {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    model.tie_weights()
    return HFMaskedLM(model.eval(), tok, name=name, proposal_ids=tok.residue_ids, max_length=length + 2)


def oracle(seqs):
    """A property (higher is better): +0.7 per G, -0.4 per K, +0.5 when residues 2 and 4 agree."""
    return [0.7 * s.count("G") - 0.4 * s.count("K") + 0.5 * (s[1] == s[3]) for s in seqs]


def trained_target(spec: DesignSpec | None = None, **overrides):
    """``E_local`` of the HMM expert, ``E_raw`` of the Potts expert at weight 0.6, the oracle at weight 1.2, Hamming
    at weight 0.2 (through the spec) and the constraints above."""
    spec = DesignSpec.of(spec, **{"hamming": 0.2, **CONSTRAINTS, **overrides})
    terms = [
        Expert(trained_expert("hmm")),
        Expert(trained_expert("potts"), kind="raw", weight=0.6),
        Oracle(oracle, weight=1.2),
    ]
    return build_target(terms, PARENT, spec), spec


def truth_tables(tau: float) -> dict:
    """The trained target at temperature ``tau`` and its brute-force tables: ``X`` every sequence of ``C``, ``E``
    each term's energy, ``U`` the weighted total, ``rows`` each expert's proposal rows (``None``: uniform), and
    ``tab``, the same target reading its energies from these tables (long runs then cost no model calls)."""
    from design_toys import enumerate_space
    from exact_chains import tabulated

    target, spec = trained_target(temperature=tau)
    X = enumerate_space(target)
    E, rows_hmm = target.energies(X, rows_of=0)
    _, rows_potts = target.energies(X, rows_of=1)
    rows = {0: rows_hmm, 1: rows_potts}
    tab = tabulated(target, X, E, rows)
    return dict(target=target, tab=tab, spec=spec, X=X, E=E, U=target.total(E), rows={**rows, None: None})


def law(truth: dict, tau: float):
    """The target's exact law over the enumerated space at temperature ``tau``."""
    import torch

    return torch.softmax(-truth["U"] / tau, 0)


def moves(truth: dict, proposal: str, **kw):
    """The exact one-step moves of the MH kernel with ``proposal`` on the enumerated space."""
    from exact_chains import mh_moves

    return mh_moves(truth["target"], truth["X"], proposal, rows=truth["rows"][proposal], U=truth["U"], **kw)
