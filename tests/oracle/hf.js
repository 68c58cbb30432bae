// hf.js -- tokvec's WordPiece and Unigram tokenizers against Hugging Face tokenizers
// (npm "tokenizers": HF's Rust library as a native Node module), text by
// text: ids with add_special_tokens false and true, and offsets (and the
// ids of a run without --offsets). Zero differences allowed; HF wins.
//
//   node hf.js check --tokvec BIN --tokenizer FILE [--exhaustive 1] F...
//       the built-in texts of oracle.js, Unicode edge cases (CJK blocks,
//       marks in and out of canonical order, controls, format and
//       zero-width characters, accents, words around
//       max_input_chars_per_word), each file whole, by paragraphs and by
//       lines; --exhaustive adds every Unicode scalar value c in
//       "a"+c+"b", c+c and "É"+c+" x"; --metaspace-variants 1 checks
//       the tokenizer with its Metaspace (pre-tokenizer and decoder) set
//       to each prepend_scheme (always, first, never) and split (true,
//       false) instead; --bert-variants 1 checks the tokenizer (a
//       BertNormalizer) as it is and with each of its flags changed, on
//       the built-in texts, the edge cases and the characters of
//       tableTexts in four contexts; --added-variant 1 checks the
//       tokenizer with added tokens of every option (lstrip, rstrip, single_word,
//       normalized, special: addedVariant) appended, on texts that put
//       them next to spaces, punctuation, word characters and each other,
//       and once more with its special tokens taken out of added_tokens
//       against tokvec's --no-special (HF's encode_special_tokens, which
//       the Node binding does not offer: the same where no special
//       token's text overlaps another token's, as in these); --fast 1:
//       a sixth of those texts (chosen at random, the same each run), and
//       without --added-variant the built-in texts and edge cases alone;
//       --added-variant with --exhaustive: every Unicode scalar value
//       beside single_word, lstrip and rstrip tokens
//   --ids-only 1: compare ids alone (byte-level BPE, whose offsets are
//       tokvec's own)
//   node hf.js bytelevel --out FILE encoder.json vocab.bpe
//       writes GPT-2's BPE as HF's byte-level tokenizer.json
//   node hf.js train --out FILE F...
//       trains a WordPiece tokenizer on the files with HF's trainer (NFKC,
//       Lowercase; WhitespaceSplit, Punctuation, Digits), adds [UNK],
//       [CLS], [SEP], a template post-processor and a WordPiece decoder,
//       and writes its tokenizer.json
//
// HF's Node binding reports offsets in code points; they are turned into
// the UTF-8 byte offsets tokvec reports before comparing. Texts go to
// `tokvec tokenize --jsonl --offsets` ([id, start, stop] per token).
'use strict';
const fs = require('fs');
const { spawnSync } = require('child_process');
const hf = require('tokenizers');
const { builtins, rng, show } = require('./oracle.js');

function args(argv) {
    const o = { files: [] };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a.startsWith('--')) o[a.slice(2)] = argv[++i];
        else o.files.push(a);
    }
    return o;
}

function tokvec(opt, texts, add) {
    const input = texts.map((t) => JSON.stringify(t)).join('\n') + '\n';
    const argv = ['tokenize', '--jsonl', '--tokenizer', opt.tokenizer];
    if (!opt['ids-only']) argv.push('--offsets');
    if (add) argv.push('--add-special');
    if (opt['no-special']) argv.push('--no-special');
    const r = spawnSync(opt.tokvec, argv, {
        input, maxBuffer: 1 << 30, encoding: 'utf8',
    });
    if (r.status !== 0)
        throw new Error(`tokvec exited ${r.status} (${r.signal || r.error}): ${r.stderr}`);
    const lines = r.stdout.split('\n');
    lines.pop();
    if (lines.length !== texts.length)
        throw new Error(`tokvec gave ${lines.length} answers for ${texts.length}`);
    return lines;
}

