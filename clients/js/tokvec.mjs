// tokvec.mjs -- a dependency-free client for the tokvec embedding server.
// ESM; works in Node 18+ (global fetch) and browsers.
//
//   import { Client } from "tokvec";   // or "./tokvec.mjs"
//   const c = new Client("http://127.0.0.1:8080");
//   const { shape, data, inputIds } = await c.embed("Hello, world");
//   // shape = [1, S, D]; data = Float32Array of S*D values, C order;
//   // inputIds = [[15496, 11, 995]]
//   await c.embed([[40, 1101, 257]]);                 // ids in
//   await c.embed([[40, 1101], [257]], { padId: 0 }); // ragged: padded
//   await c.embed(text, { maxLength: 4, stride: 4 }); // + targetIds
//   await c.tokenize("Hello"); await c.decode([15496]); await c.similar(3);
//   const rows = await c.embedSentences(["a text", "another"]);
//   // rows: one Float32Array of D values per text (a served static
//   // model's sentence vectors)
//
// Every option of the server's requests is a camelCase option here
// (startPosition, positions, padId, dtype, encodingFormat, truncate,
// truncationDirection, specialTokens, maxLength, stride, k, and accept:
// which answer to ask for); an unknown option is a TypeError naming it
// and the closest valid one ("startPositon" -> startPosition).
//
// Ids in: the raw little-endian answer, so no float is ever parsed from
// text. Text in: the JSON answer (base64 floats, or torch.save archives
// for float16/bfloat16), which carries the ids. Errors throw TokvecError
// {status, errorType, detail}; a request that never reached the server
// (refused, DNS, TLS, or in a browser a page of another origin) has status
// 0, errorType "connection_error", the underlying cause in the message
// (e.g. "connect ECONNREFUSED 127.0.0.1:8080") and as `cause`.

export class TokvecError extends Error {
  constructor(status, errorType, message, options) {
    super(`${errorType} (${status}): ${message}`, options);
    this.name = "TokvecError";
    this.status = status;
    this.errorType = errorType;
    this.detail = message;
  }
}

const DTYPES = ["float32", "float16", "bfloat16"];
const ENCODINGS = ["float", "base64", "torch"];
const ACCEPT = {
  raw: "application/octet-stream",
  npy: "application/x-npy",
  json: "application/json",
};
const DIRECTIONS = ["right", "left"];

// Options of each request: option -> key of the JSON body (null: not a
// body key). The body is built from these tables, so a new server option
// is one line here.
const EMBED_OPTIONS = {
  startPosition: "start_position",
  positions: "positions",
  padId: "pad_id",
  dtype: "dtype",
  encodingFormat: "encoding_format",
  truncate: "truncate",
  truncationDirection: "truncation_direction",
  specialTokens: "special_tokens",
  maxLength: "max_length",
  stride: "stride",
  accept: null,
};
const TOKENIZE_OPTIONS = {
  specialTokens: "special_tokens",
  truncate: "truncate",
  truncationDirection: "truncation_direction",
  maxLength: "max_length",
  stride: "stride",
};
const SIMILAR_OPTIONS = { k: "k" };
const SENTENCE_OPTIONS = {
  normalize: "normalize",
  dimensions: "dimensions",
  model: "model",
};

function editDistance(a, b) {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const t = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = t;
    }
  }
  return d[b.length];
}

// The valid option closest to name (case and _ ignored: start_position ->
// startPosition), or null when none is close.
function closest(name, valid) {
  const norm = (s) => s.replace(/_/g, "").toLowerCase();
  const n = norm(name);
  let best = null, bestD = Infinity;
  for (const v of valid) {
    const dist = editDistance(n, norm(v));
    if (dist < bestD) [best, bestD] = [v, dist];
  }
  if (bestD <= Math.max(2, Math.floor(name.length / 3))) return best;
  // a cut-short name: maxLen -> maxLength, encoding -> encodingFormat
  return n.length >= 3 && valid.find((v) => norm(v).startsWith(n)) || null;
}

