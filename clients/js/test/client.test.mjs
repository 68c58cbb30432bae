// Tests of the JS client against a real tokvec server: TOKVEC_URL names it
// (tests/e2e/test_clients.py starts one and runs `node --test`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, TokvecError } from "../tokvec.mjs";

const url = process.env.TOKVEC_URL;
const c = new Client(url);

test("embed returns shape and float32 data equal to the JSON route", async () => {
  const ids = [[40, 101, 257], [1, 2, 3]];
  const { shape, data } = await c.embed(ids, { startPosition: 2 });
  const info = await c.info();
  assert.deepEqual(shape, [2, 3, info.dim]);
  const r = await fetch(`${url}/embed`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ inputs: ids, start_position: 2 }),
  });
  const j = await r.json();
  const flat = j.embeddings.flat(2);
  assert.equal(flat.length, data.length);
  for (let i = 0; i < flat.length; i++)
    assert.equal(Math.fround(flat[i]), data[i]);
});

// Issue 18, finding 2: fetch() with a string body and no Content-Type sends
// text/plain;charset=UTF-8 -- read as JSON, not refused with 415.
test("plain fetch with a string body is read as JSON", async () => {
  const r = await fetch(`${url}/embed`, {
    method: "POST",
    body: JSON.stringify({ inputs: [[1, 2]] }),
  });
  assert.equal(r.status, 200);
  assert.deepEqual((await r.json()).shape.slice(0, 2), [1, 2]);
});

test("a single sequence is a batch of one", async () => {
  const { shape } = await c.embed([5, 6]);
  assert.equal(shape[0], 1);
  assert.equal(shape[1], 2);
});

test("out-of-range id throws TokvecError naming the id", async () => {
  const info = await c.info();
  await assert.rejects(c.embed([[0, info.vocab_size]]), (e) => {
    assert.ok(e instanceof TokvecError);
    assert.equal(e.status, 422);
    assert.equal(e.errorType, "token_out_of_range");
    assert.match(e.detail, new RegExp(String(info.vocab_size)));
    return true;
  });
});

test("token() returns the token row", async () => {
  const row = await c.token(3);
  const { data } = await c.embed([3], { positions: false });
  assert.deepEqual(row.map(Math.fround), Array.from(data));
});

test("padId right-pads a ragged batch; without it the batch is refused", async () => {
  const padded = await c.embed([[7, 8, 9], [4, 0, 0]]);
  const ragged = await c.embed([[7, 8, 9], [4]], { padId: 0 });
  assert.deepEqual(ragged.shape, padded.shape);
  assert.deepEqual(Array.from(ragged.data), Array.from(padded.data));
  await assert.rejects(c.embed([[7, 8, 9], [4]]), (e) => {
    assert.equal(e.status, 422);
    assert.equal(e.errorType, "ragged_batch");
    return true;
  });
});

// Independent float32 -> float16 / bfloat16 rounding (nearest even) of the
// float32 answer, to check what the server sends and the client decodes.
function f32bits(x) {
  const v = new DataView(new ArrayBuffer(4));
  v.setFloat32(0, x);
  return v.getUint32(0);
}
function roundEven(v) {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 ? 2 * Math.round(v / 2) : r;
}
function toHalf(x) {
  const e = Math.max(((f32bits(x) >>> 23) & 0xff) - 127, -14);
  const q = 2 ** (e - 10);
  return roundEven(x / q) * q;
}
function toBf16(x) {
  const b = f32bits(x);
  const r = Math.floor((b + 0x7fff + ((b >>> 16) & 1)) / 65536) * 65536;
  const v = new DataView(new ArrayBuffer(4));
  v.setUint32(0, r >>> 0);
  return v.getFloat32(0);
}

test("dtype float16 and bfloat16 come back rounded to nearest even", async () => {
  const ids = [[1, 2, 3], [40, 41, 42]];
  const f32 = await c.embed(ids, { startPosition: 1 });
  const f16 = await c.embed(ids, { startPosition: 1, dtype: "float16" });
  const bf = await c.embed(ids, { startPosition: 1, dtype: "bfloat16" });
  assert.equal(f16.dtype, "float16");
  assert.equal(bf.dtype, "bfloat16");
  assert.deepEqual(f16.shape, f32.shape);
  assert.deepEqual(bf.shape, f32.shape);
  assert.deepEqual(Array.from(f16.data), Array.from(f32.data, toHalf));
  assert.deepEqual(Array.from(bf.data), Array.from(f32.data, toBf16));
  await assert.rejects(c.embed(ids, { dtype: "float64" }), TypeError);
});

