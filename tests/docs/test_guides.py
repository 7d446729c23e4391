"""What the guides' examples print is what their pages show: the scoring guide's quick start, the design guide's
first block and the getting-started page's examples, on the session's models. That every guide's blocks run as
written, each in order in an empty folder, is tests/docs/test_guide_examples.py."""

import re
from pathlib import Path

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guides"
LOAD = 'mlmprob.load_mlm("antiberty")'


def _example(page: str) -> str:
    """The first Python block under the page's "## Python" heading, reading the session's model."""
    text = (GUIDES / page).read_text()
    block = re.search(r"^## Python\n.*?```python\n(.*?)```", text, re.S | re.M).group(1)
    assert LOAD in block
    return block.replace(LOAD, "_loaded")


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


def test_design_guide_quick_start_runs(sapiens_vh, capsys, one_thread):
    """The design guide's first block (issue 52): two statements, one line per chain, the parent's residues outside the
    free CDR-H3 stretch kept, the mutations named. Timed by hand: about 12 s of CPU time, 22-24 s wall on two busy cores."""
    text = (GUIDES / "design.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert text.index(block) < text.index("chains=2, steps=3") and 'mlmprob.load_mlm("sapiens-vh")' in block
    capsys.readouterr()
    _run("design.md", block.replace('mlmprob.load_mlm("sapiens-vh")', "_loaded"), sapiens_vh)
    parent = "CSRWGGDGFYAMDYWGQGTLVTVSS"
    lines = [line.split(" ") for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4 and all(
        len(seq) == 25 and seq[:3] + seq[13:] == parent[:3] + parent[13:] for seq, _ in lines
    )
    for seq, mutant in lines:  # 'G5K:D7T'-style, 1-based, empty for a chain that kept the parent
        assert mutant == ":".join(f"{a}{i + 1}{b}" for i, (a, b) in enumerate(zip(parent, seq, strict=True)) if a != b)


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
