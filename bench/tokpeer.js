// tokpeer.js -- the npm peers of `tokvec tokenize`, as whole processes:
// read FILE, encode it with GPT-2's tokenizer, print the ids as one JSON
// array (as tokvec does). Usage: node tokpeer.js tiktoken|gpt-tokenizer FILE
'use strict';
const fs = require('fs');
const [peer, file] = process.argv.slice(2);
const text = fs.readFileSync(file, 'utf8');
let ids;
if (peer === 'tiktoken') {
    const enc = require('tiktoken').get_encoding('gpt2');
    ids = enc.encode(text, 'all');
} else {
    const { encode } = require('gpt-tokenizer/encoding/gpt2');
    ids = encode(text, { allowedSpecial: new Set(['<|endoftext|>']) });
}
process.stdout.write('[' + Array.from(ids).join(',') + ']\n');
