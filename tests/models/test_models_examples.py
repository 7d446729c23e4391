"""Worked examples of mlmprob.models's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_reader_module():
    check_examples(
        "mlmprob.models.reader",
        """
        >>> import torch
        >>> from mlmprob.models.exact import ExactMLM
        >>> r = reader_of(ExactMLM(torch.zeros(4, 4)))
        >>> r.mask_id, r.vocab_size, r.pad_id, r.max_length, r.head, r.batch_tokens
        (4, 4, None, 2, 'logits', None)
        >>> reader_of(r) is r, reader_of(r, batch_tokens=64).batch_tokens
        (True, 64)
        >>> r.lengths(torch.tensor([[0, 1]])).tolist(), r.id_range()
        ([2], '0..4')
        """,
    )


def test_windowed_windowed_m_l_m():
    check_examples(
        "mlmprob.models.windowed",
        """
        >>> import torch
        >>> from mlmprob.models.exact import LookupMLM
        >>> inner = LookupMLM(vocab_size=3, length=4, seed=0)
        >>> w = WindowedMLM(inner, 4)
        >>> x = torch.tensor([[0, 1, 2, 1, 0, 2, 2]])
        >>> out = w.logits_at(x, torch.tensor([0, 0]), torch.tensor([1, 5]))
        >>> torch.equal(out[0], inner.logits(x[:, 0:4])[0, 1]), torch.equal(out[1], inner.logits(x[:, 3:7])[0, 2])
        (True, True)
        """,
    )


def test_spec_module():
    check_examples(
        "mlmprob.models.spec",
        """
        >>> import torch
        >>> from mlmprob.models.exact import ExactMLM
        >>> spec = ModelSpec("m", batch_tokens=64)
        >>> m = ExactMLM(torch.zeros(3, 3))
        >>> spec.reader(m).batch_tokens, ModelSpec("m").reader(m).batch_tokens
        (64, 4096)
        """,
    )


def test_precision_int8_linear():
    check_examples(
        "mlmprob.models.precision",
        """
        >>> torch.manual_seed(0) and None  # doctest fixture
        >>> lin = torch.nn.Linear(64, 32)
        >>> x = torch.randn(5, 64)
        >>> q = Int8Linear.from_linear(lin)
        >>> bool(((q(x) - lin(x)).abs().max() < 0.05 * lin(x).abs().max()).item())
        True
        """,
    )


def test_fused_attention_dtype():
    check_examples(
        "mlmprob.models.fused",
        """
        >>> attention_dtype(torch.bfloat16, "cuda"), attention_dtype(torch.bfloat16, "cpu")
        (torch.bfloat16, torch.float32)
        >>> attention_dtype(torch.float32, "cuda", True), attention_dtype(torch.float16, "cuda", False)
        (torch.float32, torch.float32)
        >>> attention_dtype(torch.float16, "cpu", True)
        torch.float16
        """,
    )


def test_forward_given_rows():
    check_examples(
        "mlmprob.models.forward",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
        >>> src = GivenRows(m, torch.tensor([[2, 1], [1, 2]]))
        >>> forward_all(m, src, torch.tensor([0, 1]), torch.tensor([0, 1])).log_softmax(-1).exp()[:, :2]
        tensor([[0.3333, 0.6667],
                [0.4286, 0.5714]])
        """,
    )


def test_protein_is_protein_tokenizer():
    check_examples(
        "mlmprob.models.protein",
        """
        >>> import transformers, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "vocab.txt").write_text("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AMINO_ACIDS)))
        >>> is_protein_tokenizer(transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False))
        True
        """,
    )


def test_protein_protein_tokenizer():
    check_examples(
        "mlmprob.models.protein",
        """
        >>> tok = ProteinTokenizer(["<cls>", "<pad>", "<eos>", "<mask>"] + list(AMINO_ACIDS), bos="<cls>", eos="<eos>",
        ...                        pad="<pad>", mask="<mask>")
        >>> ids = tok.encode(["M K T A", "MKT_"]).input_ids
        >>> tok.decode(ids[0]), tok.decode(ids[1])
        ('MKTA', 'MKT_')
        """,
    )


def test_forward_gpu_batch_tokens():
    check_examples(
        "mlmprob.models.forward",
        """
        >>> GiB = 1 << 30
        >>> gpu_batch_tokens(80 * GiB, 2 * GiB, 36_000), gpu_batch_tokens(81 * GiB, 2 * GiB, 36_000)
        (524288, 524288)
        >>> gpu_batch_tokens(16 * GiB, 14 * GiB, 100_000), gpu_batch_tokens(1 << 40, 0, 1)
        (4096, 4194304)
        """,
    )


