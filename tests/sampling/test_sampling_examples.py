"""Worked examples of mlmprob.sampling's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_speculative_speculative():
    check_examples(
        "mlmprob.sampling.speculative",
        """
        >>> import torch
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
        >>> k = Speculative(m, order="l2r", draft_k=2)
        >>> s = k.init(torch.zeros(4, 3, dtype=torch.long))
        >>> g = torch.Generator().manual_seed(0)
        >>> while s.epoch == 0:
        ...     s, info = k.step(s, g)
        >>> torch.allclose(s.log_prob, m.log_prob(s.ids))       # exact marginals: p_l2r is the joint
        True
        >>> s.rounds.tolist(), s.calls.tolist()     # 3 positions in one round, or 2 then a round of one call
        ([2, 1, 1, 2], [3, 2, 2, 3])
        """,
    )


def test_spec_module():
    check_examples(
        "mlmprob.sampling.spec",
        """
        >>> s = SamplerSpec(method="ancestral", epochs=3, order="l2r")
        >>> type(s).__name__, s.settings()["order"], "tokens_per_step" in s.settings(), "anneal" in s.settings()
        ('AncestralSpec', 'l2r', True, False)
        >>> SamplerSpec(method="gibbs").burn_in, SamplerSpec(method="ancestral").burn_in, SamplerSpec().epochs
        (5, 0, 20)
        >>> SamplerSpec(method="mh", draft_k=2)
        Traceback (most recent call last):
        ...
        mlmprob.sampling.registry.NotForMethod: draft_k is for method='speculative', got 2 with method='mh'
        """,
    )


def test_maskpredict_mask_predict():
    check_examples(
        "mlmprob.sampling.maskpredict",
        """
        >>> import torch
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
        >>> k = MaskPredict(m, iterations=2)
        >>> s, info = k.step(k.init(torch.tensor([[0, 0]])), torch.Generator())
        >>> s.ids.tolist(), s.calls.tolist(), info.end_of_epoch, s.epoch
        ([[1, 1]], [2], True, 1)
        """,
    )


def test_decoders_scores():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> lq = torch.tensor([[0.5, 0.3, 0.2], [0.6, 0.2, 0.2]], dtype=torch.float64).log()
        >>> scores(lq, torch.tensor([1, 1]), "confidence").exp().tolist()
        [0.3, 0.2]
        >>> [round(x, 6) for x in scores(lq, torch.tensor([1, 1]), "margin").tolist()]
        [0.2, 0.4]
        >>> bool(scores(lq, torch.tensor([0, 0]), "entropy").argmax() == 1)   # the lower entropy
        True
        """,
    )


def test_cdr_cdr_mask():
    check_examples(
        "mlmprob.sampling.cdr",
        """
        >>> vh = ("QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQGRVTMTTDTSTSTAYMELRSLRSDDTAVYYC"
        ...       "ARDGYWGQGTLVTVSS")
        >>> wid = torch.tensor([-1] + list(range(len(vh))) + [-1])
        >>> cdr_mask(vh, wid, "H3").nonzero()[:, 0].tolist() == list(range(97, 102))   # "ARDGY", shifted by the CLS token
        True
        >>> "".join(vh[i - 1] for i in cdr_mask(vh, wid, "H1").nonzero()[:, 0].tolist())
        'GYTFTSYG'
        """,
    )


def test_partial_states_module():
    check_examples(
        "mlmprob.sampling.partial_states",
        """
        >>> import torch
        >>> from mlmprob import LookupMLM
        >>> from mlmprob.sampling.decoder_exact import model_logprobs
        >>> law = exact_law(random_order, model_logprobs(LookupMLM(2, 3, seed=0)), 2, 3)
        >>> round(float(law.log_probs.exp().sum()), 12), law.calls
        (1.0, 3.0)
        """,
    )


