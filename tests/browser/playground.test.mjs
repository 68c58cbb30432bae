// playground.test.mjs -- the page at / and /docs in headless Chromium
// (Debian's /usr/bin/chromium driven by playwright-core; no browser is
// downloaded). Run by `make browser-test`:
//   TOKVEC_BINARY=build/tokvec SHOTS=build/browser node --test tests/browser/
// Starts `tokvec serve` on free loopback ports with a 50257x256 table made
// by `tokvec init`: one with GPT-2's tokenizer (TOKENIZER, default
// data/gpt2/ of `make data`), one with --api-key and no tokenizer. Checks
// what a person would: no console errors, no request to another origin,
// chips equal to /tokenize's (pieces, ids, byte offsets), non-blank plots,
// the view switch, the neighbours equal to /similar's, inert hostile token
// text, /docs listing every route, the key asked for before any keyed
// request and sent as Bearer, the page usable at 360 and 1920 px and by
// keyboard; an error clears the views it replaced, PCA labels that never
// overlap, the heatmap's axes, the notice on a table `tokvec init` made
// (its neighbours mean nothing), and the sentences mode on a served model
// (`--model tests/data/model2vec-rs/test-model-float32`: the cosine matrix
// and nearest tokens of /v1/embeddings' vectors). Writes screenshots.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const TOP = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BINARY = resolve(TOP, process.env.TOKVEC_BINARY || 'build/tokvec');
const SHOTS = resolve(TOP, process.env.SHOTS || 'build/browser');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TOKENIZER = resolve(TOP, process.env.TOKENIZER || 'data/gpt2');
const BOOK_TEXT = 'Your journey starts with one step';
const BOOK_IDS = [7120, 7002, 4940, 351, 530, 2239];
const KEY = 'k3y-for-the-browser-test';

let dir, browser;
const servers = [];
let base;    // with the tokenizer, no key
let keyBase; // with --api-key, ids only
let modelBase; // --model: a Model2Vec model, --max-batch 6
const MODEL = join(TOP, 'tests', 'data', 'model2vec-rs', 'test-model-float32');

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
  });
}