// Byte offset of each code point index of t (and of its end).
function byteAt(t) {
    const at = [0];
    let b = 0;
    for (const c of t) {
        const cp = c.codePointAt(0);
        b += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        at.push(b);
    }
    return at;
}

// With offsets, tokvec also runs without them (ids alone take paths of
// their own: a long Unigram stretch's pieces keep no spans), both
// compared with HF.
async function compare(opt, tok, texts, add, report) {
    const got = tokvec(opt, texts, add);
    const bare = opt['ids-only'] ? got
        : tokvec(Object.assign({}, opt, { 'ids-only': 1 }), texts, add);
    const encs = await tok.encodeBatch(texts, { addSpecialTokens: add });
    let bad = 0;
    for (let i = 0; i < texts.length; i++) {
        const ids = encs[i].getIds(), offs = encs[i].getOffsets();
        const at = byteAt(texts[i]);
        const wids = '[' + ids.map((id) =>
            opt.idmap && id in opt.idmap ? opt.idmap[id] : id).join(',') + ']';
        const want = opt['ids-only'] ? wids
            : '[' + ids.map((id, k) =>
            `[${opt.idmap && id in opt.idmap ? opt.idmap[id] : id},${at[offs[k][0]]},${at[offs[k][1]]}]`).join(',') + ']';
        for (const [w, g, what] of [[want, got[i], ''], [wids, bare[i], ' (ids alone)']])
            if (g !== w) {
                bad++;
                if (report.shown++ < 20)
                    console.log(`DIFF add_special=${add}${what} ${show(texts[i])}\n` +
                        `  hf     ${w.slice(0, 2000)}\n  tokvec ${g.slice(0, 2000)}`);
            }
    }
    return bad;
}

