"""The ``en-small`` English model: held-out evaluation and export into the package.

Evaluation sets (never trained on): the trainer's own held-out split of the training corpus, SNLI
test sentences and XSum test summaries (``experiments.english_sets.evaluation_sets``). Per set:

- single-token masked accuracy and PLL per token: every token masked on its own (the
  pseudo-log-likelihood copies), top-1 over the whole vocabulary;
- 15 % masked accuracy: a seeded 15 % of each sentence's tokens masked together (the training
  objective's setting);
- the unigram baseline: accuracy of always predicting the most frequent training token.

    python -m experiments.english evaluate --model runs/en-small/train --out docs/results/english
    python -m experiments.english export --run runs/en-small/train
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from mlmprob.batching import iter_masked_logits, read_logits
from mlmprob.errors import MLMProbError, exit_status
from mlmprob.jsonl import dumps
from mlmprob.training.data import TextSource, split_heldout
from mlmprob.training.masking import generator_for, select_positions

from .data_option import add_data_option, resolve_data_dir
from .english_sets import FILES as EVAL_FILES

EXPORT_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
    "tokenizer.json",
)
SIZE_LIMIT = 25 * 2**20


def builtin_dir() -> Path:
    """Where the packaged ``en-small`` weights live."""
    from mlmprob.models.loading import EN_SMALL_DIR

    return EN_SMALL_DIR


@dataclass(frozen=True)
class EnglishScores:
    """Scores of one evaluation set (per-token means over all scored tokens)."""

    name: str
    sentences: int
    tokens: int
    single_accuracy: float  # top-1 with the token masked alone
    pll_per_token: float  # mean log q(x_t | x without t), nats
    pseudo_perplexity: float  # exp(-pll_per_token)
    joint15_accuracy: float  # top-1 with 15 % of the sentence masked together
    joint15_tokens: int
    unigram_accuracy: float  # most frequent training token, same single-token positions
    seconds: float
    skipped_long: int = 0  # sentences longer than the model's maximum length
    skipped_unknown: int = 0  # sentences with a word the tokenizer maps to its unknown token


@torch.inference_mode()
def score_set(
    mlm, name: str, sentences: list[str], *, unigram_id: int | None = None, seed: int = 0, batch_rows: int = 512
) -> EnglishScores:
    """Single-token and 15 %-joint masked accuracy and PLL of ``mlm`` on ``sentences``."""
    from mlmprob.models.reader import reader_of
    from mlmprob.positions import TOKENS, default_mask

    if not sentences:
        raise MLMProbError(f"evaluation set {name!r} is empty")
    t0 = time.perf_counter()
    fits, n_long, n_unknown = fitting(mlm, sentences, counts=True)
    if not fits:
        raise MLMProbError(
            f"no sentence of evaluation set {name!r} can be encoded by the model "
            f"({n_long} too long, {n_unknown} with unknown words)"
        )
    sentences = fits
    ids = mlm.encode(sentences).input_ids
    scored = default_mask(mlm, ids, TOKENS)
    rows, cols = scored.nonzero(as_tuple=True)
    correct, logp_sum, uni = 0, 0.0, 0
    for q, lg in iter_masked_logits(reader_of(mlm, batch_rows * ids.shape[1]), ids, rows, cols):
        lg = lg.double()
        gold = ids[rows[q], cols[q]]
        correct += int((lg.argmax(-1) == gold).sum())
        logp_sum += float(torch.log_softmax(lg, -1).gather(1, gold[:, None]).sum())
        if unigram_id is not None:
            uni += int((gold == unigram_id).sum())
    # 15 % joint masking as in training: k = max(1, round(0.15 n)) tokens of each sentence, seeded per set
    sel = select_positions(scored, 0.15, generator_for(seed, "english-eval", name))
    jn = int(sel.sum())
    x = ids.masked_fill(sel, mlm.mask_id)
    rr, cc = sel.nonzero(as_tuple=True)
    lg = read_logits(mlm, x, rr, cc, groups=torch.arange(len(x)))  # each sentence its own record
    jc = int((lg.argmax(-1) == ids[rr, cc]).sum()) if jn else 0
    n = len(rows)
    pll = logp_sum / n
    return EnglishScores(
        name,
        len(sentences),
        n,
        correct / n,
        pll,
        math.exp(-pll),
        jc / max(jn, 1),
        jn,
        uni / n if unigram_id is not None else float("nan"),
        time.perf_counter() - t0,
        n_long,
        n_unknown,
    )


def _encodable(mlm, texts: list[str]):
    """``english_gaps.encode_sentences`` of ``texts``, with the skipped counted by reason
    (``n_long``, ``n_unknown``); any other reason to refuse a text is an error."""
    from .english_gaps import Sentence, encode_sentences

    enc = encode_sentences(mlm, [Sentence(str(i), t) for i, t in enumerate(texts)])
    n_unknown = sum("unknown token" in why for _, why in enc.skipped)
    n_long = sum("at most" in why for _, why in enc.skipped)
    other = [why for _, why in enc.skipped if "unknown token" not in why and "at most" not in why]
    if other:
        raise MLMProbError(other[0])
    return enc, n_long, n_unknown


def fitting(mlm, texts: list[str], counts: bool = False):
    """The texts the model can encode: not longer than its maximum length (training truncated those)
    and without words its tokenizer maps to the unknown token. ``counts=True`` also returns the
    numbers skipped for each reason."""
    enc, n_long, n_unknown = _encodable(mlm, texts)
    fits = [s.text for s in enc.sentences]
    return (fits, n_long, n_unknown) if counts else fits


def split_lines(run_dir: Path, corpus: Path) -> tuple[list[str], list[str]]:
    """The trainer's (training, held-out) lines of ``corpus``: the same seeded split as ``TextSource``,
    with the fraction, the file and both counts checked against the run's record."""
    state_file = Path(run_dir) / "trainer_state.json"
    if not state_file.is_file():
        raise MLMProbError(f"{run_dir} holds no trainer_state.json (not a training run folder)")
    state = json.loads(state_file.read_text())
    data, seed = state["data"], state["config"]["seed"]
    files = [Path(f).name for f in data.get("files", [])]
    if files and files != [Path(corpus).name]:
        raise MLMProbError(f"the run was trained on {files}, not on {Path(corpus).name}")
    fraction = data.get("heldout_fraction", 0.02)  # runs saved before the field existed used 0.02 here
    train, held = split_heldout(TextSource([str(corpus)]).read_lines(), fraction, seed)
    if (len(held), len(train)) != (data["n_heldout"], data["n_train"]):
        raise MLMProbError(
            f"{corpus} does not match the run: it splits into {len(train)} + {len(held)} lines, "
            f"the run had {data['n_train']} + {data['n_heldout']}"
        )
    return train, held


