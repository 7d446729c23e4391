"""Inputs of the PLL benchmark (``bench_pll.py``): the shared data folder, the method names, the
English BERT with its WordPiece tokenizer trained here, and the sentences and heavy chains scored."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

DATA = Path(os.environ.get("MLMPROB_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))  # ../shared/data
TOKENIZER_FILES = [
    "wiki103_5k.txt",
    "wikitext2_test.txt",
    "wikitext2_valid.txt",
    "tbc_5k.txt",
    "austen_emma.txt",
    "austen_mansfieldpark.txt",
    "austen_persuasion.txt",
    "austen_prideprejudice.txt",
    "austen_sensesensibility.txt",
    "austen_northangerabbey.txt",
]
METHODS = ("mlmprob", "minicons", "naive")
VOCAB = 30522
GIB = 1024**3


# ----------------------------------------------------------------------------------------------
# data and models (parent process)
# ----------------------------------------------------------------------------------------------
def build_english(
    tmp: Path, hidden: int, layers: int, heads: int, intermediate: int, seed: int, name: str, tok_dir: Path
) -> Path:
    """Save a random-weight BertForMaskedLM (vocab 30522) with the trained tokenizer into ``tmp/name``."""
    import torch
    import transformers

    out = tmp / name
    tok = transformers.BertTokenizerFast.from_pretrained(str(tok_dir))
    cfg = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)  # benchmark script, not library code: a fixed seed for the random weights
    model = transformers.BertForMaskedLM(cfg).eval()
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


def train_tokenizer(tmp: Path) -> Path:
    from tokenizers import BertWordPieceTokenizer

    files = [str(DATA / f) for f in TOKENIZER_FILES if (DATA / f).exists()]
    if not files:
        sys.exit(f"no text files found under {DATA} to train the WordPiece tokenizer")
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train(
        files,
        vocab_size=VOCAB,
        min_frequency=1,
        show_progress=False,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    )
    out = tmp / "wordpiece"
    out.mkdir()
    wp.save_model(str(out))
    import transformers

    transformers.BertTokenizerFast.from_pretrained(str(out)).save_pretrained(str(out))
    return out


def english_texts(tok_dir: Path, n: int, min_tokens: int, max_tokens: int) -> list[str]:
    """The first ``n`` lines of wiki103_5k.txt (no headings) with ``min_tokens..max_tokens`` tokens and no [UNK]."""
    import transformers

    tok = transformers.BertTokenizerFast.from_pretrained(str(tok_dir))
    out = []
    with open(DATA / "wiki103_5k.txt") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("="):
                continue
            ids = tok(s)["input_ids"]
            if min_tokens <= len(ids) <= max_tokens and tok.unk_token_id not in ids:
                out.append(s)
                if len(out) == n:
                    break
    return out


def long_ids(tok_dir: Path, n_tokens: int) -> list[int]:
    """[CLS] + the first n_tokens-2 WordPiece tokens of wiki103_5k.txt + [SEP] (UNK-free lines only)."""
    import transformers

    tok = transformers.BertTokenizerFast.from_pretrained(str(tok_dir))
    body: list[int] = []
    with open(DATA / "wiki103_5k.txt") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("="):
                continue
            ids = tok(s, add_special_tokens=False)["input_ids"]
            if tok.unk_token_id not in ids:
                body += ids
            if len(body) >= n_tokens - 2:
                break
    return [tok.cls_token_id] + body[: n_tokens - 2] + [tok.sep_token_id]


def antibody_texts(n: int) -> list[str]:
    from mlmprob.alphabet import is_protein

    out = []
    with open(DATA / "antibody" / "thera_sabdab.csv", newline="") as f:
        for row in csv.DictReader(f):
            hc = (row.get("HC") or "").strip()
            if hc and hc.lower() != "na" and is_protein(hc):
                out.append(hc)
                if len(out) == n:
                    break
    return out