async function api(path, body, at = base, headers = {}) {
  const r = await fetch(at + path, body === undefined ? { headers } : {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

// `tokvec serve --table table ...args` (no --table when table is null) on
// a free port; its base URL.
async function serve(name, table, args) {
  const port = await freePort();
  const at = `http://127.0.0.1:${port}`;
  const logPath = join(dir, name + '.log');
  const log = openSync(logPath, 'w'); // the access log
  // its settings are the arguments alone: no TOKVEC_* variable of ours
  const env = Object.fromEntries(Object.entries(process.env)
    .filter(([k]) => !k.startsWith('TOKVEC_')));
  const proc = spawn(BINARY, ['serve', ...(table ? ['--table', table] : []),
                              '--port', String(port), ...args],
                     { stdio: ['ignore', 'ignore', log], env });
  servers.push(proc);
  for (let i = 0; ; i++) {
    try { if ((await fetch(at + '/health')).ok) break; } catch (e) { /* not yet */ }
    if (i > 200 || proc.exitCode !== null)
      throw new Error('tokvec serve did not come up: ' + readFileSync(logPath, 'utf8'));
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return at;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tokvec-browser-'));
  mkdirSync(SHOTS, { recursive: true });
  const table = join(dir, 't.safetensors');
  execFileSync(BINARY, ['init', '--vocab', '50257', '--dim', '256', '--context', '1024',
    '--positional', 'learned', '--seed', '123', '-o', table], { stdio: 'ignore' });
  base = await serve('serve', table, ['--tokenizer', TOKENIZER]);
  // no tokenizer there (not even the built-in default): ids mode
  keyBase = await serve('serve-key', table, ['--api-key', KEY, '--tokenizer', '']);
  modelBase = await serve('serve-model', null, ['--model', MODEL, '--max-batch', '6']);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
  });
});

after(async () => {
  if (browser) await browser.close();
  for (const p of servers) p.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// A page that records console errors, page errors and every request
// (log.requests: URLs; log.sent: {url, auth} with the Authorization header).
async function open(path, width = 1280, setup, at = base) {
  const page = await browser.newPage({ viewport: { width, height: width > 1000 ? 1080 : 780 } });
  const log = { errors: [], requests: [], sent: [] };
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') log.errors.push(m.text()); });
  page.on('pageerror', (e) => log.errors.push('pageerror: ' + e.message));
  page.on('request', (r) => {
    log.requests.push(r.url());
    log.sent.push({ url: r.url(), auth: r.headers().authorization });
  });
  if (setup) await setup(page);
  await page.goto(at + path);
  return { page, log };
}

const chipIds = (page) => page.$$eval('#chips .chip .id', (els) => els.map((e) => Number(e.textContent)));
// What the page shows for a piece of text: whitespace made visible.
const visible = (t) => t.replace(/ /g, '\u00b7').replace(/\n/g, '\u21b5')
  .replace(/\t/g, '\u2192').replace(/\r/g, '\u240d');

async function waitNeighbours(page, id) {
  await page.waitForFunction((id) => document.getElementById('neighbours').dataset.for === String(id), id);
}

// Pixels of a canvas that are not (near) white.
const inked = (page, sel) => page.$eval(sel, (c) => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235) n++;
  return n;
});

test('the page loads with no console error and no request to another origin', async () => {
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  assert.deepEqual(log.errors, []);
  // the book's sentence, tokenized by the server
  assert.equal(await page.isChecked('#mode-text'), true);
  assert.equal(await page.inputValue('#input'), BOOK_TEXT);
  assert.deepEqual(await chipIds(page), BOOK_IDS);
  const paths = log.requests.map((u) => new URL(u).pathname);
  for (const p of ['/', '/static/playground.js', '/static/playground.css', '/static/auth.json',
                   '/info', '/tokenize', '/embed', '/similar'])
    assert.ok(paths.includes(p), p);
  for (const u of log.requests) assert.ok(u.startsWith(base + '/') || u.startsWith('data:'), u);
  const r = await fetch(base + '/');
  const csp = r.headers.get('content-security-policy');
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe/);
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  await page.close();
});

test('ids typed in show as chips, the shape above the heatmap', async () => {
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  await page.check('#mode-ids');
  await page.fill('#input', '15496, 11 995');
  await page.waitForFunction(() => document.querySelectorAll('#chips .chip').length === 3);
  assert.deepEqual(await chipIds(page), [15496, 11, 995]);
  assert.equal(await page.textContent('#shape'), '(1, 3, 256)');
  assert.deepEqual(log.errors, []);
  await page.close();
});

test('heatmap and scatter have ink; the view switch changes the heatmap', async () => {
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  assert.ok(await inked(page, '#heat') > 1000);
  assert.ok(await inked(page, '#scatter') > 50);
  const url = () => page.$eval('#heat', (c) => c.toDataURL());
  const sum = await url();
  await page.check('input[name="view"][value="tok"]');
  const tok = await url();
  await page.check('input[name="view"][value="pos"]');
  const pos = await url();
  assert.notEqual(sum, tok);
  assert.notEqual(pos, tok);
  assert.notEqual(pos, sum);
  // positions off: the page shows token rows only
  await page.uncheck('#positions');
  await page.waitForFunction(() => document.querySelector('input[name="view"][value="pos"]').disabled);
  assert.equal(await url(), tok);
  await page.close();
});