function edgeCases() {
    const t = [];
    const cjk = [[0x4e00, 0x9fff], [0x3400, 0x4dbf], [0x20000, 0x2a6df],
        [0x2a700, 0x2b73f], [0x2b740, 0x2b81f], [0x2b820, 0x2b91f],
        [0x2b920, 0x2ceaf], [0xf900, 0xfaff], [0x2f800, 0x2fa1f],
        [0x30000, 0x3134f], [0x3040, 0x30ff], [0xac00, 0xd7a3]];
    const r = rng(25);
    for (const [lo, hi] of cjk) {
        let s = '';
        for (let k = 0; k < 200; k++)
            s += String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1))) +
                (r() < 0.2 ? ' ' : r() < 0.1 ? 'ab' : '');
        t.push(s, String.fromCodePoint(lo) + 'x' + String.fromCodePoint(hi));
    }
    const marks = [0x300, 0x301, 0x308, 0x323, 0x327, 0x328, 0x31b, 0x345,
        0x5b0, 0x5c4, 0x65f, 0x93c, 0x94d, 0x3099, 0x309a, 0x1dc0, 0x20d0,
        0xfe20, 0x1d165, 0x1d16d, 0x302a, 0x1cf2, 0x111c9, 0x1734, 0xa9bd];
    const bases = ['a', 'e', 'o', 'A', 'ı', 'i', 'ſ', 'ω', 'α', 'ü', 'k',
        '\u1100', '\u1161', '\uac00', 'か', 'ا', 'क', ' ', '1', '.'];
    for (let k = 0; k < 3000; k++) {
        let s = '';
        const n = 1 + Math.floor(r() * 8);
        for (let i = 0; i < n; i++) {
            s += bases[Math.floor(r() * bases.length)];
            const m = Math.floor(r() * 4);
            for (let j = 0; j < m; j++)
                s += String.fromCodePoint(marks[Math.floor(r() * marks.length)]);
            if (r() < 0.3) s += ' ';
        }
        t.push(s);
    }
    const ctl = ['\u0000', '\u0001', '\u0009', '\u000a', '\u000b', '\u000c',
        '\u000d', '\u001f', '\u007f', '\u0085', '\u00ad', '\u061c', '\u180e',
        '\u200b', '\u200c', '\u200d', '\u200e', '\u200f', '\u2028', '\u2029',
        '\u202a', '\u202e', '\u2060', '\u2066', '\ufeff', '\ufff9', '\ufffd',
        '\ue000', '\u{f0000}', '\u{e0001}', '\u{e0020}', '\u3000', '\u00a0',
        '\u1680', '\u2007', '\u202f'];
    for (let k = 0; k < 2000; k++) {
        let s = '';
        const n = 1 + Math.floor(r() * 12);
        for (let i = 0; i < n; i++)
            s += r() < 0.5 ? ctl[Math.floor(r() * ctl.length)]
                : 'xÉé中,'[Math.floor(r() * 5)];
        t.push(s);
    }
    // words of thousands of tokens (a Unigram word's tokens are handed on
    // in batches as the Viterbi settles them): random letters; letters
    // with characters of two, three and four bytes; letters in a run of
    // characters no piece spells
    const longs = ['abcdefghijklmnopqrstuvwxyz', 'abcdeéüжщ中文字😀🎉xyz',
        'ab\u1200\u1201\u1202\u1203\u1204\u1205\u1206'];
    for (const a of longs) {
        const cs = Array.from(a);
        let s = '';
        for (let k = 0; k < 30000; k++) s += cs[Math.floor(r() * cs.length)];
        t.push(s);
    }
    // past 16 KB a Unigram text goes through the stages in pieces: words
    // across the cuts, and controls first (HF's spans after characters
    // that Precompiled drops at the start lag behind to the end)
    {
        let s = '\u0001\u0002\u0003\u0004\u0005\u0006', w = '';
        for (let k = 0; k < 40000; k++) {
            s += r() < 0.1 ? ' ' : r() < 0.01 ? '\u0001' : r() < 0.01 ? '.' :
                'abcdefghijklmnopqrstuvwxyz'[Math.floor(r() * 26)];
            w += 'abcdefghijklmnopqrstuvwxyz'[Math.floor(r() * 26)];
        }
        t.push(s, '\u0001\u0002' + w);
    }
    t.push('Ça va? Élève, naïve café, Ångström, Œuvre, façade, São Paulo, ' +
        'Dvořák, Łódź, İstanbul, ǅemal, ΆΈΉ, Ǻ, ḱ, ẞ ß ﬃ ① ㎏ ｶﾞ ﾊﾟ ™ ½',
    'ÀÁÂÃÄÅàáâãäå ÈÉÊËèéêë ÌÍÎÏìíîï ÒÓÔÕÖòóôõö ÙÚÛÜùúûü Ññ Çç Ÿÿ',
    'e\u0301 e\u0301\u0301 E\u0300\u0323 a\u0323\u0302 \u0301x',
    '[CLS] [SEP] [UNK] [MASK] [PAD] [cls] [CLS][SEP]x[SEP] a[UNK]b',
    // SentencePiece's control and user-defined pieces (added tokens), at
    // the start, the end and inside words: Metaspace's "first" scheme
    '<s>', '</s>', '<s>hello</s>', ' <s> x', 'a<s>b', '<sep>', 'x<sep>y',
    '<cls> <sep>  <s>', '<unk>', 'word<unk>', '<pad>', '<s><s></s>', '  <s>',
    'the<sep> cat <cls>sat', '<sep>\u2581x', '\u2581', '\u2581\u2581 \u2581a',
    ' ', '  ', '   x  ', 'x\u3000 y', '\u00a0\u00a0x', 'a\tb\nc\r\nd',
    // SentencePiece's charsmap: full width, compatibility, ligatures,
    // combining sequences of 6 bytes and more, emoji sequences
    '\uff21\uff22\uff23 \uff41\uff42 \uff11\uff12', '\u2460\u2461 \u3392 \ufb01\ufb02',
    'e\u0301\u0301\u0301', '\u1100\u1161\u11a8 \uac01',
    '\u{1f468}\u200d\u{1f469}\u200d\u{1f467} \u{1f1ef}\u{1f1f5} \u{1f44d}\u{1f3fd}',
    '\u0915\u094d\u0937 \u0e01\u0e33 \u0627\u0644\u0639\u0631\u0628\u064a\u0629',
    // long runs of marks out of canonical order (linear time in tokvec)
    'a' + '\u0301\u0323'.repeat(5000),
    'e' + '\u0323\u0301\u0302\u0316'.repeat(2000) + ' x\u0345\u0300 y');
    // words around max_input_chars_per_word (100 in both tokenizers)
    for (const n of [1, 50, 98, 99, 100, 101, 102, 200, 5000]) {
        t.push('a'.repeat(n), 'é'.repeat(n), 'x' + 'é'.repeat(n - 1),
            'ab'.repeat(n).slice(0, n), '中'.repeat(n), 'q'.repeat(n) + ' end',
            'the'.repeat(Math.ceil(n / 3)).slice(0, n), 'ǅ'.repeat(n),
            'ﬃ'.repeat(Math.ceil(n / 3)), 'i\u0307'.repeat(n));
    }
    return t;
}