def most_frequent_token(mlm, lines: list[str]) -> int:
    """The most frequent non-special token of the encodable ``lines``."""
    enc = _encodable(mlm, lines)[0]
    tokens = torch.tensor([s.input_ids[c] for s in enc.sentences for c in s.cols], dtype=torch.long)
    return int(torch.bincount(tokens, minlength=mlm.vocab_size).argmax())


def evaluate_model(model: str, out: Path, data: str | Path, corpus: Path, run_dir: Path, n: int, seed: int) -> list:
    """Score ``model`` on the run's held-out lines, SNLI and XSum; the unigram baseline is the most
    frequent token of the run's training lines."""
    from mlmprob.models import load_mlm

    from .english_sets import evaluation_sets

    mlm = load_mlm(model)
    train_lines, held = split_lines(run_dir, corpus)
    sets = {"corpus-heldout": held[:n], **evaluation_sets(data, n)}
    uni = most_frequent_token(mlm, train_lines)
    res = []
    for name, sents in sets.items():
        s = score_set(mlm, name, sents, unigram_id=uni, seed=seed)
        res.append(s)
        print(dumps(asdict(s)))
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_text(
        dumps({"model": model, "unigram_token": mlm.decode([uni]), "scores": [asdict(s) for s in res]}, indent=1) + "\n"
    )
    return res