// The heatmap's cells alone (data-plot: the rectangle inside the axes,
// whose labels name the positions), as a string of their pixels.
const cells = (page) => page.$eval('#heat', (c) => {
  const r = devicePixelRatio, [x, y, w, h] = c.dataset.plot.split(',').map(Number);
  const d = c.getContext('2d').getImageData(Math.ceil(x * r), Math.ceil(y * r),
                                            Math.floor(w * r) - 1, Math.floor(h * r) - 1).data;
  let s = '';
  for (let i = 0; i < d.length; i += 4) s += d[i].toString(36) + d[i + 1].toString(36) + d[i + 2].toString(36);
  return s;
});

test('start_position moves the position rows, not the token rows', async () => {
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  const url = () => cells(page);
  const sum0 = await url();
  await page.check('input[name="view"][value="tok"]');
  const tok0 = await url();
  await page.check('input[name="view"][value="sum"]');
  await page.fill('#start', '500');
  await page.waitForFunction(() => /position 500/.test(document.getElementById('sel-title').textContent));
  assert.notEqual(await url(), sum0);
  await page.check('input[name="view"][value="tok"]');
  assert.equal(await url(), tok0);
  assert.match(await page.textContent('#curl'), /"start_position":500/);
  // (Chromium's hint about this test's own repeated getImageData aside)
  assert.deepEqual(log.errors.filter((e) => !/^Canvas2D: Multiple readback/.test(e)), []);
  await page.close();
});

test('clicking a token lists the neighbours /similar gives', async () => {
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  await page.click('#chips .chip >> nth=3');
  await waitNeighbours(page, BOOK_IDS[3]);
  const shown = await page.$$eval('#neighbours li', (els) => els.map((e) => Number(e.dataset.id)));
  const names = await page.$$eval('#neighbours li .mono', (els) => els.map((e) => e.textContent));
  const { json } = await api('/similar', { id: BOOK_IDS[3], k: 10 });
  assert.equal(json.length, 10);
  assert.deepEqual(shown, json.map((n) => n.id));
  // with their text, as /similar gives it (whitespace made visible)
  assert.ok(json.every((n) => typeof n.text === 'string'));
  assert.deepEqual(names, json.map((n) => visible(n.text)));
  assert.equal(names[0], '\u00b7with');
  assert.equal(shown[0], BOOK_IDS[3]);
  assert.match(await page.textContent('#sel-title'), /id 351, position 3/);
  // its vector: the token row's norm and first values
  const { json: e } = await api('/embed', { inputs: [[BOOK_IDS[3]]], positions: false });
  const row = e.embeddings[0][0];
  assert.equal(await page.textContent('#sel-norm'), Math.hypot(...row).toPrecision(5));
  assert.ok((await page.textContent('#sel-values')).startsWith('[' + row[0].toPrecision(4) + ', '));
  await page.close();
});

test('a token can be reached and chosen with the keyboard', async () => {
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(() => document.activeElement.classList.contains('chip'))) break;
  }
  await page.keyboard.press('Tab'); // the second chip
  await page.keyboard.press('Enter');
  await waitNeighbours(page, BOOK_IDS[1]);
  assert.equal(await page.getAttribute('#chips .chip >> nth=1', 'aria-pressed'), 'true');
  await page.close();
});

const HOSTILE = ['<img src=x onerror="window.__pwned=1">', '<script>window.__pwned=2</script>',
                 ' \n&amp;<b>'];

