"""en-small: one-pass and unmasked PLL against exact PLL on held-out wikitext-2 test sentences.

    PYTHONPATH=src:bench python bench/onepass_english.py 30
"""
import sys, torch, time
sys.path.insert(0, 'bench')  # run from the repository root
import mlmprob
from onepass_data import english_sets
from mlmprob.onepass.scoring import spearman
torch.set_num_threads(1)
m = mlmprob.load_mlm('en-small')
ok = []
for s in english_sets()['heldout']:
    try:
        if m.encode([s]).input_ids.shape[1] <= 64: ok.append(s)
    except mlmprob.MLMProbError: pass
ok = ok[:int(sys.argv[1])]
res = {}
for meth in ['one_pass', 'unmasked', 'exact']:
    t = time.perf_counter()
    res[meth] = torch.tensor([float(mlmprob.pll(m, m.encode([s]).input_ids, method=meth)[0]) for s in ok])
    print(meth, time.perf_counter() - t)
n = torch.tensor([m.encode([s]).input_ids.shape[1] - 2 for s in ok], dtype=torch.float64)
for meth in ['one_pass', 'unmasked']:
    d = (res[meth] - res['exact']).abs()
    print(meth, len(ok), 'spearman', spearman(res[meth], res['exact']), 'per-token mean err', float((d / n).mean()), 'max', float((d / n).max()))
