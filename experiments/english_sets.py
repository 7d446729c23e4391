"""The held-out English evaluation sentences: SNLI test premises and hypotheses (``snli_test.tsv``) and
XSum test summaries (``xsum_test.jsonl``, field ``summary``) of the shared data folder, each kept to
sentences of ``MIN_WORDS..MAX_WORDS`` words. Neither is used to train ``en-small``: the training corpus
(``experiments.english_corpus``) applies the same word limits to other sources.

Shared by the infilling gaps (``english_gaps``) and the English experiments (``english``,
``english_corpus``).
"""

from __future__ import annotations

import json

from .data_option import resolve_data_dir

MIN_WORDS, MAX_WORDS = 4, 60
FILES = ("snli_test.tsv", "xsum_test.jsonl")


def evaluation_sets(data_dir, n: int = 1000) -> dict[str, list[str]]:
    """Held-out English never used in training: the first ``n`` distinct SNLI test hypotheses and
    premises, and the first ``n`` XSum test summaries."""
    d = resolve_data_dir(data_dir, FILES)
    snli, seen = [], set()
    for line in (d / "snli_test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        for s in line.split("\t")[:2]:
            s = s.strip()
            if s and s not in seen and MIN_WORDS <= len(s.split()) <= MAX_WORDS:
                seen.add(s)
                snli.append(s)
    xsum = []
    for line in (d / "xsum_test.jsonl").read_text(encoding="utf-8").splitlines():
        s = json.loads(line)["summary"].strip()
        if MIN_WORDS <= len(s.split()) <= MAX_WORDS:
            xsum.append(s)
    return {"snli": snli[:n], "xsum": xsum[:n]}