function exhaustive() {
    const t = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const c = String.fromCodePoint(cp);
        t.push('a' + c + 'b', c + c, 'É' + c + ' x');
    }
    return t;
}

// The tokenizer's Metaspace set to scheme and split, in a file beside.
function metaspaceVariant(file, scheme, split) {
    const j = JSON.parse(fs.readFileSync(file, 'utf8'));
    const set = (m) => {
        if (m && m.type === 'Metaspace') {
            m.prepend_scheme = scheme;
            m.split = split;
            delete m.add_prefix_space;
        }
        for (const k of ['decoders', 'pretokenizers'])
            if (m && Array.isArray(m[k])) m[k].forEach(set);
    };
    set(j.pre_tokenizer);
    set(j.decoder);
    const out = require('os').tmpdir() +
        `/tokvec-hf-${process.pid}-${scheme}-${split}.json`;
    fs.writeFileSync(out, JSON.stringify(j));
    return out;
}

// The tokenizer with its BertNormalizer's flags set to v (clean_text,
// handle_chinese_chars, strip_accents, lowercase), into a temporary file.
function bertVariant(file, v, k) {
    const j = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (!j.normalizer || j.normalizer.type !== 'BertNormalizer')
        throw new Error(`${file}: no BertNormalizer`);
    Object.assign(j.normalizer, v);
    const out = require('os').tmpdir() +
        `/tokvec-hf-${process.pid}-bert-${k}.json`;
    fs.writeFileSync(out, JSON.stringify(j));
    return out;
}

// Characters through wordpiece.c's one-pass path (its table of
// U+0080..U+FFFF, four-byte ones computed as they come) in a word, beside
// ASCII, beside itself, beside an accented capital and after a space:
// every two-byte character; every fifth of three bytes and every one of
// the CJK compatibility block (NFD changes them); every 211th of four
// bytes and every one of the CJK compatibility supplement, the ends of
// handle_chinese_chars' ranges, Deseret (it has case), the musical
// symbols whose marks have a combining class, and emoji. fast: a sixth
// of the three- and four-byte ones.
function tableTexts(fast) {
    const cps = [];
    for (let cp = 0x80; cp < 0x800; cp++) cps.push(cp);
    const more = [];
    for (let cp = 0x800; cp < 0x10000; cp += 5)
        if (cp < 0xd800 || cp > 0xdfff) more.push(cp);
    for (let cp = 0xf900; cp <= 0xfaff; cp++) more.push(cp);
    for (let cp = 0x10000; cp <= 0x10ffff; cp += 211) more.push(cp);
    for (let cp = 0x2f800; cp <= 0x2fa1f; cp++) more.push(cp);
    for (const e of [0x3400, 0x4dbf, 0x4dc0, 0x4e00, 0x9fff, 0xa000,
        0x1ffff, 0x20000, 0x2a6df, 0x2a6e0, 0x2a700, 0x2b73f, 0x2b740,
        0x2b81f, 0x2b820, 0x2b91f, 0x2b920, 0x2ceaf, 0x2ceb0, 0x2f7ff,
        0x2fa20, 0x10fffd, 0x10ffff])
        more.push(e);
    for (let cp = 0x10400; cp < 0x10450; cp++) more.push(cp);
    for (let cp = 0x1d165; cp <= 0x1d172; cp++) more.push(cp);
    for (let cp = 0x1f600; cp < 0x1f650; cp++) more.push(cp);
    const pick = rng(17);
    for (const cp of more)
        if (!fast || pick() < 1 / 6) cps.push(cp);
    const t = [];
    for (const cp of cps) {
        const c = String.fromCodePoint(cp);
        t.push('a' + c + 'b', c + c, '\u00c9' + c + ' x', 'x ' + c + 'ing');
    }
    return t;
}

