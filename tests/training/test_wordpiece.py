"""The deterministic WordPiece trainer: against a from-scratch reference, across processes, and as a tokenizer."""

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
import torch

from mlmprob.errors import MLMProbError
from mlmprob.training.wordpiece import SPECIALS, learn_vocab, train_wordpiece, words_of

LINES = [
    "The quick brown fox jumps over the lazy dog.",
    "A quick movement of the enemy will jeopardize six gunboats.",
    "Pack my box with five dozen liquor jugs!",
    "The five boxing wizards jump quickly.",
    "Jumping foxes, lazy dogs, and quick wizards.",
]


def reference_vocab(word_counts, vocab_size, specials, min_frequency=1):
    """The same algorithm written the slow way: every pair recounted from all words at every step."""
    words = {w: [w[0]] + ["##" + c for c in w[1:]] for w in word_counts}
    vocab = list(
        dict.fromkeys(list(specials) + sorted(set("".join(words))) + sorted({c for p in words.values() for c in p[1:]}))
    )
    while len(vocab) < vocab_size:
        counts = Counter()
        for w, p in words.items():
            for pair in zip(p, p[1:]):
                counts[pair] += word_counts[w]
        if not counts:
            break
        (a, b), n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < min_frequency:
            break
        merged = a + b[2:]
        if merged not in vocab:
            vocab.append(merged)
        for w, p in words.items():
            out, j = [], 0
            while j < len(p):
                if j + 1 < len(p) and (p[j], p[j + 1]) == (a, b):
                    out.append(merged)
                    j += 2
                else:
                    out.append(p[j])
                    j += 1
            words[w] = out
    return vocab


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_from_scratch_reference(seed):
    g = torch.Generator().manual_seed(seed)
    n_words = int(torch.randint(1, 12, (1,), generator=g))
    counts = {}
    for _ in range(n_words):  # words over a 3-letter alphabet: many repeated pairs, many ties
        n = int(torch.randint(1, 7, (1,), generator=g))
        w = "".join("abc"[int(i)] for i in torch.randint(0, 3, (n,), generator=g))
        counts[w] = counts.get(w, 0) + int(torch.randint(1, 4, (1,), generator=g))
    size = int(torch.randint(5, 40, (1,), generator=g))
    min_freq = 1 + seed % 3
    got = learn_vocab(counts, size, ["[UNK]"], min_freq)
    assert got == reference_vocab(counts, size, ["[UNK]"], min_freq)
    assert len(got) == len(set(got))


def test_hand_computed_merges():
    # ab(1) abab(3) ba(1): (a,##b) 4 first; then (##a,##b) 3 and (ab,##a) 3 tie, "##a" < "ab"
    assert learn_vocab({"abab": 3, "ab": 1, "ba": 1}, 100, ["[UNK]"]) == [
        "[UNK]",
        "a",
        "b",
        "##a",
        "##b",
        "ab",
        "##ab",
        "abab",
        "ba",
    ]
    assert learn_vocab({"abab": 3, "ab": 1, "ba": 1}, 6, ["[UNK]"])[-1] == "ab"  # stops at the size
    assert learn_vocab({"abab": 3, "ab": 1, "ba": 1}, 100, ["[UNK]"], min_frequency=2) == [
        "[UNK]",
        "a",
        "b",
        "##a",
        "##b",
        "ab",
        "##ab",
        "abab",
    ]  # (b,##a) occurs once
    # the alphabet is kept whole even when it alone exceeds the size
    assert learn_vocab({"xyz": 1}, 2, ["[UNK]"]) == ["[UNK]", "x", "y", "z", "##y", "##z"]
    with pytest.raises(MLMProbError, match="min_frequency"):
        learn_vocab({"a": 1}, 5, ["[UNK]"], min_frequency=0)


def test_words_split_like_the_final_tokenizer():
    tok = train_wordpiece(LINES, 120, 64)
    backend = tok.backend_tokenizer
    for line in LINES + ["Héllo,  WÖRLD!\tit's 3.5"]:
        want = Counter(w for w, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(line)))
        assert words_of([line]) == want
    assert words_of(["ABC"], lowercase=False) == Counter({"ABC": 1}) and words_of(["ABC"]) == Counter({"abc": 1})


def test_tokenizer_covers_its_lines_and_has_the_asked_size():
    tok = train_wordpiece(LINES, 120, 64)
    assert len(tok) == 120 and tok.convert_ids_to_tokens(list(range(5))) == list(SPECIALS)
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id) == (
        0,
        1,
        2,
        3,
        4,
    )
    for line in LINES:
        ids = tok(line)["input_ids"]
        assert tok.unk_token_id not in ids and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert tok.tokenize("quick") == ["quick"]  # frequent words become whole tokens
    assert any(t.startswith("##") for line in LINES for t in tok.tokenize(line))
    assert tok.unk_token_id in tok("\u2603")["input_ids"]  # a character never seen
    # a new word made of characters seen only inside words still has a tokenization (as in tokenizers)
    small = train_wordpiece(["the cat sat", "the cats sat on the mat"], 40, 16)
    assert small.unk_token_id not in small("hat at east")["input_ids"]
    with pytest.raises(MLMProbError, match="special tokens"):
        train_wordpiece(LINES, 5, 64)
    with pytest.raises(MLMProbError, match="no words"):
        train_wordpiece(["   ", ""], 50, 64)


def test_same_vocabulary_in_every_process(tmp_path):
    """String hashing differs between processes (PYTHONHASHSEED); the vocabulary must not."""
    code = (
        "import json, sys; from mlmprob.training.wordpiece import train_wordpiece; "
        f"t = train_wordpiece({LINES!r}, 130, 64); "
        "print(json.dumps(t.convert_ids_to_tokens(list(range(len(t))))))"
    )
    from concurrent.futures import ThreadPoolExecutor

    def run(hash_seed):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(3) as pool:  # independent processes, side by side
        runs = list(pool.map(run, ("1", "2", "3")))
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 130