test("start_position shifts the positions; positions:false drops them", async () => {
  const ids = [[5, 6]];
  const a = await c.embed(ids, { startPosition: 3 });
  const b = await c.embed([[0, 0, 0, 5, 6]]);
  const d = a.shape[2];
  assert.deepEqual(Array.from(a.data), Array.from(b.data.slice(3 * d)));
  const tok = await c.embed(ids, { positions: false });
  assert.deepEqual(Array.from(tok.data.slice(0, d)),
                   (await c.token(5)).map(Math.fround));
});

test("apiKey is sent as a bearer token", { skip: !process.env.TOKVEC_KEY_URL },
  async () => {
    const k = process.env.TOKVEC_KEY_URL;
    await assert.rejects(new Client(k).embed([1]), (e) => {
      assert.equal(e.status, 401);
      assert.equal(e.errorType, "unauthorized");
      return true;
    });
    const { shape } = await new Client(k, { apiKey: "s3cret" }).embed([1]);
    assert.equal(shape[1], 1);
  });

test("a refused connection names the cause, not only 'fetch failed'",
  { skip: !process.env.TOKVEC_DEAD_URL }, async () => {
    await assert.rejects(new Client(process.env.TOKVEC_DEAD_URL).info(),
      (e) => {
        assert.ok(e instanceof TokvecError);
        assert.equal(e.status, 0);
        assert.equal(e.errorType, "connection_error");
        assert.match(e.message, /ECONNREFUSED/);
        assert.ok(e.cause);
        return true;
      });
  });

// ---- text in, windows, tokenize/decode/similar, every option and format --
// The reference is always the server's own JSON answer to the same body.

const BOOK = "I HAD always thought Jack Gisburn rather a cheap genius--though a " +
  "good fellow enough--so it was no great surprise to me to hear that, " +
  "in the height of his glory, he had dropped his painting, married a " +
  "rich widow, and established himself in a villa on the Riviera.";
const LONG = BOOK.repeat(4); // over the table's 64 positions
const EOT = "Hello<|endoftext|> world";
const CTX = Number(process.env.TOKVEC_CTX || 64);
const MAX_TOKENS = Number(process.env.TOKVEC_MAX_TOKENS || 256);

async function post(path, body) {
  const r = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, await r.clone().text());
  return r.json();
}

// /embed's decimal answer, its floats as float32 (null: NaN).
async function reference(body) {
  const j = await post("/embed", body);
  j.data = Float32Array.from(j.embeddings.flat(2), (x) => x ?? NaN);
  return j;
}

function assertSameEmbedding(got, want) {
  assert.deepEqual(got.shape, want.shape);
  assert.deepEqual(Array.from(got.data), Array.from(want.data));
}

test("text in gives the server's embeddings and its input ids", async () => {
  const got = await c.embed("Hello, world");
  const want = await reference({ inputs: "Hello, world" });
  assertSameEmbedding(got, want);
  assert.deepEqual(got.inputIds, want.input_ids);
  assert.equal(got.targetIds, undefined);
  // bit-identical to the same ids sent as ids
  const ids = (await c.tokenize("Hello, world")).map((t) => t.id);
  assert.deepEqual([ids], got.inputIds);
  assertSameEmbedding(await c.embed([ids]), want);
});

test("texts and ids mix in one batch, padded with padId", async () => {
  const inputs = ["Hello world", [40, 1101, 257, 11], "A", [5]];
  const got = await c.embed(inputs, { padId: 0, startPosition: 1 });
  const want = await reference({ inputs, pad_id: 0, start_position: 1 });
  assertSameEmbedding(got, want);
  assert.deepEqual(got.inputIds, want.input_ids);
  await assert.rejects(c.embed(inputs), (e) => e.errorType === "ragged_batch");
  // typed arrays of ids are ids
  assertSameEmbedding(await c.embed([Int32Array.from([40, 1101]), "Hello world"]),
    await reference({ inputs: [[40, 1101], "Hello world"] }));
  assertSameEmbedding(await c.embed(Int32Array.from([40, 1101])),
    await reference({ inputs: [[40, 1101]] }));
});

test("text options truncate, truncationDirection, specialTokens, positions match the server", async () => {
  const cases = [
    [LONG, { truncate: true }, { truncate: true }],
    [LONG, { truncate: true, truncationDirection: "left" },
      { truncate: true, truncation_direction: "left" }],
    [LONG, { truncate: true, truncationDirection: "right", startPosition: 60 },
      { truncate: true, truncation_direction: "right", start_position: 60 }],
    [EOT, { specialTokens: false }, { special_tokens: false }],
    [EOT, { specialTokens: true }, { special_tokens: true }],
    [["a b c", "d"], { padId: 9, positions: false },
      { pad_id: 9, positions: false }],
  ];
  for (const [inputs, opts, body] of cases) {
    const got = await c.embed(inputs, opts);
    const want = await reference({ inputs, ...body });
    assertSameEmbedding(got, want);
    assert.deepEqual(got.inputIds, want.input_ids);
  }
  const left = (await c.embed(LONG, { truncate: true, truncationDirection: "left" })).inputIds[0];
  const right = (await c.embed(LONG, { truncate: true })).inputIds[0];
  assert.equal(left.length, CTX);
  assert.notDeepEqual(left, right);
  assert.ok((await c.embed(EOT)).inputIds[0].includes(50256));
  assert.ok(!(await c.embed(EOT, { specialTokens: false })).inputIds[0].includes(50256));
});

