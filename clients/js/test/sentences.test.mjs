// embedSentences against a served static model: TOKVEC_MODEL_URL names
// the server (tests/e2e/test_clients.py starts it on the model2vec-rs
// float32 fixture, key TOKVEC_MODEL_KEY) and TOKVEC_SENTENCE_REFS a JSON
// file of texts and their float64 reference vectors (Model2Vec's
// StaticModel.encode, computed by tests/e2e/static_ref.py): normalized,
// raw (normalize false) and the first component alone (dimensions 1).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client, TokvecError } from "../tokvec.mjs";

const url = process.env.TOKVEC_MODEL_URL;
const key = process.env.TOKVEC_MODEL_KEY;
const refs = process.env.TOKVEC_SENTENCE_REFS
  ? JSON.parse(readFileSync(process.env.TOKVEC_SENTENCE_REFS, "utf8")) : null;
const skip = !url || !refs;
const c = new Client(url || "http://127.0.0.1:1", { apiKey: key });

function close(rows, want, what) {
  assert.equal(rows.length, want.length, what);
  rows.forEach((row, i) => {
    assert.ok(row instanceof Float32Array, what);
    assert.equal(row.length, want[i].length, `${what} row ${i}`);
    row.forEach((x, j) => assert.ok(Math.abs(x - want[i][j]) <= 1e-5,
      `${what} row ${i} [${j}]: ${x} vs ${want[i][j]}`));
  });
}

const bits = (rows) => rows.map((r) => Array.from(new Uint32Array(
  r.buffer.slice(r.byteOffset, r.byteOffset + r.byteLength))));

test("embedSentences gives StaticModel.encode's vectors, (N, D) rows", { skip },
  async () => {
    const rows = await c.embedSentences(refs.texts);
    close(rows, refs.vectors, "default");
    assert.equal(rows[0].length, refs.dim);
    const one = await c.embedSentences(refs.texts[1]);
    assert.deepEqual(bits(one), bits(rows.slice(1, 2)));
    const named = await c.embedSentences(refs.texts, { model: "any-name" });
    assert.deepEqual(bits(named), bits(rows));
  });

test("embedSentences normalize and dimensions", { skip }, async () => {
  close(await c.embedSentences(refs.texts, { normalize: false }), refs.raw,
    "normalize false");
  close(await c.embedSentences(refs.texts, { dimensions: 1 }), refs.first1,
    "dimensions 1");
  close(await c.embedSentences(refs.texts, { normalize: true,
    dimensions: 1 }), refs.first1, "normalize true, dimensions 1");
  // the model normalizes: /embed's pooled vectors are /v1's bit for bit
  assert.deepEqual(bits(await c.embedSentences(refs.texts,
    { normalize: true })), bits(await c.embedSentences(refs.texts)));
});

test("embedSentences refuses unknown options and reports the server's errors",
  { skip }, async () => {
    await assert.rejects(c.embedSentences(["a"], { normalise: true }),
      /unknown option 'normalise' \(did you mean normalize\?\); valid: normalize, dimensions, model/);
    await assert.rejects(c.embedSentences(["a"], { pooling: "mean" }),
      TypeError);
    await assert.rejects(c.embedSentences(3), TypeError);
    await assert.rejects(c.embedSentences(["a"], { normalize: "yes" }),
      TypeError);
    for (const [call, status, type] of [
      [() => c.embedSentences(""), 400, "invalid_request"],
      [() => c.embedSentences(["a"], { dimensions: refs.dim + 1 }), 400,
        "invalid_request"],
      [() => c.embedSentences(["a"], { normalize: false,
        dimensions: refs.dim + 1 }), 400, "invalid_request"],
      [() => new Client(url).embedSentences(["a"]), 401, "unauthorized"],
    ]) {
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof TokvecError);
        assert.equal(e.status, status);
        assert.equal(e.errorType, type);
        assert.ok(e.detail);
        return true;
      });
    }
  });
