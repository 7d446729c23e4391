"""``mlmprob demo``: the main job on the embedded default model (AntiBERTy), with a short report: four sections,
each ending with its wall time (a section that computes for more than a moment shows a progress bar on stderr
meanwhile), then a glossary of the terms the report uses (:data:`GLOSSARY`)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..alphabet import is_protein
from ..argtypes import nonnegative_int, positive_int
from ..errors import MLMProbError
from ..sampling.spec import SamplerSpec
from .common import add_model_args

# Public variable-domain heavy chains (trastuzumab's VH is also given in the shared data README).
DEMO_HEAVY = {
    "trastuzumab": (
        "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYC"
        "SRWGGDGFYAMDYWGQGTLVTVSS"
    ),
}


DEMO_N = 3  # Thera-SAbDab chains scored by default when the shared data is there
DEMO_CHAINS = 3  # MH chains of the CDR-H3 redesign section (no burn-in: the chains' states after --epochs sweeps)

# One line per term the report prints, in plain words (tests/commands/test_demo.py: every term printed has its line)
GLOSSARY = {
    "PLL": "pseudo-log-likelihood: the sum over residues of log q; closer to 0 = more natural to the model "
    "(it ranks sequences of one model; it is not a probability)",
    "PLL/res": "the PLL divided by the number of residues, to compare sequences of different lengths",
    "log q": "the model's log-probability of the residue at a position with that position masked, the rest given",
    "E_local": "the energy -PLL (section 2: summed over the CDR-H3 only); lower = more natural",
    "E_raw": "minus the sum of the model's raw scores (logits) of the residues, read unmasked: another energy, "
    "on its own scale",
    "identity": "the fraction of the CDR-H3's residues that equal the native's",
    "acceptance": "the fraction of Metropolis-Hastings proposals accepted (proposing the residue already there "
    "counts as accepted)",
    "novel transitions": "the fraction of proposals that were accepted and changed the sequence: how often a "
    "chain really moved",
    "proposals/s": "proposals tested per second (each changed proposal re-reads the CDR-H3 through the model)",
    "forward rows": "sequences passed through the model",
    "mode, p(mode)": "the most probable residue pair under a joint, and its probability",
    "p(native)": "the probability a joint gives the native residue pair",
    "mlm": "the model's own joint with both positions masked: the product of its two conditionals, blind to how "
    "the two residues depend on each other",
    "mrf, mrf_logit": "joints proportional to the product of each residue's conditional given the other "
    "(mrf_logit: of the raw logits)",
    "hcb": "Hammersley-Clifford-Besag: section 3, the joint rebuilt from the conditionals around one reference "
    "pair; section 4, the beam search whose score is corrected the same way",
    "ag, AG": "Arnold-Gokhale: the joint whose conditionals come closest to the model's, found iteratively "
    "(steps shown)",
    "A-KL": "how far a joint's conditionals are from the model's own (mean KL divergence, nats; 0 = they agree)",
    "conditional-independence gap": "how strongly the two residues depend on each other in the model's "
    "conditionals, which the mlm joint ignores (nats; 0 = independent)",
    "standard": "infilling by beam search with the model's conditionals (the chain rule)",
    "l2r, best": "the order a beam fills the gap in: left to right, or the most certain position first",
    "top-3, native rank": "the three best fills with their scores; the native fill's rank among the beam's 5 "
    "(>5: not in the beam)",
}


def register(sub) -> None:
    p = sub.add_parser("demo", help="score antibodies with AntiBERTy and print a short report")
    add_model_args(p)
    where = "the shared data folder: $MLMPROB_DATA or ../shared/data"
    n = f"heavy chains from Thera-SAbDab ({where}) to score besides trastuzumab"
    p.add_argument("--n", type=nonnegative_int, help=f"{n} (default: {DEMO_N} when the data is there, else none)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the CDR-H3 redesign chains")
    epochs = "MH epochs (no burn-in) of the CDR-H3 redesign section"
    p.add_argument("--epochs", type=positive_int, default=2, help=epochs)
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(func=run)


def demo_records(n: int | None):
    """Trastuzumab, then the first ``n`` valid heavy chains of Thera-SAbDab (``None``: :data:`DEMO_N` when the
    shared data is there, else none; a number without the data is an error)."""
    from ..data import Record, read_records, shared_data_dir

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


@contextmanager
def progress(args, total: int | None, unit: str, desc: str) -> Iterator:
    """A progress bar on stderr for a section's work (gone when it ends; ``--no-progress``: none); on a terminal
    its clock ticks every second, also while one long step runs."""
    from ..runtime.engine import progress_bar

    bar = progress_bar(total, unit, desc, disable=args.no_progress)
    bar.leave = False
    stop = threading.Event()

    def tick():
        while not stop.wait(1.0):
            bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True)
    if not args.no_progress and sys.stderr.isatty():
        ticker.start()
    try:
        yield bar
    finally:
        stop.set()
        if ticker.is_alive():
            ticker.join()
        bar.close()


def run(args) -> int:
    from ..runtime.device import describe
    from .common import load_model_from_args  # looked up when run (a test replaces it)

    t0 = time.perf_counter()
    records = demo_records(args.n)  # a missing table fails before the model loads
    SamplerSpec.of(None, method="mh", epochs=args.epochs, burn_in=0).check_size(DEMO_CHAINS)  # and a huge --epochs
    print(f"mlmprob demo: loading {args.model} ...", flush=True)
    mlm = load_model_from_args(args)
    size = f"{sum(p.numel() for p in mlm.model.parameters()) / 1e6:.1f}M parameters, vocabulary {mlm.vocab_size}"
    print(f"model {mlm.name} ({size}) on {describe(mlm.device, mlm.dtype)}, loaded in {time.perf_counter() - t0:.1f}s")
    for section in (score_section, sample_section, joint_section, infill_section):
        t = time.perf_counter()
        section(mlm, args, records)
        print(f"   took {time.perf_counter() - t:.1f}s", flush=True)
    print("\nGlossary", *(f"   {term}: {meaning}" for term, meaning in GLOSSARY.items()), sep="\n")
    print(f"\ndone in {time.perf_counter() - t0:.1f}s")
    return 0


def score_section(mlm, args, records) -> None:
    from ..scoring import score_records

    print("\n1. Sequence scores (pseudo-log-likelihood, E_local = -PLL, E_raw = -sum of raw logits)", flush=True)
    scored = []
    with progress(args, len(records), "seq", "scoring") as bar:
        for r in records:
            t = time.perf_counter()
            (s,) = list(score_records(mlm, [r], per_token=True))
            scored.append((s, time.perf_counter() - t))
            bar.update(1)
    print(f"   {'antibody':<16}{'length':>7}{'PLL':>10}{'PLL/res':>9}{'E_raw':>10}{'secs':>7}")
    for s, secs in scored:
        print(f"   {s.id[:15]:<16}{s.n_tokens:>7}{s.pll:>10.2f}{s.pll_per_token:>9.3f}{s.e_raw:>10.1f}{secs:>7.1f}")
    worst = scored[0][0]  # the demo scores at least one sequence: trastuzumab
    lows = sorted(range(worst.n_tokens), key=lambda i: worst.token_log_prob[i])[:5]
    print(f"\n   least expected residues of {worst.id} (position: residue, log q):")
    print("   " + ", ".join(f"{i + 1}:{worst.tokens[i]} {worst.token_log_prob[i]:.2f}" for i in sorted(lows)))


def _trastuzumab(mlm):
    """Trastuzumab's heavy chain's ids, its CDR-H3 (IMGT, anarcism, as ``--cdr H3``) and the CDR-H3's positions."""
    from ..sampling.cdr import cdr_mask

    seq = DEMO_HEAVY["trastuzumab"]
    enc = mlm.encode([seq])
    cdr = cdr_mask(seq, enc.word_ids[0], "H3", "imgt")
    return enc.input_ids, cdr, cdr.nonzero()[:, 0].tolist()


