"""Settings stored once (issue 51, item 3): every command's run-file configuration is made by one helper,
:func:`mlmprob.runtime.command.stored_config`, from the job's model spec, the spec and the command's own entries."""

from dataclasses import dataclass, field
from pathlib import Path

import mlmprob
from mlmprob.models.spec import ModelSpec
from mlmprob.runtime.command import stored_config
from mlmprob.settings import Spec

SRC = Path(mlmprob.__file__).resolve().parent


@dataclass(frozen=True)
class Demo(Spec):
    size: int = 1
    kind: str = field(default="a", metadata={"recorded": False})
    names: tuple = ("x",)


def test_the_layout_is_command_model_before_settings_after():
    got = stored_config("demo", ModelSpec("m"), Demo(size=2), {"input": "f", "names": ...}, {"size": 3, "dedupe": True})
    # a setting named in before keeps that place; an entry of after already there changes in place
    assert list(got.items()) == [
        ("command", "demo"),
        ("model", "m"),
        ("input", "f"),
        ("names", ["x"]),
        ("size", 3),
        ("dedupe", True),
    ]
    assert stored_config("demo", ModelSpec("m"), {"chains": 2}) == {"command": "demo", "model": "m", "chains": 2}


def test_no_command_writes_its_stored_configuration_by_hand():
    by_hand = [
        p.name for d in ("commands", "joints") for p in (SRC / d).glob("*.py") if '"command": "' in p.read_text()
    ]
    assert by_hand == []
