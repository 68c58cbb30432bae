// unigram.js -- Hugging Face tokenizers (npm "tokenizers", the Rust
// library with its native Node binding) as the oracle of tokvec's Unigram
// model, Metaspace and Precompiled stages (core/tokenizer/unigram.c,
// metaspace.c, precompiled.c). Writes what HF computes, stage by stage,
// one JSON object a line, for tools/uni_check.c to compare:
//
//   node unigram.js --tokenizer FILE [--out OUT] [FILE...]
//
// Texts: built-in edge cases (CJK, combining marks, runs of unknown
// characters, emoji and other byte-fallback input, white space, long
// words and long runs), then each FILE's lines and paragraphs. Per text:
//   text   the input
//   ids    the whole pipeline's ids (no special tokens added)
//   norm   the tokenizer's normalizer on text (text when it has none)
//   pre    its pre-tokenizer on norm: [[piece, [start, end]], ...]
//   model  per piece of pre, the ids of the model alone on it, and
//   moff   their offsets (code points, within the piece)
//   pc     the Precompiled normalizer alone on text (when the file has one)
//   ms     Metaspace alone on text, per "scheme/split": [[piece, [s, e]]]
//   dec    per scheme, the Metaspace decoder on the pipeline's tokens
//   toks   the pipeline's tokens
// --spm MODEL also runs SentencePiece (Debian's spm_encode) on the texts
// and prints how many ids differ from HF's, and the first ones; this is
// information only (added tokens, HF's per-cluster normalization and its
// tie-breaking differ from SentencePiece 0.1.97 by design).
'use strict';
const fs = require('fs');
const { spawnSync } = require('child_process');
const t = require('tokenizers');

function args(argv) {
    const o = { files: [] };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i].startsWith('--')) o[argv[i].slice(2)] = argv[++i];
        else o.files.push(argv[i]);
    }
    return o;
}

function builtins() {
    const x = [
        'Hello world', 'hello', ' leading space', 'trailing space ',
        'two  spaces', '   ', ' ', 'a', 'The quick brown fox jumps.',
        '漢字かな交じり文', '中文测试，标点。', '한국어 텍스트', 'ﾊﾝｶｸ ｶﾀｶﾅ',
        'e\u0301 a\u0300\u0301 o\u0308\u0304', 'ﬁ ﬂ ① ㈱ ™ ½ Ⅻ',
        'Ａｂｃ　全角', '\u00ad soft\u00adhyphen', 'zero\u200bwidth',
        '😀😃 👍🏽 👨‍👩‍👧 🇫🇷🇩🇪', 'x😀y', '\u0915\u094d\u0937 हिन्दी',
        'العربية نص', 'עברית', 'Ελληνικά', 'русский текст',
        '\t tab\nnewline\r\ncrlf', 'ʼn ǆ ǅ', '₀₁₂ ²³', 'A\u030a \u212b',
        '<unk> <s> </s> <0x41>', '\u2581 already \u2581\u2581 meta',
        '��', '\ud7ff\ue000\uffff', '\u{10ffff}\u{1f9ff}\u{e0041}',
        'supercalifragilisticexpialidocious',
        'pneumonoultramicroscopicsilicovolcanoconiosis',
    ];
    // runs: unknown characters, one long word, byte-fallback emoji
    x.push('\u{1f600}'.repeat(300));
    x.push('\u4e00\u4e8c\u4e09\u{20000}\u{2a6d6}'.repeat(200));
    x.push('a'.repeat(5000));
    x.push('the'.repeat(2000));
    x.push('ab'.repeat(1000) + ' ' + 'xyz'.repeat(700));
    x.push(Array.from({ length: 400 }, (_, i) =>
        String.fromCodePoint(0x3400 + i * 37)).join(''));
    // every 97th code point of the BMP and a few planes, in short strings
    let s = '';
    for (let c = 0x20; c < 0x30000; c += 97) {
        if (c >= 0xd800 && c < 0xe000) continue;
        s += String.fromCodePoint(c);
        if (s.length > 40) { x.push(s); x.push('a' + s + ' b'); s = ''; }
    }
    // every code point below U+30000 (surrogates aside), 48 a text
    s = '';
    for (let c = 0; c < 0x30000; c++) {
        if (c >= 0xd800 && c < 0xe000) continue;
        s += String.fromCodePoint(c);
        if (s.length >= 48) { x.push(s); s = ''; }
    }
    // short clusters: letters, compatibility characters and emoji with
    // combining marks, variation selectors, ZWJ (clusters under 6 bytes
    // are looked up whole by Precompiled)
    const base = ['a', 'e', 'Z', '\u00e9', '\u00df', '\uff21', '\ufb01',
        '\u2460', '\u00bd', '\u0130', '\u1100', '\uac00', '\u0915',
        '\u00a9', '\u2122', '\u{1f600}', '\u{1f1eb}', '\r', ' ', '0'];
    const marks = ['\u0300', '\u0301', '\u0308', '\u0327', '\u20dd',
        '\u3099', '\ufe0f', '\u200d', '\u200c', '\u094d', '\u1161',
        '\u11a8', '\u{1f3fd}', '\u{1f1f7}', '\n', '\u0600'];
    for (const b of base) {
        let line = '';
        for (const m of marks) {
            line += b + m + ' ' + m + b + ' ' + b + m + m + ' ';
        }
        x.push(line);
    }
    return x;
}