test('hostile token text from /tokenize and /similar is shown as text', async () => {
  const { page, log } = await open('/', 1280, async (p) => {
    await p.route('**/info', async (route) => {
      const r = await route.fetch();
      const info = await r.json();
      info.tokenizer = { name: 'crafted', vocab_size: 50257, special_tokens: [] };
      await route.fulfill({ response: r, json: info });
    });
    await p.route('**/tokenize', (route) => route.fulfill({
      json: [HOSTILE.map((text, i) => ({ id: 10 + i, text, special: false, start: i, stop: i + 1 }))],
    }));
    await p.route('**/similar', (route) => route.fulfill({
      json: HOSTILE.map((text, i) => ({ id: 10 + i, text, score: 1 - i / 10 })),
    }));
  });
  await waitNeighbours(page, 10);
  assert.equal(await page.isChecked('#mode-text'), true);
  assert.deepEqual(await chipIds(page), [10, 11, 12]);
  const pieces = await page.$$eval('#chips .piece', (els) => els.map((e) => e.textContent));
  assert.equal(pieces[0], HOSTILE[0].replace(/ /g, '\u00b7'));
  assert.equal(pieces[1], HOSTILE[1]);
  assert.equal(pieces[2], '\u00b7\u21b5&amp;<b>');
  assert.equal(await page.$$eval('main img, main script, main b', (e) => e.length), 0);
  const names = await page.$$eval('#neighbours li .mono', (els) => els.map((e) => e.textContent));
  assert.equal(names[1], HOSTILE[1]);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.match(await page.getAttribute('#chips .chip >> nth=0', 'title'), /^bytes 0\u20131 /);
  assert.deepEqual(log.errors, []);
  await page.close();
});

test('/docs lists every route of the OpenAPI file', async () => {
  const doc = JSON.parse(readFileSync(join(TOP, 'docs', 'openapi.json'), 'utf8'));
  const want = [];
  for (const [path, ops] of Object.entries(doc.paths))
    for (const m of Object.keys(ops)) want.push(`${m.toUpperCase()} ${path}`);
  const { page, log } = await open('/docs');
  await page.waitForSelector('#routes .route');
  const got = await page.$$eval('#routes .route', (els) => els.map((e) => e.dataset.route));
  assert.deepEqual(got.sort(), want.sort());
  const toc = await page.$$eval('#toc a', (els) => els.map((e) => e.textContent));
  assert.deepEqual(toc.sort(), want.sort());
  assert.deepEqual(log.errors, []);
  for (const u of log.requests) assert.ok(u.startsWith(base + '/') || u.startsWith('data:'), u);
  await page.close();
});

for (const width of [360, 1920]) {
  test(`usable at ${width} px: nothing wider than the window; screenshot`, async () => {
    const { page, log } = await open('/', width);
    await waitNeighbours(page, BOOK_IDS[0]);
    await page.click('#chips .chip >> nth=2');
    await waitNeighbours(page, BOOK_IDS[2]);
    await page.check('#trail');
    await page.waitForTimeout(300);
    const sw = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(sw <= width, `page is ${sw} px wide`);
    assert.ok(await inked(page, '#scatter') > 50);
    // the six tokens' labels and the trail's 16 (p0 ... p15): none overlap
    await page.waitForFunction(() => JSON.parse(document.getElementById('scatter').dataset.labels)
      .some((b) => b.kind === 'trail'));
    await checkLabels(page, 6 + 16);
    await page.screenshot({ path: join(SHOTS, `playground-${width}.png`), fullPage: true });
    assert.deepEqual(log.errors, []);
    await page.close();
  });
}

// Waits until the chips' ids are ids.
async function waitChips(page, ids) {
  await page.waitForFunction((want) => JSON.stringify(
    [...document.querySelectorAll('#chips .chip .id')].map((e) => Number(e.textContent)))
    === JSON.stringify(want), ids);
}

