#!/usr/bin/env bash
# The package as users install it (issue 39 §3): build the sdist and the wheel, check them (twine check; the wheel
# holds no tests, experiments or results), install the wheel into a fresh virtual environment (not editable) and
# run the smoke test there from a folder outside the checkout. Uses the checkout's .venv (build, twine) to build.
# Usage: .ci/wheel_smoke.sh [PYTHON]   (PYTHON: the interpreter of the fresh environment, default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
py=${1:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/mlmprob-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

.venv/bin/python -m build --sdist --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log"; echo "error: python -m build failed" >&2; exit 1; }
.venv/bin/python -m twine check --strict "$work"/dist/*
wheel=$(ls "$work"/dist/mlmprob-*.whl)
if unzip -l "$wheel" | awk '{print $4}' | grep -E '^(tests|experiments|bench|docs)/|/results/'; then
    echo "error: the wheel carries files that are not the package (above)" >&2; exit 1
fi

"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
"$work/venv/bin/python" -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
"$work/venv/bin/python" -m pip install -q "$wheel"

cd "$work"                         # nothing of the checkout on the path: the installed package alone
printf '>a\nEVQLVESGGGLVQPGGSLRLSCAAS\n>b\nQVQLQESGPGLVKPSETLSLTC\n>c\nDIQMTQSPSSLSASVGDRVTITC\n' > three.fasta
export HF_HUB_OFFLINE=1
want=$("$root/.venv/bin/python" -c "import ast, pathlib; t = ast.parse(pathlib.Path('$root/src/mlmprob/__init__.py').read_text()); print(next(n.value.value for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], 'id', '') == '__version__'))")
got=$("$work/venv/bin/mlmprob" --version)
[ "$got" = "mlmprob $want" ] || { echo "error: mlmprob --version says '$got', the source says $want" >&2; exit 1; }
"$work/venv/bin/mlmprob" score three.fasta --no-progress --out scores.jsonl
[ "$(wc -l < scores.jsonl)" = 3 ] || { echo "error: score wrote $(wc -l < scores.jsonl) rows, not 3" >&2; exit 1; }
"$work/venv/bin/python" - <<'PY'
import mlmprob
assert "site-packages" in mlmprob.__file__, mlmprob.__file__
m = mlmprob.load_mlm("en-small")
ids = m.encode(["the cat sat on the mat", "a dog ran"]).input_ids
fast, exact = mlmprob.pll(m, ids, method="one_pass"), mlmprob.pll(m, ids)
assert fast.shape == exact.shape == (2,) and bool((fast - exact).abs().max() < 5.0), (fast, exact)
print(f"wheel smoke test passed: {mlmprob.__file__}; one-pass {fast.tolist()} vs exact {exact.tolist()}")
PY
