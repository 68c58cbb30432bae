// playground.js -- the logic of tokvec's page (GET /, served as
// /static/playground.js). It only talks to the server it came from:
// GET /static/auth.json (public: does the server want a key? If so, no
// keyed request is made until one is typed, so a keyed server draws no
// 401 on load), GET /info, POST /tokenize (when the server has a
// tokenizer), POST /embed
// (token rows with positions false; the sum with positions true; position
// rows = sum - token rows) and POST /similar. Every piece of text that
// comes from the server or the table is put into the page with
// textContent or drawn on a canvas, never parsed as HTML.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  // "Your journey starts with one step" in GPT-2's tokenizer
  const BOOK_IDS = [7120, 7002, 4940, 351, 530, 2239];
  const BOOK_TEXT = 'Your journey starts with one step';
  const K = 10;
  const TRAIL = 16;

  const st = {
    info: null, tokens: [], text: null, tok: null, sum: null, seq: 0,
    selected: 0, trail: null, trailFor: -1,
  };

  // --- talking to the server ---------------------------------------------
  function headers(json) {
    const h = {};
    if (json) h['Content-Type'] = 'application/json';
    const key = $('apikey').value;
    if (key) h.Authorization = 'Bearer ' + key;
    return h;
  }

  async function api(method, path, body) {
    const r = await fetch(path, {
      method, headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let j = null;
    try { j = await r.json(); } catch (e) { j = null; }
    if (!r.ok) {
      const msg = j && j.error ? `${r.status} ${j.error_type}: ${j.error}`
                               : `HTTP ${r.status}`;
      const err = new Error(msg);
      err.status = r.status;
      throw err;
    }
    return j;
  }

  function say(text, bad) {
    const s = $('status');
    s.textContent = text;
    s.classList.toggle('err', !!bad);
  }

  // --- input -------------------------------------------------------------
  const mode = () => ($('mode-text').checked ? 'text' : 'ids');
  const positionsOn = () => $('positions').checked && !$('positions').disabled;
  const start = () => Math.max(0, parseInt($('start').value, 10) || 0);

  function parseIds(s) {
    const parts = s.split(/[\s,\[\]]+/).filter((x) => x.length);
    const ids = [];
    for (const p of parts) {
      if (!/^-?\d+$/.test(p)) throw new Error(`"${p}" is not an integer id`);
      ids.push(Number(p));
    }
    return ids;
  }

  // The tokens of v: tokenized by the server when text is set, else ids.
  async function tokensOf(v, text) {
    if (text) {
      if (!v.length) return [];
      const r = await api('POST', '/tokenize', { inputs: v });
      return r[0].map((t) => ({ id: t.id, text: t.text, special: !!t.special,
                                start: t.start, stop: t.stop }));
    }
    return parseIds(v).map((id) => ({ id, text: null }));
  }

  function rows(resp) { return resp.embeddings[0]; }

  async function update() {
    const seq = ++st.seq;
    try {
      const v = $('input').value, text = mode() === 'text';
      const tokens = await tokensOf(v, text);
      if (seq !== st.seq) return;
      if (!tokens.length) {
        st.tokens = []; st.text = null; st.tok = st.sum = null;
        render(); say('Type something.');
        return;
      }
      const ids = tokens.map((t) => t.id);
      const tok = await api('POST', '/embed', { inputs: [ids], positions: false });
      let sum = null;
      if (positionsOn())
        sum = await api('POST', '/embed', { inputs: [ids], start_position: start(),
                                            positions: true });
      if (seq !== st.seq) return;
      st.tokens = tokens;
      st.text = text ? v : null; // copy-as-curl sends the text typed
      st.tok = rows(tok);
      st.sum = sum ? rows(sum) : null;
      st.shape = sum ? sum.shape : tok.shape;
      if (st.selected >= tokens.length) st.selected = 0;
      st.trail = null;
      render();
      say(`${tokens.length} token${tokens.length === 1 ? '' : 's'}`);
      await select(st.selected, false);
    } catch (e) {
      if (seq === st.seq) say(e.message, true);
    }
  }

  let timer = 0;
  function later() {
    clearTimeout(timer);
    timer = setTimeout(update, 250);
  }

  // --- the views ------------------------------------------------------------
  // The rows the heatmap shows: token rows, position rows or their sum.
  function view() {
    const v = document.querySelector('input[name="view"]:checked').value;
    if (!st.tok) return null;
    if (v === 'tok' || !st.sum) return st.tok;
    if (v === 'sum') return st.sum;
    return st.sum.map((r, s) => r.map((x, d) => Math.fround(x - st.tok[s][d])));
  }

  function visible(text) {
    return text.replace(/ /g, '\u00b7').replace(/\n/g, '\u21b5')
      .replace(/\t/g, '\u2192').replace(/\r/g, '\u240d');
  }
  const label = (t) => (t.text === null ? `#${t.id}` : visible(t.text));

  function renderChips() {
    const box = $('chips');
    box.replaceChildren();
    st.tokens.forEach((t, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'chip' + (t.special ? ' special' : '');
      b.setAttribute('aria-pressed', i === st.selected ? 'true' : 'false');
      b.dataset.index = String(i);
      const piece = document.createElement('span');
      piece.className = 'piece';
      if (t.text === null) {
        piece.textContent = '\u2009';
      } else {
        piece.textContent = visible(t.text);
        if (/^\s+$/.test(t.text)) piece.classList.add('ws');
      }
      const id = document.createElement('span');
      id.className = 'id';
      id.textContent = String(t.id);
      b.append(piece, id);
      b.title = t.start === undefined
        ? `id ${t.id}, position ${start() + i}`
        : `bytes ${t.start}\u2013${t.stop} of the input, id ${t.id}, position ${start() + i}`;
      b.addEventListener('click', () => select(i, true));
      box.append(b);
    });
  }

  function sizeCanvas(c, h) {
    const w = Math.max(100, c.clientWidth || c.parentNode.clientWidth);
    const r = window.devicePixelRatio || 1;
    c.width = Math.round(w * r);
    c.height = Math.round(h * r);
    c.style.height = h + 'px';
    const g = c.getContext('2d');
    g.setTransform(r, 0, 0, r, 0, 0);
    return { g, w, h };
  }

  function renderHeat() {
    const m = view();
    const c = $('heat');
    $('shape').textContent = st.shape ? `(${st.shape.join(', ')})` : '';
    if (!m) { sizeCanvas(c, 40); $('heat-range').textContent = ''; return; }
    const S = m.length, D = m[0].length;
    let max = 0;
    for (const r of m) for (const x of r) max = Math.max(max, Math.abs(x));
    const off = document.createElement('canvas');
    off.width = D; off.height = S;
    const og = off.getContext('2d');
    const img = og.createImageData(D, S);
    for (let s = 0; s < S; s++) {
      for (let d = 0; d < D; d++) {
        const v = max > 0 ? m[s][d] / max : 0, a = Math.min(1, Math.abs(v));
        const [r, g, b] = v >= 0 ? [178, 24, 43] : [33, 102, 172];
        const o = 4 * (s * D + d);
        img.data[o] = Math.round(255 + (r - 255) * a);
        img.data[o + 1] = Math.round(255 + (g - 255) * a);
        img.data[o + 2] = Math.round(255 + (b - 255) * a);
        img.data[o + 3] = 255;
      }
    }
    og.putImageData(img, 0, 0);
    const rowH = Math.max(6, Math.min(28, Math.floor(360 / S)));
    const { g, w } = sizeCanvas(c, rowH * S);
    g.imageSmoothingEnabled = false;
    g.drawImage(off, 0, 0, w, rowH * S);
    $('heat-range').textContent = `(|value| up to ${max.toPrecision(3)})`;
  }

  // Top two principal components of the rows (power iteration on X^T X,
  // the second deflated against the first); returns each row's (x, y).
  function pca2(X) {
    const n = X.length, D = X[0].length;
    const mean = new Float64Array(D);
    for (const r of X) for (let d = 0; d < D; d++) mean[d] += r[d] / n;
    const C = X.map((r) => Float64Array.from(r, (x, d) => x - mean[d]));
    const comps = [];
    for (let c = 0; c < 2; c++) {
      let v = Float64Array.from({ length: D }, (_, d) => Math.sin(d + 1 + c));
      for (let it = 0; it < 60; it++) {
        const p = C.map((r) => r.reduce((a, x, d) => a + x * v[d], 0));
        const w = new Float64Array(D);
        C.forEach((r, i) => { for (let d = 0; d < D; d++) w[d] += r[d] * p[i]; });
        for (const u of comps) {
          const dot = w.reduce((a, x, d) => a + x * u[d], 0);
          for (let d = 0; d < D; d++) w[d] -= dot * u[d];
        }
        const norm = Math.hypot(...w);
        if (!(norm > 0)) break;
        v = w.map((x) => x / norm);
      }
      comps.push(v);
    }
    return C.map((r) => comps.map((u) => r.reduce((a, x, d) => a + x * u[d], 0)));
  }

  function renderScatter() {
    const c = $('scatter');
    const w0 = Math.max(100, c.clientWidth || c.parentNode.clientWidth);
    const { g, w, h } = sizeCanvas(c, Math.round(w0 * 0.75));
    const m = st.sum || st.tok;
    if (!m) return;
    const trail = $('trail').checked && st.trail ? st.trail : [];
    const pts = pca2(m.concat(trail));
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const [x, y] of pts) {
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
    const pad = 36, sx = (x1 - x0) || 1, sy = (y1 - y0) || 1;
    const px = (x) => pad + ((x - x0) / sx) * (w - 2 * pad);
    const py = (y) => h - pad - ((y - y0) / sy) * (h - 2 * pad);
    g.strokeStyle = '#e3e3df';
    g.strokeRect(0.5, 0.5, w - 1, h - 1);
    g.font = '12px ui-monospace, monospace';
    if (trail.length) {
      g.strokeStyle = '#e8710a';
      g.beginPath();
      trail.forEach((_, i) => {
        const [x, y] = pts[m.length + i];
        if (i) g.lineTo(px(x), py(y)); else g.moveTo(px(x), py(y));
      });
      g.stroke();
      trail.forEach((_, i) => {
        const [x, y] = pts[m.length + i];
        g.fillStyle = '#e8710a';
        g.beginPath(); g.arc(px(x), py(y), 3.5, 0, 2 * Math.PI); g.fill();
        g.fillText(`p${start() + i}`, px(x) + 5, py(y) + 12);
      });
    }
    m.forEach((_, i) => {
      const [x, y] = pts[i];
      g.fillStyle = i === st.selected ? '#0b57d0' : '#1d1d1f';
      g.beginPath(); g.arc(px(x), py(y), i === st.selected ? 5 : 4, 0, 2 * Math.PI); g.fill();
      const text = label(st.tokens[i]).slice(0, 24);
      const tw = g.measureText(text).width;
      g.fillText(text, Math.min(px(x) + 6, w - tw - 2), py(y) - 6);
    });
  }

  function shellQuote(s) { return "'" + s.replace(/'/g, "'\\''") + "'"; }

  function renderCurl() {
    const auth = $('apikey').value ? ' \\\n  -H "Authorization: Bearer $TOKVEC_API_KEY"' : '';
    const base = location.origin;
    if (!st.tokens.length) { $('curl').textContent = ''; return; }
    // What is on screen: the typed text in text mode (the server tokenizes
    // it the same way), else the ids.
    const input = st.text !== null ? st.text : st.tokens.map((t) => t.id);
    const body = { inputs: [input], start_position: start(),
                   positions: positionsOn() };
    let s = `curl -s ${base}/embed -H 'Content-Type: application/json'${auth} \\\n  -d ${shellQuote(JSON.stringify(body))}`;
    const t = st.tokens[st.selected];
    if (t)
      s += `\n\ncurl -s ${base}/similar -H 'Content-Type: application/json'${auth} \\\n  -d ${shellQuote(JSON.stringify({ id: t.id, k: K }))}`;
    if ($('apikey').value) s = '# export TOKVEC_API_KEY=<the key> first\n' + s;
    $('curl').textContent = s;
  }

  function render() {
    const none = !st.info || st.info.positional === 'none';
    $('positions').disabled = none;
    for (const v of document.querySelectorAll('input[name="view"]'))
      if (v.value !== 'tok') v.disabled = !st.sum;
    if (!st.sum) document.querySelector('input[name="view"][value="tok"]').checked = true;
    $('trail').disabled = !positionsOn();
    renderChips();
    renderHeat();
    renderScatter();
    renderCurl();
  }

  // --- the selected token -------------------------------------------------
  async function select(i, focus) {
    if (!st.tokens.length) { $('sel').hidden = true; $('sel-none').hidden = false; return; }
    st.selected = i;
    for (const b of $('chips').children)
      b.setAttribute('aria-pressed', b.dataset.index === String(i) ? 'true' : 'false');
    if (focus) $('chips').children[i].focus();
    const t = st.tokens[i], row = st.tok[i];
    $('sel').hidden = false; $('sel-none').hidden = true;
    $('sel-title').textContent = `${label(t)} \u2014 id ${t.id}, position ${start() + i}`;
    $('sel-norm').textContent = Math.hypot(...row).toPrecision(5);
    $('sel-values').textContent = '[' + row.slice(0, 8).map((x) => x.toPrecision(4)).join(', ') +
      (row.length > 8 ? ', \u2026]' : ']');
    renderCurl();
    const seq = st.seq;
    const list = $('neighbours');
    try {
      const trail = $('trail').checked && positionsOn() ? loadTrail(t.id) : null;
      const nb = await api('POST', '/similar', { id: t.id, k: K });
      if (seq !== st.seq || st.selected !== i) return;
      list.replaceChildren();
      for (const n of nb) {
        const li = document.createElement('li');
        li.dataset.id = String(n.id);
        const name = document.createElement('span');
        name.className = 'mono';
        name.textContent = n.text === null ? `#${n.id}` : visible(n.text);
        const meta = document.createElement('span');
        meta.className = 'score';
        meta.textContent = ` id ${n.id} \u00b7 ${n.score.toFixed(4)}`;
        li.append(name, meta);
        list.append(li);
      }
      list.dataset.for = String(t.id);
      if (trail) await trail;
      renderScatter();
    } catch (e) {
      say(e.message, true);
    }
  }

  async function loadTrail(id) {
    const ctx = st.info.context_length || 0;
    const n = Math.max(1, Math.min(TRAIL, ctx - start()));
    const r = await api('POST', '/embed', { inputs: [Array(n).fill(id)],
                                            start_position: start(), positions: true });
    st.trail = rows(r);
    st.trailFor = id;
  }

  // --- start ----------------------------------------------------------------
  const ASK_KEY = 'This server wants its API key (--api-key): type it above and press Enter.';
  let keyed = null; // from /static/auth.json; null: not known yet

  async function init() {
    if (keyed === null) {
      try {
        keyed = (await api('GET', '/static/auth.json')).api_key === true;
      } catch (e) {
        keyed = false; // an older server: try, and report a 401 if it comes
      }
    }
    $('apikey').parentNode.classList.toggle('need', keyed && !$('apikey').value);
    if (keyed && !$('apikey').value) { say(ASK_KEY, true); return; }
    try {
      st.info = await api('GET', '/info');
    } catch (e) {
      say(e.status === 401 ? 'The server refused this API key: type it again.'
                           : e.message, true);
      return;
    }
    const tk = st.info && st.info.tokenizer;
    $('mode-text').disabled = !tk;
    $('mode-text').parentNode.title = tk ? '' : 'this server has no tokenizer (--tokenizer)';
    if (tk) $('mode-text').checked = true;
    setMode();
    if (!$('input').value) $('input').value = tk ? BOOK_TEXT : BOOK_IDS.join(' ');
    update();
  }

  // A key typed (change, or Enter in the field): start, or redo the views.
  let usedKey = '';
  function keyEntered() {
    const k = $('apikey').value;
    if (k === usedKey) return;
    usedKey = k;
    if (!st.info) init(); else later();
  }

  function setMode() {
    $('input-lbl').textContent = mode() === 'text'
      ? 'Text (tokenized by the server)' : 'Token ids (spaces or commas)';
  }

  for (const r of document.querySelectorAll('input[name="mode"]'))
    r.addEventListener('change', () => { setMode(); later(); });
  // Updates as one types; nothing is submitted (the CSP has form-action
  // 'none', so a real submit would be refused and logged).
  $('form').addEventListener('submit', (e) => e.preventDefault());
  $('input').addEventListener('input', later);
  $('start').addEventListener('input', later);
  $('positions').addEventListener('change', later);
  // The key lives in the field only: never stored, sent to this origin only.
  $('apikey').addEventListener('change', keyEntered);
  $('apikey').addEventListener('keydown', (e) => { if (e.key === 'Enter') keyEntered(); });
  for (const r of document.querySelectorAll('input[name="view"]'))
    r.addEventListener('change', renderHeat);
  $('trail').addEventListener('change', async () => {
    if ($('trail').checked && st.tokens.length) {
      try { await loadTrail(st.tokens[st.selected].id); } catch (e) { say(e.message, true); }
    }
    renderScatter();
  });
  $('copy').addEventListener('click', async () => {
    const text = $('curl').textContent;
    try {
      await navigator.clipboard.writeText(text);
      $('copied').textContent = 'copied';
    } catch (e) {
      const sel = window.getSelection(), range = document.createRange();
      range.selectNodeContents($('curl'));
      sel.removeAllRanges(); sel.addRange(range);
      $('copied').textContent = 'selected: press Ctrl+C';
    }
  });
  let resized = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resized);
    resized = setTimeout(() => { renderHeat(); renderScatter(); }, 100);
  });
  init();
})();