test("maxLength and stride give the book's windows with input and target ids", async () => {
  const w = await c.embed(BOOK, { maxLength: 4, stride: 2, startPosition: 3 });
  const want = await reference({ inputs: BOOK, max_length: 4, stride: 2,
                                 start_position: 3 });
  assertSameEmbedding(w, want);
  assert.deepEqual(w.inputIds, want.input_ids);
  assert.deepEqual(w.targetIds, want.target_ids);
  for (let i = 0; i < w.inputIds.length; i++)
    assert.deepEqual(w.inputIds[i].slice(1), w.targetIds[i].slice(0, -1));
  const t = await c.tokenize(BOOK, { maxLength: 4 });
  const e = await c.embed(BOOK, { maxLength: 4 });
  assert.deepEqual({ inputIds: e.inputIds, targetIds: e.targetIds }, t);
  assertSameEmbedding(await c.embed(t.inputIds), e);
});

test("every accept, encodingFormat and dtype gives the same values", async () => {
  const ids = [[1, 2, 3], [50256, 0, 7]];
  const text = "Hello, world";
  const combos = [["raw"], ["npy"], ["json", "float"], ["json", "base64"],
    ["json", "torch"], [undefined, undefined], [undefined, "torch"]];
  for (const inputs of [ids, text]) {
    const ref = await reference({ inputs, start_position: 2 });
    for (const dtype of ["float32", "float16", "bfloat16"]) {
      const narrow = { float32: (x) => x, float16: toHalf, bfloat16: toBf16 }[dtype];
      for (const [accept, encodingFormat] of combos) {
        if (dtype !== "float32" && (encodingFormat === "float" || encodingFormat === "base64"))
          continue;
        const opts = { startPosition: 2, dtype };
        if (accept) opts.accept = accept;
        if (encodingFormat) opts.encodingFormat = encodingFormat;
        const got = await c.embed(inputs, opts);
        const what = JSON.stringify({ inputs, ...opts });
        assert.deepEqual(got.shape, ref.shape, what);
        assert.equal(got.dtype, dtype, what);
        assert.deepEqual(Array.from(got.data), Array.from(ref.data, narrow), what);
        const binary = accept === "raw" || accept === "npy" ||
          (accept === undefined && encodingFormat === undefined && inputs === ids);
        if (inputs === text && !binary) assert.deepEqual(got.inputIds, ref.input_ids, what);
        else assert.equal(got.inputIds, undefined, what);
      }
    }
  }
  await assert.rejects(c.embed(ids, { dtype: "float16", encodingFormat: "base64" }), TypeError);
  await assert.rejects(c.embed(ids, { accept: "raw", encodingFormat: "float" }), TypeError);
});

test("tokenize answers tokens, lists of them, or windows, as the server does", async () => {
  assert.deepEqual(await c.tokenize("Hello, world"),
    (await post("/tokenize", { inputs: "Hello, world" }))[0]);
  const texts = ["Hello", "", "caf\u00e9 \u{1F600}"];
  assert.deepEqual(await c.tokenize(texts), await post("/tokenize", { inputs: texts }));
  for (const specialTokens of [false, true]) {
    const got = await c.tokenize(EOT, { specialTokens });
    assert.deepEqual(got, (await post("/tokenize", { inputs: EOT, special_tokens: specialTokens }))[0]);
    assert.equal(got.some((t) => t.special), specialTokens);
  }
  const long = BOOK.repeat(10); // over max_tokens
  for (const dir of [undefined, "right", "left"]) {
    const opts = { truncate: true };
    const body = { inputs: long, truncate: true };
    if (dir) { opts.truncationDirection = dir; body.truncation_direction = dir; }
    const got = await c.tokenize(long, opts);
    assert.equal(got.length, MAX_TOKENS);
    assert.deepEqual(got, (await post("/tokenize", body))[0]);
  }
  const left = await c.tokenize(long, { truncate: true, truncationDirection: "left" });
  assert.equal(left.at(-1).stop, new TextEncoder().encode(long).length);
  const w = await c.tokenize(BOOK, { maxLength: 5, stride: 3 });
  const want = await post("/tokenize", { inputs: BOOK, max_length: 5, stride: 3 });
  assert.deepEqual(w, { inputIds: want.input_ids, targetIds: want.target_ids });
});