function texts(files) {
    const out = builtins();
    for (const f of files) {
        const body = fs.readFileSync(f, 'utf8');
        for (const p of body.split(/\n\s*\n/)) if (p.trim()) out.push(p);
        for (const l of body.split('\n')) if (l.trim()) out.push(l);
    }
    return out;
}

function findPrecompiled(n) {
    if (!n) return null;
    if (n.type === 'Precompiled') return n;
    if (n.type === 'Sequence')
        for (const m of n.normalizers) {
            const r = findPrecompiled(m);
            if (r) return r;
        }
    return null;
}

// SentencePiece's own ids (Debian's spm_encode) against HF's for the texts
// spm_encode can take (one line each: no line breaks, no NUL).
function spmCompare(model, rows) {
    rows = rows.filter((r) => !/[\n\r\0\u2028\u2029\u0085]/.test(r.text));
    const r = spawnSync('spm_encode', ['--model=' + model,
        '--output_format=id'], {
        input: rows.map((x) => x.text).join('\n') + '\n',
        maxBuffer: 1 << 30, encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error('spm_encode: ' + r.stderr);
    const got = r.stdout.split('\n');
    let bad = 0;
    for (let i = 0; i < rows.length; i++) {
        const want = rows[i].ids.join(' ');
        if (got[i] !== want && ++bad <= 5)
            console.error('SPM DIFF ' + JSON.stringify(rows[i].text.slice(0, 80)) +
                '\n  hf:  ' + want.slice(0, 200) + '\n  spm: ' + got[i].slice(0, 200));
    }
    console.log(`  sentencepiece vs HF ids   ${rows.length} compared, ${bad} differ` +
        ' (informative: HF is the reference)');
}

async function main() {
    const o = args(process.argv.slice(2));
    const json = JSON.parse(fs.readFileSync(o.tokenizer, 'utf8'));
    const tok = t.Tokenizer.fromFile(o.tokenizer);
    // the model alone: no normalizer, pre-tokenizer, post-processor or
    // added tokens
    const bare = Object.assign({}, json, {
        normalizer: null, pre_tokenizer: null, post_processor: null,
        added_tokens: [], decoder: null,
    });
    const model = t.Tokenizer.fromString(JSON.stringify(bare));
    const pcj = findPrecompiled(json.normalizer);
    const pc = pcj ? t.precompiled(Array.from(
        Buffer.from(pcj.precompiled_charsmap, 'base64'))) : null;
    const norm = tok.getNormalizer();
    const pre = tok.getPreTokenizer();
    const ms = {}, dec = {};
    for (const sc of ['always', 'first', 'never']) {
        for (const sp of [true, false])
            ms[sc + '/' + sp] = t.metaspacePreTokenizer('\u2581', sc, sp);
        dec[sc] = t.metaspaceDecoder('\u2581', sc, true);
    }
    const out = [];
    for (const text of texts(o.files)) {
        const e = await tok.encode(text, null, { addSpecialTokens: false });
        const r = { text, ids: e.getIds() };
        r.norm = norm ? norm.normalizeString(text) : text;
        r.pre = pre ? pre.preTokenizeString(r.norm)
            : [[r.norm, [0, Array.from(r.norm).length]]];
        r.model = [];
        r.moff = [];
        for (const [p] of r.pre) {
            const m = await model.encode(p, null, { addSpecialTokens: false });
            r.model.push(m.getIds());
            r.moff.push(m.getOffsets());
        }
        if (pc) r.pc = pc.normalizeString(text);
        r.ms = {};
        for (const k of Object.keys(ms)) r.ms[k] = ms[k].preTokenizeString(text);
        r.dec = {};
        const toks = e.getTokens();
        for (const k of Object.keys(dec)) r.dec[k] = dec[k].decode(toks);
        r.toks = toks;
        out.push(JSON.stringify(r));
    }
    if (o.spm) spmCompare(o.spm, out.map((l) => JSON.parse(l)));
    const body = out.join('\n') + '\n';
    if (o.out) fs.writeFileSync(o.out, body);
    else process.stdout.write(body);
}

main().catch((e) => { console.error(e); process.exit(1); });
