// playground.test.mjs -- the page at / and /docs in headless Chromium
// (Debian's /usr/bin/chromium driven by playwright-core; no browser is
// downloaded). Run by `make browser-test`:
//   TOKVEC_BINARY=build/tokvec SHOTS=build/browser node --test tests/browser/
// Starts `tokvec serve` on a free loopback port with a 50257x256 table made
// by `tokvec init`, and checks what a person would: no console errors, no
// request to another origin, chips, non-blank plots, the view switch, the
// neighbours, inert hostile token text, /docs listing every route, the
// page usable at 360 and 1920 px and by keyboard. Writes screenshots.
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
const BOOK_IDS = [7120, 7002, 4940, 351, 530, 2239];

let dir, server, base, browser;

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
  });
}

async function api(path, body) {
  const r = await fetch(base + path, body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tokvec-browser-'));
  mkdirSync(SHOTS, { recursive: true });
  const table = join(dir, 't.safetensors');
  execFileSync(BINARY, ['init', '--vocab', '50257', '--dim', '256', '--context', '1024',
    '--positional', 'learned', '--seed', '123', '-o', table], { stdio: 'ignore' });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const log = openSync(join(dir, 'serve.log'), 'w'); // the access log
  server = spawn(BINARY, ['serve', '--table', table, '--port', String(port)],
                 { stdio: ['ignore', 'ignore', log] });
  for (let i = 0; ; i++) {
    try { if ((await fetch(base + '/health')).ok) break; } catch (e) { /* not yet */ }
    if (i > 200 || server.exitCode !== null)
      throw new Error('tokvec serve did not come up: ' + readFileSync(join(dir, 'serve.log'), 'utf8'));
    await new Promise((ok) => setTimeout(ok, 50));
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// A page that records console errors, page errors and every request.
async function open(path, width = 1280, setup) {
  const page = await browser.newPage({ viewport: { width, height: width > 1000 ? 1080 : 780 } });
  const log = { errors: [], requests: [] };
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') log.errors.push(m.text()); });
  page.on('pageerror', (e) => log.errors.push('pageerror: ' + e.message));
  page.on('request', (r) => log.requests.push(r.url()));
  if (setup) await setup(page);
  await page.goto(base + path);
  return { page, log };
}

const chipIds = (page) => page.$$eval('#chips .chip .id', (els) => els.map((e) => Number(e.textContent)));

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
  assert.ok(log.requests.length >= 5, 'page, script, style, /info, /embed');
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
  assert.deepEqual(await chipIds(page), BOOK_IDS);
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

test('clicking a token lists the neighbours /similar gives', async () => {
  const { page } = await open('/');
  await waitNeighbours(page, BOOK_IDS[0]);
  await page.click('#chips .chip >> nth=3');
  await waitNeighbours(page, BOOK_IDS[3]);
  const shown = await page.$$eval('#neighbours li', (els) => els.map((e) => Number(e.dataset.id)));
  const { json } = await api('/similar', { id: BOOK_IDS[3], k: 10 });
  assert.deepEqual(shown, json.map((n) => n.id));
  assert.equal(shown[0], BOOK_IDS[3]);
  assert.match(await page.textContent('#sel-title'), /id 351, position 3/);
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
    await page.screenshot({ path: join(SHOTS, `playground-${width}.png`), fullPage: true });
    assert.deepEqual(log.errors, []);
    await page.close();
  });
}

test('typing text shows chips equal to /tokenize (servers with a tokenizer)', async (t) => {
  const { json: info } = await api('/info');
  if (!info.tokenizer) { t.skip('this server has no tokenizer'); return; }
  const { page } = await open('/');
  const text = 'Your journey starts with one step';
  await page.fill('#input', text);
  await page.waitForFunction((n) => document.querySelectorAll('#chips .chip').length > 0, 0);
  await page.waitForTimeout(600);
  const { json } = await api('/tokenize', { inputs: text });
  assert.deepEqual(await chipIds(page), json[0].map((x) => x.id));
  await page.close();
});