def write_report(out: Path, run_dir: Path | None, command: str | None = None) -> Path:
    """``README.md`` in ``out`` from ``scores.json`` and the training run's record."""
    res = json.loads((out / "scores.json").read_text())
    L = [
        "# en-small: the package's English masked LM",
        "",
        f"Evaluated model: `{res['model']}` (`python -m experiments.english evaluate`); "
        f"unigram baseline token: `{res['unigram_token']}`.",
        "",
    ]
    if run_dir is not None and (Path(run_dir) / "trainer_state.json").is_file():
        st = json.loads((Path(run_dir) / "trainer_state.json").read_text())
        c, d = st["config"], st["data"]
        n_params = None
        if (Path(run_dir) / "model.safetensors").is_file():
            from safetensors import safe_open

            with safe_open(str(Path(run_dir) / "model.safetensors"), "pt") as f:
                n_params = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
            size = (Path(run_dir) / "model.safetensors").stat().st_size / 2**20
        L += [
            "## Model and training",
            "",
            f"- BERT, {c['num_layers']} layers x hidden {c['hidden_size']}, {c['num_heads']} heads, intermediate "
            f"{c['intermediate_size']}, WordPiece vocabulary {d.get('tokenizer_vocab_size')} (lowercased), "
            f"max length {json.loads((Path(run_dir) / 'config.json').read_text())['max_position_embeddings']} tokens"
            + (f"; {n_params / 1e6:.2f}M parameters, model.safetensors {size:.1f} MiB" if n_params else "")
            + ".",
            f"- {st['step']} steps of batch {c['batch_size']}, lr {c['lr']} (warmup {c['warmup_steps']}, linear "
            f"decay), masking rate {c['mask_rate']} with mask/random/keep {c['mask_split']}, {c['masking']} masking, "
            f"precision {c.get('precision', 'fp32')}; {d['n_train']} training lines, {d['n_heldout']} held out.",
            f"- Final held-out masked-token loss {st['history'][-1]['heldout_loss']:.3f} (training objective, "
            f"{c['mask_rate']:.0%} masked).",
            "",
        ]
        if command:
            L += ["Made with (`commands.sh` in this folder):", "", "```bash", command.strip(), "```", ""]
        L += ["![loss curve](loss_curve.png)", ""]
    L += [
        "## Held-out scores",
        "",
        "`single acc`: top-1 accuracy with each token masked alone (over the whole vocabulary); `PLL/token`: "
        "mean log q(x_t | rest), nats; `PPPL`: exp(-PLL/token); `15% acc`: top-1 accuracy with a seeded 15 % of "
        "each sentence masked together (k = max(1, round(0.15 n)), as in training); `unigram`: always predicting "
        "the most frequent token of the training lines. Sentences longer than the model's 64 tokens or with a "
        "word its tokenizer maps to [UNK] are skipped (counted). SNLI and XSum were never trained on.",
        "",
        "| set | sentences | skipped long / unknown | tokens | single acc | PLL/token | PPPL | 15% acc | unigram |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["scores"]:
        L.append(
            f"| {r['name']} | {r['sentences']} | {r.get('skipped_long', 0)} / {r.get('skipped_unknown', 0)} | "
            f"{r['tokens']} | {r['single_accuracy']:.3f} | "
            f"{r['pll_per_token']:.3f} | {r['pseudo_perplexity']:.1f} | {r['joint15_accuracy']:.3f} | "
            f"{r['unigram_accuracy']:.3f} |"
        )
    L.append("")
    path = out / "README.md"
    path.write_text("\n".join(L))
    return path


def export(run_dir: Path, dest: Path) -> Path:
    """Copy a finished training run's model and tokenizer into the package (size-checked), with a model card."""
    run_dir = Path(run_dir)
    if not (run_dir / "model.safetensors").is_file():
        raise MLMProbError(f"{run_dir} holds no finished model (model.safetensors missing)")
    missing = [f for f in ("config.json", "tokenizer_config.json") if not (run_dir / f).is_file()]
    if not ((run_dir / "vocab.txt").is_file() or (run_dir / "tokenizer.json").is_file()):
        missing.append("vocab.txt or tokenizer.json")
    if missing:
        raise MLMProbError(f"{run_dir} lacks {', '.join(missing)}")
    size = (run_dir / "model.safetensors").stat().st_size
    if size > SIZE_LIMIT:
        raise MLMProbError(f"model.safetensors is {size / 2**20:.1f} MiB, over the 25 MiB limit for the repository")
    dest.mkdir(parents=True, exist_ok=True)
    for f in EXPORT_FILES + ("MODEL_CARD.md",):  # no file of an older export may stay next to the new model
        (dest / f).unlink(missing_ok=True)
    for f in EXPORT_FILES:
        if (run_dir / f).is_file():
            shutil.copy2(run_dir / f, dest / f)
    st = json.loads((run_dir / "trainer_state.json").read_text()) if (run_dir / "trainer_state.json").is_file() else {}
    c = st.get("config", {})
    (dest / "MODEL_CARD.md").write_text(
        "# en-small\n\nA small English BERT masked LM trained by mlmprob's own trainer (`mlmprob train`) on "
        "the Brown corpus, Jane Austen's novels, WikiText-2 and 5k-sentence samples of WikiText-103 and "
        "BookCorpus; lowercased WordPiece. SNLI and XSum were held out for evaluation. "
        f"{c.get('num_layers')} layers x {c.get('hidden_size')}, {st.get('step')} steps. Load with "
        '`mlmprob.load_mlm("en-small")`. Commands and held-out scores: docs/results/english in the '
        "mlmprob repository. Data licences: see ../shared/data/README.md (Brown: redistribution permitted; "
        "Austen: public domain; WikiText: CC BY-SA 3.0; BookCorpus/WikiText-103 samples: BSD-3 release).\n"
    )
    return dest


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("evaluate")
    e.add_argument("--model", default="en-small")
    e.add_argument("--out", default="docs/results/english")
    add_data_option(e, ", ".join(EVAL_FILES))
    e.add_argument("--corpus", default="runs/en-small/corpus.txt")
    e.add_argument("--run", default="runs/en-small/train", help="the training run folder (its split and record)")
    e.add_argument("--n", type=int, default=1000, help="sentences per evaluation set")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--threads", type=int)
    e.add_argument("--command-file", help="a file holding the training command, quoted in the report")
    x = sub.add_parser("export")
    x.add_argument("--run", default="runs/en-small/train")
    x.add_argument("--to", default=str(builtin_dir()))
    args = p.parse_args(argv)
    return exit_status(
        lambda: _evaluate_command(args) if args.cmd == "evaluate" else print(export(Path(args.run), Path(args.to)))
    )


def _evaluate_command(args) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    data = resolve_data_dir(args.data, EVAL_FILES)  # before loading anything: absent data is one clear line
    evaluate_model(args.model, Path(args.out), data, Path(args.corpus), Path(args.run), args.n, args.seed)
    cmd = Path(args.command_file).read_text() if args.command_file else None
    run_dir = Path(args.run)
    if (run_dir / "loss_curve.png").is_file():
        shutil.copy2(run_dir / "loss_curve.png", Path(args.out) / "loss_curve.png")
    print(write_report(Path(args.out), run_dir, cmd))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