test("typing the book's sentence shows the chips /tokenize gives", async () => {
  const { json: info } = await api('/info');
  assert.equal(info.tokenizer && info.tokenizer.name, 'gpt2');
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  await page.fill('#input', '');
  await page.waitForFunction(() => document.querySelectorAll('#chips .chip').length === 0);
  await page.focus('#input');
  await page.keyboard.type(BOOK_TEXT, { delay: 15 }); // debounced as one types
  const { json } = await api('/tokenize', { inputs: BOOK_TEXT });
  const want = json[0];
  assert.deepEqual(want.map((x) => x.id), BOOK_IDS);
  await waitChips(page, BOOK_IDS);
  const pieces = await page.$$eval('#chips .piece', (els) => els.map((e) => e.textContent));
  assert.deepEqual(pieces, want.map((x) => visible(x.text)));
  assert.equal(pieces[1], '\u00b7journey');
  // hover: the piece's bytes in the input
  const titles = await page.$$eval('#chips .chip', (els) => els.map((e) => e.title));
  want.forEach((x, i) =>
    assert.ok(titles[i].startsWith(`bytes ${x.start}\u2013${x.stop} of the input, id ${x.id}`),
              titles[i]));
  assert.ok(titles[1].startsWith('bytes 4\u201312 '));
  // copy-as-curl sends the text typed, not its ids
  const curl = await page.textContent('#curl');
  assert.ok(curl.includes(JSON.stringify({ inputs: [BOOK_TEXT] }).slice(0, -1)), curl);
  assert.deepEqual(log.errors, []);
  await page.close();
});

test('byte offsets and visible whitespace of multi-byte text match /tokenize', async () => {
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  const text = 'na\u00efve caf\u00e9\n\tend  <b>';
  const { json } = await api('/tokenize', { inputs: text });
  await page.fill('#input', text);
  await waitChips(page, json[0].map((x) => x.id));
  const pieces = await page.$$eval('#chips .piece', (els) => els.map((e) => e.textContent));
  assert.deepEqual(pieces, json[0].map((x) => visible(x.text)));
  const titles = await page.$$eval('#chips .chip', (els) => els.map((e) => e.title));
  json[0].forEach((x, i) => assert.ok(titles[i].startsWith(`bytes ${x.start}\u2013${x.stop} `)));
  // offsets are bytes of UTF-8: the last piece ends at the byte length
  assert.equal(json[0].at(-1).stop, Buffer.byteLength(text));
  assert.equal(await page.$$eval('main b', (e) => e.length), 0);
  assert.deepEqual(log.errors, []);
  await page.close();
});

test('with --api-key the page asks for the key first, then sends it as Bearer', async () => {
  const { page, log } = await open('/', 1280, undefined, keyBase);
  await page.waitForFunction(() => /API key/.test(document.getElementById('status').textContent));
  await page.waitForTimeout(300);
  // nothing keyed was asked for without the key: no 401, no console error
  const keyed = ['/info', '/embed', '/similar', '/tokenize'];
  const early = log.requests.map((u) => new URL(u).pathname);
  assert.ok(early.includes('/static/auth.json'));
  for (const p of keyed) assert.ok(!early.includes(p), p);
  assert.deepEqual(log.errors, []);
  assert.equal((await api('/info', undefined, keyBase)).status, 401);
  // the key, then Enter: the page works and every keyed request has it
  await page.fill('#apikey', KEY);
  await page.press('#apikey', 'Enter');
  await waitNeighbours(page, BOOK_IDS[0]);
  assert.equal(await page.isChecked('#mode-ids'), true); // no tokenizer there
  assert.equal(await page.isDisabled('#mode-sent'), true);
  assert.deepEqual(await chipIds(page), BOOK_IDS);
  const sent = log.sent.filter((r) => keyed.includes(new URL(r.url).pathname));
  assert.ok(sent.length >= 3, 'info, embed, similar');
  for (const r of sent) assert.equal(r.auth, 'Bearer ' + KEY, r.url);
  for (const r of log.sent) assert.ok(r.url.startsWith(keyBase + '/'), r.url);
  // neighbours as /similar gives them with the key
  const { json } = await api('/similar', { id: BOOK_IDS[0], k: 10 }, keyBase,
                             { Authorization: 'Bearer ' + KEY });
  assert.deepEqual(await page.$$eval('#neighbours li', (els) => els.map((e) => Number(e.dataset.id))),
                   json.map((n) => n.id));
  // copy-as-curl names the header, never the key itself
  const curl = await page.textContent('#curl');
  assert.match(curl, /Authorization: Bearer \$TOKVEC_API_KEY/);
  assert.ok(!curl.includes(KEY));
  assert.deepEqual(log.errors, []);
  await page.close();
});

