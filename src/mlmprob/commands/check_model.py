"""``mlmprob check-model PATH``: can this checkpoint be trusted? The load-time probe's findings, then a brute-force
comparison: a few positions of a few sequences, each masked alone in its unpadded sequence and read from the plain
transformers model, against mlmprob's scores of the same positions in a padded batch (``token_scores``, the reader of
``pll``/``loglik``) and the samplers' single-site conditionals. Exit status 0 when every check agrees, 2 (one
``error:`` line) when one differs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..argtypes import device_name, positive_int
from ..errors import MLMProbError
from .common import add_allow_pickle_arg

if TYPE_CHECKING:
    import torch

# torch and the model code are imported by the functions that use them: `--help` and usage errors stay quick

TEXT_SEQS = ["The cat sat on the mat.", "Paris is the capital of France, and Rome of Italy.", "A short one."]
PROTEIN_SEQS = ["MKTAYIAKQRQISFVKSHFSRQ", "EVQLVESGGGLVQPGGSLRLSCAAS", "GSHMLE"]


def register(sub) -> None:
    checks = "load-time probe and a brute-force comparison on a few positions"
    p = sub.add_parser("check-model", help=f"check that mlmprob reads a model exactly ({checks})")
    p.add_argument("path", help="built-in name, local Hugging Face directory, or hub id")
    seq = "a sequence to check on (repeatable; default: a few suited to the tokenizer)"
    p.add_argument("--seq", action="append", help=seq)
    p.add_argument("--positions", type=positive_int, default=4, help="positions checked per sequence")
    p.add_argument("--device", type=device_name, default="cpu", help="torch device")
    p.add_argument("--dtype", default="float32", help="dtype (the check is exact in float32)")
    add_allow_pickle_arg(p)
    p.set_defaults(func=run)


def picked(scored: torch.Tensor, k: int) -> list[int]:
    """Up to ``k`` scored positions spread evenly, first and last included."""
    idx = scored.nonzero()[:, 0].tolist()
    if len(idx) <= k:
        return idx
    return sorted({idx[round(j * (len(idx) - 1) / max(k - 1, 1))] for j in range(k)})


def compare(mlm, seqs: list[str], k: int) -> list[tuple[str, float]]:
    """``[(check, largest difference)]``: brute-force log-probabilities against ``token_scores`` and the
    samplers' conditionals, on ``k`` positions of each of ``seqs`` read in one padded batch."""
    import torch

    from ..energies import token_scores
    from ..models.probe import plain_logits
    from ..models.reader import reader_of
    from ..positions import TOKENS, default_mask
    from ..sampling.forward import site_logits

    inner = reader_of(mlm).core
    enc = mlm.encode(seqs)
    _check_lengths(enc.lengths.tolist(), getattr(inner, "max_length", None))
    ids = enc.input_ids
    select = torch.zeros(ids.shape, dtype=torch.bool)
    scored = default_mask(mlm, ids, TOKENS)
    for b, n in enumerate(enc.lengths.tolist()):
        for t in picked(scored[b, :n], k):
            select[b, t] = True
    scores = token_scores(mlm, ids, select).log_prob
    cond, _ = site_logits(mlm, ids, select)
    d_scores = d_cond = 0.0
    for b, t in select.nonzero().tolist():
        x = ids[b : b + 1, : int(enc.lengths[b])].clone()
        target = int(x[0, t])
        x[0, t] = mlm.mask_id
        want = plain_logits(inner, x)[t].double().log_softmax(-1)
        d_scores = max(d_scores, abs(float(scores[b, t]) - float(want[target])))
        d_cond = max(d_cond, float((cond[b, t].double().log_softmax(-1) - want).abs().max()))
    where = f"{int(select.sum())} positions of {len(seqs)} sequences in one padded batch"
    return [
        (f"token log-probabilities (pll, loglik) vs brute force, {where}", d_scores),
        (f"sampler conditionals vs brute force, {where}", d_cond),
    ]


def _check_lengths(lengths: list[int], limit: int | None) -> None:
    """Refuse a sequence longer than the model's positions: the brute force reads each sequence whole, in one
    row (``score`` reads such a protein through windows; this check does not)."""
    for i, n in enumerate(lengths):
        if limit is not None and n > limit:
            raise MLMProbError(
                f"sequence {i + 1} has {n} tokens, more than the model's {limit} positions; "
                "check-model reads each sequence whole: give a shorter --seq"
            )


def default_seqs(mlm, seqs: list[str]) -> list[str]:
    """``seqs`` when the tokenizer reads them without unknown tokens, else texts decoded from its vocabulary."""
    from ..models.probe import probe_ids
    from ..models.reader import reader_of

    try:
        mlm.encode(seqs)
        return seqs
    except MLMProbError:
        ids = probe_ids(reader_of(mlm).core, n=7)[0]
        body = ids[1:-1] if ids.numel() > 8 else ids
        return [mlm.decode(body[:n]) for n in (7, 4, 6)]


def run(args) -> int:
    from ..models import load_mlm
    from ..models.probe import architecture, tolerance
    from ..models.reader import reader_of

    mlm = load_mlm(args.path, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)
    r = reader_of(mlm)
    inner, res = r.core, r.probe
    arch, tol = architecture(inner), tolerance(inner)
    forward = "mlmprob's fused forward" if r.fused else "transformers' forward"
    where = f"{inner.dtype} on {inner.device}"
    print(f"mlmprob check-model {args.path}: {arch}, {forward}, {where} (agreement within {tol:g})")
    if res is not None:
        pad = "no padding id" if res.padding is None else f"padding changes a row by {res.padding:.2g}"
        print(f"  load-time probe: head shortcut vs full forward {res.head:.2g}; {pad}")
        for note in res.notes:
            print(f"  fallback: {note}")
    seqs = args.seq or default_seqs(mlm, PROTEIN_SEQS if r.proposal_ids is not None else TEXT_SEQS)
    bad = []
    for name, diff in compare(mlm, seqs, args.positions):
        ok = diff <= tol
        print(f"  {name}: {'ok' if ok else 'DIFFERS'} (max difference {diff:.2g})")
        if not ok:
            bad.append(f"{name.split(' vs ')[0]} differ by {diff:.3g}")
    if bad:
        raise MLMProbError(f"{args.path} ({arch}): mlmprob's numbers differ from the model's own: {'; '.join(bad)}")
    print("all checks agree")
    return 0
