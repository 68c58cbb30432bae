// oracle.js -- tokvec's tokenizer against tiktoken (npm: the Rust core as
// WASM), text by text, zero differences allowed.
//
//   node oracle.js exhaustive --tokvec BIN --encoding gpt2 --tokenizer PATH
//       every Unicode scalar value c in "a"+c+"b", " "+c, c+c, "1"+c
//   node oracle.js corpus --tokvec BIN --encoding gpt2 --tokenizer PATH F...
//       each file whole, by paragraphs and by lines, plus built-in texts
//       (scripts, emoji, marks, white space, contractions, digits,
//       <|endoftext|> variants, random strings), with and without specials
//   node oracle.js tiktoken-file ENCODING OUT
//       writes tiktoken's ranks for ENCODING as a .tiktoken file
//
// Texts go to one `tokvec tokenize --jsonl` process per batch (one JSON
// string a line in, one id array a line out). Exit 1 on any difference,
// printing the first ones with their code points.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const tiktoken = require('tiktoken');

function args(argv) {
    const o = { files: [] };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a.startsWith('--')) o[a.slice(2)] = argv[++i];
        else o.files.push(a);
    }
    return o;
}

function tokvec(opt, texts, special) {
    const input = texts.map((t) => JSON.stringify(t)).join('\n') + '\n';
    const argv = ['tokenize', '--jsonl', '--tokenizer', opt.tokenizer];
    if (opt.pattern) argv.push('--pattern', opt.pattern);
    if (!special) argv.push('--no-special');
    const r = spawnSync(opt.tokvec, argv, {
        input, maxBuffer: 1 << 30, encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`tokvec exited ${r.status}: ${r.stderr}`);
    const lines = r.stdout.split('\n');
    lines.pop();
    if (lines.length !== texts.length)
        throw new Error(`tokvec gave ${lines.length} answers for ${texts.length}`);
    return lines;
}

function show(t) {
    return JSON.stringify(t.length > 60 ? t.slice(0, 60) + '...' : t) + ' [' +
        Array.from(t.slice(0, 8)).map((c) => 'U+' + c.codePointAt(0)
            .toString(16).toUpperCase().padStart(4, '0')).join(' ') + ']';
}

// Compares one batch; returns the number of differences.
function compare(opt, enc, texts, special, report) {
    const got = tokvec(opt, texts, special);
    let bad = 0;
    for (let i = 0; i < texts.length; i++) {
        const want = '[' + (special ? enc.encode(texts[i], 'all')
            : enc.encode_ordinary(texts[i])).join(',') + ']';
        if (got[i] !== want) {
            bad++;
            if (report.shown++ < 20)
                console.log(`DIFF ${special ? 'all' : 'ordinary'} ${show(texts[i])}\n` +
                    `  tiktoken ${want}\n  tokvec   ${got[i]}`);
        }
    }
    return bad;
}

function exhaustive(opt, enc) {
    const report = { shown: 0 };
    let bad = 0, n = 0, batch = [];
    const flush = () => {
        bad += compare(opt, enc, batch, true, report);
        n += batch.length;
        batch = [];
    };
    for (let cp = 0; cp <= 0x10ffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const c = String.fromCodePoint(cp);
        batch.push('a' + c + 'b', ' ' + c, c + c, '1' + c);
        if (batch.length >= 200000) flush();
    }
    flush();
    console.log(`exhaustive ${opt.encoding}: ${n} texts, ${bad} differences`);
    return bad;
}

function rng(seed) {
    let s = seed >>> 0;
    return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}

function builtins() {
    const t = [
        'Hello, do you like tea? <|endoftext|> In the sunlit terracesof someunknownPlace.',
        "I'm, you're, he's, we've, they'll, I'd, don't; I'M YOU'RE HE'S WE'VE THEY'LL I'D DON'T",
        "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'Re 'rE ''s '''ll x's X'S 1's 'ſ",
        '<|endoftext|><|endoftext|>x<|endoftext|> <|endoftext|>\n<|endoftext|>',
        '<|endoftext|', '<|endoftext', '|endoftext|>', '<||endoftext|>',
        '<|ENDOFTEXT|>', '< |endoftext|>', '<|endoftext|>>', '<<|endoftext|>',
        '<|fim_prefix|><|fim_middle|><|fim_suffix|><|endofprompt|>',
        '0 1 12 123 1234 12345 123456 1,234,567.89 3.14159 ٠١٢٣٤٥٦٧٨٩ ①②③ ½¾ Ⅻ 𝟘𝟙𝟚',
        'Привет, как дела? Ελληνικά κείμενα. עברית טקסט. العربية نص. हिन्दी पाठ।',
        '中文文本测试。日本語のテキストです。한국어 텍스트입니다. ภาษาไทย ລາວ ᠮᠣᠩᠭᠣᠯ',
        'e\u0301 a\u0308\u0304 \u0915\u094d\u0937 Z\u0351\u0352\u0353\u0354 \u0300\u0301',
        '👨‍👩‍👧‍👦 👍🏽 🏳️‍🌈 🇺🇳 ❤️ 🧑🏿‍🚀 #️⃣ 👁‍🗨 ✌︎ a👍b',
        ' \t\n\r\x0b\x0c\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005' +
            '\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u180e\u200b\ufeff',
        'a  b   c\n\nd \n e\t\tf \r\n g\u3000\u3000h   ', '   ', '\n\n\n', ' \n ', 'x ',
        'CamelCaseWordsAndALLCAPS mixedUPPERlower ÀÉÎÕÜ àéîõü ǅǈǋ ﬁﬂ ß ẞ',
        'path/to/file.c\n//comment\r\n/* c */ a//b ./x ../y', '',
        'http://example.com/a?b=c&d=e#f user@example.org $100 €20 ¥30 100%',
        '\u0000\u0001\u001f\u007f\u0080\u009f', '\uFFFD\uFFFE\uFFFF\u{10FFFF}\u{E0001}',
    ];
    const r = rng(17);
    const alphabet = [...'aZ09 \t\n\r\'"<|>!?.,;:/-_ésßЖж中あ한🙂\u0301\u00a0\u3000\u2028'];
    for (let k = 0; k < 2000; k++) {
        let s = '';
        const n = 1 + Math.floor(r() * 40);
        for (let i = 0; i < n; i++) {
            s += r() < 0.7 ? alphabet[Math.floor(r() * alphabet.length)]
                : String.fromCodePoint(Math.floor(r() * 0x30000) % 0xd800);
        }
        t.push(s);
    }
    t.push('a'.repeat(10000), ' '.repeat(10000), 'ab'.repeat(5000),
        '1'.repeat(1000), '\n'.repeat(1000), '!'.repeat(3000) + 'x');
    // Long pieces for tokvec's bucketed merge (tiktoken's own is quadratic:
    // these cost it ~0.4 s each): 20000 random letters (one word) and
    // o200k's worst case, runs of 100 spaces and a newline (one piece).
    let word = '';
    for (let i = 0; i < 20000; i++)
        word += 'abcdefghijklmnopqrstuvwxyz'[Math.floor(r() * 26)];
    t.push(word, (' '.repeat(100) + '\n').repeat(200));
    return t;
}

function corpus(opt, enc) {
    let texts = builtins();
    for (const f of opt.files) {
        let s;
        try {
            s = fs.readFileSync(f);
        } catch (e) {
            continue;
        }
        if (f.endsWith('.gz')) s = require('zlib').gunzipSync(s);
        s = s.toString('utf8');
        texts.push(s);
        for (const para of s.split('\n\n')) texts.push(para);
        for (const line of s.split('\n')) if (line) texts.push(line);
    }
    texts = texts.filter((t) => t.length < (1 << 22));
    const report = { shown: 0 };
    let bad = 0;
    for (const special of [true, false]) {
        for (let i = 0; i < texts.length; i += 20000)
            bad += compare(opt, enc, texts.slice(i, i + 20000), special, report);
    }
    const bytes = texts.reduce((a, t) => a + Buffer.byteLength(t), 0);
    console.log(`corpus ${opt.encoding}: ${texts.length} texts (${bytes} bytes) ` +
        `x 2 (all, ordinary), ${bad} differences`);
    return bad;
}

function tiktokenFile(name, out) {
    const j = require(path.join(path.dirname(require.resolve('tiktoken')),
        'encoders', name + '.json'));
    const lines = [];
    let rank = 0;
    for (const line of j.bpe_ranks.split('\n')) {
        const f = line.split(' ');
        for (let i = 0; i < f.length; i++) {
            if (f[i] === '!') {
                rank = Number(f[++i]);
                continue;
            }
            if (f[i]) lines.push(`${f[i]} ${rank++}`);
        }
    }
    fs.writeFileSync(out, lines.join('\n') + '\n');
}

function main() {
    const mode = process.argv[2];
    const opt = args(process.argv.slice(3));
    if (mode === 'tiktoken-file') return tiktokenFile(opt.files[0], opt.files[1]);
    const enc = tiktoken.get_encoding(opt.encoding || 'gpt2');
    const bad = mode === 'exhaustive' ? exhaustive(opt, enc) : corpus(opt, enc);
    enc.free();
    process.exit(bad ? 1 : 0);
}

// hf.js reuses the built-in texts.
if (require.main === module) main();
module.exports = { builtins, rng, show };