// --- issue 27: errors, labels, axes, random tables ----------------------

// The views' state: chips, heatmap ticks, scatter labels, neighbours.
const views = (page) => page.evaluate(() => ({
  chips: document.querySelectorAll('#chips .chip').length,
  yTicks: document.getElementById('heat').dataset.yTicks || '',
  labels: JSON.parse(document.getElementById('scatter').dataset.labels || '[]').length,
  neighbours: document.querySelectorAll('#neighbours li').length,
  selHidden: document.getElementById('sel').hidden,
  status: document.getElementById('status').textContent,
  err: document.getElementById('status').classList.contains('err'),
}));

test('an error (a 422 for a bad id) clears the chips, heatmap, labels and neighbours', async () => {
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  const before = await views(page);
  assert.equal(before.chips, 6);
  assert.ok(before.neighbours > 0 && before.labels > 0 && before.yTicks);
  await page.check('#mode-ids');
  await page.fill('#input', '15496 99999999 11');
  await page.waitForFunction(() => document.getElementById('status').classList.contains('err'));
  const v = await views(page);
  assert.match(v.status, /^422 token_out_of_range: /);
  assert.deepEqual([v.chips, v.yTicks, v.labels, v.neighbours, v.selHidden], [0, '', 0, 0, true]);
  assert.equal(await page.$eval('#heat', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
    return n;
  }), 0, 'nothing drawn on the heatmap');
  assert.equal(await page.textContent('#curl'), '');
  // a good input brings everything back
  await page.fill('#input', '15496 11');
  await waitNeighbours(page, 15496);
  const after = await views(page);
  assert.deepEqual([after.chips, after.yTicks, after.err], [2, '0,1', false]);
  await page.close();
});

// Label boxes of the scatter: pairwise disjoint and inside the canvas.
async function checkLabels(page, n) {
  const { boxes, hidden, w, h } = await page.$eval('#scatter', (c) => ({
    boxes: JSON.parse(c.dataset.labels), hidden: Number(c.dataset.hidden),
    w: c.clientWidth, h: c.clientHeight }));
  assert.equal(boxes.length + hidden, n, 'every label placed or counted as left out');
  for (const b of boxes) assert.ok(b.x0 >= 0 && b.y0 >= 0 && b.x1 <= w && b.y1 <= h, JSON.stringify(b));
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      assert.ok(a.x1 <= b.x0 || b.x1 <= a.x0 || a.y1 <= b.y0 || b.y1 <= a.y0,
                `labels ${a.i} and ${b.i} overlap`);
    }
  return { boxes, hidden };
}

test('PCA labels never overlap; crowded ones are left out and counted', async () => {
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  // 40 different tokens
  const text = 'The quick brown fox jumps over the lazy dog while seven wizards quietly ' +
    'hex the jovial bakers who juggle plums near ancient castles in the fog';
  const { json } = await api('/tokenize', { inputs: text });
  await page.fill('#input', text);
  await waitChips(page, json[0].map((x) => x.id));
  await waitNeighbours(page, json[0][0].id);
  const many = await checkLabels(page, json[0].length);
  assert.ok(many.boxes.some((b) => b.i === 0), 'the selected token is labelled');
  // ten equal token rows (no positions): one point, ten labels for it
  await page.check('#mode-ids');
  await page.uncheck('#positions');
  await page.fill('#input', '11 11 11 11 11 11 11 11 11 11');
  await waitChips(page, Array(10).fill(11));
  await page.waitForFunction(() => document.getElementById('scatter').dataset.hidden !== '0');
  const same = await checkLabels(page, 10);
  assert.ok(same.hidden >= 4 && same.boxes.length >= 1, JSON.stringify(same));
  assert.deepEqual(log.errors, []);
  await page.close();
});