// Added tokens of every option: <T0>..<T31> (bit 1 lstrip, 2 rstrip,
// 4 single_word, 8 normalized, 16 special) and a few that real models
// have or that tell the two matchers apart: XLM-R's <mask> (lstrip,
// normalized special), words (single_word), ones the normalizer changes
// (case, accents, CJK spacing) and ones overlapping each other across
// the two passes ("zqj" in the input, "xzq" normalized).
function addedTokens() {
    const t = [];
    for (let c = 0; c < 32; c++)
        t.push([`<T${c}>`, c & 1, c & 2, c & 4, c & 8, c & 16]);
    t.push(['<mask>', 1, 0, 0, 1, 1], ['Yesterday', 0, 0, 1, 1, 0],
        ['qony', 0, 0, 1, 0, 0], ['zqj', 0, 0, 0, 0, 0], ['xzq', 0, 0, 0, 1, 0],
        ['Äpfel', 1, 1, 0, 1, 0], ['中文', 0, 0, 0, 1, 0],
        ['@@', 1, 1, 0, 0, 0], ['[Q]', 0, 1, 1, 1, 1], ['naïve', 0, 0, 1, 0, 0]);
    return t.map(([content, l, r, w, n, s]) => ({ content, lstrip: !!l,
        rstrip: !!r, single_word: !!w, normalized: !!n, special: !!s }));
}

// The tokenizer with addedTokens() appended (ids after the highest);
// noSpecial: its special added tokens left out.
function addedVariant(file, noSpecial) {
    const j = JSON.parse(fs.readFileSync(file, 'utf8'));
    let next = 0;
    for (const id of Object.values(j.model.vocab || {}))
        next = Math.max(next, id + 1);
    if (Array.isArray(j.model.vocab)) next = j.model.vocab.length;
    for (const a of j.added_tokens || []) next = Math.max(next, a.id + 1);
    // HF gives an added token that is in the vocabulary the vocabulary's
    // id, and the others the ids after it: those are left out
    const inVocab = (c) => Array.isArray(j.model.vocab)
        ? j.model.vocab.some((v) => v[0] === c) : c in j.model.vocab;
    j.added_tokens = (j.added_tokens || []).concat(addedTokens()
        .filter((a) => !inVocab(a.content))
        .map((a) => Object.assign({ id: next++ }, a)));
    if (noSpecial) j.added_tokens = j.added_tokens.filter((a) => !a.special);
    const out = require('os').tmpdir() +
        `/tokvec-hf-${process.pid}-added${noSpecial ? '-nosp' : ''}.json`;
    fs.writeFileSync(out, JSON.stringify(j));
    return out;
}