// TypeError for options not in table: names each, with a suggestion.
function checkOptions(method, options, table) {
  if (options === null || typeof options !== "object" || Array.isArray(options))
    throw new TypeError(`${method}: options must be an object`);
  const valid = Object.keys(table);
  const bad = Object.keys(options).filter((k) => !valid.includes(k));
  if (!bad.length) return;
  const named = bad.map((k) => {
    const c = closest(k, valid);
    return c ? `'${k}' (did you mean ${c}?)` : `'${k}'`;
  });
  throw new TypeError(`${method}: unknown option${bad.length > 1 ? "s" : ""} ` +
    `${named.join(", ")}; valid: ${valid.join(", ")}`);
}

function checkChoice(name, value, choices) {
  if (value !== undefined && value !== null && !choices.includes(value))
    throw new TypeError(`${name} must be one of ${choices.join(", ")}, ` +
      `not ${JSON.stringify(value)}`);
}

// The JSON body: every option given (not undefined/null) under its key.
function bodyOf(options, table, body) {
  for (const [k, v] of Object.entries(options))
    if (table[k] && v !== undefined && v !== null) body[table[k]] = v;
  return body;
}

// Typed arrays (Int32Array ids) as plain arrays, which JSON can hold.
const plain = (x) => (ArrayBuffer.isView(x) ? Array.from(x)
  : Array.isArray(x) ? x.map(plain) : x);

const isText = (inputs) => typeof inputs === "string" ||
  (Array.isArray(inputs) && inputs.some((x) => typeof x === "string"));

// "fetch failed" alone says nothing: Node puts the reason in e.cause
// (possibly an AggregateError of one error per address tried).
function describeFetchError(e) {
  const parts = [e && e.message ? e.message : String(e)];
  let c = e && e.cause;
  for (let depth = 0; c && depth < 4; depth++, c = c.cause) {
    if (Array.isArray(c.errors) && c.errors.length)
      parts.push(c.errors.map((x) => x.message || x.code).join("; "));
    else if (c.message || c.code) parts.push(c.message || c.code);
  }
  return parts.join(": ");
}

// A browser hides why a fetch failed ("Failed to fetch" in Chrome,
// "NetworkError when attempting to fetch resource." in Firefox, "Load
// failed" in Safari): most often a page of another origin that the server
// refuses, since it is not listed in its --cors-origin.
const BROWSER_FETCH_FAILURE = /^(Failed to fetch|NetworkError|Load failed)/;
function browserHint(e, url) {
  if (!(e instanceof TypeError) || !BROWSER_FETCH_FAILURE.test(e.message))
    return "";
  const page = globalThis.location && globalThis.location.origin;
  return ` (a browser does not say why: is the server running at ${url}? ` +
    `A page of another origin${page ? ` (this one is ${page})` : ""} needs ` +
    `the server started with --cors-origin ${page || "ORIGIN"}; ` +
    "the browser's console names the cause)";
}

// IEEE half bits -> the same value as a float32 (exact).
function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

// Little-endian values of dtype at bytes[offset, ...) -> Float32Array
// (float16 and bfloat16 widened exactly).
function decodeFloats(buf, offset, n, dtype) {
  const view = new DataView(buf, offset);
  const data = new Float32Array(n);
  if (dtype === "float32")
    for (let i = 0; i < n; i++) data[i] = view.getFloat32(4 * i, true);
  else if (dtype === "float16")
    for (let i = 0; i < n; i++)
      data[i] = halfToFloat(view.getUint16(2 * i, true));
  else {
    const wide = new DataView(new ArrayBuffer(4));
    for (let i = 0; i < n; i++) {
      wide.setUint32(0, view.getUint16(2 * i, true) << 16 >>> 0);
      data[i] = wide.getFloat32(0);
    }
  }
  return data;
}

const sizeOf = (dtype) => (dtype === "float32" ? 4 : 2);

function base64Bytes(s) {
  const bin = atob(s);
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b;
}

