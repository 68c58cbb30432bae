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
