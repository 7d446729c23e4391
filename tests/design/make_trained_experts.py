"""Train the two toy experts of the design exactness tests on ground-truth languages and save their weights.

    PYTHONPATH=src python tests/design/make_trained_experts.py            # ~20 s on one core
    PYTHONPATH=src python tests/design/make_trained_experts.py --check    # retrain, compare with the committed files

(from the repository root) writes ``tests/design/data/{hmm,potts}.safetensors``: the weights of a tiny BERT
trained by :func:`mlmprob.training.train` (``mlmprob train``) on exact samples of one synthetic language each,
with the language, the training config and the letters that stand for its symbols in the file's metadata
(:func:`trained_expert` in ``trained_toys.py`` builds the model back from it). Everything is seeded: the
languages by their generators, the training by ``TrainConfig.seed`` (data order, masks, initial weights).

- ``hmm``: an HMM (6 symbols, 3 hidden states, length 5, sparse rows: Dirichlet(0.25)), symbols read as
  ``A C D E G K``;
- ``potts``: a Potts chain (6 symbols, length 5, coupling -0.8: neighbours tend to differ), its symbols read
  as ``K G E D C A`` (the reverse order: the two experts' tokenizers disagree on the ids of the letters).

Both models are small and see 600 steps, so their conditionals approximate their language's and are those of no
joint distribution (the tests assert both). The weights are float32, about 25 KB a file.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
LETTERS = "ACDEGK"
LENGTH = 5
TRAIN = dict(
    hidden_size=16,
    num_layers=2,
    num_heads=2,
    intermediate_size=32,
    max_steps=600,
    batch_size=64,
    lr=5e-3,
    warmup_steps=20,
    eval_every=600,
    checkpoint_every=600,
    keep_checkpoints=1,
    kl_sequences=0,
    mask_rate=0.2,
)


def languages():
    """``{name: (language, letters, train seed)}``."""
    from mlmprob.synthetic import HMM, PottsChain

    hmm = HMM.random(6, 3, LENGTH, torch.Generator().manual_seed(11), concentration=0.25)
    potts = PottsChain(6, LENGTH, coupling=-0.8, field_scale=1.0, generator=torch.Generator().manual_seed(12))
    return {"hmm": (hmm, LETTERS, 1), "potts": (potts, LETTERS[::-1], 2)}


def train_one(name: str, out: Path) -> dict[str, torch.Tensor]:
    """Train expert ``name`` into a temporary run directory; write its weights and metadata to ``out``."""
    from safetensors.torch import save_file

    from mlmprob.training import SyntheticSource, TrainConfig, train

    lang, letters, seed = languages()[name]
    config = TrainConfig(seed=seed, **TRAIN)
    with tempfile.TemporaryDirectory() as tmp:
        result = train(config, SyntheticSource(lang, n_train=4000, n_heldout=200), tmp, progress=False)
        from transformers import BertForMaskedLM

        model = BertForMaskedLM.from_pretrained(tmp)
    tied = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")  # tied to the embeddings, the bias
    weights = {k: v.contiguous() for k, v in model.state_dict().items() if k not in tied}
    meta = {
        "language": json.dumps(lang.spec()),
        "letters": letters,
        "train_config": json.dumps(config.to_dict()),
        "final_train_loss": f"{result.final.get('train_loss', float('nan')):.4f}",
        "made_by": "tests/design/make_trained_experts.py",
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out), metadata=meta)
    return weights


def main(argv: list[str]) -> int:
    """Write the weights; with ``--check``, train into a temporary directory instead and compare with the committed
    files tensor by tensor (exit 1 on any difference)."""
    from safetensors.torch import load_file

    torch.set_num_threads(1)
    check = argv == ["--check"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in languages():
            out = (Path(tmp) if check else DATA) / f"{name}.safetensors"
            weights = train_one(name, out)
            if not check:
                print(f"wrote {out.relative_to(HERE.parent.parent)}")
                continue
            saved = load_file(str(DATA / f"{name}.safetensors"))
            diff = (
                max(float((weights[k] - saved[k]).abs().max()) for k in saved) if saved.keys() == weights.keys() else 1
            )
            print(f"{name}: largest difference from the committed weights {diff:.3g}")
            if diff:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