test('the heatmap has axes: positions down, dimensions across', async () => {
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  const axes = () => page.$eval('#heat', (c) => ({ ...c.dataset }));
  let a = await axes();
  assert.equal(a.yTitle, 'position');
  assert.equal(a.xTitle, 'dimension');
  assert.equal(a.yTicks, '0,1,2,3,4,5');
  const xs = a.xTicks.split(',').map(Number);
  assert.equal(xs[0], 0);
  assert.ok(xs.length >= 3 && xs.every((x, i) => x < 256 && (!i || x > xs[i - 1])), a.xTicks);
  // ink left of the plot (the position labels and the axis title)
  const left = await page.$eval('#heat', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, Math.round(20 * devicePixelRatio), c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 200) n++;
    return n;
  });
  assert.ok(left > 20, `${left} inked pixels left of the plot`);
  // the rows are positions: start_position moves the labels
  await page.fill('#start', '500');
  await page.waitForFunction(() => document.getElementById('heat').dataset.yTicks.startsWith('500,'));
  a = await axes();
  assert.equal(a.yTicks, '500,501,502,503,504,505');
  // 60 rows: the labels thin out, still positions in order
  await page.fill('#start', '0');
  await page.check('#mode-ids');
  await page.fill('#input', Array.from({ length: 60 }, (_, i) => 100 + i).join(' '));
  await page.waitForFunction(() => document.querySelectorAll('#chips .chip').length === 60);
  await page.waitForFunction(() => document.getElementById('heat').dataset.yTicks.split(',').length > 3);
  const ys = (await axes()).yTicks.split(',').map(Number);
  assert.ok(ys.length < 60 && ys[0] === 0 && ys.every((y, i) => y < 60 && (!i || y > ys[i - 1])), ys.join());
  await page.close();
});

test('a table tokvec init made: /info random_weights, and the page says neighbours mean nothing', async () => {
  assert.equal((await api('/info')).json.random_weights, true);
  assert.equal((await api('/info', undefined, modelBase)).json.random_weights, false);
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  assert.equal(await page.isVisible('#random'), true);
  assert.match(await page.textContent('#random'), /tokvec init.*random.*mean nothing/s);
  await page.close();
  const m = await open('/', 1280, undefined, modelBase);
  await m.page.waitForFunction(() => document.getElementById('sent-neigh').dataset.for === '0');
  assert.equal(await m.page.isVisible('#random'), false);
  assert.deepEqual(m.log.errors, []);
  await m.page.close();
});

// --- issue 26: sentences mode ---------------------------------------------

const cos = (a, b) => {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : 0;
};

async function v1(at, input) {
  const { status, json } = await api('/v1/embeddings', { input, encoding_format: 'float' }, at);
  assert.equal(status, 200);
  return json.data.map((d) => d.embedding);
}