// Texts around the added tokens: each beside each context, repeated, at
// the start and the end, cased otherwise, and random mixes.
function addedTexts(fast, all) {
    const toks = addedTokens().map((a) => a.content);
    const ctx = ['', ' ', '  ', '\t', '\n', 'a', 'Z', 'é', '.', ',', '_',
        '-', '1', '　', ' ', '́', '中', "'", ' \t ', '<T3>',
        '<T17>', 'zqj', 'xzq'];
    const t = [];
    for (const c of toks) {
        const forms = [c, c.toLowerCase(), c.toUpperCase()];
        for (const f of forms)
            for (const l of ctx)
                for (const r of ctx) t.push(l + f + r);
        t.push(c + c, c + ' ' + c, c + c + c, ' ' + c + '  ' + c + ' ',
            'x' + c + 'y', 'the ' + c + ' end', c + '\u2000', '\u2000' + c);
    }
    const r = rng(7);
    const words = ['the', 'Yesterday', 'yesterday', 'phqony', 'qony', 'xab',
        'xzqj', 'naive', 'naïve', 'NAÏVE', 'Apfel', 'äpfel',
        '中文字', 'café', '12', '!?', '<', '>', 'T1', 'mask'];
    const seps = ['', ' ', '  ', '\t', '\n', '　', '.', '-'];
    for (let k = 0; k < 4000; k++) {
        let s = '';
        const n = 1 + Math.floor(r() * 8);
        for (let i = 0; i < n; i++) {
            const pool = r() < 0.5 ? toks : words;
            s += pool[Math.floor(r() * pool.length)] +
                seps[Math.floor(r() * seps.length)];
        }
        t.push(s);
    }
    // every scalar value beside single_word tokens (regex \\w) and
    // lstrip/rstrip ones (White_Space), in the input and normalized
    for (let cp = 0; all && cp <= 0x10ffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const c = String.fromCodePoint(cp);
        t.push(c + '<T4>', '<T12>' + c, c + '<T3>' + c, c + '<T11>' + c);
    }
    const pick = rng(11);
    return fast ? t.filter(() => pick() < 1 / 6) : t;
}

