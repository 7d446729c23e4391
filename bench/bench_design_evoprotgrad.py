"""mlmprob design vs EvoProtGrad on an enumerable toy: each tool's samples against the target it states.

A tiny random BERT (a Hugging Face folder both tools load; the 20 residues) is the one expert; the space is the
parent's single mutants (``--max-mutations 1``) or every sequence of its length (``-1``). EvoProtGrad
(``evo-prot-grad`` 0.2, gradient-informed PPDE MCMC) states ``p(x) ∝ exp(T · score(x))`` with its expert's score
(``mutant_marginal``: unmasked logits of the variant at the mutated sites minus the wild type's there; its
``pseudolikelihood_ratio`` raises in 0.2, the cached wild-type score keeps its [1, L, V] shape); mlmprob states
``p(x) ∝ exp(-E_local(x))`` (masked, one copy per residue). Both targets are enumerated here, each tool runs N
chains for S steps from the parent, and the TV of its final states to its own target is printed with the sampling
noise floor (0.5 sqrt((states - 1) / N)), the wall time and the model rows read (docs/results/design/README.md).

EvoProtGrad is never a dependency of mlmprob: install it apart, e.g.
    pip install --no-deps --target bench/design/.evo-pkgs evo-prot-grad==0.2
    PYTHONPATH=bench/design/.evo-pkgs:src python bench/bench_design_evoprotgrad.py --chains 2000 --steps 20
"""

from __future__ import annotations

import argparse
import itertools
import math
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch

RESIDUES = "ACDEFGHIKLMNPQRSTVWY"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def save_toy(folder: Path, seed: int = 0, init: float = 0.3):
    import transformers

    (folder / "vocab.txt").write_text("\n".join(SPECIALS + list(RESIDUES)) + "\n")
    torch.manual_seed(seed)  # the toy's random weights
    cfg = transformers.BertConfig(
        vocab_size=len(SPECIALS) + 20,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        initializer_range=init,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    transformers.BertForMaskedLM(cfg).save_pretrained(str(folder))
    transformers.BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False).save_pretrained(str(folder))


def space(parent: str, k: int) -> list[str]:
    """The parent first, then its single mutants (``k = 1``) or every sequence of its length (``k < 0``)."""
    if k < 0:
        rest = ["".join(t) for t in itertools.product(RESIDUES, repeat=len(parent))]
        return [parent] + [s for s in rest if s != parent]
    out = [parent]
    for i, a in itertools.product(range(len(parent)), RESIDUES):
        if a != parent[i]:
            out.append(parent[:i] + a + parent[i + 1 :])
    return out


def tv(samples: list[str], seqs: list[str], p: torch.Tensor) -> float:
    c = Counter(samples)
    q = torch.tensor([c[s] / len(samples) for s in seqs], dtype=torch.float64)
    return 0.5 * float((q - p).abs().sum())


def at_parent(samples: list[str], seqs: list[str], p: torch.Tensor) -> str:
    """The target's mass at the parent and the samples' share there."""
    return f"{float(p[0]):.3f} / {sum(s == seqs[0] for s in samples) / len(samples):.3f}"


def run_mlmprob(folder: Path, parent: str, seqs: list[str], chains: int, steps: int, k: int) -> dict:
    import transformers

    import mlmprob
    from mlmprob.designing import DesignSpec, build_target
    from mlmprob.models.hf import HFMaskedLM
    from mlmprob.models.tokenizers import ResidueTokenizer

    model = transformers.BertForMaskedLM.from_pretrained(str(folder)).eval()
    tok = ResidueTokenizer(
        SPECIALS + list(RESIDUES), bos="[CLS]", eos="[SEP]", pad="[PAD]", mask="[MASK]", unk="[UNK]", max_length=16
    )
    mlm = HFMaskedLM(model, tok, name="toy", proposal_ids=tok.residue_ids, max_length=16)
    kk = None if k < 0 else k
    target = build_target(mlm, parent, DesignSpec(max_mutations=kk))
    E, _ = target.energies(target.encode(seqs))
    p = torch.softmax(-target.total(E), 0)
    t0 = time.perf_counter()
    r = mlmprob.design(
        mlm, parent, chains=chains, steps=steps, max_mutations=kk, generator=torch.Generator().manual_seed(0)
    )
    wall = time.perf_counter() - t0
    out = {"tool": "mlmprob mh", "tv": tv(r.samples(), seqs, p), "wall_s": wall, "rows": r.stats["model_rows"]}
    return {**out, "parent": at_parent(r.samples(), seqs, p)}


def run_evoprotgrad(folder: Path, parent: str, seqs: list[str], chains: int, steps: int, k: int) -> dict:
    import evo_prot_grad
    import transformers

    model = transformers.BertForMaskedLM.from_pretrained(str(folder)).eval()
    tok = transformers.BertTokenizer.from_pretrained(str(folder), do_lower_case=False)
    expert = evo_prot_grad.get_expert(
        "bert", scoring_strategy="mutant_marginal", temperature=1.0, model=model, tokenizer=tok, device="cpu"
    )
    expert.init_wildtype(" ".join(parent))
    with torch.no_grad():
        scores = torch.cat([expert([" ".join(s) for s in seqs[k : k + 512]])[1] for k in range(0, len(seqs), 512)])
    p = torch.softmax(scores.double(), 0)  # its stated target: exp(T * score) within max_mutations
    t0 = time.perf_counter()
    variants, _ = evo_prot_grad.DirectedEvolution(
        wt_protein=parent,
        output="last",
        experts=[expert],
        parallel_chains=chains,
        n_steps=steps,
        max_mutations=k,
        random_seed=0,
    )()
    wall = time.perf_counter() - t0
    samples = [v.replace(" ", "") for v in variants]
    outside = sum(s not in set(seqs) for s in samples)
    # two unmasked rows per chain and step (the state and the proposal), each forwarded and back-propagated
    return {
        "tool": "EvoProtGrad 0.2",
        "tv": tv([s for s in samples if s in set(seqs)], seqs, p),
        "wall_s": wall,
        "rows": 2 * chains * steps,
        "outside_constraints": outside,
        "parent": at_parent(samples, seqs, p),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chains", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--parent", default="ACD")
    ap.add_argument("--max-mutations", type=int, default=1, help="1, or -1: none (every sequence of the length)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seqs, k = space(args.parent, args.max_mutations), args.max_mutations
    with tempfile.TemporaryDirectory() as d:
        save_toy(Path(d))
        rows = [run_mlmprob(Path(d), args.parent, seqs, args.chains, args.steps, k)]
        try:
            rows.append(run_evoprotgrad(Path(d), args.parent, seqs, args.chains, args.steps, k))
        except ImportError as e:
            print(f"EvoProtGrad not importable ({e}); install it apart (see the module doc)")
    floor = 0.5 * math.sqrt((len(seqs) - 1) / args.chains)
    print(f"{len(seqs)} sequences, {args.chains} chains x {args.steps} steps; TV noise floor about {floor:.3f}")
    print("| tool | TV to its stated target | target / sampled mass at the parent | wall s | model rows | outside C |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['tool']} | {r['tv']:.3f} | {r['parent']} | {r['wall_s']:.1f} | {r['rows']} | "
            f"{r.get('outside_constraints', 0)} |"
        )


if __name__ == "__main__":
    main()