for (const width of [360, 1920]) {
  test(`sentences on a served model (${width} px): the cosine matrix and nearest tokens of /v1/embeddings' vectors`, async () => {
    const { page, log } = await open('/', width, undefined, modelBase);
    // a model directory opens in the sentences mode, with example lines
    await page.waitForFunction(() => document.getElementById('sent-neigh').dataset.for === '0');
    assert.equal(await page.isChecked('#mode-sent'), true);
    assert.equal(await page.isVisible('#sent-panel'), true);
    assert.equal(await page.isVisible('#heat'), false);
    const lines = (await page.inputValue('#input')).split('\n');
    assert.equal(lines.length, 4);
    const shown = await page.$$eval('#sent-list button', (els) => els.map((e) => e.title));
    assert.deepEqual(shown, lines);
    // the matrix: cosine of the vectors /v1/embeddings gives
    const vecs = await v1(modelBase, lines);
    const matrix = JSON.parse(await page.$eval('#sim', (c) => c.dataset.matrix));
    assert.equal(matrix.length, 4);
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++)
        assert.ok(Math.abs(matrix[i][j] - cos(vecs[i], vecs[j])) < 1e-6, `${i},${j}`);
    assert.ok(Math.abs(matrix[1][1] - 1) < 1e-6);
    assert.equal(await page.$eval('#sim', (c) => c.dataset.yTicks), '1,2,3,4');
    assert.ok(await inked(page, '#sim') > 500);
    assert.equal(await page.textContent('#sent-shape'), `(4, ${vecs[0].length})`);
    // nearest tokens of sentence 1, then of sentence 3 (clicked)
    const near = async (i) => (await api('/similar', { vector: vecs[i], k: 10 }, modelBase)).json;
    const ids = () => page.$$eval('#sent-neigh li', (els) => els.map((e) => Number(e.dataset.id)));
    assert.deepEqual(await ids(), (await near(0)).map((n) => n.id));
    await page.click('#sent-list button >> nth=2');
    await page.waitForFunction(() => document.getElementById('sent-neigh').dataset.for === '2');
    assert.deepEqual(await ids(), (await near(2)).map((n) => n.id));
    assert.equal(await page.getAttribute('#sent-list button >> nth=2', 'aria-pressed'), 'true');
    assert.match(await page.textContent('#curl'), /\/v1\/embeddings/);
    const sw = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(sw <= width, `page is ${sw} px wide`);
    await page.screenshot({ path: join(SHOTS, `sentences-${width}.png`), fullPage: true });
    // typed lines (blank ones skipped): a new matrix
    await page.fill('#input', 'The cat sleeps.\n\nA kitten naps.\nTaxes rise in spring.');
    await page.waitForFunction(() => document.querySelectorAll('#sent-list button').length === 3);
    await page.waitForFunction(() => JSON.parse(document.getElementById('sim').dataset.matrix || '[]').length === 3);
    const v3 = await v1(modelBase, ['The cat sleeps.', 'A kitten naps.', 'Taxes rise in spring.']);
    const m3 = JSON.parse(await page.$eval('#sim', (c) => c.dataset.matrix));
    assert.ok(Math.abs(m3[0][2] - cos(v3[0], v3[2])) < 1e-6);
    // an error (7 lines, the server's --max-batch is 6) clears the views
    await page.fill('#input', 'a\nb\nc\nd\ne\nf\ng');
    await page.waitForFunction(() => document.getElementById('status').classList.contains('err'));
    assert.match(await page.textContent('#status'), /^4\d\d /);
    assert.equal(await page.$$eval('#sent-list button', (e) => e.length), 0);
    assert.equal(await page.$eval('#sim', (c) => c.dataset.matrix), '');
    assert.equal(await page.$$eval('#sent-neigh li', (e) => e.length), 0);
    // switching to text and back keeps each mode's own input
    await page.check('#mode-text');
    await page.waitForFunction(() => document.querySelectorAll('#chips .chip').length > 0);
    assert.equal(await page.isVisible('#sent-panel'), false);
    await page.check('#mode-sent');
    assert.equal(await page.inputValue('#input'), 'a\nb\nc\nd\ne\nf\ng');
    assert.deepEqual(log.errors.filter((e) => !/status of 4\d\d/.test(e)), []);
    await page.close();
  });
}

test('sentences on a plain table with a tokenizer: the mean of its rows, and the random-table notice', async () => {
  const { page, log } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  assert.equal(await page.isChecked('#mode-text'), true); // a table: text first
  await page.check('#mode-sent');
  await page.waitForFunction(() => document.getElementById('sent-neigh').dataset.for === '0');
  const lines = (await page.inputValue('#input')).split('\n');
  const vecs = await v1(base, lines);
  const matrix = JSON.parse(await page.$eval('#sim', (c) => c.dataset.matrix));
  assert.ok(Math.abs(matrix[0][3] - cos(vecs[0], vecs[3])) < 1e-6);
  assert.equal(await page.isVisible('#random'), true);
  assert.deepEqual(log.errors, []);
  await page.close();
});
