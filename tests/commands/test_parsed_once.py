"""Options parsed once (docs/architecture.md, "The spine"): each command turns argparse's namespace into typed
objects at its top; nothing writes onto a namespace, nothing below ``commands/`` sees one, the dtype of a run
lives in its model spec alone, and the model is read through the ``Reader``'s members, not helper functions."""

import ast
import dataclasses
import re
from pathlib import Path

import mlmprob

SRC = Path(mlmprob.__file__).parent
WRITE = re.compile(r"\bargs\.[a-z_]* =")  # the check: git grep -n "args\.[a-z_]* =" src/mlmprob


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), path.read_text()


def _above_commands(rel: str) -> bool:
    return rel.startswith("commands/") or rel == "cli.py"


def _writes(tree) -> list[int]:
    """Lines that assign to an attribute of a name ``args`` (``args.x = ...``, ``a, args.x = ...``, ``args.x += ...``)
    or call ``setattr(args, ...)``."""

    def targets(t):
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from targets(e)
        else:
            yield t

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            found = [t for g in node.targets for t in targets(g)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            found = [node.target]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args:
            found = [ast.Attribute(value=node.args[0], attr="?")]
        else:
            continue
        if any(isinstance(t, ast.Attribute) and getattr(t.value, "id", None) == "args" for t in found):
            lines.append(node.lineno)
    return lines


def test_nothing_writes_onto_the_namespace():
    """Not even in the commands: they parse into typed objects instead."""
    hits = [f"{rel}:{n}" for rel, text in _modules() for n in _writes(ast.parse(text))]
    assert hits == []
    # the literal check below commands/ (comparisons such as ``args.x == y`` match it too)
    below = [rel for rel, text in _modules() if not _above_commands(rel) and WRITE.search(text)]
    assert below == []


def test_no_module_below_the_commands_takes_a_namespace():
    """Outside ``commands/`` and ``cli.py`` no name ``args`` is read (a parameter, attribute reads on it) and no
    ``from_args`` is defined or called: the commands hand typed objects down."""
    hits = []
    for rel, text in _modules():
        if _above_commands(rel):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
                hits.append(f"{rel}:{node.lineno}: args.{node.attr}")
            elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and "args" in {
                a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            }:
                hits.append(f"{rel}:{node.lineno}: a parameter named args")  # ``*args`` is not one
            if isinstance(node, (ast.FunctionDef, ast.Attribute)) and "from_args" in (
                getattr(node, "name", None),
                getattr(node, "attr", None),
            ):
                hits.append(f"{rel}:{node.lineno}: from_args")
    assert hits == []


def test_the_dtype_lives_in_the_model_spec_alone():
    from mlmprob.models.spec import ModelSpec
    from mlmprob.runtime.command import RunOptions

    assert "dtype" not in {f.name for f in dataclasses.fields(RunOptions)}
    assert "dtype" in {f.name for f in dataclasses.fields(ModelSpec)}


def test_the_commands_parse_into_typed_objects(tmp_path):
    import argparse

    from mlmprob.commands.common import InputFile, input_file, model_spec, run_options
    from mlmprob.models.spec import ModelSpec

    f = tmp_path / "a.fasta"
    f.write_text(">x\nAC\n")
    ns = argparse.Namespace(
        input=str(f), format="auto", column=None, id_column=None, model="m", dtype="float32", batch_tokens=64
    )
    before = dict(vars(ns))
    got = input_file(ns)
    assert got == InputFile(str(f), "auto", None, None, str(f), str(f.resolve()))
    assert model_spec(ns) == ModelSpec("m", "float32", False, 64)
    opts = argparse.Namespace(
        shard=None,
        workers=None,
        devices=None,
        engine="local",
        device="cpu",
        out=None,
        resume=False,
        ray_address=None,
        part_rows=10,
        no_progress=True,
        model="m",
    )
    assert run_options(opts).devices == ("cpu",) and not run_options(opts).progress
    assert vars(ns) == before  # read, never written


def test_no_protocol_helper_functions():
    """One vocabulary for the model: the ``Reader``'s members (``reader_of`` at each API entry), no helper
    functions that each wrap a throwaway reader, and the reader reads no adapter's private members."""
    defs = [
        f"{rel}: {m.group(0)}"
        for rel, text in _modules()
        for m in re.finditer(r"def (pad_id_of|lengths_of|special_ids_of|proposal_ids_of|foreign_ids)\b", text)
    ]
    assert defs == []
    reader = (SRC / "models" / "reader.py").read_text()
    assert "_fused" not in reader and '"_head"' not in reader


def test_sample_reads_its_namespace_only_at_its_top():
    """``mlmprob sample`` parses ``args`` into :class:`~mlmprob.commands.sample.Parsed` in ``run`` (and declares its
    flags in ``register``); no other function of the command takes or reads the namespace."""
    tree = ast.parse((SRC / "commands" / "sample.py").read_text())
    readers = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in fn.args.args}
            if "args" in names:
                readers.add(fn.name)
    assert readers == {"run"}, sorted(readers)
