#!/bin/sh
# curl one-liners for every route and format of tokvec (see the README).
# Usage: examples/curl.sh [URL]   (default http://127.0.0.1:8080)
set -eux
U=${1:-http://127.0.0.1:8080}

curl -s "$U/health"; echo
curl -s "$U/ready"; echo
curl -s "$U/info"; echo
curl -s "$U/tokens/3" | head -c 200; echo

# JSON in, JSON out (a batch; or one sequence: {"inputs":[40,1101,257]})
curl -s -d '{"inputs":[[40,1101,257],[15496,11,995]]}' "$U/embed" | head -c 300; echo
# continue a sequence at position 3, and token rows without positions
curl -s -d '{"inputs":[[318]],"start_position":3}' "$U/embed" | head -c 200; echo
curl -s -d '{"inputs":[[318]],"positions":false}' "$U/embed" | head -c 200; echo
# ragged rows, right-padded with pad_id
curl -s -d '{"inputs":[[40,1101,257],[15496]],"pad_id":50256}' "$U/embed" | head -c 200; echo
# base64 of the raw float32 bytes inside JSON
curl -s -d '{"inputs":[[40,1101,257]],"encoding_format":"base64"}' "$U/embed" | head -c 200; echo
# raw little-endian float32 (shape in X-Tokvec-Shape), float16, bfloat16
curl -s -D - -o /tmp/x.f32 -H 'Accept: application/octet-stream' -d '{"inputs":[[40,1101,257]]}' "$U/embed"
curl -s -o /tmp/x.f16 -H 'Accept: application/octet-stream' -d '{"inputs":[[40,1101,257]]}' "$U/embed?dtype=float16"
curl -s -o /tmp/x.bf16 -H 'Accept: application/octet-stream' -d '{"inputs":[[40,1101,257]]}' "$U/embed?dtype=bfloat16"
# .npy (numpy.load works on it)
curl -s -o /tmp/x.npy -H 'Accept: application/x-npy' -d '{"inputs":[[40,1101,257]]}' "$U/embed"
# .npz: the embeddings and, for a padded batch, the attention_mask (texts:
# input_ids too) in one numpy.load-able archive; float16 embeddings here
curl -s -o /tmp/x.npz -H 'Accept: application/x-npz' -d '{"inputs":[[40,1101,257],[15496]],"pad_id":50256}' "$U/embed?dtype=float16"
# ragged rows in JSON carry their attention_mask too
curl -s -d '{"inputs":[[40,1101],[15496]],"pad_id":50256,"encoding_format":"base64"}' "$U/embed" | grep -o '"attention_mask":.*'
# binary request: int32 little-endian ids, shape in a header, options in the query
printf '\050\000\000\000\115\004\000\000\001\001\000\000' |
  curl -s -o /tmp/y.f32 -H 'Content-Type: application/octet-stream' \
       -H 'X-Tokvec-Shape: 1,3' -H 'Accept: application/octet-stream' \
       --data-binary @- "$U/embed?start_position=0&positions=true"
cmp /tmp/x.f32 /tmp/y.f32 && echo "binary request == JSON request"
curl -s "$U/metrics" | grep '^tokvec_' | head