// The bytes of the record named */data/0 in a stored (uncompressed) zip:
// torch.save's archive of one tensor.
function torchTensorBytes(bytes) {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let eocd = bytes.length - 22;
  while (eocd >= 0 && v.getUint32(eocd, true) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new TokvecError(200, "bad_response", "not a zip");
  const count = v.getUint16(eocd + 10, true);
  let p = v.getUint32(eocd + 16, true);
  for (let i = 0; i < count; i++) {
    const nlen = v.getUint16(p + 28, true);
    const name = new TextDecoder().decode(bytes.subarray(p + 46, p + 46 + nlen));
    if (name.endsWith("/data/0")) {
      const size = v.getUint32(p + 20, true);
      const local = v.getUint32(p + 42, true);
      const start = local + 30 + v.getUint16(local + 26, true) +
        v.getUint16(local + 28, true);
      return bytes.slice(start, start + size);
    }
    p += 46 + nlen + v.getUint16(p + 30, true) + v.getUint16(p + 32, true);
  }
  throw new TokvecError(200, "bad_response", "no data/0 in the archive");
}

function result(shape, dtype, data) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (data.length !== n)
    throw new TokvecError(200, "bad_response", "shape does not match data");
  return { shape, dtype, data };
}

// A JSON /embed answer, in any encoding_format -> { shape, dtype, data }.
function fromJson(reply) {
  const { shape, dtype, embeddings } = reply;
  const n = shape.reduce((a, b) => a * b, 1);
  if (typeof embeddings === "string") { // base64
    const b = base64Bytes(embeddings);
    if (b.length !== n * sizeOf(dtype))
      throw new TokvecError(200, "bad_response", "shape does not match data");
    return result(shape, dtype, decodeFloats(b.buffer, 0, n, dtype));
  }
  if (embeddings.length && typeof embeddings[0] === "string") { // torch
    const parts = embeddings.map((s) => torchTensorBytes(base64Bytes(s)));
    const all = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) { all.set(p, o); o += p.length; }
    if (all.length !== n * sizeOf(dtype))
      throw new TokvecError(200, "bad_response", "shape does not match data");
    return result(shape, dtype, decodeFloats(all.buffer, 0, n, dtype));
  }
  // float: null is a non-finite value (JSON has no NaN)
  return result(shape, dtype, Float32Array.from(embeddings.flat(shape.length - 1),
    (x) => (x === null ? NaN : x)));
}

// A .npy answer (v1-3, little-endian <f4/<f2/<u2, C order).
function fromNpy(buf, dtype) {
  const b = new Uint8Array(buf);
  const v = new DataView(buf);
  const major = b[6];
  const hlen = major === 1 ? v.getUint16(8, true) : v.getUint32(8, true);
  const hstart = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(b.subarray(hstart, hstart + hlen));
  const m = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!m) throw new TokvecError(200, "bad_response", "bad .npy header");
  const shape = m[1].split(",").filter((s) => s.trim()).map(Number);
  const n = shape.reduce((a, c) => a * c, 1);
  return result(shape, dtype, decodeFloats(buf, hstart + hlen, n, dtype));
}

export class Client {
  constructor(url = "http://127.0.0.1:8080", options = {}) {
    checkOptions("Client", options, { apiKey: null });
    this.url = url.replace(/\/+$/, "");
    this.apiKey = options.apiKey ?? null;
  }

