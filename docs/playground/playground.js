// playground.js -- the logic of tokvec's page (GET /, served as
// /static/playground.js). It only talks to the server it came from:
// GET /static/auth.json (public: does the server want a key? If so, no
// keyed request is made until one is typed, so a keyed server draws no
// 401 on load), GET /info, POST /tokenize (when the server has a
// tokenizer), POST /embed
// (token rows with positions false; the sum with positions true; position
// rows = sum - token rows), POST /similar (by id, or by a sentence's
// vector) and, in the sentences mode, POST /v1/embeddings (base64). Every
// piece of text that comes from the server or the table is put into the
// page with textContent or drawn on a canvas, never parsed as HTML.
// An error clears the views it would have replaced (nothing stale stays
// beside the message). The canvases carry what they show in data-
// attributes (axis ticks, label boxes, the similarity matrix) for the
// browser tests and for anyone inspecting the page.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  // "Your journey starts with one step" in GPT-2's tokenizer
  const BOOK_IDS = [7120, 7002, 4940, 351, 530, 2239];
  const BOOK_TEXT = 'Your journey starts with one step';
  const SENTENCES = ['The cat sits on the mat.', 'A dog lies on the rug.',
                     'Stock markets fell sharply today.',
                     'Investors sold shares as prices dropped.'].join('\n');
  const K = 10;
  const TRAIL = 16;
  const MAX_SENTENCES = 32;

  const st = {
    info: null, tokens: [], text: null, tok: null, sum: null, seq: 0,
    selected: 0, trail: null, trailFor: -1, shape: null,
    // sentences mode: the lines sent, their vectors, the cosine matrix
    sents: [], vecs: [], sim: null, sentSel: 0, model: '',
    // what the textarea held in the other kind of mode
    saved: { tokens: null, sentences: null }, lastMode: null,
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
      // tokvec's {"error", "error_type"}; under /v1/ OpenAI's
      // {"error": {"message", "code", ...}}
      const e = j && j.error;
      const msg = e && typeof e === 'object' ? `${r.status} ${e.code}: ${e.message}`
        : e ? `${r.status} ${j.error_type}: ${e}` : `HTTP ${r.status}`;
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
  const mode = () => ($('mode-text').checked ? 'text'
    : $('mode-sent').checked ? 'sentences' : 'ids');
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

  // Empties every view: what an error or an empty input leaves.
  function clearViews() {
    st.tokens = []; st.text = null; st.tok = st.sum = null; st.shape = null;
    st.trail = null;
    st.sents = []; st.vecs = []; st.sim = null;
    $('neighbours').replaceChildren();
    $('neighbours').dataset.for = '';
    $('sent-neigh').replaceChildren();
    $('sent-neigh').dataset.for = '';
    $('sel').hidden = true; $('sel-none').hidden = false;
    render();
  }

  async function update() {
    const seq = ++st.seq;
    if (mode() === 'sentences') return updateSentences(seq);
    try {
      const v = $('input').value, text = mode() === 'text';
      const tokens = await tokensOf(v, text);
      if (seq !== st.seq) return;
      if (!tokens.length) {
        clearViews(); say('Type something.');
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
      if (seq === st.seq) { clearViews(); say(e.message, true); }
    }
  }

  // --- sentences mode ----------------------------------------------------
  function decode64(b64) {
    const bin = atob(b64), u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return new Float32Array(u8.buffer); // little-endian, as sent
  }

  function cosine(a, b) {
    let ab = 0, aa = 0, bb = 0;
    for (let d = 0; d < a.length; d++) { ab += a[d] * b[d]; aa += a[d] * a[d]; bb += b[d] * b[d]; }
    return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : 0;
  }

  async function updateSentences(seq) {
    try {
      const lines = $('input').value.split('\n').map((l) => l.trim())
        .filter((l) => l.length);
      if (!lines.length) { clearViews(); say('Type sentences, one a line.'); return; }
      const sents = lines.slice(0, MAX_SENTENCES);
      const r = await api('POST', '/v1/embeddings', { input: sents, encoding_format: 'base64' });
      if (seq !== st.seq) return;
      st.tokens = []; st.tok = st.sum = null; st.shape = null;
      st.sents = sents;
      st.vecs = r.data.slice().sort((a, b) => a.index - b.index)
        .map((d) => decode64(d.embedding));
      st.sim = st.vecs.map((a) => st.vecs.map((b) => cosine(a, b)));
      st.model = r.model;
      if (st.sentSel >= sents.length) st.sentSel = 0;
      render();
      const more = lines.length > sents.length ? ` (the first ${MAX_SENTENCES} of ${lines.length})` : '';
      say(`${sents.length} sentence${sents.length === 1 ? '' : 's'}${more}, ` +
          `${r.usage.prompt_tokens} tokens pooled, model ${r.model}`);
      await selectSentence(st.sentSel, false);
    } catch (e) {
      if (seq === st.seq) { clearViews(); say(e.message, true); }
    }
  }

  function renderSentences() {
    const list = $('sent-list');
    list.replaceChildren();
    st.sents.forEach((text, i) => {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.type = 'button';
      b.dataset.index = String(i);
      b.setAttribute('aria-pressed', i === st.sentSel ? 'true' : 'false');
      const n = document.createElement('span');
      n.className = 'num';
      n.textContent = String(i + 1);
      b.append(n, document.createTextNode(text));
      b.title = text;
      b.addEventListener('click', () => selectSentence(i, true));
      li.append(b);
      list.append(li);
    });
    $('sent-shape').textContent = st.vecs.length
      ? `(${st.vecs.length}, ${st.vecs[0].length})` : '';
    const c = $('sim');
    if (!st.sim) {
      sizeCanvas(c, 40);
      c.dataset.matrix = '';
      return;
    }
    const nums = st.sents.map((_, i) => String(i + 1));
    drawMatrix(c, st.sim, { max: 1, rowLabels: nums, colLabels: nums,
                            xTitle: 'sentence', yTitle: 'sentence', square: true,
                            values: st.sim.length <= 12 });
    c.dataset.matrix = JSON.stringify(st.sim);
  }

  async function selectSentence(i, focus) {
    const list = $('sent-neigh');
    if (!st.vecs.length) { list.replaceChildren(); return; }
    st.sentSel = i;
    for (const b of $('sent-list').querySelectorAll('button'))
      b.setAttribute('aria-pressed', b.dataset.index === String(i) ? 'true' : 'false');
    if (focus) $('sent-list').querySelectorAll('button')[i].focus();
    $('sent-sel').textContent = `sentence ${i + 1}`;
    renderCurl();
    const seq = st.seq, v = st.vecs[i];
    if (!v.some((x) => x !== 0)) {
      // no token of it was pooled (all dropped as unknown): no direction
      list.replaceChildren();
      const li = document.createElement('li');
      li.textContent = 'none: no token of this sentence is in the vocabulary (a zero vector)';
      list.append(li);
      list.dataset.for = String(i);
      return;
    }
    try {
      const nb = await api('POST', '/similar', { vector: Array.from(v), k: K });
      if (seq !== st.seq || st.sentSel !== i) return;
      fillNeighbours(list, nb);
      list.dataset.for = String(i);
    } catch (e) {
      if (seq !== st.seq) return;
      list.replaceChildren();
      list.dataset.for = '';
      say(e.message, true);
    }
  }

  function fillNeighbours(list, nb) {
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

  // Ticks for n rows or columns in px pixels: every step-th index, step
  // from 1, 2, 5, 10, 16, 32, ... so that labels are at least gap px apart;
  // the last index too when it is not too close to the one before.
  function ticks(n, px, gap) {
    const steps = [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 512, 1024, 2048, 4096];
    let step = steps.find((k) => (px / n) * k >= gap) || Math.ceil(n / 2);
    const out = [];
    for (let i = 0; i < n; i += step) out.push(i);
    const last = n - 1;
    if (out[out.length - 1] !== last && (last - out[out.length - 1]) * (px / n) >= gap) out.push(last);
    return out;
  }

  // A matrix as a diverging heatmap (blue negative, red positive, |v| up
  // to opts.max or the largest) with axes: row labels on the left (every
  // tick of ticks()), column indices below, the axis titles. Writes the
  // ticks into the canvas's data-x-ticks / data-y-ticks.
  function drawMatrix(c, m, opts) {
    const S = m.length, D = m[0].length;
    let max = opts.max || 0;
    if (!opts.max) for (const r of m) for (const x of r) max = Math.max(max, Math.abs(x));
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
    const w0 = Math.max(100, c.clientWidth || c.parentNode.clientWidth);
    // room for 4-digit labels at least: the cells stay where they are when
    // start_position changes the labels
    const font = 11, L = 16 + 7 * Math.max(4, ...opts.rowLabels.map((t) => t.length));
    const B = 2 * font + 12, T = 4, R = 8;
    const plotW = Math.max(20, w0 - L - R);
    const rowH = opts.square ? Math.max(6, Math.min(72, Math.floor(Math.min(plotW, 480) / S)))
      : Math.max(6, Math.min(28, Math.floor(360 / S)));
    const plotH = rowH * S;
    const pw = opts.square ? rowH * D : plotW;
    const { g } = sizeCanvas(c, T + plotH + B);
    g.imageSmoothingEnabled = false;
    g.drawImage(off, L, T, pw, plotH);
    g.strokeStyle = '#9a9a9f';
    g.strokeRect(L - 0.5, T - 0.5, pw + 1, plotH + 1);
    g.fillStyle = '#4a4a50';
    g.font = `${font}px ui-monospace, monospace`;
    // rows: their labels, right-aligned left of the plot
    const ys = ticks(S, plotH, font + 2);
    g.textAlign = 'right'; g.textBaseline = 'middle';
    for (const i of ys) {
      const y = T + (i + 0.5) * rowH;
      g.fillText(opts.rowLabels[i], L - 5, y);
      g.fillRect(L - 3, Math.round(y), 3, 1);
    }
    // columns: their indices below
    const xs = ticks(D, pw, 34);
    g.textAlign = 'center'; g.textBaseline = 'top';
    for (const i of xs) {
      const x = L + (i + 0.5) * (pw / D);
      g.fillText(opts.colLabels ? opts.colLabels[i] : String(i), x, T + plotH + 4);
      g.fillRect(Math.round(x), T + plotH, 1, 3);
    }
    g.fillText(opts.xTitle + ' \u2192', L + pw / 2, T + plotH + 6 + font);
    g.save();
    g.translate(9, T + plotH / 2);
    g.rotate(-Math.PI / 2);
    g.textBaseline = 'middle';
    g.fillText(opts.yTitle + ' \u2192', 0, 0);
    g.restore();
    if (opts.values) { // the numbers in the cells, where they fit
      g.textBaseline = 'middle';
      const cw = pw / D;
      for (let s = 0; s < S; s++) for (let d = 0; d < D; d++) {
        const v = m[s][d] / (max || 1);
        g.fillStyle = Math.abs(v) > 0.55 ? '#fff' : '#1d1d1f';
        g.fillText(m[s][d].toFixed(2), L + (d + 0.5) * cw, T + (s + 0.5) * rowH);
      }
    }
    g.textAlign = 'start'; g.textBaseline = 'alphabetic';
    c.dataset.yTicks = ys.map((i) => opts.rowLabels[i]).join(',');
    c.dataset.xTicks = xs.map((i) => (opts.colLabels ? opts.colLabels[i] : String(i))).join(',');
    c.dataset.plot = [L, T, pw, plotH].join(','); // CSS px, no axes
    c.dataset.yTitle = opts.yTitle;
    c.dataset.xTitle = opts.xTitle;
    return max;
  }

  function renderHeat() {
    const m = view();
    const c = $('heat');
    $('shape').textContent = st.shape ? `(${st.shape.join(', ')})` : '';
    if (!m) {
      sizeCanvas(c, 40);
      $('heat-range').textContent = '';
      c.dataset.xTicks = c.dataset.yTicks = '';
      return;
    }
    const rowLabels = m.map((_, i) => String(start() + i));
    const max = drawMatrix(c, m, { rowLabels, xTitle: 'dimension', yTitle: 'position' });
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
    c.dataset.labels = '[]';
    c.dataset.hidden = '0';
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
      });
    }
    m.forEach((_, i) => {
      const [x, y] = pts[i];
      g.fillStyle = i === st.selected ? '#0b57d0' : '#1d1d1f';
      g.beginPath(); g.arc(px(x), py(y), i === st.selected ? 5 : 4, 0, 2 * Math.PI); g.fill();
    });
    // The labels, after the dots: each where it overlaps no dot and no
    // label placed before it (the selected token's first, then the other
    // tokens, then the trail's positions): right or left of its dot, above
    // or below; one with no free place is left out (its token is in the
    // chips above) and counted on the plot.
    const order = m.map((_, i) => i);
    order.sort((a, b) => (b === st.selected) - (a === st.selected));
    const wanted = order.map((i) => ({ i, kind: 'token', text: label(st.tokens[i]).slice(0, 24),
                                       color: i === st.selected ? '#0b57d0' : '#1d1d1f' }))
      .concat(trail.map((_, i) => ({ i: m.length + i, kind: 'trail', text: `p${start() + i}`,
                                     color: '#e8710a' })));
    const dots = pts.slice(0, m.length + trail.length).map(([x, y]) =>
      ({ x0: px(x) - 5, y0: py(y) - 5, x1: px(x) + 5, y1: py(y) + 5 }));
    const boxes = [];
    let hidden = 0;
    const H = 12; // the label's height in px
    const apart = (b, o) => b.x1 <= o.x0 || o.x1 <= b.x0 || b.y1 <= o.y0 || o.y1 <= b.y0;
    const free = (b) => b.x0 >= 1 && b.y0 >= 1 && b.x1 <= w - 1 && b.y1 <= h - 1 &&
      boxes.every((o) => apart(b, o)) && dots.every((o) => apart(b, o));
    g.textBaseline = 'top';
    for (const lab of wanted) {
      const [x, y] = pts[lab.i];
      const cx = px(x), cy = py(y);
      const tw = Math.ceil(g.measureText(lab.text).width);
      const spots = [[cx + 6, cy - 3 - H], [cx + 6, cy + 3], [cx - 6 - tw, cy - 3 - H],
                     [cx - 6 - tw, cy + 3], [cx - tw / 2, cy - 6 - H], [cx - tw / 2, cy + 6]];
      let put = null;
      for (const [x0, y0] of spots) {
        const b = { x0, y0, x1: x0 + tw, y1: y0 + H };
        if (free(b)) { put = b; break; }
      }
      if (!put) { hidden++; continue; }
      put.i = lab.i; put.kind = lab.kind;
      boxes.push(put);
      g.fillStyle = lab.color;
      g.fillText(lab.text, put.x0, put.y0);
    }
    g.textBaseline = 'alphabetic';
    if (hidden) {
      g.fillStyle = '#6b6b70';
      g.fillText(`${hidden} label${hidden === 1 ? '' : 's'} left out (overlap)`, 6, h - 6);
    }
    c.dataset.labels = JSON.stringify(boxes);
    c.dataset.hidden = String(hidden);
  }

  function shellQuote(s) { return "'" + s.replace(/'/g, "'\\''") + "'"; }

  function renderCurl() {
    const auth = $('apikey').value ? ' \\\n  -H "Authorization: Bearer $TOKVEC_API_KEY"' : '';
    const base = location.origin;
    if (mode() === 'sentences') {
      if (!st.sents.length) { $('curl').textContent = ''; return; }
      let s = `curl -s ${base}/v1/embeddings -H 'Content-Type: application/json'${auth} \\\n  -d ` +
        shellQuote(JSON.stringify({ input: st.sents, encoding_format: 'float' }));
      s += `\n\n# nearest tokens of sentence ${st.sentSel + 1}: POST ${base}/similar ` +
        `with {"vector": its embedding, "k": ${K}}`;
      if ($('apikey').value) s = '# export TOKVEC_API_KEY=<the key> first\n' + s;
      $('curl').textContent = s;
      return;
    }
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
    const sent = mode() === 'sentences';
    for (const el of document.querySelectorAll('.tokview')) el.hidden = sent;
    $('sent-panel').hidden = !sent;
    $('start').disabled = sent;
    $('positions').disabled = none || sent;
    $('random').hidden = !(st.info && st.info.random_weights);
    for (const v of document.querySelectorAll('input[name="view"]'))
      if (v.value !== 'tok') v.disabled = !st.sum;
    if (st.tok && !st.sum) document.querySelector('input[name="view"][value="tok"]').checked = true;
    $('trail').disabled = !positionsOn();
    renderChips();
    renderHeat();
    renderScatter();
    renderSentences();
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
      fillNeighbours(list, nb);
      list.dataset.for = String(t.id);
      if (trail) await trail;
      renderScatter();
    } catch (e) {
      if (seq !== st.seq) return;
      list.replaceChildren(); // no neighbours of another token stay
      list.dataset.for = '';
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
    // a model directory (--model): sentences first; any table with a
    // tokenizer: text first
    const model = tk && st.info.model && st.info.model.layout !== 'table';
    for (const id of ['mode-text', 'mode-sent']) {
      $(id).disabled = !tk;
      $(id).parentNode.title = tk ? '' : 'this server has no tokenizer (--tokenizer)';
    }
    if (tk) $(model ? 'mode-sent' : 'mode-text').checked = true;
    if (!$('input').value)
      $('input').value = model ? SENTENCES : tk ? BOOK_TEXT : BOOK_IDS.join(' ');
    st.lastMode = mode();
    setMode();
    render();
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
    const m = mode();
    // the sentences keep their own text: switching back and forth between
    // sentences and tokens restores what each held
    const kind = (x) => (x === 'sentences' ? 'sentences' : 'tokens');
    if (st.lastMode && kind(st.lastMode) !== kind(m)) {
      st.saved[kind(st.lastMode)] = $('input').value;
      const back = st.saved[kind(m)];
      $('input').value = back !== null ? back
        : m === 'sentences' ? SENTENCES : st.info && st.info.tokenizer ? BOOK_TEXT : BOOK_IDS.join(' ');
    }
    st.lastMode = m;
    $('input').rows = m === 'sentences' ? 5 : 2;
    $('input-lbl').textContent = m === 'text' ? 'Text (tokenized by the server)'
      : m === 'sentences' ? 'Sentences, one a line (each becomes one vector)'
        : 'Token ids (spaces or commas)';
  }

  for (const r of document.querySelectorAll('input[name="mode"]'))
    r.addEventListener('change', () => { setMode(); clearViews(); later(); });
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
    resized = setTimeout(() => { renderHeat(); renderScatter(); renderSentences(); }, 100);
  });
  init();
})();