def sample_section(mlm, args, records) -> None:
    import torch

    from ..energies import energy
    from ..sampling.api import sample
    from ..sampling.io import epoch_shown

    ids, cdr, cols = _trastuzumab(mlm)
    native = mlm.decode(ids[0, cols])
    chains = DEMO_CHAINS
    print(f"\n2. CDR-H3 redesign of trastuzumab (framework clamped): native CDR-H3 {native} ({len(cols)} residues)")
    mh = "Metropolis-Hastings on E_local with the model's own conditionals as proposals"
    sweeps = f"{chains} chains x {args.epochs} epoch{'s' * (args.epochs != 1)} (sweeps over the CDR-H3, no burn-in)"
    print(f"   {mh}, {sweeps} from the native sequence", flush=True)
    with progress(args, args.epochs, "epoch", "MH") as bar:

        def on_epoch(rec, total):
            bar.set_postfix(epoch_shown(rec), refresh=False)
            bar.update(1)

        how = dict(method="mh", energy="local", epochs=args.epochs, burn_in=0, reference=ids[0], on_epoch=on_epoch)
        gen = torch.Generator().manual_seed(args.seed)
        r = sample(mlm, ids.expand(chains, -1), positions=cdr[None].expand(chains, -1), generator=gen, **how)
    print(f"   {'chain':<7}{'CDR-H3':<{len(cols) + 2}}{'E_local':>9}{'identity':>10}")
    e_native = float(energy(mlm, ids, cdr[None], kind="local")[0])
    print(f"   {'native':<7}{native:<{len(cols) + 2}}{e_native:>9.2f}{1.0:>10.2f}")
    identity, e_local = r.identity, r.energy_local
    assert identity is not None and e_local is not None  # MH with a reference records both
    for b in range(chains):
        final = mlm.decode(r.final_ids[b, cols])
        print(f"   {b:<7}{final:<{len(cols) + 2}}{float(e_local[-1, b]):>9.2f}{float(identity[-1, b]):>10.2f}")
    rates = f"acceptance {r.accept_rate:.2f}, novel transitions {r.novel_rate:.2f}"
    print(f"   {rates}, {r.proposals_per_second:.1f} proposals/s, {r.forward_rows} forward rows")