async function check(opt) {
    if (opt['added-variant']) {
        let bad = 0;
        const f = addedVariant(opt.tokenizer, false);
        const g = addedVariant(opt.tokenizer, true);
        try {
            for (const nosp of [false, true])
                bad += await check(Object.assign({}, opt, {
                    tokenizer: f, 'hf-tokenizer': nosp ? g : f,
                    'added-variant': undefined,
                    'no-special': nosp ? 1 : undefined,
                    'texts-only': addedTexts(opt.fast, opt.exhaustive),
                    exhaustive: undefined }));
        } finally {
            fs.unlinkSync(f);
            fs.unlinkSync(g);
        }
        return bad;
    }
    if (opt['bert-variants']) {
        // the file as it is, then one BertNormalizer flag changed at a
        // time (strip_accents: null follows lowercase), each also on
        // every two-byte character
        const vs = [{}, { clean_text: false }, { handle_chinese_chars: false },
            { strip_accents: false }, { strip_accents: true, lowercase: false },
            { lowercase: false }, { strip_accents: null, lowercase: false }];
        const pick = rng(13);
        const texts = builtins().concat(edgeCases())
            .filter(() => !opt.fast || pick() < 1 / 6);
        let bad = 0;
        for (let k = 0; k < vs.length; k++) {
            const f = bertVariant(opt.tokenizer, vs[k], k);
            try {
                console.log(`BertNormalizer ${JSON.stringify(vs[k])}:`);
                bad += await check(Object.assign({}, opt, {
                    tokenizer: f, 'bert-variants': undefined,
                    'texts-only': texts.concat(tableTexts(opt.fast)) }));
            } finally {
                fs.unlinkSync(f);
            }
        }
        return bad;
    }
    if (opt['metaspace-variants']) {
        let bad = 0;
        for (const scheme of ['always', 'first', 'never'])
            for (const split of [true, false]) {
                const f = metaspaceVariant(opt.tokenizer, scheme, split);
                try {
                    bad += await check(Object.assign({}, opt, {
                        tokenizer: f, 'metaspace-variants': undefined }));
                } finally {
                    fs.unlinkSync(f);
                }
            }
        return bad;
    }
    const tok = hf.Tokenizer.fromFile(opt['hf-tokenizer'] || opt.tokenizer);
    if (opt['hf-tokenizer'] !== opt.tokenizer && opt['hf-tokenizer']) {
        // HF numbers added tokens itself: the ids of the file's
        opt.idmap = {};
        const full = JSON.parse(fs.readFileSync(opt.tokenizer, 'utf8'));
        for (const a of full.added_tokens) {
            const id = tok.tokenToId(a.content);
            if (id !== null && id !== a.id) opt.idmap[id] = a.id;
        }
    }
    let texts = opt['texts-only'] ||
        builtins().concat(edgeCases());
    for (const f of opt['texts-only'] || opt.fast ? [] : opt.files) {
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
    if (opt.exhaustive) texts = texts.concat(exhaustive());
    texts = texts.filter((t) => t.length < (1 << 22));
    const report = { shown: 0 };
    let bad = 0;
    for (const add of [false, true])
        for (let i = 0; i < texts.length; i += 50000)
            bad += await compare(opt, tok, texts.slice(i, i + 50000), add, report);
    const bytes = texts.reduce((a, t) => a + Buffer.byteLength(t), 0);
    console.log(`hf ${opt.tokenizer}${opt['no-special'] ? ' --no-special' : ''}: ` +
        `${texts.length} texts (${bytes} bytes) ` +
        `x 2 (add_special_tokens false, true), ids${opt['ids-only'] ? '' :
            ' and offsets, and ids without --offsets'}, ${bad} differences`);
    return bad;
}

function train(opt) {
    const t = new hf.Tokenizer(hf.WordPiece.init({}, {
        unkToken: '[UNK]', continuingSubwordPrefix: '##',
    }));
    t.setNormalizer(hf.sequenceNormalizer([hf.nfkcNormalizer(), hf.lowercase()]));
    t.setPreTokenizer(hf.sequencePreTokenizer([hf.whitespaceSplitPreTokenizer(),
        hf.punctuationPreTokenizer(), hf.digitsPreTokenizer(true)]));
    const files = opt.files.filter((f) => {
        try {
            return fs.statSync(f).isFile() && !f.endsWith('.gz');
        } catch (e) {
            return false;
        }
    });
    t.train(files);
    const tmp = opt.out + '.tmp';
    t.save(tmp);
    const j = JSON.parse(fs.readFileSync(tmp, 'utf8'));
    fs.unlinkSync(tmp);
    const vocab = j.model.vocab;
    let next = Object.keys(vocab).length;
    j.added_tokens = [];
    for (const s of ['[UNK]', '[CLS]', '[SEP]']) {
        if (!(s in vocab)) vocab[s] = next++;
        j.added_tokens.push({ id: vocab[s], content: s, single_word: false,
            lstrip: false, rstrip: false, normalized: false, special: true });
    }
    j.post_processor = { type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } },
            { Sequence: { id: 'A', type_id: 0 } },
            { SpecialToken: { id: '[SEP]', type_id: 0 } }],
        pair: [{ Sequence: { id: 'A', type_id: 0 } },
            { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: {
            '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
            '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
        } };
    j.decoder = { type: 'WordPiece', prefix: '##', cleanup: true };
    fs.writeFileSync(opt.out, JSON.stringify(j));
    console.log(`trained ${opt.out}: ${next} tokens from ${files.length} files`);
}

// GPT-2's encoder.json and vocab.bpe as HF's byte-level BPE
// tokenizer.json (ByteLevel pre-tokenizer, no added tokens).
async function byteLevel(opt) {
    const m = await hf.BPE.fromFile(opt.files[0], opt.files[1], {});
    const t = new hf.Tokenizer(m);
    t.setPreTokenizer(hf.byteLevelPreTokenizer(false, true));
    t.save(opt.out);
}

async function main() {
    const mode = process.argv[2];
    const opt = args(process.argv.slice(3));
    if (mode === 'train') return train(opt);
    if (mode === 'bytelevel') return byteLevel(opt);
    const bad = await check(opt);
    process.exit(bad ? 1 : 0);
}

main().catch((e) => {
    console.error(e);
    process.exit(2);
});
