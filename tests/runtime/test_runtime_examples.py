"""Worked examples of mlmprob.runtime's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_log_module():
    check_examples(
        "mlmprob.runtime.log",
        """
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "r.jsonl"
        >>> with ResumableLog(out, config={"seed": 1}, meta=RunMeta(out.with_name("r.meta.json"))) as log:
        ...     log.append({"id": "a", "x": float("nan")})
        >>> _ = open(out, "a").write('{"id": "b", "x')               # a kill in the middle of a line
        >>> with ResumableLog(out, config={"seed": 1}, meta=RunMeta(out.with_name("r.meta.json"))) as log:
        ...     sorted(log.done(lambda r: r["id"]))
        ['a']
        >>> list(read_log(out))
        [{'id': 'a', 'x': None}]
        >>> meta = RunMeta(out.with_name("r.meta.json"))
        >>> ResumableLog(out, config={"seed": 2}, meta=meta)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        Traceback (most recent call last):
        ...
        mlmprob.runtime.config_check.ConfigMismatch: cannot resume .../r.jsonl: it holds results of a different configuration,
        written with seed=1; this run has seed=2; use the same options or another --out
        """,
    )


def test_hold_module():
    check_examples(
        "mlmprob.runtime.hold",
        """
        >>> import os
        >>> r_held, w_held = os.pipe(); r_go, w_go = os.pipe()
        >>> os.environ[HOLD_ENV] = f"2:{w_held}:{r_go}"
        >>> hold_at(1)                      # fewer rows than asked: goes on at once
        >>> os.close(w_go)                  # let it go on as soon as it is held
        >>> hold_at(3)
        >>> os.read(r_held, 100).decode().split()[::2]
        ['held', '3']
        >>> hold_at(4)                      # a run is held once
        >>> del os.environ[HOLD_ENV]; os.close(r_held)
        """,
    )


def test_safefs_new_file():
    check_examples(
        "mlmprob.runtime.safefs",
        """
        >>> import errno, tempfile
        >>> tmp = Path(tempfile.mkdtemp()) / "x.tmp"
        >>> try:
        ...     with new_file(tmp) as f:
        ...         _ = f.write(b"half")
        ...         raise OSError(errno.ENOSPC, "No space left on device")
        ... except OSError as e:
        ...     print(e.filename == str(tmp), tmp.exists())
        True False
        """,
    )


def test_lock_writer_lock():
    check_examples(
        "mlmprob.runtime.lock",
        """
        >>> import tempfile
        >>> run = Path(tempfile.mkdtemp()) / "run"
        >>> with WriterLock(run, lock_path=run / "train.lock"):
        ...     try:
        ...         WriterLock(run, lock_path=run / "train.lock").acquire()
        ...     except OutputLocked as e:
        ...         print(str(e).startswith(f"{run} is being written by another process (pid"))
        True
        """,
    )


def test_capacity_cap_workers():
    check_examples(
        "mlmprob.runtime.capacity",
        """
        >>> cap_workers(100, cores=2)
        (2, '2 CPU cores')
        >>> cap_workers(4, cores=16, available=3 * GiB, per_worker=GiB)
        (3, '3.0 GiB of memory available, about 1.0 GiB per worker')
        >>> cap_workers(8, cores=16, units=5), cap_workers(2, cores=16, available=GiB, per_worker=2 * GiB)
        ((5, '5 units of work'), (1, '1.0 GiB of memory available, about 2.0 GiB per worker'))
        >>> cap_workers(2, cores=2, available=64 * GiB, per_worker=GiB, units=10)
        (2, None)
        """,
    )


def test_ray_engine_plan_actors():
    check_examples(
        "mlmprob.runtime.ray_engine",
        """
        >>> plan_actors(["auto"], 8, 4)
        ActorPlan(actors=4, device='cuda', num_gpus=1, num_cpus=1)
        >>> plan_actors(["auto"], 2, 0), plan_actors(["cpu", "cpu", "cpu"], 2, 0).actors
        (ActorPlan(actors=1, device='cpu', num_gpus=0, num_cpus=1), 2)
        >>> plan_actors(["cuda:0", "cuda:1"], 16, 0)
        Traceback (most recent call last):
        mlmprob.errors.MLMProbError: --engine ray: 2 GPU actor(s) asked for, but the Ray cluster has no GPU
        """,
    )


def test_safefs_naming():
    check_examples(
        "mlmprob.runtime.safefs",
        """
        >>> try:
        ...     with naming("out.jsonl"):
        ...         raise OSError(28, "No space left on device")
        ... except OSError as e:
        ...     print(e.filename, e.strerror)
        out.jsonl No space left on device
        """,
    )


def test_config_check_as_stored():
    check_examples(
        "mlmprob.runtime.config_check",
        """
        >>> as_stored({"seed": 1}, {"seed": 1, "computed_with": {"dtype": "int8"}})
        {'seed': 1}
        >>> as_stored(None, {"seed": 1, "computed_with": {}}), as_stored({"computed_with": {}}, {"computed_with": {}})
        ({'seed': 1, 'computed_with': {}}, {'computed_with': {}})
        >>> as_stored({"computed_with": {"dtype": "float32"}}, {"computed_with": {"dtype": "float32", "batch_tokens": 64}})
        {'computed_with': {'dtype': 'float32'}}
        """,
    )


def test_identity_module():
    check_examples(
        "mlmprob.runtime.identity",
        """
        >>> d = UnitDigest(checkpoints=[1])
        >>> for u in [("a", "ACDE"), ("b", "KL")]:
        ...     d.add(u)
        >>> d.n, d.at(1) == UnitDigest.of([("a", "ACDE")]).hexdigest(), d.at(2) == d.hexdigest()
        (2, True, True)
        """,
    )


def test_seeds_module():
    check_examples(
        "mlmprob.runtime.seeds",
        """
        >>> derive_seed(0, "record", "seq1")
        6289551396170010969
        >>> derive_seed(0, "stream", "mask", 3) == derive_seed(0, "stream", "mask", 3) != derive_seed(0, "stream", "mask", 4)
        True
        """,
    )


def test_writers_tsv_cell():
    check_examples(
        "mlmprob.runtime.writers",
        """
        >>> tsv_cell(None), tsv_cell(float("nan")), tsv_cell(1.5), tsv_cell(["A", 2, float("inf")]), tsv_cell({"k": [1]})
        ('', '', '1.5', '["A", 2, null]', '{"k": [1]}')
        """,
    )


def test_writers_output_kind():
    check_examples(
        "mlmprob.runtime.writers",
        """
        >>> output_kind(None), output_kind("a/b.parquet"), output_kind("x.TSV")
        ('stdout', 'parquet', 'tsv')
        """,
    )


def test_threads_column_width():
    check_examples(
        "mlmprob.runtime.threads",
        """
        >>> column_width(32, 768, 30522), column_width(32, 768, 768), column_width(1, 768, 768)
        (3840, 384, 10944)
        """,
    )


def test_provenance_weights_dtype_text():
    check_examples(
        "mlmprob.runtime.provenance",
        """
        >>> weights_dtype_text("antiberty", ["cpu"]), weights_dtype_text("no/such/hub-id", ["cpu"])
        ('float32', 'weights')
        """,
    )


def test_provenance_resolved_dtype():
    check_examples(
        "mlmprob.runtime.provenance",
        """
        >>> resolved_dtype("bf16", ["cpu"]), resolved_dtype(None, ["cpu"])
        ('bfloat16', 'weights')
        """,
    )


def test_pool_parse_devices():
    check_examples(
        "mlmprob.runtime.pool",
        """
        >>> parse_devices(None, None), parse_devices(3, None), parse_devices(None, "cuda:0, cuda:1")
        (['auto'], ['cpu', 'cpu', 'cpu'], ['cuda:0', 'cuda:1'])
        """,
    )


def test_merge_merging_path():
    check_examples(
        "mlmprob.runtime.merge",
        """
        >>> merging_path(Path("runs/all.tsv")).name
        'all.tsv.merging.tsv'
        """,
    )


def test_inputs_fasta_records():
    check_examples(
        "mlmprob.runtime.inputs",
        """
        >>> [(r.id, r.seq) for r in fasta_records([">a x", "AC", "DE", ">", "KL"], lambda: "here")]
        [('a', 'ACDE'), ('record2', 'KL')]
        """,
    )


def test_inputs_detect_format():
    check_examples(
        "mlmprob.runtime.inputs",
        """
        >>> detect_format("a.fa.gz"), detect_format("x.csv"), detect_format("x.parquet"), detect_format("x.txt")
        ('fasta', 'csv', 'parquet', 'text')
        """,
    )


def test_device_int8_reduce_range():
    check_examples(
        "mlmprob.runtime.device",
        """
        >>> int8_reduce_range(frozenset({"avx2"})), int8_reduce_range(frozenset({"avx512f", "avx512_vnni"}))
        (True, False)
        """,
    )


def test_config_check_config_diff():
    check_examples(
        "mlmprob.runtime.config_check",
        """
        >>> config_diff({"a": 1, "m": {"x": 1, "y": 2}}, {"a": 1, "m": {"x": 3, "y": 2}, "b": 0})
        [('b', None, 0), ('m.x', 1, 3)]
        """,
    )
