#!/usr/bin/env bash
# EvoProtGrad for the side-by-side bench only (never a dependency of mlmprob).
# Installs evo-prot-grad 0.2 without its dependencies into bench/design/.evo-pkgs (git-ignored), next to the
# project's own environment: its one requirement, transformers[torch]==4.38.0, would pull a CUDA torch and an
# old transformers; the project's venv already has torch (CPU) and transformers, which the bench checks work.
# Usage (from the repository root): bash bench/design/setup_evo.sh [python]   (default: .venv/bin/python)
set -euo pipefail
PY=${1:-.venv/bin/python}
TARGET=bench/design/.evo-pkgs
WHEEL=${EVO_WHEEL:-evo-prot-grad==0.2}   # or a downloaded wheel: EVO_WHEEL=/path/evo_prot_grad-0.2-py3-none-any.whl
"$PY" -m pip install --no-deps --target "$TARGET" "$WHEEL"
PYTHONPATH="$TARGET" "$PY" -c "import evo_prot_grad, transformers, torch; print('evo_prot_grad ok; transformers', transformers.__version__, 'torch', torch.__version__)"
