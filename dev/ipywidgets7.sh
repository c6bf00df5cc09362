#!/usr/bin/env bash
# Run the widget lessons under ipywidgets 7.7.1, the version Colab ships, in a separate venv.
#     bash dev/ipywidgets7.sh            (CI runs it after the main test command)
# The widgets' Python side must work on 7.7 and 8.x; the main environment has 8.x.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-ipywidgets7
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
. "$venv/bin/activate"
pip install -q --upgrade pip
pip install -q torch==2.13.0
pip install -q -e . "ipywidgets==7.7.1" "nbval==0.11.0" "pytest==9.2.*" ipykernel
# The solutions hold the hidden tests, which judge with the mistakes' functions of the grader's side
# (heads_mistakes: headlab and torch only, hence no dependencies).
pip install -q --no-deps -e ./grader
python -c "import ipywidgets; assert ipywidgets.__version__ == '7.7.1', ipywidgets.__version__; print('ipywidgets', ipywidgets.__version__)"
mapfile -t notebooks < <(grep -l -E "pooling_explorer\(|interact\(|import ipywidgets" solutions/*/*.ipynb)
[ "${#notebooks[@]}" -gt 0 ] || { echo "no widget lesson found" >&2; exit 1; }
widget_tests=(tests/test_*widget*.py)
pytest -p no:xdist -p no:cacheprovider -o addopts="" --nbval-lax --nbval-current-env \
    "${notebooks[@]}" "${widget_tests[@]}"
