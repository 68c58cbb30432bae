// wppeer.js -- the npm peer of `tokvec tokenize --jsonl` for WordPiece, as
// a whole process: read FILE (one JSON string a line), encode every line
// with Hugging Face tokenizers' encodeBatch (its default thread pool,
// add_special_tokens false), print one id array a line (as tokvec does).
// Usage: node wppeer.js TOKENIZER.json FILE
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');
const [tokFile, file] = process.argv.slice(2);
(async () => {
    const tok = Tokenizer.fromFile(tokFile);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.pop();
    const texts = lines.map((l) => JSON.parse(l));
    const encs = await tok.encodeBatch(texts, { addSpecialTokens: false });
    const out = encs.map((e) => '[' + e.getIds().join(',') + ']');
    process.stdout.write(out.join('\n') + '\n');
})();
