"""Toy design targets for the exactness tests: two tiny random-weight BERTs (incompatible conditionals), each with
its own residue tokenizer (different token orders and special tokens), a callable term and constraints, on a
space small enough to enumerate."""

from __future__ import annotations

import itertools

import torch
from conftest import tiny_hf

from mlmprob.designing import DesignSpec, Expert, Oracle
from mlmprob.designing.api import build_target
from mlmprob.models.hf import HFMaskedLM
from mlmprob.models.tokenizers import ResidueTokenizer

INIT = 0.25  # the toys' weights' std: conditionals that disagree without freezing the chains
PARENT = "ACE"
ALLOWED = ((1, "ACDG"), (2, "CDEG"), (3, "EGK"))
CONSTRAINTS = dict(allowed=ALLOWED, max_mutations=2, forbid=("isomerization", "GG"), require=("[ACG]",))


def other_expert(seed: int = 3):
    """A tiny BERT whose tokenizer orders the residues backwards, with the mask first and no end token."""
    import transformers as tf

    tokens = ["<mask>", "<pad>"] + list("LKIHGFEDCA") + ["<cls>"]
    tok = ResidueTokenizer(tokens, bos="<cls>", eos=None, pad="<pad>", mask="<mask>", max_length=32)
    torch.manual_seed(seed)  # the toy's random weights
    cfg = tf.BertConfig(
        vocab_size=len(tokens),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=1,
        initializer_range=INIT,
    )
    model = tf.BertForMaskedLM(cfg).eval()
    return HFMaskedLM(model, tok, name="other", proposal_ids=tok.residue_ids, max_length=32)


def oracle(seqs):
    """A property: +0.8 per G, -0.5 per D, +0.3 when the sequence starts with A (higher is better)."""
    return [0.8 * s.count("G") - 0.5 * s.count("D") + 0.3 * s.startswith("A") for s in seqs]


def toy_target(spec: DesignSpec | None = None, first_kind: str = "local", **overrides):
    """Two experts (``E_local`` of one, or its ``first_kind``; ``E_raw`` of the other at weight 0.5), the oracle
    (weight 1.5), Hamming (weight 0.3 through the spec) and the constraints above."""
    spec = DesignSpec.of(spec, **{"hamming": 0.3, **CONSTRAINTS, **overrides})
    terms = [
        Expert(tiny_hf("bert", seed=1, init=INIT), kind=first_kind, name="first"),
        Expert(other_expert(), kind="raw", weight=0.5),
        Oracle(oracle, weight=1.5),
    ]
    return build_target(terms, PARENT, spec), spec


def enumerate_space(target) -> torch.Tensor:
    """Every sequence of ``C`` (alphabet indices ``[S, L]``), in lexicographic order of the allowed sets."""
    sets = [row.nonzero(as_tuple=True)[0].tolist() for row in target.allowed]
    X = torch.tensor(list(itertools.product(*sets)), dtype=torch.long)
    return X[target.in_c(X)]


def exact_law(target, X: torch.Tensor, tau: float = 1.0) -> torch.Tensor:
    """The constrained target on the enumerated space ``X``, by brute force (float64)."""
    E, _ = target.energies(X)
    return torch.softmax(-target.total(E) / tau, 0)
