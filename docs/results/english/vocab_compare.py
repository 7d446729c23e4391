"""How close is the vocabulary `train --text` learns now (mlmprob.training.wordpiece) to the one shipped with
en-small (learned earlier by tokenizers' WordPieceTrainer)? Same corpus, same train/held-out split, size 8192.

    python -m experiments.english_corpus --data ../shared/data --out /tmp/en_corpus.txt
    python docs/results/english/vocab_compare.py /tmp/en_corpus.txt > docs/results/english/vocab_compare.txt
"""

import sys
import time

from mlmprob import load_mlm
from mlmprob.training.data import TextSource, split_heldout
from mlmprob.training.wordpiece import train_wordpiece

src = TextSource([sys.argv[1]], vocab_size=8192, max_length=64, heldout_fraction=0.02)
train, held = split_heldout(src.read_lines(), src.heldout_fraction, seed=0)
t0 = time.perf_counter()
ours = train_wordpiece(train, 8192, 64)
secs = time.perf_counter() - t0
shipped = load_mlm("en-small").tokenizer.hf
a, b = set(ours.get_vocab()), set(shipped.get_vocab())
same = sum(ours.tokenize(s) == shipped.tokenize(s) for s in held)
n_ours = sum(len(ours.tokenize(s)) for s in held)
n_shipped = sum(len(shipped.tokenize(s)) for s in held)
print(f"training lines {len(train)}, held-out lines {len(held)}; mlmprob trainer: {secs:.1f} s")
print(f"vocabulary sizes: mlmprob {len(a)}, shipped {len(b)}; in both {len(a & b)}")
print(f"held-out lines tokenized identically: {same} of {len(held)} ({same / len(held):.3f})")
print(f"held-out tokens: mlmprob {n_ours}, shipped {n_shipped}")
