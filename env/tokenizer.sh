#!/usr/bin/env bash
# Puts GPT-2's BPE ranks (gpt2.tiktoken) into DIR, default: where the summarize
# app looks ($TANDEM_TOKENIZER_DIR, else $XDG_CACHE_HOME/tandem/gpt2, else
# ~/.cache/tandem/gpt2). The file comes from PyPI, inside the openai-whisper
# package's source archive (whisper/assets/gpt2.tiktoken: 50,256 tokens whose
# ranks are GPT-2's ids), checked against its sha256. A DIR that already holds
# OpenAI's encoder.json + vocab.bpe is left alone: the app reads those too.
# Idempotent and quiet when the file is present.
#   env/tokenizer.sh [DIR]
set -euo pipefail

package=openai-whisper==20250625
member=whisper/assets/gpt2.tiktoken
sha256=306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930

# TANDEM_CACHE, and the tandem venv's pip when env/setup.sh made one.
source "$(dirname "$0")/python.sh"
dir=${1:-${TANDEM_TOKENIZER_DIR:-$TANDEM_CACHE/gpt2}}

verified() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha256" ]; }

if [ -f "$dir/gpt2.tiktoken" ]; then
  verified "$dir/gpt2.tiktoken" && exit 0
  echo "tokenizer: $dir/gpt2.tiktoken is not GPT-2's (sha256 differs); remove it and run again" >&2
  exit 1
fi
if [ -f "$dir/encoder.json" ] && [ -f "$dir/vocab.bpe" ]; then exit 0; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$TANDEM_PYTHON" -m pip download --quiet --no-deps --no-binary :all: "$package" -d "$tmp" \
    >"$tmp/pip.log" 2>&1 || {
  cat "$tmp/pip.log" >&2
  echo "tokenizer: pip download $package failed (PyPI must be reachable," \
    "or copy gpt2.tiktoken, or encoder.json + vocab.bpe, into $dir)" >&2
  exit 1
}
archive=$(ls "$tmp"/*.tar.gz)
tar -xzf "$archive" -C "$tmp" --wildcards "*/$member"
file=$(ls "$tmp"/*/"$member")
if ! verified "$file"; then
  echo "tokenizer: $member in $package is not the file tandem expects (sha256 differs)" >&2
  exit 1
fi
mkdir -p "$dir"
# Through a temporary name, so an interrupted copy never looks like a vocabulary.
cp "$file" "$dir/.gpt2.tiktoken.part"
mv "$dir/.gpt2.tiktoken.part" "$dir/gpt2.tiktoken"
echo "tokenizer: GPT-2 vocabulary in $dir"