def test_decoders_select_adaptive():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> dep = torch.tensor([[[0.0, 0.5, 0.01], [0.5, 0.0, 0.0], [0.01, 0.0, 0.0]]])
        >>> el = torch.ones(1, 3, dtype=torch.bool)
        >>> select_adaptive(torch.tensor([[0.9, 0.8, 0.1]]), el, dep, 0.1).int().tolist()
        [[1, 0, 1]]
        >>> select_adaptive(torch.tensor([[0.9, 0.8, 0.1]]), el, dep, 0.0).int().tolist()
        [[1, 0, 0]]
        """,
    )


def test_decoders_dependence_matrix():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> base = torch.tensor([[0.5, 0.5]] * 2, dtype=torch.float64).log()
        >>> given = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64).log()
        >>> D = dependence_matrix(1, 2, torch.tensor([0, 0]), torch.tensor([1, 1]), torch.tensor([0, 0]),
        ...                       torch.tensor([0.5, 0.5], dtype=torch.float64), given, base)
        >>> round(float(D[0, 1, 0]), 6) == round(math.log(2), 6), float(D[0, 0, 1])
        (True, 0.0)
        """,
    )


def test_decoder_exact_exact_output_distribution():
    check_examples(
        "mlmprob.sampling.decoder_exact",
        """
        >>> from mlmprob import ExactMLM
        >>> from mlmprob.sampling.unmasking import Unmasking
        >>> m = ExactMLM(torch.randn(2, 2, 2, generator=torch.Generator().manual_seed(0)))
        >>> law = exact_output_distribution(Unmasking(m, score="entropy", steps=3), model_logprobs(m), 2, 3)
        >>> torch.allclose(law.probs, m.log_joint.flatten().exp()), law.calls   # one position per step: the joint
        (True, 3.0)
        """,
    )


def test_stream_check_block_size():
    check_examples(
        "mlmprob.sampling.stream",
        """
        >>> check_block_size(("linear", 4, 1), 4, "x")
        >>> check_block_size(99, 30, "x")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: x: --block-size 99 is larger than its 30 free positions; use at most 30
        """,
    )


def test_io_epoch_record_from_dict():
    check_examples(
        "mlmprob.sampling.io",
        """
        >>> import json
        >>> r = EpochRecord(0, True, math.nan, 1, [1], [1], [0], [math.nan], [2.0], None, [[3]], 4, 0.1)
        >>> back = EpochRecord.from_dict(json.loads(r.to_json()))
        >>> math.isnan(back.target_temperature) and math.isnan(back.e_local[0]) and back.e_raw == [2.0]
        True
        """,
    )


def test_speculative_residual_log_probs():
    check_examples(
        "mlmprob.sampling.speculative",
        """
        >>> lp = torch.log(torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64))
        >>> lq = torch.log(torch.tensor([[0.7, 0.1, 0.2]], dtype=torch.float64))
        >>> residual_log_probs(lp, lq).exp()
        tensor([[0., 1., 0.]], dtype=torch.float64)
        """,
    )


def test_proposals_nucleus():
    check_examples(
        "mlmprob.sampling.proposals",
        """
        >>> nucleus(torch.full((1, 4), 0.25, dtype=torch.float64).log(), 0.5).exp()   # a tie: the lower ids
        tensor([[0.5000, 0.5000, 0.0000, 0.0000]], dtype=torch.float64)
        >>> nucleus(torch.tensor([[0.2, 0.5, 0.3]], dtype=torch.float64).log(), 1e-12).exp()   # the top token at least
        tensor([[0., 1., 0.]], dtype=torch.float64)
        """,
    )


def test_options_check_moves():
    check_examples(
        "mlmprob.sampling.options",
        """
        >>> check_moves(True, 1, 2, ProposalConfig(), "random")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: informed=True: the moves choose their own sites, so block_size must be 1, got 2
        """,
    )


