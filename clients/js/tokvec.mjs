// tokvec.mjs -- a dependency-free client for the tokvec embedding server.
// ESM; works in Node 18+ (global fetch) and browsers.
//
//   import { Client } from "./tokvec.mjs";
//   const c = new Client("http://127.0.0.1:8080");
//   const { shape, data } = await c.embed([[40, 1101, 257]]);
//   // shape = [1, 3, 256]; data = Float32Array of 768 values, C order
//   await c.embed([[40, 1101], [257]], { padId: 0 }); // ragged: padded
//
// embed() asks for the raw little-endian response, so no float is ever
// parsed from text. Errors throw TokvecError {status, errorType, detail};
// a request that never reached the server (refused, DNS, TLS) has status
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

// IEEE half bits -> the same value as a float32 (exact).
function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

export class Client {
  constructor(url = "http://127.0.0.1:8080", { apiKey = null } = {}) {
    this.url = url.replace(/\/+$/, "");
    this.apiKey = apiKey;
  }

  async #request(method, path, { body, headers = {} } = {}) {
    const h = { ...headers };
    if (this.apiKey) h["Authorization"] = `Bearer ${this.apiKey}`;
    let resp;
    try {
      resp = await fetch(this.url + path, { method, body, headers: h });
    } catch (e) {
      throw new TokvecError(0, "connection_error",
        `${method} ${this.url}${path}: ${describeFetchError(e)}`,
        { cause: e });
    }
    if (resp.status !== 200) {
      const text = await resp.text();
      let err;
      try {
        err = JSON.parse(text);
      } catch {
        throw new TokvecError(resp.status, "http_error", text.slice(0, 200));
      }
      throw new TokvecError(resp.status, err.error_type, err.error);
    }
    return resp;
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

  // ids: one sequence [1, 2, 3] or a batch [[1, 2], [3, 4]].
  // Options: startPosition (first position, default 0), positions (false:
  // token rows alone), padId (right-pads rows of different lengths; without
  // it a ragged batch is 422 ragged_batch), dtype ("float32", "float16" or
  // "bfloat16": the server rounds to nearest even, the values come back
  // widened exactly to float32).
  // Returns { shape: [B, S, D], dtype, data: Float32Array } (little-endian
  // decode, correct on any host).
  async embed(ids, { startPosition = 0, positions = true, padId = null,
                     dtype = "float32" } = {}) {
    if (!DTYPES.includes(dtype))
      throw new TypeError(`dtype must be one of ${DTYPES.join(", ")}`);
    const req = { inputs: ids, start_position: startPosition, positions };
    if (padId !== null && padId !== undefined) req.pad_id = padId;
    const query = dtype === "float32" ? "" : `?dtype=${dtype}`;
    const r = await this.#request("POST", "/embed" + query, {
      body: JSON.stringify(req),
      headers: {
        "Content-Type": "application/json",
        Accept: "application/octet-stream",
      },
    });
    const shape = (r.headers.get("X-Tokvec-Shape") || "")
      .split(",")
      .map(Number);
    const buf = await r.arrayBuffer();
    const size = dtype === "float32" ? 4 : 2;
    const n = buf.byteLength / size;
    if (shape.length !== 3 || shape[0] * shape[1] * shape[2] !== n)
      throw new TokvecError(200, "bad_response", "shape does not match body");
    const view = new DataView(buf);
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
    return { shape, dtype, data };
  }
}