test("decode takes one sequence or many", async () => {
  const ids = (await c.tokenize("Hello, caf\u00e9")).map((t) => t.id);
  assert.equal(await c.decode(ids), "Hello, caf\u00e9");
  assert.equal(await c.decode(Int32Array.from(ids)), "Hello, caf\u00e9");
  assert.deepEqual(await c.decode([[40, 172], ids]),
    await post("/decode", { ids: [[40, 172], ids] }));
  assert.equal(await c.decode([40, 172]), "I\ufffd");
  assert.equal(await c.decode([]), "");
  const { inputIds } = await c.embed(["Hello world", "x"], { padId: 50256 });
  assert.deepEqual(await c.decode(inputIds), ["Hello world", "x<|endoftext|>"]);
});

test("similar takes an id or a vector, and k", async () => {
  const want = await post("/similar", { id: 3, k: 5 });
  assert.deepEqual(await c.similar(3, { k: 5 }), want);
  assert.equal((await c.similar(3)).length, 10);
  const row = await c.token(3);
  const vec = await post("/similar", { vector: row, k: 4 });
  assert.deepEqual(await c.similar(row, { k: 4 }), vec);
  assert.deepEqual(await c.similar(Float32Array.from(row), { k: 4 }), vec);
  assert.equal(vec[0].id, 3);
  await assert.rejects(c.similar(row.slice(0, 5)),
    (e) => e.errorType === "dimension_mismatch");
  await assert.rejects(c.similar(3, { k: 1001 }),
    (e) => e.status === 422 && e.errorType === "k_out_of_range");
});

test("server errors of text requests carry status, errorType and detail", async () => {
  for (const [call, status, type] of [
    [() => c.embed("Hi", { maxLength: 8 }), 422, "text_too_short"],
    [() => c.embed(LONG), 422, "sequence_too_long"],
    [() => c.decode([1e9]), 422, "token_out_of_range"],
    [() => c.tokenize(BOOK.repeat(10)), 413, "payload_too_large"],
    [() => c.embed(""), 400, "invalid_request"],
  ]) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof TokvecError);
      assert.equal(e.status, status);
      assert.equal(e.errorType, type);
      assert.ok(e.detail.length > 0);
      return true;
    });
  }
});

test("unknown options are refused, naming them and the closest valid one", async () => {
  const cases = [
    [() => c.embed([1], { startPositon: 1 }), "startPositon", "startPosition"],
    [() => c.embed("Hi", { start_position: 1 }), "start_position", "startPosition"],
    [() => c.embed("Hi", { maxlen: 4 }), "maxlen", "maxLength"],
    [() => c.embed("Hi", { encoding: "float" }), "encoding", "encodingFormat"],
    [() => c.tokenize("Hi", { special_tokens: false }), "special_tokens", "specialTokens"],
    [() => c.similar(3, { K: 2 }), "K", "k"],
    [() => c.embed([1], { colour: "red" }), "colour", null],
  ];
  for (const [call, name, hint] of cases) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof TypeError, String(e));
      assert.match(e.message, new RegExp(`'${name}'`));
      assert.match(e.message, /valid: /);
      if (hint) assert.ok(e.message.includes(`'${name}' (did you mean ${hint}?)`), e.message);
      else assert.ok(!e.message.includes("did you mean"), e.message);
      return true;
    });
  }
  await assert.rejects(c.embed([1], { padid: 0, foo: 1 }), (e) => {
    assert.match(e.message, /unknown options 'padid' \(did you mean padId\?\), 'foo'/);
    for (const o of ["startPosition", "positions", "padId", "dtype", "encodingFormat",
      "truncate", "truncationDirection", "specialTokens", "maxLength", "stride", "accept"])
      assert.ok(e.message.includes(o), o);
    return true;
  });
  assert.throws(() => new Client(url, { apikey: "x" }), /did you mean apiKey/);
  for (const opts of [{ accept: "xml" }, { encodingFormat: "hex" }, { truncationDirection: "up" }])
    await assert.rejects(c.embed("Hi", opts), TypeError);
});

test("a browser's bare 'Failed to fetch' is reported with the --cors-origin hint", async () => {
  const real = globalThis.fetch;
  try {
    for (const msg of ["Failed to fetch",
      "NetworkError when attempting to fetch resource.", "Load failed"]) {
      globalThis.fetch = async () => { throw new TypeError(msg); };
      await assert.rejects(new Client("http://tokvec.example:8080").embed("Hi"), (e) => {
        assert.ok(e instanceof TokvecError);
        assert.equal(e.status, 0);
        assert.equal(e.errorType, "connection_error");
        assert.ok(e.message.includes(msg), e.message);
        assert.match(e.message, /--cors-origin/);
        assert.match(e.message, /http:\/\/tokvec\.example:8080/);
        assert.ok(e.cause instanceof TypeError);
        return true;
      });
    }
  } finally {
    globalThis.fetch = real;
  }
});