def test_decoder_exact_model_logprobs():
    check_examples(
        "mlmprob.sampling.decoder_exact",
        """
        >>> from mlmprob import ExactMLM
        >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
        >>> model_logprobs(m)(torch.tensor([[2, 1]]))[0, 0].exp()               # p(x1 | x2 = 1)
        tensor([0.3333, 0.6667], dtype=torch.float64)
        """,
    )


def test_decoders_unmask_plan():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> w, c = unmask_plan(torch.tensor([[True, True, False, True, True]]), 3, block_length=2)
        >>> c.tolist(), w[:, 0].int().tolist()
        ([[1], [1], [2]], [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 0, 1, 1]])
        """,
    )


def test_decoders_select_top():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> select_top(torch.tensor([[0.1, 0.9, 0.9, 0.5]]), torch.tensor([[True, True, True, False]]),
        ...            torch.tensor([2])).int().tolist()
        [[0, 1, 1, 0]]
        """,
    )


def test_adaptive_pair_choice():
    check_examples(
        "mlmprob.sampling.adaptive",
        """
        >>> c, w = pair_choice(torch.tensor([[0.2, 0.5, 0.3]], dtype=torch.float64).log(), 2)
        >>> c.int().tolist(), [round(x, 3) for x in w[0].tolist()]
        ([[0, 1, 1]], [0.0, 0.625, 0.375])
        """,
    )


def test_stream_record_seed():
    check_examples(
        "mlmprob.sampling.stream",
        """
        >>> record_seed(0, "seq1") == record_seed(0, "seq1") != record_seed(1, "seq1")
        True
        """,
    )


def test_speculative_accept_probability():
    check_examples(
        "mlmprob.sampling.speculative",
        """
        >>> accept_probability(torch.log(torch.tensor([0.1, 0.4])), torch.log(torch.tensor([0.2, 0.2])))
        tensor([0.5000, 1.0000], dtype=torch.float64)
        """,
    )


def test_options_as_schedule():
    check_examples(
        "mlmprob.sampling.options",
        """
        >>> as_schedule(2, "block_size")(7)
        2
        """,
    )


def test_mcmc_methods_block_text():
    check_examples(
        "mlmprob.sampling.mcmc_methods",
        """
        >>> block_text(2), block_text(("linear", 4, 1)), block_text(("linear", 4, 1, 3))
        ('2', '4:1', '4:1:3')
        """,
    )


def test_kernels_move_plan():
    check_examples(
        "mlmprob.sampling.kernels",
        """
        >>> move_plan(torch.tensor([[True, True, True], [True, False, False]]), 2).int().tolist()
        [[[1, 1, 1], [1, 0, 0]], [[1, 1, 1], [0, 0, 0]]]
        """,
    )


def test_decoders_score_config():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> score_config(ProposalConfig(0.0, 0.9)), score_config(ProposalConfig(0.5))
        (ProposalConfig(temperature=1.0, top_p=0.9), ProposalConfig(temperature=0.5, top_p=1.0))
        """,
    )


def test_decoders_reveal_counts():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> reveal_counts(7, 3), reveal_counts(2, 5), reveal_counts(10, 4, "cosine"), reveal_counts(0, 3)
        ((2, 2, 3), (1, 1), (1, 2, 4, 3), ())
        """,
    )


def test_decoders_block_steps():
    check_examples(
        "mlmprob.sampling.decoders",
        """
        >>> block_steps([4, 4, 2], 7), block_steps([3, 3], 1)
        ([3, 2, 2], [1, 1])
        """,
    )


def test_cdr_residues_of():
    check_examples(
        "mlmprob.sampling.cdr",
        """
        >>> residues_of("E V [MASK] Q _ <mask>x2")
        'EVXQXXX'
        """,
    )


def test_ancestral_step_plan():
    check_examples(
        "mlmprob.sampling.ancestral",
        """
        >>> step_plan(torch.tensor([[2, 0, 1], [1, 0, -1]]), 3, 2).int().tolist()
        [[[1, 0, 1], [1, 1, 0]], [[0, 1, 0], [0, 0, 0]]]
        """,
    )
