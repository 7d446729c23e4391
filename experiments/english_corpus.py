"""The English training corpus of the ``en-small`` model, one sentence per line, from ``../shared/data``.

Sources (training): the Brown corpus (tags stripped), Jane Austen's six novels (paragraphs split into
sentences), WikiText-2 valid+test (``@-@`` joins undone; sentences with ``<unk>`` dropped), and the
5k WikiText-103 and BookCorpus sentences. SNLI and XSum are *not* read here: they are kept for
evaluation (``evaluation_sets``, defined in ``experiments.english_sets``). Nothing is copied into
the repository; the corpus is written to an ignored run directory.

    python -m experiments.english_corpus --data ../shared/data --out runs/en-small/corpus.txt

``--data`` defaults to the shared data folder (``mlmprob.data.shared_data_dir``).
"""

from __future__ import annotations

import argparse
import re
import zipfile
from pathlib import Path

from mlmprob.errors import exit_status
from mlmprob.jsonl import dumps

from .data_option import add_data_option, resolve_data_dir

# the held-out sets and the word limits the training sentences share with them (importable from here too)
from .english_sets import MAX_WORDS, MIN_WORDS, evaluation_sets

__all__ = [
    "AUSTEN",
    "CORPUS_FILES",
    "MAX_WORDS",
    "MIN_WORDS",
    "corpus_sentences",
    "detokenize_wikitext",
    "evaluation_sets",
    "main",
    "read_austen",
    "read_brown",
    "read_lines",
    "read_wikitext",
    "split_sentences",
    "write_corpus",
]

AUSTEN = ("emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice", "sensesensibility")
CORPUS_FILES = (
    "brown.zip",
    "wikitext2_valid.txt",
    "wikitext2_test.txt",
    "wiki103_5k.txt",
    "tbc_5k.txt",
    *(f"austen_{a}.txt" for a in AUSTEN),
)

_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z])")
_WIKI_JOIN = re.compile(r" @(.)@ ")


def split_sentences(paragraph: str) -> list[str]:
    """Split running text at ``. ! ?`` followed by a capitalised word (abbreviations like Mr. stay).

    Known limitation, kept so that the en-small corpus stays reproducible: closing quotes or
    brackets right after the sentence's final mark are dropped (``'"Glad." She smiled.'`` gives
    ``'"Glad.'``), which affects about one Austen sentence in six.

    >>> split_sentences("Mr. Knightley came. She was glad! Was he?  Yes.")
    ['Mr. Knightley came.', 'She was glad!', 'Was he?', 'Yes.']
    """
    text = " ".join(paragraph.split())
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        piece = text[start : m.start()].strip()
        # "Mr." "Mrs." "Dr." "St." and single initials end with a period but not a sentence
        if re.search(r"\b(Mr|Mrs|Dr|St|Col|Capt|Messrs|[A-Z])\.$", piece):
            continue
        out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def detokenize_wikitext(line: str) -> str:
    """Undo WikiText's ``@-@``/``@,@``/``@.@`` number and hyphen splits.

    >>> detokenize_wikitext("a 1 @,@ 000 @-@ year span")
    'a 1,000-year span'
    """
    return _WIKI_JOIN.sub(r"\1", line)


def read_brown(zip_path: Path) -> list[str]:
    """Sentences of the NLTK Brown corpus: one tagged sentence per indented line, ``word/tag`` tokens."""
    out = []
    with zipfile.ZipFile(zip_path) as z:
        for name in sorted(z.namelist()):
            base = name.rsplit("/", 1)[-1]
            if not re.fullmatch(r"c[a-r]\d\d", base):
                continue
            for line in z.read(name).decode("utf-8", errors="replace").splitlines():
                words = [w.rsplit("/", 1)[0] for w in line.split()]
                words = ['"' if w in ("``", "''") else w for w in words]
                if words:
                    out.append(" ".join(words))
    return out


def read_austen(path: Path) -> list[str]:
    """Sentences of a novel: blank-line paragraphs, headings (all-caps lines) dropped."""
    out = []
    for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
        para = para.strip()
        if not para or para.upper() == para:
            continue
        out += split_sentences(para.replace("_", ""))
    return out


def read_wikitext(path: Path) -> list[str]:
    """Sentences of WikiText paragraphs (headings and lines with ``<unk>`` dropped)."""
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("="):
            continue
        for s in split_sentences(detokenize_wikitext(line)):
            if "<unk>" not in s:
                out.append(s)
    return out


def read_lines(path: Path) -> list[str]:
    return [
        s.strip()
        for s in path.read_text(encoding="utf-8", errors="replace").splitlines()
        if s.strip() and "<unk>" not in s
    ]


def corpus_sentences(data_dir) -> dict[str, list[str]]:
    """Training sentences by source, each filtered to ``MIN_WORDS..MAX_WORDS`` words."""
    d = resolve_data_dir(data_dir, CORPUS_FILES)
    raw = {
        "brown": read_brown(d / "brown.zip"),
        "austen": [s for a in AUSTEN for s in read_austen(d / f"austen_{a}.txt")],
        "wikitext2": read_wikitext(d / "wikitext2_valid.txt") + read_wikitext(d / "wikitext2_test.txt"),
        "wiki103_5k": [detokenize_wikitext(s) for s in read_lines(d / "wiki103_5k.txt")],
        "tbc_5k": read_lines(d / "tbc_5k.txt"),
    }
    return {k: [s for s in v if MIN_WORDS <= len(s.split()) <= MAX_WORDS] for k, v in raw.items()}


def write_corpus(data_dir, out_path) -> dict:
    """Write the deduplicated corpus (sources in a fixed order) and return counts per source."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    seen, lines, counts = set(), [], {}
    for name, sents in corpus_sentences(data_dir).items():
        kept = [s for s in sents if not (s in seen or seen.add(s))]
        counts[name] = {"sentences": len(kept), "words": sum(len(s.split()) for s in kept)}
        lines += kept
    out_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(p, "brown.zip, the Austen novels, wikitext2_*.txt, wiki103_5k.txt and tbc_5k.txt")
    p.add_argument("--out", required=True, help="output folder of the corpus files")
    args = p.parse_args(argv)
    return exit_status(lambda: print(dumps(write_corpus(resolve_data_dir(args.data, CORPUS_FILES), args.out))))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
