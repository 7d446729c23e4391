"""Convert a ``pairs.jsonl`` of ``mlmprob joints`` written before 0.2.0, whose ``a`` and ``b`` are 0-based token
indices, to the records of 0.2.0: ``a`` and ``b`` the 1-based residue/word numbers of the pair (as ``--positions``
and the app count them), ``a_token_index`` and ``b_token_index`` the token indices; the stored configuration gains
``positions_base: 1``, so the runner continues the file. Nothing else changes (the reports and
``docs/results/uncertainty.py`` read neither column). Run once, from the repository root (the files name their data
relative to it), on the two folders beside this script:

    python docs/results/joints/convert_positions.py docs/results/joints/sapiens-vh docs/results/joints/antiberty

Either layout: the older runner's (a configuration line first) or the current one (``pairs.jsonl.meta.json``).
A file already converted is left as it is. Needs the model's tokenizer (``load_mlm``) and the data file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mlmprob import load_mlm
from mlmprob.joints.job import read_sequences
from mlmprob.positions import token_numbers
from mlmprob.runtime.log import RunMeta
from mlmprob.runtime.writers import dumps


def _pair(rec: dict, numbers: list[int]) -> dict:
    """``rec`` with ``a``, ``b`` as numbers and the token indices beside them, in the runner's key order."""
    out = {}
    for k, v in rec.items():
        if k == "a":
            a, b = rec["a"], rec["b"]
            out.update(a=numbers[a], b=numbers[b], a_token_index=a, b_token_index=b)
        elif k != "b":
            out[k] = v
    return out


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def convert(folder: str | Path) -> str:
    path = Path(folder) / "pairs.jsonl"
    meta = path.with_name(path.name + ".meta.json")
    lines = path.read_text().splitlines()
    objs = [json.loads(x) for x in lines]
    same = [s for s in (json.dumps, dumps) if all(s(o) == x for o, x in zip(objs, lines))]
    if not same:
        raise SystemExit(f"{path}: its lines are not in a known JSON layout; not converted")
    header = objs[0]["config"] if objs and objs[0].get("kind") == "config" else None
    stored = None if header is not None else json.loads(meta.read_text())
    config = header if header is not None else stored["config"]
    if config.get("positions_base") == 1:
        return f"{path}: already converted"
    mlm = load_mlm(config["model"], device="cpu")
    seqs = read_sequences(
        config["data"], config.get("column"), config.get("max_sequences"), config.get("format", "auto")
    )
    out = []
    for o in objs:
        if o.get("kind") == "pair":
            enc = mlm.encode([seqs[o["seq_index"]]])
            if int(enc.lengths[0]) != o["length"]:
                raise SystemExit(
                    f"{path}: pair {o['scheme']}/{o['i']}: the sequence has {int(enc.lengths[0])} tokens "
                    f"now, the record says {o['length']}; not converted"
                )
            numbers = token_numbers(enc.word_ids[0], enc.input_ids[0], mlm.mask_id)
            if not (numbers[o["a"]] and numbers[o["b"]]):
                raise SystemExit(f"{path}: pair {o['scheme']}/{o['i']} is not at two residues/words; not converted")
            o = _pair(o, numbers)
        out.append(o)
    if header is not None:
        header["positions_base"] = 1
    else:
        keys = list(config)
        at = keys.index("dtype") if "dtype" in keys else len(keys)
        stored["config"] = {
            **{k: config[k] for k in keys[:at]},
            "positions_base": 1,
            **{k: config[k] for k in keys[at:]},
        }
        RunMeta(meta, indent=2).save(stored)
    _write(path, "".join(same[0](o) + "\n" for o in out))
    return f"{path}: {sum(o.get('kind') == 'pair' for o in out)} pairs converted"


if __name__ == "__main__":
    for folder in sys.argv[1:] or [Path(__file__).parent / m for m in ("sapiens-vh", "antiberty")]:
        print(convert(folder))
