// docs.js -- renders /openapi.json as a readable reference (GET /docs,
// served as /static/docs.js): one entry per route and method with its
// summary, auth, parameters, request schema and responses. Text only
// (textContent): nothing from the document is parsed as HTML.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  function resolve(doc, s) {
    const seen = new Set();
    while (s && s.$ref && !seen.has(s.$ref)) {
      seen.add(s.$ref);
      s = s.$ref.replace(/^#\//, '').split('/').reduce((n, k) => n && n[k], doc);
    }
    return s;
  }

  // A schema with its $refs replaced (once per name, so cycles end).
  function inline(doc, s, depth) {
    if (depth > 6 || s === null || typeof s !== 'object') return s;
    if (Array.isArray(s)) return s.map((x) => inline(doc, x, depth + 1));
    if (s.$ref) return inline(doc, resolve(doc, s), depth + 1);
    const o = {};
    for (const [k, v] of Object.entries(s)) o[k] = inline(doc, v, depth + 1);
    return o;
  }

  function route(doc, path, method, op) {
    const sec = el('article', 'route');
    const name = `${method.toUpperCase()} ${path}`;
    sec.id = name.replace(/[^A-Za-z0-9]+/g, '-');
    sec.dataset.route = name;
    const h = el('h3');
    h.append(el('span', 'method ' + method, method.toUpperCase()), el('span', '', path));
    sec.append(h);
    if (op.summary) sec.append(el('p', '', op.summary));
    if (op.description) sec.append(el('p', '', op.description));
    const keyed = (op.security || []).some((s) => Object.keys(s).length);
    sec.append(el('p', '', keyed ? 'Auth: key (when --api-key is set).' : 'Auth: public.'));
    if (op.parameters && op.parameters.length) {
      sec.append(el('h4', '', 'Parameters'));
      const ul = el('ul');
      for (const p0 of op.parameters) {
        const p = resolve(doc, p0);
        const t = p.schema ? (p.schema.enum ? p.schema.enum.join(' | ') : p.schema.type) : '';
        ul.append(el('li', '', `${p.name} (${p.in}${p.required ? ', required' : ''}): ${t}` +
                                (p.description ? ' \u2014 ' + p.description : '')));
      }
      sec.append(ul);
    }
    if (op.requestBody) {
      sec.append(el('h4', '', 'Request body'));
      for (const [ct, m] of Object.entries(resolve(doc, op.requestBody).content || {})) {
        sec.append(el('p', 'mono', ct));
        if (m.schema) sec.append(el('pre', 'schema', JSON.stringify(inline(doc, m.schema, 0), null, 1)));
      }
    }
    sec.append(el('h4', '', 'Responses'));
    const tab = el('table', 'resp');
    for (const [code, r0] of Object.entries(op.responses || {})) {
      const r = resolve(doc, r0);
      const tr = el('tr');
      tr.append(el('td', 'mono', code), el('td', '', r.description || ''),
                el('td', 'mono', Object.keys(r.content || {}).join(', ')));
      tab.append(tr);
    }
    sec.append(tab);
    return sec;
  }

  async function main() {
    const box = $('routes');
    try {
      const r = await fetch('/openapi.json');
      const doc = await r.json();
      $('about').textContent = `${doc.info.title} ${doc.info.version}: ${doc.info.description}`;
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const sec = route(doc, path, method, op);
          box.append(sec);
          const li = el('li');
          const a = el('a', 'mono', `${method.toUpperCase()} ${path}`);
          a.href = '#' + sec.id;
          li.append(a);
          $('toc').append(li);
        }
      }
    } catch (e) {
      box.textContent = 'Could not load /openapi.json: ' + e.message;
    }
  }
  main();
})();
