"""``mlmprob demo``: the main job on the embedded default model (AntiBERTy), with a short report."""

from __future__ import annotations

import argparse
import time

# Public variable-domain heavy chains (trastuzumab's VH is also given in the shared data README).
DEMO_HEAVY = {
    "trastuzumab": (
        "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYC"
        "SRWGGDGFYAMDYWGQGTLVTVSS"
    ),
}


DEMO_N = 3  # Thera-SAbDab chains scored by default when the shared data is there
DEMO_CHAINS = 3  # MH chains of the CDR-H3 redesign section


def register(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="score antibodies with AntiBERTy and print a short report",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    from ..argtypes import nonnegative_int, positive_int
    from .common import add_model_args

    add_model_args(p)
    p.add_argument(
        "--n",
        type=nonnegative_int,
        default=None,
        help=f"heavy chains from Thera-SAbDab (the shared data folder: $MLMPROB_DATA or ../shared/data) to "
        f"score besides trastuzumab (default: {DEMO_N} when the data is there, else none)",
    )
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the CDR-H3 redesign chains")
    p.add_argument("--epochs", type=positive_int, default=2, help="MH epochs of the CDR-H3 redesign section")
    p.set_defaults(func=run)


def demo_records(n: int | None):
    """Trastuzumab, then the first ``n`` valid heavy chains of Thera-SAbDab (``None``: :data:`DEMO_N` when the
    shared data is there, else none; a number without the data is an error)."""
    from ..alphabet import is_protein
    from ..data import Record, read_records, shared_data_dir
    from ..errors import MLMProbError

    recs = [Record(k, v) for k, v in DEMO_HEAVY.items()]
    data = shared_data_dir()
    table = None if data is None else data / "antibody" / "thera_sabdab.csv"
    if table is None or not table.is_file():
        if n:
            raise MLMProbError(
                f"--n {n}: the Thera-SAbDab table (antibody/thera_sabdab.csv of the shared data folder, "
                "$MLMPROB_DATA or ../shared/data) is not there; use --n 0 for trastuzumab alone"
            )
        return recs
    n = DEMO_N if n is None else n
    if n > 0:
        rows = read_records(table, "csv", "HC", "Therapeutic")
        recs += [r for r in rows if is_protein(r.seq)][:n]
    return recs


def run(args) -> int:
    from ..sampling.spec import SamplerSpec
    from ..scoring import score_records

    t0 = time.perf_counter()
    records = demo_records(args.n)  # a missing table fails before the model loads
    SamplerSpec.of(None, method="mh", epochs=args.epochs).check_size(DEMO_CHAINS)  # so does a huge --epochs
    from .common import load_model_from_args

    mlm = load_model_from_args(args)
    from ..runtime.device import describe

    print(
        f"mlmprob demo: model {mlm.name} ({sum(p.numel() for p in mlm.model.parameters()) / 1e6:.1f}M parameters, "
        f"vocabulary {mlm.vocab_size}) on {describe(mlm.device, mlm.dtype)}, "
        f"loaded in {time.perf_counter() - t0:.1f}s\n"
    )

    print("1. Sequence scores (pseudo-log-likelihood, E_local = -PLL, E_raw = -sum of raw logits)")
    print(f"   {'antibody':<16}{'length':>7}{'PLL':>10}{'PLL/res':>9}{'E_raw':>10}{'secs':>7}")
    worst = None
    for r in records:
        t = time.perf_counter()
        (s,) = list(score_records(mlm, [r], per_token=True))
        print(
            f"   {s.id[:15]:<16}{s.n_tokens:>7}{s.pll:>10.2f}{s.pll_per_token:>9.3f}{s.e_raw:>10.1f}"
            f"{time.perf_counter() - t:>7.1f}"
        )
        if worst is None:
            worst = s
    assert worst is not None  # the demo scores at least one sequence
    lows = sorted(range(worst.n_tokens), key=lambda i: worst.token_log_prob[i])[:5]
    print(f"\n   least expected residues of {worst.id} (position: residue, log q):")
    print("   " + ", ".join(f"{i + 1}:{worst.tokens[i]} {worst.token_log_prob[i]:.2f}" for i in sorted(lows)))
    sample_section(mlm, args)
    joint_section(mlm, args)
    infill_section(mlm, args)
    print(f"\ndone in {time.perf_counter() - t0:.1f}s")
    return 0


def _trastuzumab(mlm):
    """Trastuzumab's heavy chain, its ids and its CDR-H3 (IMGT, numbered by anarcism as ``--cdr H3`` does)."""
    from ..sampling.cdr import cdr_mask

    seq = DEMO_HEAVY["trastuzumab"]
    enc = mlm.encode([seq])
    return seq, enc.input_ids, cdr_mask(seq, enc.word_ids[0], "H3", "imgt")


def sample_section(mlm, args) -> None:
    import torch

    from ..sampling.api import sample

    seq, ids, cdr = _trastuzumab(mlm)
    cols = cdr.nonzero()[:, 0]
    native = mlm.decode(ids[0, cols])
    chains = DEMO_CHAINS
    print(f"\n2. CDR-H3 redesign of trastuzumab (framework clamped): native CDR-H3 {native} ({len(cols)} residues)")
    print(
        f"   Metropolis-Hastings on E_local with the model's own conditionals as proposals, {chains} chains x "
        f"{args.epochs} epochs from the native sequence"
    )
    t = time.perf_counter()
    r = sample(
        mlm,
        ids.expand(chains, -1),
        method="mh",
        energy="local",
        epochs=args.epochs,
        positions=cdr[None].expand(chains, -1),
        reference=ids[0],
        generator=torch.Generator().manual_seed(args.seed),
    )
    print(f"   {'chain':<7}{'CDR-H3':<{len(cols) + 2}}{'E_local':>9}{'identity':>10}")
    from ..energies import energy

    e_native = float(energy(mlm, ids, cdr[None], kind="local")[0])
    print(f"   {'native':<7}{native:<{len(cols) + 2}}{e_native:>9.2f}{1.0:>10.2f}")
    identity, e_local = r.identity, r.energy_local
    assert identity is not None and e_local is not None  # MH with a reference records both
    for b in range(chains):
        print(
            f"   {b:<7}{mlm.decode(r.final_ids[b, cols]):<{len(cols) + 2}}{float(e_local[-1, b]):>9.2f}"
            f"{float(identity[-1, b]):>10.2f}"
        )
    print(
        f"   acceptance {r.accept_rate:.2f}, novel transitions {r.novel_rate:.2f}, "
        f"{r.proposals_per_second:.1f} proposals/s, {time.perf_counter() - t:.1f}s"
    )


def joint_section(mlm, args) -> None:
    from ..joints.evaluate import evaluate_pair

    seq, ids, cdr = _trastuzumab(mlm)
    cols = cdr.nonzero()[:, 0].tolist()
    a, b = cols[len(cols) // 2], cols[len(cols) // 2 + 1]
    t = time.perf_counter()
    ev = evaluate_pair(mlm, ids[0], a, b)
    pc = ev.conditionals
    gold = f"{mlm.decode([pc.gold[0]])}{mlm.decode([pc.gold[1]])}"
    print(
        f"\n3. Joint of two adjacent CDR-H3 residues (positions {a}, {b}; native {gold}) over "
        f"{pc.size}x{pc.size} residue pairs, {pc.n_forward} forward rows"
    )
    print(f"   {'method':<11}{'mode':>6}{'p(mode)':>9}{'p(native)':>11}{'A-KL':>9}")
    for m, lj in ev.joints.items():
        k = int(lj.argmax())
        i, j = divmod(k, pc.size)
        mode = mlm.decode([int(pc.candidates[i])]) + mlm.decode([int(pc.candidates[j])])
        p_gold = float(lj[pc.gold_index].exp()) if pc.gold_index is not None else float("nan")
        print(f"   {m:<11}{mode:>6}{float(lj.flatten()[k].exp()):>9.3f}{p_gold:>11.3f}{ev.metrics[m].akl:>9.4f}")
    print(
        f"   AG: {ev.ag.steps} steps ({'converged' if ev.ag.converged else 'cap reached'}); "
        f"conditional-independence gap of the MLM joint {ev.ci_gap:.4f} nats; {time.perf_counter() - t:.1f}s"
    )


def infill_section(mlm, args) -> None:
    from ..infilling.beam import infill, score_meaning

    seq, ids, cdr = _trastuzumab(mlm)
    cols = cdr.nonzero()[:, 0].tolist()
    gap = cols[len(cols) // 2 - 2 : len(cols) // 2 + 2]
    native = mlm.decode(ids[0, gap])
    shown = mlm.decode(ids[0, cols[0] : gap[0]]) + "_" * len(gap) + mlm.decode(ids[0, gap[-1] + 1 : cols[-1] + 1])
    print(f"\n4. Infilling a {len(gap)}-residue gap in CDR-H3: {shown} (native {native}), beam 5")
    t = time.perf_counter()
    for method in ("standard", "hcb"):
        for order in ("l2r", "best"):
            cands = infill(mlm, ids[0], gap, method=method, order=order, beam_size=5)
            fills = ", ".join(
                f"{mlm.decode(list(c.tokens))}{'*' if mlm.decode(list(c.tokens)) == native else ''} {c.score:.2f}"
                for c in cands[:3]
            )
            rank = next((i + 1 for i, c in enumerate(cands) if mlm.decode(list(c.tokens)) == native), None)
            print(f"   {method:<9}{order:<5} top-3: {fills}   native rank: {rank or '>5'}")
    print(f"   (* = native; {time.perf_counter() - t:.1f}s) the two methods' scores are different quantities:")
    for method in ("standard", "hcb"):
        print(f"   {method} score: {score_meaning(method)}")
