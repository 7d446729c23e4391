"""EvoProtGrad side of the bench: its experts on the bench's models, its sampler run with every step kept,
and the target it states, evaluated exactly.

EvoProtGrad (``evo-prot-grad`` 0.2) samples ``π(x) ∝ exp(PoE(x))`` with ``PoE(x) = Σ_k T_k · score_k(x)``
(``DirectedEvolution._product_of_experts``: each expert's score times its "temperature"), by gradient-informed
path-auxiliary MH. For a protein LM the score is ``mutant_marginal``: one unmasked forward of ``x``,
``Σ_i log softmax(f(x)_i)[x_i] - log softmax(f(x)_i)[wt_i]``; for an attribute model ``attribute_value``:
``f(x) - f(wt)``. Preserved regions and ``max_mutations`` restrict the proposals.

Cost counter: :class:`Counted` wraps a model's forward and counts sequences (rows) through it and backward
passes; EvoProtGrad's step runs two forwards with gradients per chain (the state and the proposal).
"""

from __future__ import annotations

import re

import torch
from evo_prot_grad.common import embeddings as evo_embeddings
from evo_prot_grad.common.sampler import DirectedEvolution
from evo_prot_grad.experts.base_experts import AttributeExpert, ProteinLMExpert


class Counted(torch.nn.Module):
    """``model`` with a count of the sequences it read (``rows``) and the forward calls (``calls``)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.rows = 0
        self.calls = 0

    def forward(self, *args, **kwargs):
        x = args[0] if args else next(iter(kwargs.values()))
        self.rows += int(x.shape[0])
        self.calls += 1
        return self.model(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.model, name)


class ResidueBertExpert(ProteinLMExpert):
    """A BERT masked LM whose tokenizer reads residue strings one token per residue with [CLS]/[SEP] around
    (the bench's adapter for AntiBERTy, and for the toy BERT): ``tokens`` is the vocabulary in id order.
    The word embeddings are swapped for EvoProtGrad's one-hot embedding, as its own ``BERTExpert`` does."""

    def __init__(self, bert_mlm, tokens: list[str], temperature: float = 1.0, scoring: str = "mutant_marginal"):
        vocab = {t: i for i, t in enumerate(tokens)}
        self.counter = Counted(bert_mlm)
        super().__init__(temperature, self.counter, vocab, scoring, "cpu")
        self.vocab = vocab
        emb = bert_mlm.bert.embeddings
        if not isinstance(emb.word_embeddings, evo_embeddings.OneHotEmbedding):
            emb.word_embeddings = evo_embeddings.OneHotEmbedding(emb.word_embeddings)

    def _get_last_one_hots(self) -> torch.Tensor:
        return self.counter.model.bert.embeddings.word_embeddings.one_hots

    def tokenize(self, inputs):
        seqs = [re.sub(r"\s+", "", s) for s in inputs]
        ids = [[self.vocab["[CLS]"]] + [self.vocab[c] for c in s] + [self.vocab["[SEP]"]] for s in seqs]
        ids = torch.tensor(ids, dtype=torch.long)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


class OneHotOracle(torch.nn.Module):
    """A residue-level model ``f(x)`` on EvoProtGrad's canonical one-hots ``[B, L, 20]`` reading the positions
    ``cols`` only: ``f(one_hot[:, cols])`` (differentiable, so EvoProtGrad's gradients see it)."""

    def __init__(self, fn, cols: list[int]):
        super().__init__()
        self.fn, self.cols = fn, list(cols)
        self.rows = 0

    def forward(self, x_oh):
        self.rows += int(x_oh.shape[0])
        return self.fn(x_oh[:, self.cols])


def oracle_expert(fn, cols: list[int], temperature: float) -> AttributeExpert:
    """EvoProtGrad's attribute expert (score ``f(x) - f(wt)``) on :class:`OneHotOracle`."""
    return AttributeExpert(temperature, OneHotOracle(fn, cols), "attribute_value", "cpu")


def evo_poe(experts, seqs: list[str], batch: int = 512) -> torch.Tensor:
    """``PoE(x) = Σ_k T_k score_k(x)`` of each sequence, exactly as EvoProtGrad computes it (float64 out)."""
    out = []
    for s in range(0, len(seqs), batch):
        chunk = [" ".join(x) for x in seqs[s : s + batch]]
        with torch.enable_grad():
            total = sum(e.temperature * e(chunk)[1] for e in experts)
        out.append(total.detach().double())
    return torch.cat(out)


def run_evo(experts, parent: str, chains: int, steps: int, preserved, max_mutations: int, seed: int):
    """EvoProtGrad's ``DirectedEvolution`` with ``output='all'``: the states of every chain after every step
    (``[steps][chains]`` residue strings) and its PoE values ``[steps, chains]``."""
    de = DirectedEvolution(
        experts=experts,
        parallel_chains=chains,
        n_steps=steps,
        max_mutations=max_mutations,
        output="all",
        preserved_regions=preserved,
        wt_protein=parent,
        random_seed=seed,
    )
    states, poe = de()
    return [[s.replace(" ", "") for s in step] for step in states], poe