def joint_section(mlm, args, records) -> None:
    from ..joints.evaluate import evaluate_pair

    ids, _, cols = _trastuzumab(mlm)
    a, b = cols[len(cols) // 2], cols[len(cols) // 2 + 1]
    gold = mlm.decode(ids[0, [a, b]])
    print(f"\n3. Joint of two adjacent CDR-H3 residues (positions {a}, {b}; native {gold})", flush=True)
    with progress(args, 1, "pair", "joints") as bar:
        ev = evaluate_pair(mlm, ids[0], a, b)
        bar.update(1)
    pc = ev.conditionals
    print(f"   over {pc.size}x{pc.size} residue pairs, {pc.n_forward} forward rows")
    print(f"   {'method':<11}{'mode':>6}{'p(mode)':>9}{'p(native)':>11}{'A-KL':>9}")
    for m, lj in ev.joints.items():
        k = int(lj.argmax())
        i, j = divmod(k, pc.size)
        mode = mlm.decode([int(pc.candidates[i])]) + mlm.decode([int(pc.candidates[j])])
        p_gold = float(lj[pc.gold_index].exp()) if pc.gold_index is not None else float("nan")
        print(f"   {m:<11}{mode:>6}{float(lj.flatten()[k].exp()):>9.3f}{p_gold:>11.3f}{ev.metrics[m].akl:>9.4f}")
    ag = f"{ev.ag.steps} steps ({'converged' if ev.ag.converged else 'cap reached'})"
    print(f"   AG: {ag}; conditional-independence gap of the MLM joint {ev.ci_gap:.4f} nats")


def infill_section(mlm, args, records) -> None:
    from ..infilling.beam import infill, score_meaning

    ids, _, cols = _trastuzumab(mlm)
    gap = cols[len(cols) // 2 - 2 : len(cols) // 2 + 2]
    native = mlm.decode(ids[0, gap])
    shown = mlm.decode(ids[0, cols[0] : gap[0]]) + "_" * len(gap) + mlm.decode(ids[0, gap[-1] + 1 : cols[-1] + 1])
    print(f"\n4. Infilling a {len(gap)}-residue gap in CDR-H3: {shown} (native {native}), beam 5", flush=True)
    searches = [(method, order) for method in ("standard", "hcb") for order in ("l2r", "best")]
    found = []
    with progress(args, len(searches), "search", "infilling") as bar:
        for method, order in searches:
            found.append(infill(mlm, ids[0], gap, method=method, order=order, beam_size=5))
            bar.update(1)
    for (method, order), cands in zip(searches, found, strict=True):
        fills = ", ".join(f"{mlm.decode(list(c.tokens))} {c.score:.2f}" for c in cands[:3])
        rank = next((i + 1 for i, c in enumerate(cands) if mlm.decode(list(c.tokens)) == native), None)
        print(f"   {method:<9}{order:<5} top-3: {fills}   native rank: {rank or '>5'}")
    print("   the two methods' scores are different quantities:")
    for method in ("standard", "hcb"):
        print(f"   {method} score: {score_meaning(method)}")
