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