def test_weights_pickle_refusal():
    check_examples(
        "mlmprob.models.weights",
        """
        >>> pickle_refusal(Exception("Weights only load failed. ... Unsupported global: GLOBAL io.open was not ..."))
        'it refers to io.open, which is not a tensor or plain data'
        >>> pickle_refusal(RuntimeError("invalid load key, 'x'."))
        "RuntimeError: invalid load key, 'x'."
        """,
    )


def test_protein_alphabet_ids():
    check_examples(
        "mlmprob.models.protein",
        """
        >>> tok = ResidueTokenizer(["<pad>", "<mask>"] + list(AMINO_ACIDS + "X"), bos=None, eos=None, pad="<pad>",
        ...                        mask="<mask>")
        >>> len(alphabet_ids(tok, None)), alphabet_ids(tok, "ACX")
        (20, [2, 3, 22])
        """,
    )


def test_forward_rows_per_batch():
    check_examples(
        "mlmprob.models.forward",
        """
        >>> rows_per_batch(512), rows_per_batch(122), rows_per_batch(122, 65536), rows_per_batch(10_000, 100)
        (8, 33, 281, 1)
        >>> rows_per_batch(512, 65536), rows_per_batch(512, 8 * 65536)
        (16, 128)
        """,
    )


def test_forward_plan_groups():
    check_examples(
        "mlmprob.models.forward",
        """
        >>> order, plan = plan_groups(torch.tensor([3, 3, 5, 5, 5]), torch.tensor([1, 1, 0, 0, 0]),
        ...                           torch.tensor([0, 1, 2, 3, 4]), batch_tokens=10)
        >>> order.tolist(), plan
        ([2, 3, 4, 0, 1], [(0, 2, 5), (2, 1, 5), (3, 2, 3)])
        """,
    )


def test_forward_auto_batch_tokens():
    check_examples(
        "mlmprob.models.forward",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.zeros(3, 3))
        >>> auto_batch_tokens(m), auto_batch_tokens(m, 1024), auto_batch_tokens(reader_of(m, 512))
        (4096, 1024, 512)
        """,
    )


def test_precision_weights_dtype():
    check_examples(
        "mlmprob.models.precision",
        """
        >>> lin = torch.nn.Linear(2, 2).to(torch.bfloat16)
        >>> weights_dtype(lin, "cpu"), weights_dtype(lin, "cuda"), weights_dtype(torch.nn.Linear(2, 2).double(), "cpu")
        (torch.float32, torch.bfloat16, torch.float64)
        """,
    )


def test_loading_looks_like_path():
    check_examples(
        "mlmprob.models.loading",
        """
        >>> given = ("/nonexistent", "./m", "~/m", "runs/a/model", "m/", "facebook/esm2_t6_8M_UR50D", "bert-base-cased")
        >>> [looks_like_path(x) for x in given]
        [True, True, True, True, True, False, False]
        """,
    )


def test_alphabet_allowed_ids():
    check_examples(
        "mlmprob.models.alphabet",
        """
        >>> from mlmprob import ExactMLM
        >>> allowed_ids(ExactMLM(torch.zeros(3, 3))).tolist()
        [True, True, True]
        """,
    )


def test_windowed_window_starts():
    check_examples(
        "mlmprob.models.windowed",
        """
        >>> window_starts(torch.tensor([10, 10, 10, 4]), torch.tensor([0, 5, 9, 3]), 4).tolist()
        [0, 3, 6, 0]
        """,
    )


def test_reader_name_of():
    check_examples(
        "mlmprob.models.reader",
        """
        >>> name_of(object())
        'object'
        """,
    )


def test_protocol_nonfinite_rows():
    check_examples(
        "mlmprob.models.protocol",
        """
        >>> nonfinite_rows(torch.tensor([[0.0, float("-inf")], [float("nan"), 0.0], [float("inf"), 0.0]]))
        tensor([False,  True,  True])
        """,
    )


def test_length_declared_offset():
    check_examples(
        "mlmprob.models.length",
        """
        >>> declared_offset(torch.nn.Embedding(10, 2)), declared_offset(torch.nn.Embedding(10, 2, padding_idx=1))
        (0, 2)
        """,
    )
