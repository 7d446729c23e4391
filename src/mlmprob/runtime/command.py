"""The one runner of every streaming command (``score``, ``variants``, ``joints``, streamed ``sample`` and ``infill``).

A command declares a :class:`StreamCommand`: its job (:mod:`mlmprob.runtime.job`), its units (a function giving a
fresh iterator), its configuration (made by :func:`stored_config`, stored in ``OUT.meta.json``, matched on resume;
``models``, a list, names every model of a job that reads several, for the weights' identity) and its output
columns. :func:`run_command` does the rest, the same way for every command:

1. the first unit is read (bad input fails before a model is loaded; no unit at all is ``spec.empty``); for a file
   output every unit is read once, streamed: the run's identity (:mod:`mlmprob.runtime.identity`) and the progress
   total; an input that is the output is refused;
2. the output is claimed (:func:`~mlmprob.runtime.writers.open_writer`: lock, resume, configuration check, with the
   shard, the ``computed_with`` block of :mod:`mlmprob.runtime.provenance` and the ``identity`` block added) before
   the model loads: a second writer, or a resume that would mix precisions, inputs or weights, changes nothing;
3. with one local device the model is loaded here, once (an unknown model or device fails before any output, and the
   claimed output is released); otherwise every worker process or Ray actor loads it;
4. on stdout the progress total reads the units once more when the input is a file smaller than
   :data:`mlmprob.defaults.COUNT_LIMIT` or is made by the command (never when the bar is off);
5. :func:`~mlmprob.runtime.engine.run_stream` (shard, resume, chunks, devices, Ray, the writer), then a warning line
   for every unit skipped now. The command prints its own summary with :attr:`StreamRun.ran_on`, the "ran on" text."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from .. import defaults
from ..errors import MLMProbError
from .engine import StreamSummary, run_stream
from .identity import KEY as IDENTITY
from .identity import UnitDigest, check_resume, run_identity
from .job import Job, State, state_of
from .provenance import KEY, compute_threads, computed_with
from .shard import Shard


@dataclass(frozen=True)
class RunOptions:
    """Where and how a streamed command runs: its output and the scale options of ``add_runtime_args`` (parsed by
    :func:`mlmprob.commands.common.run_options`); the dtype the workers load is the job's ``model_spec.dtype``."""

    out: str | None = None
    resume: bool = False
    shard: Shard = Shard.whole()
    devices: tuple[str, ...] = (defaults.DEVICE,)
    engine: str = "local"
    ray_address: str | None = None
    part_rows: int = defaults.PART_ROWS
    progress: bool = True

    @property
    def in_process(self) -> bool:
        """One local device: the model is loaded in this process."""
        return len(self.devices) == 1 and self.engine == "local"


@dataclass
class StreamCommand:
    """What a streaming command declares. ``units()`` gives a fresh iterator each call; ``input`` is the file it
    reads (None when the command makes its units); ``unit_steps``: the steps the progress bar counts per unit
    (``unit_name`` then names a step); ``last_row_id(unit)``: the id of the unit's last row when a unit gives
    several; ``state``: an already loaded worker state (library use: the job's ``prepare(mlm)``)."""

    job: Job
    units: Callable[[], Iterable]
    config: dict
    fields: tuple[str, ...] | None = None
    input: str | None = None
    empty: str = "no input"
    unit_name: str = "seq"
    unit_steps: int = 1
    chunk_size: int = 16
    key: Callable = lambda u: u.id
    last_row_id: Callable | None = None
    skip_label: str = "record "
    meta: dict = field(default_factory=dict)
    state: State | None = None
    on_rows: Callable[[list[dict]], None] | None = None


@dataclass
class StreamRun(StreamSummary):
    """:class:`~mlmprob.runtime.engine.StreamSummary` plus what ran: ``ran_on`` ("cpu float32", "2 x cpu float32",
    "Ray actors bfloat16"), the ``shard``, and the worker ``state`` when loaded in this process (else None)."""

    ran_on: str = ""
    shard: Shard = Shard.whole()
    state: State | None = None


def stored_config(command: str, model_spec, settings, before: dict | None = None, after: dict | None = None) -> dict:
    """The configuration a command stores in its run file and a resume must match (:class:`StreamCommand`'s
    ``config``), laid out one way for every command: ``command``; ``model``, the job's
    :class:`~mlmprob.models.spec.ModelSpec`'s; the entries ``before`` the settings (input, format, columns); the
    ``settings``: a spec's :meth:`~mlmprob.settings.Spec.recorded` fields, or the dict a job makes of them
    (``sample``'s, ``design``'s ``job.settings()``); then the entries ``after`` them. A setting that ``before``
    names (its value ``...``) is stored at that place; an entry of ``after`` already there takes its value in place."""
    values = settings if isinstance(settings, dict) else settings.recorded()
    return {"command": command, "model": model_spec.model, **(before or {}), **values, **(after or {})}


