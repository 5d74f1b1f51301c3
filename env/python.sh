# Sourced: where tandem's Python environment is. env/setup.sh makes it, with
# the pinned torch whose LibTorch the build uses and, for the tests, the
# reference peers (tiktoken, transformers, rouge-score). Sets TANDEM_VENV
# ($TANDEM_VENV, default $XDG_CACHE_HOME/tandem/venv or ~/.cache/tandem/venv)
# and TANDEM_PYTHON: the venv's python once it exists, else python3.
if [ -z "${TANDEM_VENV:-}" ]; then
  if [[ "${XDG_CACHE_HOME:-}" == /* ]]; then
    TANDEM_VENV=$XDG_CACHE_HOME/tandem/venv
  else
    TANDEM_VENV=$HOME/.cache/tandem/venv
  fi
fi
if [ -x "$TANDEM_VENV/bin/python" ]; then
  TANDEM_PYTHON=$TANDEM_VENV/bin/python
else
  TANDEM_PYTHON=python3
fi
