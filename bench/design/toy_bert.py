"""A tiny protein BERT saved as a Hugging Face folder (``BertForMaskedLM`` + a ProtBERT-style ``BertTokenizer``:
[PAD] [UNK] [CLS] [SEP] [MASK] and the 20 residues), so that EvoProtGrad's ``BERTExpert`` and ``mlmprob.load_mlm``
both load the same weights. Random weights with a wide initialisation: peaked, position-dependent conditionals
that are not those of one joint (incompatible), which is what separates the two tools' targets.

    python bench/design/toy_bert.py runs/design/toy_bert
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

RESIDUES = "ACDEFGHIKLMNPQRSTVWY"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_toy_bert(folder: str | Path, seed: int = 0, init: float = 0.35) -> Path:
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(SPECIALS + list(RESIDUES)) + "\n")
    tok = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(SPECIALS) + len(RESIDUES),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        initializer_range=init,
        pad_token_id=0,
    )
    model = BertForMaskedLM(config).eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


if __name__ == "__main__":
    print(make_toy_bert(sys.argv[1] if len(sys.argv) > 1 else "runs/design/toy_bert"))
