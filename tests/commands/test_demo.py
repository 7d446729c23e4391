"""``mlmprob demo`` (the README's main job, ``make demo``) end to end on a tiny random BERT with a
one-residue-per-token tokenizer, saved like any Hugging Face model: the report's four sections, and
its numbers against the package's own scoring."""

import math
import re

import pytest
import torch

import mlmprob
from mlmprob.cli import main

AA = "ACDEFGHIKLMNPQRSTVWY"
PERTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFTFTDYTMDWVRQAPGKGLEWVADVNPNSGGSIYNQRFKGRFTLSVDRSKNTLYLQMNSLRAEDTAVYYCAR"
    "NLGPSFYFDYWGQGTLVTVSS"
)
NUM = r"(-?\d+\.\d+|nan)"


@pytest.fixture(scope="module")
def residue_bert(tmp_path_factory):
    """A tiny BertForMaskedLM whose fast tokenizer splits a sequence into one word per residue."""
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    d = tmp_path_factory.mktemp("residue-bert")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {t: i for i, t in enumerate(specials + list(AA))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tk.decoder = decoders.Fuse()  # residues decode without spaces, as with AntiBERTy
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast.save_pretrained(str(d))
    with torch.random.fork_rng():
        torch.manual_seed(0)  # the tiny model's random weights only
        cfg = transformers.BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=160,
            initializer_range=0.5,
        )
        transformers.BertForMaskedLM(cfg).save_pretrained(str(d))
    return d


def test_demo_report(residue_bert, tmp_path, monkeypatch, capsys, one_thread):
    data = tmp_path / "data"
    (data / "antibody").mkdir(parents=True)
    (data / "antibody" / "thera_sabdab.csv").write_text(
        f"Therapeutic,HC\nbad,EVQLXQ\nPertuzumab,{PERTUZUMAB_VH}\nother,{PERTUZUMAB_VH[:-1]}\n"
    )
    monkeypatch.setenv("MLMPROB_DATA", str(data))
    assert main(["demo", "--model", str(residue_bert), "--n", "1", "--epochs", "1"]) == 0
    out, err = capsys.readouterr()
    heads = [line for line in out.splitlines() if re.match(r"^\d\. ", line)]
    assert [h[:3] for h in heads] == ["1. ", "2. ", "3. ", "4. "] and out.rstrip().splitlines()[-1].startswith(
        "done in"
    )
    # every section ends with its wall time; the bars went to stderr (the report on stdout holds none)
    assert len(re.findall(r"^   took \d+\.\ds$", out, re.M)) == 4
    assert "\r" not in out and all(f"{desc}:" in err for desc in ("scoring", "MH", "joints", "infilling"))

    # 1. scores: trastuzumab, then the first valid Thera-SAbDab chain (the invalid one is skipped)
    scores = re.findall(rf"^   (\S+)\s+(\d+)\s+{NUM}\s+{NUM}\s+{NUM}\s+\d+\.\d$", out, re.M)
    assert [s[0] for s in scores] == ["trastuzumab", "Pertuzumab"]
    mlm = mlmprob.load_mlm(str(residue_bert))
    from mlmprob.commands.demo import DEMO_HEAVY

    for (_, n, pll, per_res, e_raw), seq in zip(scores, (DEMO_HEAVY["trastuzumab"], PERTUZUMAB_VH)):
        ids = mlm.encode([seq]).input_ids
        assert int(n) == len(seq)
        assert float(pll) == pytest.approx(float(mlmprob.pll(mlm, ids)[0]), abs=0.006)
        assert float(per_res) == pytest.approx(float(pll) / len(seq), abs=0.002)
        assert float(e_raw) == pytest.approx(float(mlmprob.energy(mlm, ids, kind="raw")[0]), abs=0.06)

    # 2. CDR-H3 redesign: native row and three chains, finite energies, identities in [0, 1]
    native = re.search(rf"^   native\s+([A-Z]+)\s+{NUM}\s+1\.00$", out, re.M)
    assert native and native.group(1) == "SRWGGDGFYAMDY"
    trast = DEMO_HEAVY["trastuzumab"]
    cdr = [trast.index("SRWGGDGFYAMDY") + 1 + i for i in range(13)]  # +1: the [CLS] token
    e_cdr = float(mlmprob.energy(mlm, mlm.encode([trast]).input_ids, cdr, kind="local")[0])
    assert float(native.group(2)) == pytest.approx(e_cdr, abs=0.006)  # E_local over CDR-H3 only
    chains = re.findall(rf"^   ([012])\s+([A-Z]+)\s+{NUM}\s+{NUM}$", out, re.M)
    assert [c[0] for c in chains] == ["0", "1", "2"]
    for _, cdr, e, ident in chains:
        same = sum(a == b for a, b in zip(cdr, native.group(1))) / len(cdr)
        assert len(cdr) == 13 and math.isfinite(float(e)) and float(ident) == pytest.approx(same, abs=0.006)
    rates = re.search(rf"acceptance {NUM}, novel transitions {NUM}", out)
    assert 0 <= float(rates.group(2)) <= float(rates.group(1)) <= 1

    # 3. pair joints: the five constructions, probabilities in [0, 1], A-KL finite and >= 0
    joints = re.findall(rf"^   (mlm|mrf_logit|mrf|hcb|ag)\s+(\S*)\s+{NUM}\s+{NUM}\s+{NUM}$", out, re.M)
    assert [j[0] for j in joints] == ["mlm", "mrf_logit", "mrf", "hcb", "ag"]
    for _, _, p_mode, p_native, akl in joints:
        assert 0 < float(p_mode) <= 1 and 0 <= float(p_native) <= float(p_mode) + 0.0005
        assert math.isfinite(float(akl)) and float(akl) >= 0

    # 4. infilling: four searches, each with three fills of the 4-residue gap and a finite score
    fills = re.findall(r"^   (standard|hcb)\s+(l2r|best)\s+top-3: (.*?)   native rank: (\S+)$", out, re.M)
    assert [(f[0], f[1]) for f in fills] == [("standard", "l2r"), ("standard", "best"), ("hcb", "l2r"), ("hcb", "best")]
    for *_, top3, rank in fills:
        cands = re.findall(rf"([A-Z]{{4}})\*? {NUM}", top3)
        assert len(cands) == 3 and all(math.isfinite(float(s)) for _, s in cands)
        assert rank == ">5" or 1 <= int(rank) <= 5
    # the two methods' scores are different quantities: the report says what each is, and in which unit
    assert "   standard score: log-probability of the fill in nats" in out
    assert "   hcb score: log-ratio in nats, not a probability (sum of log q(fill token) - log q(mask)" in out
    assert "*" not in out  # the native fill is marked by its rank alone (a '*' was explained and never printed)
    _glossary_covers_the_report(out)