  async #request(method, path, { body, headers = {} } = {}) {
    const h = { ...headers };
    if (this.apiKey) h["Authorization"] = `Bearer ${this.apiKey}`;
    let resp;
    try {
      resp = await fetch(this.url + path, { method, body, headers: h });
    } catch (e) {
      throw new TokvecError(0, "connection_error",
        `${method} ${this.url}${path}: ${describeFetchError(e)}` +
        browserHint(e, this.url), { cause: e });
    }
    if (resp.status !== 200) {
      const text = await resp.text();
      let err;
      try {
        err = JSON.parse(text);
      } catch {
        throw new TokvecError(resp.status, "http_error", text.slice(0, 200));
      }
      if (err && typeof err.error === "object" && err.error) // /v1/
        throw new TokvecError(resp.status, err.error.code, err.error.message);
      throw new TokvecError(resp.status, err.error_type, err.error);
    }
    return resp;
  }

  async #postJson(path, body, accept = "application/json") {
    return this.#request("POST", path, {
      body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", Accept: accept },
    });
  }

  async health() {
    return (await this.#request("GET", "/health")).json();
  }

  async info() {
    return (await this.#request("GET", "/info")).json();
  }

  async token(id) {
    const r = await this.#request("GET", `/tokens/${Number(id)}`);
    return (await r.json()).embedding;
  }

  // inputs: a text, a list of texts (id lists may be mixed in), one
  // sequence of ids [1, 2, 3] or a batch [[1, 2], [3, 4]] (typed arrays
  // such as Int32Array too).
  // Options: startPosition (first position, default 0), positions (false:
  // token rows alone), padId (right-pads rows of different lengths; without
  // it a ragged batch is 422 ragged_batch), dtype ("float32", "float16" or
  // "bfloat16": the server rounds to nearest even, the values come back
  // widened exactly to float32), truncate (cut a text that does not fit the
  // positions), truncationDirection ("right" keeps the start, "left" the
  // end), specialTokens (false: <|endoftext|> as plain text), maxLength and
  // stride (the book's windows of one text), accept ("raw", "npy" or
  // "json"; default raw for ids, json for text) and encodingFormat ("float",
  // "base64" or "torch", JSON only; default base64, torch for float16 and
  // bfloat16).
  // Returns { shape: [B, S, D], dtype, data: Float32Array } (little-endian
  // decode, correct on any host), with inputIds ([B][S] numbers) for text
  // in a JSON answer, and targetIds with maxLength.
  async embed(inputs, options = {}) {
    checkOptions("embed", options, EMBED_OPTIONS);
    const { dtype = "float32", encodingFormat } = options;
    checkChoice("dtype", dtype, DTYPES);
    checkChoice("encodingFormat", encodingFormat, ENCODINGS);
    checkChoice("accept", options.accept, Object.keys(ACCEPT));
    checkChoice("truncationDirection", options.truncationDirection,
      DIRECTIONS);
    const text = isText(inputs);
    const accept = options.accept ??
      (text || encodingFormat ? "json" : "raw");
    const body = bodyOf(options, EMBED_OPTIONS, { inputs: plain(inputs) });
    if (accept !== "json") {
      if (encodingFormat)
        throw new TypeError(`encodingFormat is for JSON answers; accept ` +
          `'${accept}' is binary`);
      delete body.dtype; // in the query
      const query = dtype === "float32" ? "" : `?dtype=${dtype}`;
      const r = await this.#postJson("/embed" + query, body, ACCEPT[accept]);
      const buf = await r.arrayBuffer();
      if (accept === "npy") return fromNpy(buf, dtype);
      const shape = (r.headers.get("X-Tokvec-Shape") || "")
        .split(",").map(Number);
      const n = shape.reduce((a, b) => a * b, 1);
      if (shape.length < 2 || n * sizeOf(dtype) !== buf.byteLength)
        throw new TokvecError(200, "bad_response", "shape does not match body");
      return result(shape, dtype, decodeFloats(buf, 0, n, dtype));
    }
    const fmt = encodingFormat ?? (dtype === "float32" ? "base64" : "torch");
    if (dtype !== "float32" && fmt !== "torch")
      throw new TypeError(`JSON floats are float32: dtype ${dtype} needs ` +
        `encodingFormat 'torch' or a binary accept`);
    body.encoding_format = fmt;
    const reply = await (await this.#postJson("/embed", body)).json();
    const out = fromJson(reply);
    if (reply.input_ids) out.inputIds = reply.input_ids;
    if (reply.target_ids) out.targetIds = reply.target_ids;
    return out;
  }

  // One sentence vector per text: an Array of N Float32Array rows of D
  // values (views of one buffer). texts: a text or a list of texts (id
  // lists are pooled as given). The served model's vectors, exactly as
  // its library computes them (Model2Vec's StaticModel.encode,
  // sentence-transformers' StaticEmbedding; a plain table: the mean of
  // its rows). Options: dimensions (the first k components, renormalized
  // when the vectors are normalized), normalize (true / false overrides
  // the model's setting), model (sent as OpenAI's "model"; a server
  // serves one model and accepts any name). The request is POST
  // /v1/embeddings (base64 float32); with normalize it is POST /embed
  // with "pooling": "mean", which gives the same vectors.
  async embedSentences(texts, options = {}) {
    checkOptions("embedSentences", options, SENTENCE_OPTIONS);
    if (typeof texts !== "string" && !Array.isArray(texts))
      throw new TypeError("embedSentences: texts must be a text or a list " +
        "of texts");
    const { normalize, dimensions, model } = options;
    if (normalize !== undefined && normalize !== null &&
        typeof normalize !== "boolean")
      throw new TypeError("normalize must be true, false or null");
    if (model !== undefined && model !== null && typeof model !== "string")
      throw new TypeError("model must be a string");
    let buf, n;
    if (normalize === undefined || normalize === null) {
      const body = bodyOf({ dimensions, model }, SENTENCE_OPTIONS,
        { input: plain(texts), encoding_format: "base64" });
      const reply = await (await this.#postJson("/v1/embeddings", body))
        .json();
      const parts = [...reply.data].sort((a, b) => a.index - b.index)
        .map((d) => base64Bytes(d.embedding));
      n = parts.length;
      buf = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
      let o = 0;
      for (const p of parts) { buf.set(p, o); o += p.length; }
    } else {
      const body = bodyOf({ normalize, dimensions }, SENTENCE_OPTIONS,
        { inputs: plain(texts), pooling: "mean", encoding_format: "base64" });
      const reply = await (await this.#postJson("/embed", body)).json();
      n = reply.shape[0];
      buf = base64Bytes(reply.embeddings);
    }
    if (n === 0 || buf.length % (4 * n))
      throw new TokvecError(200, "bad_response", "rows of unequal size");
    const d = buf.length / 4 / n;
    const all = decodeFloats(buf.buffer, 0, n * d, "float32");
    return Array.from({ length: n }, (_, i) => all.subarray(i * d, (i + 1) * d));
  }

  // POST /tokenize: a text -> its tokens [{id, text, special, start, stop}]
  // (start/stop: byte offsets into the UTF-8 text); a list of texts -> one
  // list each; with maxLength (and stride): { inputIds, targetIds }.
  // Options: specialTokens, truncate, truncationDirection, maxLength,
  // stride.
  async tokenize(inputs, options = {}) {
    checkOptions("tokenize", options, TOKENIZE_OPTIONS);
    checkChoice("truncationDirection", options.truncationDirection,
      DIRECTIONS);
    const body = bodyOf(options, TOKENIZE_OPTIONS, { inputs });
    const reply = await (await this.#postJson("/tokenize", body)).json();
    if (options.maxLength !== undefined && options.maxLength !== null)
      return { inputIds: reply.input_ids, targetIds: reply.target_ids };
    return typeof inputs === "string" ? reply[0] : reply;
  }

  // POST /decode: one sequence of ids -> its text; a list of sequences ->
  // a list of texts (as tiktoken's decode with errors="replace").
  async decode(ids) {
    const list = Array.from(ids, (x) => (typeof x === "number" ? x
      : Array.from(x)));
    const one = !list.length || !Array.isArray(list[0]);
    const reply = await (await this.#postJson("/decode", { ids: list })).json();
    return one ? reply[0] : reply;
  }

  // POST /similar: the k tokens (option k, default 10, at most 1000)
  // nearest by cosine similarity to query -- a token id, or a vector of
  // dim numbers (Array or Float32Array) -- best first:
  // [{id, text, score}, ...].
  async similar(query, options = {}) {
    checkOptions("similar", options, SIMILAR_OPTIONS);
    const body = typeof query === "number" ? { id: query }
      : { vector: Array.from(query) };
    const reply = await this.#postJson("/similar",
      bodyOf(options, SIMILAR_OPTIONS, body));
    return reply.json();
  }
}
