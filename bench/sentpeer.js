// sentpeer.js -- the peer of `make bench-sentences`: what a JavaScript
// user writes to serve a Model2Vec model over HTTP. One Node process:
// node:http, Hugging Face tokenizers (npm `tokenizers`, the Rust core as a
// native module, its default thread pool: encodeBatch runs on it), the
// model's `embeddings` read from model.safetensors into a Float32Array,
// Float32Array mean pooling. POST /v1/embeddings as OpenAI's (input: a
// string or a list of strings; encoding_format float | base64, the latter
// little-endian float32). Model2Vec's StaticModel.encode semantics: each
// text cut to 512 x int(median token length) code points, ids without
// special tokens, the unk id dropped, the first 512 kept, the mean of
// their rows (zeros when none), v / (|v| + 1e-32) when config.json says
// normalize. No mapping/weights (the bench's model has none).
// Usage: NODE_PATH=build/oracle/node_modules node sentpeer.js DIR PORT
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const MAX_TOKENS = 512;
const [dir, port] = process.argv.slice(2);

function loadModel(dir) {
  const buf = fs.readFileSync(path.join(dir, 'model.safetensors'));
  const n = Number(buf.readBigUInt64LE(0));
  const head = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const t = head.embeddings;
  if (!t || t.dtype !== 'F32') throw new Error('need F32 embeddings');
  const [a, b] = t.data_offsets;
  const bytes = buf.subarray(8 + n + a, 8 + n + b);
  // a copy: the data need not be 4-byte aligned in the file's buffer
  const rows = new Float32Array(bytes.length / 4);
  Buffer.from(rows.buffer).set(bytes);
  return { rows, dim: t.shape[1], count: t.shape[0] };
}

const tj = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
const model = loadModel(dir);
const normalize = !!cfg.normalize;
const unk = tj.model.unk_token !== undefined ? tj.model.vocab[tj.model.unk_token] : -1;
// Model2Vec: median of the vocabulary's token lengths, added tokens included
const lens = Object.keys(tj.model.vocab)
  .concat(tj.added_tokens.map((t) => t.content))
  .map((s) => [...s].length).sort((x, y) => x - y);
const median = lens.length % 2 ? lens[(lens.length - 1) / 2]
  : (lens[lens.length / 2 - 1] + lens[lens.length / 2]) / 2;
const maxChars = MAX_TOKENS * Math.floor(median);

function cut(s) {
  if (s.length <= maxChars) return s; // UTF-16 units >= code points
  return [...s].slice(0, maxChars).join('');
}

// The mean of the rows of ids (unk dropped, first MAX_TOKENS) into out.
function pool(ids, out) {
  const { rows, dim } = model;
  let n = 0;
  for (let i = 0; i < ids.length && n < MAX_TOKENS; i++) {
    const id = ids[i];
    if (id === unk) continue;
    const o = id * dim;
    for (let d = 0; d < dim; d++) out[d] += rows[o + d];
    n++;
  }
  if (n) for (let d = 0; d < dim; d++) out[d] /= n;
  if (normalize) {
    let ss = 0;
    for (let d = 0; d < dim; d++) ss += out[d] * out[d];
    const s = Math.sqrt(ss) + 1e-32;
    for (let d = 0; d < dim; d++) out[d] /= s;
  }
  return n;
}

function fail(res, status, message) {
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error',
                                         param: null, code: null } });
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(body);
}

async function embeddings(req, res, body) {
  let q;
  try { q = JSON.parse(body); } catch (e) { return fail(res, 400, 'bad JSON'); }
  const input = typeof q.input === 'string' ? [q.input] : q.input;
  if (!Array.isArray(input) || !input.length ||
      !input.every((s) => typeof s === 'string' && s.length))
    return fail(res, 400, 'input must be a string or a list of strings');
  const b64 = q.encoding_format === 'base64';
  const encs = await tok.encodeBatch(input.map(cut), { addSpecialTokens: false });
  const dim = model.dim;
  const all = new Float32Array(input.length * dim);
  let used = 0;
  const data = encs.map((e, i) => {
    const v = all.subarray(i * dim, (i + 1) * dim);
    used += pool(e.getIds(), v);
    return { object: 'embedding', index: i,
             embedding: b64 ? Buffer.from(v.buffer, v.byteOffset, v.byteLength)
               .toString('base64') : Array.from(v) };
  });
  const out = JSON.stringify({ object: 'list', data, model: path.basename(dir),
                               usage: { prompt_tokens: used, total_tokens: used } });
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(out);
}

http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return res.end('{"status":"ok"}');
  }
  if (req.method !== 'POST' || req.url !== '/v1/embeddings')
    return fail(res, 404, 'no such route');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    embeddings(req, res, Buffer.concat(chunks).toString('utf8'))
      .catch((e) => fail(res, 500, String(e)));
  });
}).listen(Number(port), '127.0.0.1');
