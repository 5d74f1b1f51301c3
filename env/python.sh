# Sourced: where tandem's Python environment is. env/setup.sh makes it, with
# the pinned torch whose LibTorch the build uses and, for the tests, the
# reference peers (tiktoken, transformers, rouge-score). Sets TANDEM_CACHE
# (tandem's cache folder: $XDG_CACHE_HOME/tandem, else ~/.cache/tandem),
# TANDEM_VENV ($TANDEM_VENV, default $TANDEM_CACHE/venv) and TANDEM_PYTHON:
# the venv's python once it exists, else python3.
if [[ "${XDG_CACHE_HOME:-}" == /* ]]; then  # XDG: a relative value is ignored
  TANDEM_CACHE=$XDG_CACHE_HOME/tandem
else
  TANDEM_CACHE=$HOME/.cache/tandem
fi
TANDEM_VENV=${TANDEM_VENV:-$TANDEM_CACHE/venv}
if [ -x "$TANDEM_VENV/bin/python" ]; then
  TANDEM_PYTHON=$TANDEM_VENV/bin/python
else
  TANDEM_PYTHON=python3
fi