def _count(spec: StreamCommand, opts: RunOptions) -> int | None:
    """The progress bar's total (see the module docstring), or None when it is not counted."""
    if not opts.progress:
        return None
    if spec.input is not None:
        path = Path(spec.input)
        if not path.is_file() or path.stat().st_size >= defaults.COUNT_LIMIT:
            return None
    return sum(1 for k, _ in enumerate(spec.units()) if opts.shard.owns(k))


def _identify(spec: StreamCommand, opts: RunOptions) -> tuple[UnitDigest, int]:
    """One pass over the units before the output is claimed: their digest (with a checkpoint at the unit count a
    resumed output stored) and how many the shard owns. An input that is the output (or a link to it) is refused."""
    from .log import RunMeta
    from .writers import meta_path

    with suppress(OSError):  # either missing: not the same file
        if spec.input is not None and os.path.samefile(spec.input, opts.out or ""):
            raise MLMProbError(f"the input {spec.input} is the output {opts.out} (the same file): choose another --out")
    stored = RunMeta(meta_path(opts.out)).config() if opts.resume and opts.out is not None else None
    ident = (stored or {}).get(IDENTITY)
    units = ident.get("input_units") if isinstance(ident, dict) else None
    digest = UnitDigest([units] if isinstance(units, int) else [])
    owned = 0
    for k, u in enumerate(spec.units()):
        digest.add(u)
        owned += opts.shard.owns(k)
    return digest, owned


# the StreamCommand fields run_stream takes as they are
_STREAM_FIELDS = ("chunk_size", "unit_name", "unit_steps", "key", "last_row_id", "on_rows", "meta")


def run_command(spec: StreamCommand, opts: RunOptions) -> StreamRun:
    """Run a declared streaming command (see the module docstring); returns what it did."""
    from .device import describe, resolve_device, resolve_dtype
    from .writers import open_writer, output_kind

    to_file = output_kind(opts.out) != "stdout"
    if to_file:  # one pass: the run's identity and the progress total
        digest, owned = _identify(spec, opts)
        if digest.n == 0:
            raise MLMProbError(spec.empty)
    elif next(iter(spec.units()), None) is None:  # fail fast on bad input, before a model is loaded
        raise MLMProbError(spec.empty)
    ms, mlm = spec.job.model_spec, None if spec.state is None else spec.state.mlm  # the model given, else the spec's
    model, threads = spec.config.get("model", ms.model), compute_threads(opts.devices, opts.engine)
    block = computed_with(model, ms.dtype, opts.devices, batch_tokens=ms.batch_tokens, mlm=mlm, threads=threads)
    config = {**spec.config, "shard": str(opts.shard), KEY: block}
    verify = None
    if to_file:
        total = owned if opts.progress else None
        models = spec.config.get("models") or model
        config[IDENTITY] = identity = run_identity(digest if spec.input is not None else None, models)
        verify = lambda stored: check_resume(opts.out, stored.get(IDENTITY), identity, digest)  # noqa: E731
    else:
        total = _count(spec, opts)
    writer = open_writer(
        opts.out, resume=opts.resume, config=config, fields=spec.fields, part_rows=opts.part_rows, verify=verify
    )
    with writer:
        state = spec.state
        if state is None and opts.in_process:
            state = spec.job.load(opts.devices[0])
        if state is not None:
            mlm = state_of(spec.job, state).mlm
            load, ran_on = (lambda device: state), describe(mlm.device, mlm.dtype)
        else:
            where = "Ray actors" if opts.engine == "ray" else f"{len(opts.devices)} x {opts.devices[0]}"
            dt = resolve_dtype(ms.dtype, resolve_device(opts.devices[0]))
            load, ran_on = spec.job.load, f"{where} {'float32' if dt is None else str(dt).replace('torch.', '')}"
        summary = run_stream(
            load,
            spec.job.run,
            spec.units(),
            writer,
            total=total,
            **{k: getattr(opts, k) for k in ("shard", "devices", "engine", "ray_address", "progress")},
            **{k: getattr(spec, k) for k in _STREAM_FIELDS},
        )
    for uid, why in summary.skipped:
        print(f"warning: skipped {spec.skip_label}{uid!r}: {why}", file=sys.stderr)
    return StreamRun(**vars(summary), ran_on=ran_on, shard=opts.shard, state=state)
