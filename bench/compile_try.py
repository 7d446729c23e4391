"""``torch.compile`` (inductor, CPU) on the scoring hot path: is it faster, and when does it pay off?

    PYTHONPATH=src:bench python bench/compile_try.py --model antiberty --threads 1

Times, on one sub-batch of masked copies of a heavy chain (the shape exact PLL runs), the encoder +
LM head in eager mode and compiled (``torch.compile(..., dynamic=False)``), interleaved over rounds after
the compile; reports the compile time, the per-call times and the break-even number of calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from onepass_data import antibody_sets

import mlmprob


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="antiberty")
    ap.add_argument("--copies", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    mlm = mlmprob.load_mlm(a.model, device="cpu", dtype="float32")
    s = antibody_sets("H")["gdpa1"][0]
    ids = mlm.encode([s]).input_ids.repeat(a.copies, 1)
    ar = torch.arange(a.copies)
    cols = ar + 1
    ids[ar, cols] = mlm.mask_id

    def eager():
        return mlm.device_logits_at(ids, ar, cols)

    base, head = mlm._base, mlm._head
    cbase = torch.compile(base, dynamic=False)

    def compiled():
        with torch.inference_mode():
            h = cbase(input_ids=ids, attention_mask=(ids != mlm.pad_id).long())[0]
            return head(h[ar, cols])

    load0 = os.getloadavg()
    t0 = time.perf_counter()
    out_c = compiled()
    t_compile = time.perf_counter() - t0
    out_e = eager()
    te, tc = [], []
    for r in range(a.rounds):
        for _name, f, acc in (("eager", eager, te), ("compiled", compiled, tc))[:: (1 if r % 2 == 0 else -1)]:
            t0 = time.perf_counter()
            f()
            acc.append(time.perf_counter() - t0)
    e, c = statistics.median(te), statistics.median(tc)
    gain = e - c
    print(
        f"model {a.model}, {a.copies} masked copies of {ids.shape[1]} tokens, {a.threads} thread(s), load "
        f"{load0[0]:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(
        f"compile (first call) {t_compile:.1f} s; eager {e:.3f} s/call, compiled {c:.3f} s/call "
        f"(x{e / c:.2f}); max |logit diff| {float((out_c.float() - out_e.float()).abs().max()):.2e}"
    )
    if gain > 0:
        print(
            f"break-even after {t_compile / gain:.0f} calls = {t_compile / gain * a.copies:.0f} masked copies "
            f"(~{t_compile / gain * e:.0f} s of eager scoring)"
        )
    else:
        print("compiled is not faster: no break-even")
    return 0


if __name__ == "__main__":
    sys.exit(main())