# the column and row names any reader knows (not glossary terms)
PLAIN = {"antibody", "length", "secs", "chain", "CDR-H3", "method", "native"}


def _glossary_covers_the_report(out: str) -> None:
    """The glossary explains every term the report prints (its tables' columns and rows, its rates and
    diagnostics), and nothing it does not print."""
    from mlmprob.commands.demo import GLOSSARY

    report, glossary = out.split("\nGlossary\n")
    lines = glossary.splitlines()[: len(GLOSSARY)]
    assert [line.split(": ")[0].strip() for line in lines] == list(GLOSSARY)  # one line per term, in plain words
    terms = {term for key in GLOSSARY for term in key.split(", ")}
    for term in terms:  # nothing explained that the report does not print
        assert re.search(rf"(^|[\s(]){re.escape(term)}([\s:;,)]|$)", report, re.M), f"{term!r} is not in the report"
    printed = set()
    for line in report.splitlines():
        if re.match(r"^   (antibody|chain|method)\s", line):  # a table's header: its column names
            printed |= set(line.split())
        row = re.match(r"^   (mlm|mrf_logit|mrf|hcb|ag|standard)\s+(l2r|best)?", line)  # joint and infill rows
        if row:
            printed |= {g for g in row.groups() if g}
    printed |= {"log q", "acceptance", "novel transitions", "proposals/s", "forward rows", "AG", "top-3"}
    printed |= {"native rank", "conditional-independence gap"}
    assert all(term in report for term in printed)
    missing = sorted(printed - terms - PLAIN)
    assert missing == [], f"printed without a glossary line: {missing}"


def test_a_huge_epochs_is_refused_before_the_model_loads(monkeypatch, capsys):
    """Red-team: ``demo --epochs 10**9`` loaded the model and scored section 1 before the size check said no."""
    from mlmprob.commands import common

    def no_load(args):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(common, "load_model_from_args", no_load)
    assert main(["demo", "--n", "0", "--epochs", "1000000000"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("error: epochs 1,000,000,000 + burn_in 0 of 3 chains would keep at least")
        and len(err.splitlines()) == 1
    ), err
