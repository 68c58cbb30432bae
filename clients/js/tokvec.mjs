// tokvec.mjs -- a dependency-free client for the tokvec embedding server.
// ESM; works in Node 18+ (global fetch) and browsers.
//
//   import { Client } from "./tokvec.mjs";
//   const c = new Client("http://127.0.0.1:8080");
//   const { shape, data } = await c.embed([[40, 1101, 257]]);
//   // shape = [1, 3, 256]; data = Float32Array of 768 values, C order
//
// embed() asks for the raw little-endian float32 response, so no float is
// ever parsed from text. Errors throw TokvecError {status, errorType}.

export class TokvecError extends Error {
  constructor(status, errorType, message) {
    super(`${errorType} (${status}): ${message}`);
    this.name = "TokvecError";
    this.status = status;
    this.errorType = errorType;
    this.detail = message;
  }
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
      throw new TokvecError(0, "connection_error", String(e));
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
  // Returns { shape: [B, S, D], data: Float32Array } (little-endian decode,
  // correct on any host).
  async embed(ids, { startPosition = 0, positions = true } = {}) {
    const body = JSON.stringify({
      inputs: ids,
      start_position: startPosition,
      positions,
    });
    const r = await this.#request("POST", "/embed", {
      body,
      headers: {
        "Content-Type": "application/json",
        Accept: "application/octet-stream",
      },
    });
    const shape = (r.headers.get("X-Tokvec-Shape") || "")
      .split(",")
      .map(Number);
    const buf = await r.arrayBuffer();
    const n = buf.byteLength / 4;
    if (shape.length !== 3 || shape[0] * shape[1] * shape[2] !== n)
      throw new TokvecError(200, "bad_response", "shape does not match body");
    const view = new DataView(buf);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = view.getFloat32(4 * i, true);
    return { shape, data };
  }
}
