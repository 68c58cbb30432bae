// sentence-ids.js -- the reference token ids of the static-model tests
// (tests/e2e/test_static_models.py): Hugging Face tokenizers (npm
// "tokenizers", HF's Rust library as a native Node module, pinned by
// tests/oracle/package-lock.json) encodes each text with
// add_special_tokens false, as Model2Vec's StaticModel.tokenize and
// sentence-transformers' StaticEmbedding call it.
//
//   python3 tests/e2e/test_static_models.py --requests |
//     NODE_PATH=build/oracle/node_modules node tests/oracle/hf/sentence-ids.js
//
// (`make sentence-ids` does that and writes the answer to
// tests/data/model2vec-rs/hf-ids.json.) Input on stdin: one JSON object
// {"tokenizers": {NAME: {"path": FILE, "sha256": HEX}},
//  "texts": {NAME: [TEXT, ...]}}. Output on stdout: {NAME: {"sha256":
// HEX, "ids": {SHA1-OF-TEXT: [id, ...]}}} -- texts are keyed by the hex
// SHA-1 of their UTF-8 bytes, so long texts are not stored twice.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const hf = require('tokenizers');

async function main() {
    const req = JSON.parse(fs.readFileSync(0, 'utf8'));
    const out = {};
    for (const [name, t] of Object.entries(req.tokenizers)) {
        const tok = hf.Tokenizer.fromFile(t.path);
        const texts = req.texts[name];
        const encs = await tok.encodeBatch(texts, { addSpecialTokens: false });
        const ids = {};
        texts.forEach((text, i) => {
            const key = crypto.createHash('sha1').update(text, 'utf8')
                .digest('hex');
            ids[key] = Array.from(encs[i].getIds());
        });
        out[name] = { sha256: t.sha256, ids };
    }
    process.stdout.write(JSON.stringify(out, null, 0) + '\n');
}

main().catch((e) => {
    console.error(e);
    process.exit(2);
});
