#!/bin/sh
# curl one-liners for every route and format of tokvec: /health, /ready,
# /info, /tokens/{id}, /embed (ids and text, windows, padding, positions,
# every encoding_format and Accept type, float16/bfloat16, binary
# requests), /tokenize, /decode, /similar, /v1/embeddings, /v1/models,
# /openapi.json, the pages and their files, /metrics. See docs/api.md for what each does.
#
# Usage: examples/curl.sh [URL]   (default http://127.0.0.1:8080)
# Needs a server with a tokenizer on a table of at least 50257 rows, as
# `make run` starts it. Any error status stops the script (--fail-with-body
# prints the error's JSON); binary answers go to a temporary directory.
set -eux
U=${1:-http://127.0.0.1:8080}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
C="curl -sS --fail-with-body"
# show ARGS...: curl ARGS, the first 300 bytes of the answer printed;
# has KEY ARGS...: curl ARGS, the answer must hold "KEY" (printed from it)
show() { $C "$@" > "$T/out"; head -c 300 "$T/out"; echo; }
has() {
  k=$1; shift; $C "$@" > "$T/out"
  grep -q "\"$k\":" "$T/out"; grep -o "\"$k\":.*" "$T/out" | head -c 300; echo
}

# --- the server --------------------------------------------------------
show "$U/health"
show "$U/ready"
show "$U/info"
show "$U/tokens/3"
show "$U/openapi.json"
$C -o /dev/null -w 'GET / %{http_code} %{content_type}\n' "$U/"
$C -o /dev/null -w 'GET /docs %{http_code} %{content_type}\n' "$U/docs"
show "$U/static/auth.json"

# --- /embed with ids -----------------------------------------------------
# JSON in, JSON out (a batch; or one sequence: {"inputs":[40,1101,257]})
show -d '{"inputs":[[40,1101,257],[15496,11,995]]}' "$U/embed"
# continue a sequence at position 3, and token rows without positions
show -d '{"inputs":[[318]],"start_position":3}' "$U/embed"
show -d '{"inputs":[[318]],"positions":false}' "$U/embed"
# ragged rows, right-padded with pad_id: the answer carries attention_mask
has attention_mask -d '{"inputs":[[40,1101,257],[15496]],"pad_id":50256}' "$U/embed"
# encoding_format: float (the default), base64 of the little-endian
# float32 bytes, torch (torch.save bytes per sequence, any dtype)
show -d '{"inputs":[[40,1101,257]],"encoding_format":"float"}' "$U/embed"
show -d '{"inputs":[[40,1101,257]],"encoding_format":"base64"}' "$U/embed"
show -d '{"inputs":[[40,1101,257]],"encoding_format":"torch","dtype":"float16"}' "$U/embed"
# npz: one numpy.load-able archive with the embeddings (float16 here) and,
# for a padded batch, the attention_mask
$C -o "$T/pad.npz" -d '{"inputs":[[40,1101,257],[15496]],"pad_id":50256,"encoding_format":"npz","dtype":"float16"}' "$U/embed"
# raw little-endian rows (shape in X-Tokvec-Shape): float32, float16, bfloat16
$C -D - -o "$T/x.f32" -H 'Accept: application/octet-stream' -d '{"inputs":[[40,1101,257]]}' "$U/embed"
$C -o "$T/x.f16" -H 'Accept: application/octet-stream' -d '{"inputs":[[40,1101,257]]}' "$U/embed?dtype=float16"
$C -o "$T/x.bf16" -H 'Accept: application/octet-stream' -d '{"inputs":[[40,1101,257]]}' "$U/embed?dtype=bfloat16"
# .npy and .npz by Accept
$C -o "$T/x.npy" -H 'Accept: application/x-npy' -d '{"inputs":[[40,1101,257]]}' "$U/embed"
$C -o "$T/x.npz" -H 'Accept: application/x-npz' -d '{"inputs":[[40,1101,257],[15496]],"pad_id":50256}' "$U/embed"
# binary request: int32 little-endian ids, shape in a header, options in
# the query; the same rows as the JSON request above
printf '\050\000\000\000\115\004\000\000\001\001\000\000' > "$T/ids.i32"
$C -o "$T/y.f32" -H 'Content-Type: application/octet-stream' \
   -H 'X-Tokvec-Shape: 1,3' -H 'Accept: application/octet-stream' \
   --data-binary @"$T/ids.i32" "$U/embed?start_position=0&positions=true"
cmp "$T/x.f32" "$T/y.f32" && echo "binary request == JSON request"
# a binary request answered as .npz without an Accept
$C -o "$T/y.npz" -H 'Content-Type: application/octet-stream' \
   -H 'X-Tokvec-Shape: 1,3' --data-binary @"$T/ids.i32" \
   "$U/embed?encoding_format=npz"

# --- /embed with text ----------------------------------------------------
# the ids come back beside the embeddings
has input_ids -d '{"inputs":"Hello, world"}' "$U/embed"
# texts and ids mixed, padded; too long a text cut to fit
has input_ids -d '{"inputs":["Hello world",[40,1101,257]],"pad_id":0}' "$U/embed"
show -d '{"inputs":"Hello, world","truncate":true,"truncation_direction":"left"}' "$U/embed"
# the book's windows: input_ids and target_ids (shifted by one)
has input_ids -d '{"inputs":"I HAD always thought Jack Gisburn rather a cheap genius","max_length":4,"stride":4}' "$U/embed"
# windows as .npz: embeddings, input_ids, target_ids
$C -o "$T/win.npz" -d '{"inputs":"I HAD always thought Jack Gisburn rather a cheap genius","max_length":4,"stride":4,"encoding_format":"npz"}' "$U/embed"
# sentence vectors: the mean of each input's rows, (B, D)
show -d '{"inputs":["Hello, world","Hi"],"pooling":"mean","normalize":true}' "$U/embed"

# --- text routes, nearest tokens -------------------------------------------
show -d '{"inputs":"Hello, do you like tea? <|endoftext|> In the sunlit"}' "$U/tokenize"
show -d '{"inputs":["Hello","world"],"special_tokens":false}' "$U/tokenize"
show -d '{"inputs":"I HAD always thought Jack Gisburn rather a cheap genius","max_length":4,"stride":4}' "$U/tokenize"
show -d '{"ids":[[15496,11,466,345,588,8887,30],[40,172]]}' "$U/decode"
show -d '{"id":3,"k":5}' "$U/similar"
D=$($C "$U/info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dim"])')
python3 -c 'import json,sys; print(json.dumps({"vector": [0.5] * int(sys.argv[1]), "k": 3}))' "$D" > "$T/vector.json"
show -d @"$T/vector.json" "$U/similar"

# --- OpenAI's embeddings API -----------------------------------------------
show "$U/v1/models"
show -d '{"input":[[40,1101,257],[15496,11]],"model":"any"}' "$U/v1/embeddings"
show -d '{"input":["a sentence","another"],"encoding_format":"base64"}' "$U/v1/embeddings"

# --- metrics ---------------------------------------------------------------
$C "$U/metrics" > "$T/metrics"
grep '^tokvec_requests_total' "$T/metrics"

ls -l "$T"
