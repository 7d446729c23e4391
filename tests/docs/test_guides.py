"""The guides' Python examples run (docs/guides/, on the faster sapiens-vh model, the session's copy): the
examples that were the README's, with the README test's assertions, moved with them; and the getting-started
page's examples, run as written, print what the page shows."""

import re
from pathlib import Path

import pytest

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guides"
LOAD = 'mlmprob.load_mlm("antiberty")'


def _example(page: str) -> str:
    """The first Python block under the page's "## Python" heading, reading the session's model."""
    text = (GUIDES / page).read_text()
    block = re.search(r"^## Python\n.*?```python\n(.*?)```", text, re.S | re.M).group(1)
    assert LOAD in block
    return block.replace(LOAD, "_loaded")


def _examples(page: str) -> list[str]:
    """Every Python block of the page's "## Python" section, in order, reading the session's model."""
    text = (GUIDES / page).read_text()
    section = re.search(r"^## Python\n(.*?)(?=^## |\Z)", text, re.S | re.M).group(1)
    return [b.replace(LOAD, "_loaded") for b in re.findall(r"```python\n(.*?)```", section, re.S)]


def _run(page: str, code: str, model) -> dict:
    ns: dict = {"_loaded": model}
    exec(compile(code, str(GUIDES / page), "exec"), ns)
    return ns


def test_scoring_guide_quick_start_prints_what_the_page_shows(antiberty, capsys, one_thread):
    """Sequences in, scores out (issue 52): the three lines on AntiBERTy print the output pasted under them."""
    first = _example("scoring.md")
    assert len([line for line in first.splitlines() if line.strip()]) == 3 and "..." not in first
    capsys.readouterr()
    _run("scoring.md", first, antiberty)
    shown = re.search(r"^## Python\n.*?```text\n(.*?)```", (GUIDES / "scoring.md").read_text(), re.S | re.M).group(1)
    assert capsys.readouterr().out == shown


def test_scoring_guide_example_runs(sapiens_vh, one_thread):
    quick, *rest = _examples("scoring.md")
    ns = _run("scoring.md", quick, sapiens_vh)
    exec(compile(rest[0], str(GUIDES / "scoring.md"), "exec"), ns)  # the token ids' block reads the same model
    assert ns["pll"].shape == (2,) and (ns["pll"] < 0).all()
    text = ns["mlmprob"].pll(ns["mlm"], ["EVQLVESGGGLVQPGGSLRLSCAAS", "QVQLQESGPGLVKPSETLSLTC"])
    assert bool((text == ns["pll"]).all())  # the quick start's strings score as the ids do


def test_design_guide_quick_start_runs(sapiens_vh, capsys, one_thread):
    """The design guide's first block (issue 52): two statements, one line per chain, the parent's residues outside the
    free CDR-H3 stretch kept, the mutations named. Timed by hand: about 12 s of CPU time, 22-24 s wall on two busy cores."""
    text = (GUIDES / "design.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert text.index(block) < text.index("chains=4, steps=20") and 'mlmprob.load_mlm("sapiens-vh")' in block
    capsys.readouterr()
    _run("design.md", block.replace('mlmprob.load_mlm("sapiens-vh")', "_loaded"), sapiens_vh)
    parent = "CSRWGGDGFYAMDYWGQGTLVTVSS"
    lines = [line.split(" ") for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4 and all(
        len(seq) == 25 and seq[:3] + seq[13:] == parent[:3] + parent[13:] for seq, _ in lines
    )
    for seq, mutant in lines:  # 'G5K:D7T'-style, 1-based, empty for a chain that kept the parent
        assert mutant == ":".join(f"{a}{i + 1}{b}" for i, (a, b) in enumerate(zip(parent, seq, strict=True)) if a != b)


def test_sampling_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("sampling.md", _example("sampling.md").replace("epochs=10", "epochs=1"), sapiens_vh)
    assert ns["r"].samples.shape[1:] == (4, ns["enc"].input_ids.shape[1])


def test_joints_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("joints.md", _example("joints.md"), sapiens_vh)
    assert abs(float(ns["log_joint"].exp().sum()) - 1) < 1e-9 and ns["log_joint"].shape == (20, 20)


def test_infilling_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("infilling.md", _example("infilling.md"), sapiens_vh)
    assert len(ns["fills"]) == 5 and all(len(c.tokens) == 4 for c in ns["fills"])


def test_variant_effects_guide_example_runs(sapiens_vh, tmp_path, monkeypatch, one_thread):
    """The variant effects guide's block on sapiens-vh, with 5 + 5 library variants (the README's test)."""
    from mlmprob.data import shared_data_dir

    data = shared_data_dir()
    if data is None or not (data / "antibody" / "mHER_H3_AgPos.csv").is_file():
        pytest.skip("antibody/mHER_H3_AgPos.csv from the shared data folder is absent")
    code = _example("variants.md").replace("[:500]", "[:5]").replace("../shared/data", str(data))
    monkeypatch.chdir(tmp_path)
    ns = _run("variants.md", code, sapiens_vh)
    assert ns["s"]["hcb"].shape == (3,) and bool(ns["s"]["ag"][2].isnan()) is False
    assert ns["sat"].masked_marginals.shape == (120, 20) and ns["sat"].n_forward == 121
    assert (tmp_path / "trastuzumab_vh.csv").is_file() and (tmp_path / "trastuzumab_vh.png").is_file()
    assert ns["lib_s"]["wt_marginals"].shape == (10,) and 0 <= ns["auc"]["auroc"].value <= 1


def _getting_started() -> tuple[list[str], list[str]]:
    """The getting-started page's Python blocks and its text (output) blocks, in order."""
    text = (GUIDES.parent / "getting-started.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S), re.findall(r"```text\n(.*?)```", text, re.S)


def test_getting_started_first_score_prints_what_the_page_shows(capsys, one_thread):
    """The first score's block, run as written (AntiBERTy), prints the output pasted under it (4 decimals)."""
    blocks, outputs = _getting_started()
    _run("getting-started.md", blocks[0], None)
    assert capsys.readouterr().out == outputs[0]


def test_getting_started_first_sample_prints_what_the_page_shows(capsys, one_thread):
    """The first sample's block, run as written (AntiBERTy): the shape line and the four CDR-H3 stretches pasted
    under it."""
    blocks, outputs = _getting_started()
    _run("getting-started.md", blocks[1], None)
    printed, shown = capsys.readouterr().out.splitlines(), outputs[2].splitlines()
    assert printed[0] == shown[0] == "torch.Size([1, 4, 122])" and len(printed) == len(shown) == 5
    assert all(len(line) == 20 and line.startswith("VYYC") and line.endswith("WGQ") for line in printed[1:])
    assert printed == shown


def test_getting_started_first_cli_score_writes_what_the_page_shows(tmp_path, monkeypatch, capsys):
    """The first score from the command line (AntiBERTy) writes the table pasted under it: the page's command run
    in this process (``mlmprob.cli.main``, in the folder of its input), on the CPU as on the page (no CUDA or MPS
    device seen, as with ``CUDA_VISIBLE_DEVICES=`` in a process of its own)."""
    import torch

    from mlmprob.cli import main
    from mlmprob.runtime import device

    text = (GUIDES.parent / "getting-started.md").read_text()
    commands = re.search(r"```bash\n(printf .*?)```", text, re.S).group(1).splitlines()
    assert commands[1] == "mlmprob score three.fasta --no-progress --out scores.tsv"
    fasta = re.search(r"printf '(.*)' > three.fasta", commands[0]).group(1).replace("\\n", "\n")
    (tmp_path / "three.fasta").write_text(fasta)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the page ran on a CPU
    monkeypatch.setattr(device, "_mps_available", lambda: False)
    capsys.readouterr()
    code = main(commands[1].split()[1:])
    stderr = capsys.readouterr().err
    assert code == 0, stderr[-2000:]
    shown = _getting_started()[1][1].splitlines()
    assert stderr.strip().splitlines()[-1] == shown[0]
    got = [line.split("\t") for line in (tmp_path / "scores.tsv").read_text().splitlines()]
    want = [line.split("\t") for line in shown[1:]]
    assert [row[:2] for row in got] == [row[:2] for row in want]  # header, ids and token counts
    for g, w in zip(got[1:], want[1:], strict=True):
        assert all(abs(float(a) - float(b)) < 1e-4 for a, b in zip(g[2:], w[2:], strict=True))
