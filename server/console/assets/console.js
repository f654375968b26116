// paratune's web console: plain JavaScript of the project's own, no framework. Pages are drawn
// from the server's JSON API (/api/, server/console/console_api.h), which returns the proto3
// JSON of the Autotuner API; plots are SVG. Untrusted text only ever goes into textContent.
'use strict';

const POLL_MILLISECONDS = 2000;
const TOKEN_KEY = 'paratune.token';
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const SVG_NS = 'http://www.w3.org/2000/svg';
const VERDICT_COLOUR = {SAFE: 'var(--safe)', RISKY: 'var(--risky)', OUT_OF_MEMORY: 'var(--oom)'};
const VERDICT_LETTER = {SAFE: 'S', RISKY: 'R', OUT_OF_MEMORY: 'X'};

let pollTimer = null;

// --- DOM helpers ----------------------------------------------------------------------------

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function table(headers, rows) {
  const head = el('tr', {}, ...headers.map(h => el('th', {class: h.num ? 'num' : ''}, h.text)));
  return el('table', {}, el('thead', {}, head),
            el('tbody', {}, ...rows.map(cells => el('tr', {}, ...cells.map((cell, i) =>
                el('td', {class: headers[i].num ? 'num' : ''}, cell))))));
}

// Replaces the page with `nodes`; a null or undefined one (a part the page lacks) is left
// out, where replaceChildren would print it as the text "null".
function show(...nodes) {
  const page = document.getElementById('page');
  page.replaceChildren(...nodes.filter(node => node !== null && node !== undefined));
}

// --- Authentication -------------------------------------------------------------------------

// A bearer token is sent only where it cannot be read on the way: over HTTPS or to this
// machine. The server also listens on loopback only when it has tokens (docs/console.md).
function tokenSafeHere() {
  const host = location.hostname;
  return location.protocol === 'https:' || host === 'localhost' || host === '[::1]' ||
         host === '::1' || /^127\./.test(host);
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(path, options) {
  const headers = Object.assign({}, (options || {}).headers);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token && tokenSafeHere()) headers['Authorization'] = 'Bearer ' + token;
  const response = await fetch(path, Object.assign({}, options, {headers, cache: 'no-store'}));
  const body = await response.json();
  if (!response.ok) throw new ApiError(response.status, body.code, body.message);
  return body;
}

function loginPage(reason) {
  const input = el('input', {type: 'password', id: 'token', autocomplete: 'off',
                             placeholder: 'bearer token'});
  const button = el('button', {id: 'login'}, 'Sign in');
  const message = el('p', {class: 'error', id: 'login-error'}, reason || '');
  button.addEventListener('click', () => {
    if (!tokenSafeHere()) {
      message.textContent = 'Refusing to send a token over plain HTTP to ' + location.host +
                            ': open the console on loopback (an SSH tunnel) or over HTTPS.';
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    route();
  });
  show(el('h1', {}, 'Sign in'),
       el('p', {}, 'This server has a token file: paste a client or admin token (a line of ' +
                   'the server\'s --token_file). It is kept in this tab only (sessionStorage).'),
       input, ' ', button, message);
}

// Runs a page's loader; a refused token (401, or 403 for a worker's) shows the login page
// instead, saying why when a token was sent.
async function guarded(loader) {
  try {
    await loader();
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      const sent = sessionStorage.getItem(TOKEN_KEY);
      sessionStorage.removeItem(TOKEN_KEY);
      stopPolling();
      loginPage(sent ? 'The server refused this token: ' + error.message : '');
    } else {
      stopPolling();
      show(el('p', {class: 'error', id: 'page-error'}, String(error.message || error)));
    }
  }
}

// --- Formatting -----------------------------------------------------------------------------

// Where a candidate's probe result comes from, as the server says it (Candidate.
// probe_result_source): simulated, replayed, extrapolated or measured; '' without a result.
function origin(candidate) {
  return (candidate && candidate.probeResultSource) || '';
}

// The short mark of each origin where a cell has no room for the word.
const ORIGIN_MARK = {simulated: 'sim', replayed: 'replay', extrapolated: 'extrap', measured: 'meas'};

function originLabel(candidate) {
  const name = origin(candidate);
  return name ? el('span', {class: 'label ' + name}, name) : '';
}

// A configuration's fields as people read them, each {name, value, text}, in the order and
// with the words of the CLI's DescribeConfig (convert/search_text.h): dp, tp, pp, cp and mbs
// always (mbs left out with `withMicroBatch` false, for a memory map's row), then vp, ep, etp,
// sp=off, recompute, dp_sharding and dp_shard_group where they leave the default. Every field of ParallelConfig in which two
// candidates can differ is here, so two distinct configurations never read the same.
function configFields(c, withMicroBatch = true) {
  const fields = [];
  const add = (name, value, text) => fields.push({name, value: String(value), text});
  for (const [name, key] of [['dp', 'dataParallel'], ['tp', 'tensorParallel'],
                             ['pp', 'pipelineParallel'], ['cp', 'contextParallel']]) {
    const value = Number(c[key] || 1);
    add(name, value, name + value);
  }
  const mbs = Number(c.microBatchSize || 0);
  if (withMicroBatch) add('mbs', mbs, 'mbs' + mbs);
  const vp = Number(c.virtualPipeline || 1);
  if (vp > 1) add('vp', vp, 'vp' + vp);
  // Expert parallelism where not the default: only mixture-of-experts configurations leave it.
  const ep = Number(c.expertParallel || 1);
  if (ep > 1) add('ep', ep, 'ep' + ep);
  const etp = Number(c.expertTensorParallel || 0);
  if (etp !== 0 && etp !== Number(c.tensorParallel || 1)) add('etp', etp, 'etp' + etp);
  // Sequence parallelism only means something alongside TP; unset means on.
  if (Number(c.tensorParallel || 1) > 1 && c.sequenceParallel === false) add('sp', 'off', 'sp=off');
  const recompute = (c.recompute || 'RECOMPUTE_NONE').replace('RECOMPUTE_', '').toLowerCase();
  if (recompute === 'selective' || recompute === 'full') {
    add('recompute', recompute, 'recompute=' + recompute);
  }
  // Data-parallel sharding where not the distributed optimizer (unset: stored before it was a
  // dimension), and a hybrid-sharding group where set.
  const sharding = (c.dpSharding || 'DP_SHARDING_OPTIMIZER').replace('DP_SHARDING_', '').toLowerCase();
  if (sharding !== 'optimizer' && sharding !== 'unspecified') {
    add('dp_sharding', sharding, 'dp_sharding=' + sharding);
  }
  const group = Number(c.dpShardGroup || 0);
  if (group > 0) add('dp_shard_group', group, 'dp_shard_group=' + group);
  return fields;
}

// The text of a configuration: configFields joined by spaces, as the CLI prints it.
function describeConfig(c, withMicroBatch = true) {
  return c ? configFields(c, withMicroBatch).map(f => f.text).join(' ') : '';
}

// A configuration as a span of its text carrying each field as data-NAME, so that what a page
// shows can be compared field by field.
function configLabel(c) {
  if (!c) return '';
  const attributes = {class: 'config'};
  for (const field of configFields(c)) attributes['data-' + field.name] = field.value;
  return el('span', attributes, describeConfig(c));
}

const fixed = (value, digits) => Number(value || 0).toFixed(digits);

function age(timestamp) {
  if (!timestamp) return '';
  const seconds = Math.max(0, (Date.now() - Date.parse(timestamp)) / 1000);
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${fixed(seconds / 3600, 1)} h`;
  return `${fixed(seconds / 86400, 1)} d`;
}

function searchId(name) { return name.replace('searches/', ''); }

// The server's best candidate of a search (Search.best_candidate) and the result that makes it
// the best: its probe's, or its screening probe's while a confirmation runs.
function bestOf(search) {
  const candidate = search.bestCandidate;
  return candidate ? {candidate, result: candidate.probeResult || candidate.screeningResult}
                   : null;
}

// How far a search is, in the words of `paratune get`, `list` and `watch` (cli/progress_line.h,
// DescribeProgress) and with the server's numbers (Search.progress): no count is made here.
function progressText(progress) {
  const n = field => Number(progress[field] || 0);
  let text = `probed ${n('probed')} of ${n('candidates')} candidates (${n('ok')} ok, ` +
             `${n('failed')} failed), ${n('couldStillWin')} could still win`;
  if (n('running') > 0 || n('waiting') > 0) {
    text += `; ${n('running')} running, ${n('waiting')} waiting`;
    if (n('confirming') > 0) text += ` (${n('confirming')} confirming)`;
  }
  return text;
}

// --- Polling --------------------------------------------------------------------------------

function stopPolling() {
  if (pollTimer !== null) clearTimeout(pollTimer);
  pollTimer = null;
}

function pollAgain(loader) {
  stopPolling();
  pollTimer = setTimeout(() => guarded(loader), POLL_MILLISECONDS);
}

// --- Searches -------------------------------------------------------------------------------

async function searchesPage() {
  const list = await api('/api/searches');
  // ListSearches sends each search's best candidate, not its candidates.
  const searches = list.searches || [];
  const rows = searches.map(search => {
    const counts = search.counts || {};
    const best = bestOf(search);
    return [
      el('a', {href: '#/search/' + searchId(search.name)}, search.name),
      search.displayName || '',
      // A failed search says why where it is listed.
      search.state === 'FAILED' && search.stopReason
          ? el('span', {}, el('span', {class: 'state'}, search.state),
               el('div', {class: 'muted failure'}, search.stopReason))
          : el('span', {class: 'state'}, search.state),
      // The searches page shows no candidates: why they wait goes with the progress.
      (search.progress || {}).waitingReason
          ? el('span', {}, progressText(search.progress),
               el('div', {class: 'muted'}, `waiting: ${search.progress.waitingReason}`))
          : progressText(search.progress || {}),
      best ? configLabel(best.candidate.config) : '',
      best ? fixed(best.result.modelTflopsPerGpu, 1) : '',
      best ? originLabel(best.candidate) : '',
      fixed(Number(counts.gpuSeconds || 0) / 3600, 2),
      age(search.createTime),
    ];
  });
  show(el('h1', {}, 'Searches'),
       rows.length === 0 ? el('p', {id: 'no-searches'}, 'No searches yet.')
                         : table([{text: 'Search'}, {text: 'Name'}, {text: 'State'},
                                  {text: 'Progress'}, {text: 'Best configuration'},
                                  {text: 'Best TFLOP/s per GPU', num: true}, {text: 'From'},
                                  {text: 'GPU-hours', num: true}, {text: 'Age'}],
                                 rows));
  document.querySelector('#page table')?.setAttribute('id', 'searches');
  if (searches.some(s => !ENDED.has(s.state))) pollAgain(searchesPage);
}

// --- One search -----------------------------------------------------------------------------

// The events of a search after event `afterSequence` ('0': all of them), every page: a poll
// asks only for what it has not seen.
async function eventsAfter(name, afterSequence) {
  let events = [];
  let after = afterSequence;
  while (true) {
    const page = await api('/api/events?name=' + encodeURIComponent(name) +
                           '&after_sequence=' + encodeURIComponent(after));
    const newer = page.events || [];
    events = events.concat(newer);
    if (!page.nextPageToken || newer.length === 0) return events;
    after = newer[newer.length - 1].sequence;
  }
}

// The kinds of event that end a probe with its candidate's result (proto/search_event.proto).
const RESULT_EVENTS = new Set(['EVENT_PROBED', 'EVENT_GAVE_UP']);

// The probes in the order they finished (the log's EVENT_PROBED and EVENT_GAVE_UP), each with
// the best measured TFLOP/s per GPU so far and the GPU-hours spent so far. A candidate's first
// probe carries the optimistic bound ADAPTIVE chose it on (absent, proto3 JSON's 0, for other
// policies); its confirmation, chosen on that probe's measurement, carries none.
function probeHistory(search, events) {
  const byName = new Map((search.candidates || []).map(c => [c.name, c]));
  const order = events.filter(e => RESULT_EVENTS.has(e.kind) && byName.has(e.candidate))
                    .map(e => byName.get(e.candidate));
  let best = 0;
  let gpuHours = 0;
  const probedBefore = new Set();
  return order.map((candidate, i) => {
    const result = candidate.probeResult || {};
    const gpus = (result.ranOn || []).reduce((sum, host) => sum + Number(host.numRanks || 0), 0);
    gpuHours += Number(result.wallSeconds || 0) * gpus / 3600;
    const ok = result.outcome === 'PROBE_OK';
    const measured = ok ? Number(result.modelTflopsPerGpu || 0) : null;
    if (measured !== null) best = Math.max(best, measured);
    const screening = !probedBefore.has(candidate.name);
    probedBefore.add(candidate.name);
    const optimistic = Number(candidate.optimisticTflopsPerGpu || 0);
    return {probe: i + 1, gpuHours, measured, best, candidate, origin: origin(candidate),
            predicted: Number((candidate.predicted || {}).modelTflopsPerGpu || 0),
            optimistic: screening && optimistic > 0 ? optimistic : null};
  });
}

function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

// A line plot with axes, ticks and units. series: {points: [[x, y]], colour, step, dashed,
// marker, label, name}; each series' line and markers form a group marked data-series=name.
function linePlot(id, xLabel, yLabel, series, xMaxHint) {
  const width = 520, height = 300, left = 58, right = 16, top = 16, bottom = 70;
  const xs = series.flatMap(s => s.points.map(p => p[0]));
  const ys = series.flatMap(s => s.points.map(p => p[1]));
  const xMax = niceMax(Math.max(xMaxHint || 0, ...xs, 0));
  const yMax = niceMax(Math.max(...ys, 0) * 1.05);
  const x = v => left + (width - left - right) * v / xMax;
  const y = v => top + (height - top - bottom) * (1 - v / yMax);
  const root = svg('svg', {id, width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
                           'aria-label': `${yLabel} against ${xLabel}`});
  for (let i = 0; i <= 5; ++i) {
    const xv = xMax * i / 5, yv = yMax * i / 5;
    root.append(svg('line', {class: 'grid', x1: left, x2: width - right, y1: y(yv), y2: y(yv)}));
    root.append(svg('text', {x: left - 6, y: y(yv) + 4, 'text-anchor': 'end'},
                    Number(yv.toPrecision(3)).toString()));
    root.append(svg('text', {x: x(xv), y: height - bottom + 16, 'text-anchor': 'middle'},
                    Number(xv.toPrecision(3)).toString()));
  }
  const axes = svg('g', {class: 'axis'});
  axes.append(svg('line', {x1: left, x2: left, y1: top, y2: height - bottom}));
  axes.append(svg('line', {x1: left, x2: width - right, y1: height - bottom, y2: height - bottom}));
  root.append(axes);
  root.append(svg('text', {x: (left + width - right) / 2, y: height - bottom + 34,
                           'text-anchor': 'middle'}, xLabel));
  root.append(svg('text', {x: 14, y: (top + height - bottom) / 2, 'text-anchor': 'middle',
                           transform: `rotate(-90 14 ${(top + height - bottom) / 2})`}, yLabel));
  series.forEach((s, k) => {
    if (s.points.length === 0) return;
    let path = '';
    s.points.forEach(([px, py], i) => {
      if (i === 0) path += `M${x(px)},${y(py)}`;
      else if (s.step) path += `H${x(px)}V${y(py)}`;
      else path += `L${x(px)},${y(py)}`;
    });
    const group = svg('g', {'data-series': s.name});
    root.append(group);
    if (s.line !== false) {
      group.append(svg('path', {d: path, fill: 'none', stroke: s.colour, 'stroke-width': 2,
                                'stroke-dasharray': s.dashed ? '6 4' : ''}));
    }
    if (s.marker) {
      for (const [px, py] of s.points) {
        group.append(s.marker === 'circle'
            ? svg('circle', {cx: x(px), cy: y(py), r: 4, fill: s.colour})
            : svg('rect', {x: x(px) - 3.5, y: y(py) - 3.5, width: 7, height: 7, fill: 'none',
                           stroke: s.colour, 'stroke-width': 1.5}));
      }
    }
    const lx = left + (k % 2) * 240, ly = height - 14 - (k < 2 ? 12 : 0);
    root.append(svg('line', {x1: lx, x2: lx + 18, y1: ly - 4, y2: ly - 4, stroke: s.colour,
                             'stroke-width': 2, 'stroke-dasharray': s.dashed ? '6 4' : ''}));
    root.append(svg('text', {x: lx + 22, y: ly}, s.label));
  });
  return root;
}

function convergenceFigures(search, history) {
  if (history.length === 0) {
    return el('p', {class: 'muted', id: 'convergence-empty'},
              'No probe has finished yet: the plots appear with the first result.');
  }
  const adaptive = (search.spec.policy || 'ADAPTIVE') === 'ADAPTIVE' ||
                   search.spec.policy === 'SEARCH_POLICY_UNSPECIFIED';
  const tolerance = Number((search.spec.adaptive || {}).tolerance || 0.02);
  const origins = [...new Set(history.map(h => h.origin))].join(', ') || 'none yet';
  const figures = [];
  for (const [id, key, xLabel] of [['convergence-probes', 'probe', 'probes finished'],
                                   ['convergence-gpu-hours', 'gpuHours', 'GPU-hours spent']]) {
    const measured = history.filter(h => h.measured !== null);
    const series = [
      {name: 'best', label: `best measured (${origins})`, colour: 'var(--measured)', step: true,
       points: measured.map(h => [h[key], h.best])},
      {name: 'probes', label: `each probe (${origins})`, colour: 'var(--sky)', marker: 'circle', line: false,
       points: measured.map(h => [h[key], h.measured])},
      {name: 'predicted', label: 'predicted at planning', colour: 'var(--predicted)', marker: 'square', line: false,
       points: history.map(h => [h[key], h.predicted])},
    ];
    if (adaptive) {
      series.push({name: 'bound', label: 'optimistic bound at selection', colour: 'var(--bound)',
                   dashed: true, marker: 'square',
                   points: history.filter(h => h.optimistic !== null)
                                  .map(h => [h[key], h.optimistic])});
    }
    figures.push(el('figure', {},
        linePlot(id, xLabel, 'TFLOP/s per GPU', series, key === 'probe' ? 1 : 0),
        el('figcaption', {},
           `Best model TFLOP/s per GPU against ${xLabel}. ` +
           (adaptive ? `ADAPTIVE stops when no unprobed candidate's optimistic bound beats ` +
                       `the best measured by more than ${fixed(tolerance * 100, 0)}%.` : ''))));
  }
  return el('div', {class: 'figures'}, ...figures);
}

// The width in pixels of `text` in the font of the plots' labels (console.css, svg text), so
// that a column of labels gets the room its longest one needs.
const labelCanvas = document.createElement('canvas').getContext('2d');
function labelWidth(text) {
  labelCanvas.font = '11px system-ui, sans-serif';
  return labelCanvas.measureText(text).width;
}

// The memory map of the plan: one row per shape (every field but the micro-batch size), one
// column per micro-batch size; probed cells carry their measurement. `candidates` are the
// search's (or the plan's): by default only the rows holding one are drawn (all of them when
// none does), and a button shows every row; `view.showAll` keeps that choice across polls.
function memoryMapFigure(map, candidates, view) {
  const byConfig = new Map((candidates || []).map(c => [describeConfig(c.config), c]));
  const cellConfig = (shape, cell) =>
      describeConfig(Object.assign({}, shape, {microBatchSize: cell.microBatchSize}));
  const allRows = map.rows || [];
  const holding = allRows.filter(row => (row.cells || []).some(
      cell => byConfig.has(cellConfig(row.shape || {}, cell))));
  const figure = el('div', {id: 'memory-map'});
  const draw = () => {
    const showAll = view.showAll || holding.length === 0;
    const rows = showAll ? allRows : holding;
    const note = holding.length === 0
        ? `${allRows.length} rows; none holds a candidate.`
        : `${rows.length} of ${allRows.length} rows shown` +
              (showAll ? '.' : `: those holding the ${byConfig.size} candidates.`);
    const button = el('button', {id: 'memory-map-toggle'},
                      showAll ? 'Show only the rows holding candidates'
                              : `Show all ${allRows.length} rows`);
    button.addEventListener('click', () => {
      view.showAll = !view.showAll;
      draw();
    });
    const choice = holding.length > 0 && holding.length < allRows.length;
    figure.replaceChildren(el('p', {class: 'muted'}, note, ' ', choice ? button : null),
                           heatMap(map, rows, byConfig, cellConfig));
  };
  draw();
  return figure;
}

function heatMap(map, rows, byConfig, cellConfig) {
  const columns = map.microBatchSizes || [];
  const labels = rows.map(row => describeConfig(row.shape || {}, false));
  const cellW = 78, cellH = 26, top = 40;
  const left = Math.ceil(Math.max(120, ...labels.map(labelWidth))) + 16;
  const width = Math.max(760, left + cellW * columns.length + 10);
  const height = top + cellH * rows.length + 58;
  const root = svg('svg', {id: 'heat-map', width, height, viewBox: `0 0 ${width} ${height}`,
                           role: 'img', 'aria-label': 'estimated memory per GPU'});
  root.append(svg('text', {x: left, y: 14}, 'micro-batch size →'));
  columns.forEach((mbs, j) => root.append(svg('text', {x: left + j * cellW + cellW / 2, y: 32,
                                                       'text-anchor': 'middle'}, mbs)));
  rows.forEach((row, i) => {
    const shape = row.shape || {};
    const yTop = top + i * cellH;
    root.append(svg('text', {class: 'row-label', x: left - 8, y: yTop + cellH / 2 + 4,
                             'text-anchor': 'end'}, labels[i]));
    for (const cell of row.cells || []) {
      const j = columns.indexOf(cell.microBatchSize);
      const config = cellConfig(shape, cell);
      const candidate = byConfig.get(config);
      const result = candidate && candidate.state === 'CANDIDATE_PROBED' && candidate.probeResult;
      const g = svg('g', {class: 'cell', 'data-verdict': cell.verdict || 'SAFE',
                          'data-probed': result ? 'true' : 'false',
                          'data-candidate': candidate ? 'true' : 'false'});
      g.append(svg('rect', {x: left + j * cellW + 1, y: yTop + 1, width: cellW - 2,
                            height: cellH - 2, fill: VERDICT_COLOUR[cell.verdict || 'SAFE'],
                            stroke: result ? '#000' : 'none', 'stroke-width': result ? 2.5 : 0}));
      let text = `${VERDICT_LETTER[cell.verdict || 'SAFE']} ${fixed(100 * (cell.fractionOfCapacity || 0), 0)}%`;
      if (result) {
        text = result.outcome === 'PROBE_OK'
                   ? `${fixed(result.modelTflopsPerGpu, 0)} TF ${ORIGIN_MARK[origin(candidate)]}`
                   : (result.outcome === 'PROBE_OUT_OF_MEMORY' ? 'ran OOM' : 'failed');
      }
      g.append(svg('text', {x: left + j * cellW + cellW / 2, y: yTop + cellH / 2 + 4,
                            'text-anchor': 'middle', fill: '#000'}, text));
      g.append(svg('title', {}, `${config}: estimated ` +
          `${fixed(100 * (cell.fractionOfCapacity || 0), 1)}% of GPU memory, ${cell.verdict}`));
      root.append(g);
    }
  });
  const legendY = top + rows.length * cellH + 22;
  [['SAFE', 'S SAFE'], ['RISKY', 'R RISKY'], ['OUT_OF_MEMORY', 'X out of memory']].forEach(
      ([verdict, text], k) => {
        root.append(svg('rect', {x: 10 + k * 150, y: legendY - 11, width: 14, height: 14,
                                 fill: VERDICT_COLOUR[verdict]}));
        root.append(svg('text', {x: 30 + k * 150, y: legendY}, text));
      });
  root.append(svg('text', {x: 10, y: legendY + 22},
                  `Cells: estimated peak memory per GPU, % of ${fixed((map.capacityBytes || 0) /
                  2 ** 30, 1)} GiB (SAFE below ${fixed(100 * (map.safeFraction || 0), 0)}%); ` +
                  'outlined: probed, with its TFLOP/s per GPU.'));
  return root;
}

// How a probe's lease ended, by the kind of the event that ended it.
const LEASE_ENDINGS = {
  EVENT_SHARE_FINISHED: 'share finished', EVENT_PROBED: 'probed', EVENT_REQUEUED: 're-queued',
  EVENT_GAVE_UP: 'gave up', EVENT_STOPPED: 'stopped with the search',
  EVENT_CANCELLED: 'cancelled with the search'};

// Workers and gangs over time, from the event log's fields: a bar per lease on each member
// worker, from its EVENT_LEASED to the event that ended it for that worker (its share
// finished, the probe's result, a re-queue or give-up, the search's end); a bar still open
// runs to now. Bars that ended without a result are drawn apart (class "no-result").
function gangTimeline(events) {
  const open = new Map();  // probe -> worker -> bar
  const bars = [];
  const colours = new Map();  // candidate -> index, in order of first lease
  const close = (barsOfProbe, time, ending, text) => {
    for (const bar of barsOfProbe.values()) {
      bars.push(Object.assign(bar, {end: time, ending, text}));
    }
  };
  for (const event of events) {
    const time = Date.parse(event.time);
    const ending = LEASE_ENDINGS[event.kind];
    if (event.kind === 'EVENT_LEASED') {
      if (!colours.has(event.candidate)) colours.set(event.candidate, colours.size);
      const members = (event.workers || []).map(w => w.worker);
      open.set(event.probe, new Map(members.map(worker => [worker, {
        candidate: event.candidate, probe: event.probe, worker, members, start: time}])));
    } else if (event.kind === 'EVENT_SHARE_FINISHED') {
      const probe = open.get(event.probe);
      for (const w of event.workers || []) {
        if (probe && probe.has(w.worker)) {
          close(new Map([[w.worker, probe.get(w.worker)]]), time, ending, event.text);
          probe.delete(w.worker);
        }
      }
    } else if (ending && event.probe) {
      if (open.has(event.probe)) close(open.get(event.probe), time, ending, event.text);
      open.delete(event.probe);
    } else if (ending) {
      for (const probe of open.values()) close(probe, time, ending, event.text);
      open.clear();
    }
  }
  const now = Date.now();
  for (const probe of open.values()) close(probe, now, 'running', 'running');
  const workers = [...new Set(bars.map(b => b.worker))].sort();
  if (bars.length === 0) return el('p', {class: 'muted'}, 'No probe leased yet.');
  const t0 = Math.min(...bars.map(b => b.start));
  const span = Math.max(1, Math.max(...bars.map(b => b.end)) - t0) / 1000;
  const width = 640, left = 90, laneH = 22, top = 10;
  const height = top + laneH * workers.length + 40;
  const x = seconds => left + (width - left - 10) * seconds / niceMax(span);
  const root = svg('svg', {id: 'gang-timeline', width, height, viewBox: `0 0 ${width} ${height}`,
                           role: 'img', 'aria-label': 'leases per worker over time'});
  workers.forEach((w, i) => root.append(svg('text', {x: left - 6, y: top + i * laneH + 15,
                                                     'text-anchor': 'end'}, w)));
  const palette = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#f0e442'];
  for (const bar of bars) {
    const i = workers.indexOf(bar.worker);
    const withoutResult = bar.ending === 're-queued' || bar.ending === 'gave up';
    const rect = svg('rect', {x: x((bar.start - t0) / 1000), y: top + i * laneH + 3,
                              width: Math.max(2, x((bar.end - t0) / 1000) - x((bar.start - t0) / 1000)),
                              height: laneH - 6,
                              fill: palette[colours.get(bar.candidate) % palette.length],
                              class: withoutResult ? 'no-result' : '',
                              'data-probe': bar.probe, 'data-worker': bar.worker,
                              'data-ending': bar.ending});
    rect.append(svg('title', {}, `${bar.probe} on ${bar.members.join(' + ')}: ${bar.ending}` +
                                 (bar.ending === 'running' ? '' : ` (${bar.text})`)));
    root.append(rect);
  }
  const axisY = top + laneH * workers.length + 4;
  root.append(svg('line', {x1: left, x2: width - 10, y1: axisY, y2: axisY, stroke: '#444'}));
  for (let i = 0; i <= 4; ++i) {
    const seconds = niceMax(span) * i / 4;
    root.append(svg('text', {x: x(seconds), y: axisY + 14, 'text-anchor': 'middle'},
                    Number(seconds.toPrecision(3)).toString()));
  }
  root.append(svg('text', {x: (left + width) / 2, y: axisY + 32, 'text-anchor': 'middle'},
                  'seconds since the first lease (one colour per candidate: a gang shares it)'));
  return root;
}

function candidateTable(search) {
  const rows = (search.candidates || []).map((c, rank) => {
    // A leader probed again longer is "confirming", shown with its first measurement.
    const confirming = c.state !== 'CANDIDATE_PROBED' && Boolean(c.screeningResult);
    const result = confirming ? c.screeningResult : c.probeResult;
    const ok = result && result.outcome === 'PROBE_OK';
    return [rank + 1, configLabel(c.config),
            confirming ? 'confirming' : c.state.replace('CANDIDATE_', '').toLowerCase(),
            fixed((c.predicted || {}).modelTflopsPerGpu, 1),
            ok ? fixed(result.modelTflopsPerGpu, 1)
               : (result ? (result.outcome || '').replace('PROBE_', '').toLowerCase() : ''),
            originLabel(c),
            `${fixed(100 * ((c.memory || {}).fractionOfCapacity || 0), 0)}% ` +
                ((c.memory || {}).verdict || ''),
            c.waitingReason || c.worker || ''];
  });
  const t = table([{text: '#', num: true}, {text: 'Configuration'}, {text: 'State'},
                   {text: 'Predicted TFLOP/s per GPU', num: true},
                   {text: 'Measured TFLOP/s per GPU', num: true}, {text: 'From'},
                   {text: 'Estimated memory'}, {text: 'Worker / waiting'}], rows);
  t.setAttribute('id', 'candidates');
  return t;
}

async function searchPage(id) {
  const name = 'searches/' + id;
  // Kept between polls: the log grows at its end only, the plan of a search's spec never
  // changes, and the memory map keeps the rows the user chose to see.
  let events = [];
  let plan = null;
  const memoryMapView = {showAll: false};
  const loader = async () => {
    // The search first: the events read after it include every one up to its state, so the
    // last poll of an ended search has the whole log.
    const search = await api('/api/search?name=' + encodeURIComponent(name));
    const after = events.length > 0 ? events[events.length - 1].sequence : '0';
    const [newer, planned] = await Promise.all([
      eventsAfter(name, after), plan || api('/api/search_plan?name=' + encodeURIComponent(name))]);
    events = events.concat(newer);
    plan = planned;
    const counts = search.counts || {};
    const best = bestOf(search);
    const history = probeHistory(search, events);
    const log = el('div', {class: 'log', id: 'events'},
                   ...events.map(e => el('div', {}, `${e.time}  ${e.text}`)));
    show(el('h1', {}, `${search.name} ${search.displayName ? '· ' + search.displayName : ''}`),
         el('p', {}, el('span', {class: 'state', id: 'search-state'}, search.state), ' · ',
            el('span', {id: 'progress'}, progressText(search.progress || {})), ' · ',
            `${fixed(Number(counts.gpuSeconds || 0) / 3600, 2)} GPU-hours`, ' · ',
            `created ${age(search.createTime)} ago`),
         best ? el('p', {id: 'best'}, 'Best: ', configLabel(best.candidate.config), ' at ',
                   `${fixed(best.result.modelTflopsPerGpu, 1)} TFLOP/s per GPU `,
                   originLabel(best.candidate)) : null,
         search.stopReason ? el('p', {class: 'muted', id: 'stop-reason'}, search.stopReason)
                           : null,
         el('h2', {}, 'Candidates: predicted against measured'), candidateTable(search),
         el('h2', {}, 'Convergence'), convergenceFigures(search, history),
         el('h2', {}, 'Memory map of the plan (estimated)'),
         memoryMapFigure(plan.memoryMap || {}, search.candidates, memoryMapView),
         el('h2', {}, 'Workers and gangs over time'), gangTimeline(events),
         el('h2', {}, 'Event log'), log);
    log.scrollTop = log.scrollHeight;
    if (!ENDED.has(search.state)) pollAgain(loader);
  };
  await loader();
}

// --- Workers --------------------------------------------------------------------------------

async function workersPage() {
  const list = await api('/api/workers');
  const rows = (list.workers || []).map(w => [
    w.name, w.hostname || '', (w.state || '').replace('WORKER_', '').toLowerCase(),
    `${(w.gpus || []).length} x ${w.gpuType || 'unknown GPU'}`, (w.backends || []).join(', '),
    w.currentProbe || '', w.probesCompleted || 0, w.registeredBy || '']);
  const t = table([{text: 'Worker'}, {text: 'Host'}, {text: 'State'}, {text: 'GPUs'},
                   {text: 'Backends'}, {text: 'Running'}, {text: 'Probes done', num: true},
                   {text: 'Registered by'}], rows);
  t.setAttribute('id', 'workers');
  show(el('h1', {}, 'Workers'), t);
  pollAgain(workersPage);
}

// --- Planner --------------------------------------------------------------------------------

// The planner's form: each field and the PlanRequest field it sets (proto3 JSON names), with
// the flag of `paratune plan` that sets the same.
const PLAN_FIELDS = [
  {id: 'plan-model', label: 'Model (--model)', type: 'text', value: 'llama3.1-8b'},
  {id: 'plan-gpu', label: 'GPU (--gpu)', type: 'text', value: 'h100-80gb'},
  {id: 'plan-nodes', label: 'Nodes (--nodes)', type: 'number', value: 2},
  {id: 'plan-gpus-per-node', label: 'GPUs per node (--gpus_per_node)', type: 'number', value: 8},
  {id: 'plan-seq-len', label: 'Sequence length (--seq_len)', type: 'number', value: 4096},
  {id: 'plan-global-batch', label: 'Global batch (--global_batch)', type: 'number', value: 256},
];
const RECOMPUTE_MODES = ['none', 'selective', 'full'];

function field(id) { return document.getElementById(id); }

function formRow(label, input) {
  return el('label', {class: 'form-row'}, el('span', {}, label), input);
}

// The PlanRequest the form describes; every candidate and map row comes back (limit 0): the
// page shows the best of them and lets the map show all.
function planRequestOfForm() {
  const number = id => Number(field(id).value);
  return {
    spec: {
      model: {preset: field('plan-model').value.trim()},
      training: {globalBatchSize: number('plan-global-batch'), seqLen: number('plan-seq-len'),
                 precision: field('plan-precision').value},
      cluster: {gpu: {type: field('plan-gpu').value.trim()}, numNodes: number('plan-nodes'),
                gpusPerNode: number('plan-gpus-per-node')},
      space: {recomputeModes: RECOMPUTE_MODES.filter(m => field('plan-recompute-' + m).checked)
                                  .map(m => 'RECOMPUTE_' + m.toUpperCase()),
              memoryPolicy: field('plan-memory-policy').value},
    },
    limit: 0,
  };
}

// Three significant figures or so, as `paratune plan` prints its costs (cli/cost_report.cc).
function figure(value) {
  if (value >= 100) return fixed(value, 0);
  if (value >= 10) return fixed(value, 1);
  if (value >= 0.01 || value === 0) return fixed(value, 2);
  return fixed(value, 4);
}

// "low" when both print the same, else "low-high".
const range = (low, high) => low === high ? low : `${low}-${high}`;

// The projected cost of the plan (PlanResponse.cost) as `paratune plan` prints it: one row per
// policy (ADAPTIVE from its expected probes to those plus every confirmation) and one for a
// full training job per candidate; probes one after another, each holding every GPU.
function costProjection(cost) {
  const gpus = Number(cost.gpus || 0);
  const runs = c => Number((c || {}).runs || 0);
  const total = c => Number((c || {}).totalSeconds || 0);
  const longest = c => Number((c || {}).longestSeconds || 0);
  if (runs(cost.exhaustive) === 0) {
    return el('p', {id: 'plan-cost'}, 'Projected cost: none, the plan has no candidate to probe.');
  }
  const row = (label, c) => [label, runs(c), fixed(runs(c) ? total(c) / runs(c) : 0, 0),
                             fixed(longest(c), 0), figure(total(c) * gpus / 3600),
                             figure(total(c) / 3600)];
  const low = cost.adaptive || {}, extra = cost.adaptiveConfirmations || {};
  const high = {runs: runs(low) + runs(extra), totalSeconds: total(low) + total(extra),
                longestSeconds: Math.max(longest(low), longest(extra))};
  const adaptive = ['ADAPTIVE', range(String(runs(low)), String(runs(high))),
                    fixed(runs(low) ? total(low) / runs(low) : 0, 0),
                    range(fixed(longest(low), 0), fixed(longest(high), 0)),
                    range(figure(total(low) * gpus / 3600), figure(total(high) * gpus / 3600)),
                    range(figure(total(low) / 3600), figure(total(high) / 3600))];
  const t = table([{text: 'search'}, {text: 'probes', num: true}, {text: 's each', num: true},
                   {text: 'longest s', num: true}, {text: 'GPU-hours', num: true},
                   {text: 'wall h', num: true}],
                  [adaptive, row('TOP_K', cost.topK), row('EXHAUSTIVE', cost.exhaustive),
                   row('one full job per candidate', cost.fullJobs)]);
  t.setAttribute('id', 'plan-cost');
  return el('div', {},
            el('p', {}, `Projected cost (predicted, not measured): probes one after another, ` +
                        `each holding all ${gpus} GPUs. The best predicted candidate: full step ` +
                        `${figure(Number(cost.bestStepSeconds || 0))} s; its probe ` +
                        `${fixed(cost.bestProbeSeconds, 0)} s ` +
                        `(${fixed(cost.bestFullStepProbeSeconds, 0)} s with full steps).`),
            t,
            el('p', {class: 'muted'}, 'ADAPTIVE: its probes if every measurement equals its ' +
                                      'prediction, up to those plus every confirmation; a real ' +
                                      'search probes more or fewer. One full job per candidate: ' +
                                      'each trained as NVIDIA NeMo\'s AutoConfigurator runs it.'));
}

// Why a configuration is or is not a candidate (POST /api/explain, as `paratune plan
// --explain` says it), with its memory per pipeline stage and predicted step when the rules
// hold.
function explanation(config, answer) {
  const parts = [el('p', {id: 'explain-reason'}, configLabel(config), ': ', answer.reason || '')];
  const estimate = answer.estimate;
  if (!estimate) return parts;
  const memory = estimate.memory || {};
  const stages = memory.stages || [];
  const gib = bytes => fixed(Number(bytes || 0) / 2 ** 30, 2);
  const terms = (stages[0] || {}).terms || [];
  const memoryTable = table(
      [{text: 'memory per GPU (GiB)'},
       ...stages.map(st => ({text: `stage ${st.stage || 0}`, num: true}))],
      [...terms.map((term, t) => [term.name, ...stages.map(st => gib(st.terms[t].bytes))]),
       ['total', ...stages.map(st => gib(st.totalBytes))]]);
  memoryTable.setAttribute('id', 'explain-memory');
  const perf = estimate.performance || {};
  const seconds = value => fixed(value, 3);
  const timing = table([{text: 'predicted step (performance model)'}, {text: 'seconds', num: true}],
                       [['step time', seconds(perf.stepTimeSeconds)],
                        ['compute', seconds(perf.computeSeconds)],
                        ['pipeline bubble', seconds(perf.pipelineBubbleSeconds)],
                        ['TP communication (exposed)', seconds(perf.tpCommunicationSeconds)],
                        ['CP communication (exposed)', seconds(perf.cpCommunicationSeconds)],
                        ['DP communication (exposed)', seconds(perf.dpCommunicationSeconds)],
                        ['PP communication (exposed)', seconds(perf.ppCommunicationSeconds)],
                        ['optimizer step', seconds(perf.optimizerSeconds)]]);
  timing.setAttribute('id', 'explain-timing');
  return parts.concat([
    el('div', {class: 'tables'}, memoryTable, timing),
    el('p', {}, `peak ${gib(memory.peakBytes)} GiB of ${gib(memory.capacityBytes)} GiB = ` +
                `${fixed(100 * (memory.fractionOfCapacity || 0), 1)}% of capacity, ` +
                `${memory.verdict || ''} ` +
                `(SAFE below ${fixed(100 * (memory.safeThreshold || 0), 1)}%); ` +
                `${fixed(perf.tokensPerSecond, 0)} tokens/s, ` +
                `${fixed(perf.modelTflopsPerGpu, 1)} TFLOP/s per GPU ` +
                `(+- ${fixed(100 * (perf.relativeError || 0), 1)}%, one sigma), MFU ` +
                `${fixed(100 * (perf.mfu || 0), 1)}% of ${fixed(perf.mfuPeakTflops, 0)} ` +
                `${perf.mfuPeakPrecision || ''} TFLOP/s. Predictions of the estimator.`)]);
}

// The explain form: a configuration's fields, filled from a ranking row's button or by hand.
const EXPLAIN_FIELDS = [['dp', 'dataParallel', 1], ['tp', 'tensorParallel', 1],
                        ['pp', 'pipelineParallel', 1], ['cp', 'contextParallel', 1],
                        ['mbs', 'microBatchSize', 1], ['vp', 'virtualPipeline', 1]];

function explainForm(output) {
  const inputs = EXPLAIN_FIELDS.map(([name, , value]) =>
      formRow(name, el('input', {type: 'number', min: 1, id: 'explain-' + name, value})));
  const recompute = el('select', {id: 'explain-recompute'},
                       ...RECOMPUTE_MODES.map(m => el('option', {value: m}, m)));
  const button = el('button', {id: 'explain-button'}, 'Explain');
  button.addEventListener('click', () => guarded(async () => {
    const config = {recompute: 'RECOMPUTE_' + field('explain-recompute').value.toUpperCase()};
    for (const [name, key] of EXPLAIN_FIELDS) config[key] = Number(field('explain-' + name).value);
    try {
      const answer = await api('/api/explain', {
          method: 'POST', headers: {'Content-Type': 'application/json'},
          body: JSON.stringify({plan: planRequestOfForm(), config})});
      output.replaceChildren(...explanation(config, answer));
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) throw error;
      output.replaceChildren(el('p', {class: 'error', id: 'explain-error'}, error.message));
    }
  }));
  return el('div', {class: 'form'}, ...inputs, formRow('recompute', recompute), button);
}

// Fills the explain form with `config` and explains it.
function explainConfig(config) {
  for (const [name, key] of EXPLAIN_FIELDS) {
    field('explain-' + name).value = Number(config[key] || 1);
  }
  field('explain-recompute').value =
      (config.recompute || 'RECOMPUTE_NONE').replace('RECOMPUTE_', '').toLowerCase();
  field('explain-button').click();
  field('explain').scrollIntoView();
}

// One change of a plan's advice (PlanResponse.advice) as `paratune plan` prints it: the
// change with the candidates it gives, and the flags that make it.
function adviceRow(advice) {
  const count = Number(advice.candidates || 0);
  const candidates = `${count} candidate${count === 1 ? '' : 's'}`;
  const modes = (advice.recomputeModes || []).map(m => m.replace('RECOMPUTE_', '').toLowerCase());
  const sizes = (advice.microBatchSizes || []).map(Number);
  switch (advice.kind) {
    case 'ADVICE_RECOMPUTE':
      return [`recompute modes ${modes.join(', ')}: ${candidates}`,
              `--recompute_modes=${modes.join(',')}`];
    case 'ADVICE_NODES':
      return [`${advice.numNodes} nodes: ${candidates}`, `--nodes=${advice.numNodes}`];
    case 'ADVICE_GPU_TYPE':
      return [`${advice.gpuType} GPUs: ${candidates}`, `--gpu=${advice.gpuType}`];
    case 'ADVICE_FP8_PARAMETERS':
      return [`fp8 with fp8 weights (fp8_param_gather): ${candidates}`, '--fp8 --fp8_param_gather'];
    case 'ADVICE_SEQUENCE_LENGTH':
      return [`sequence ${advice.seqLen}: ${candidates}`, `--seq_len=${advice.seqLen}`];
    case 'ADVICE_MICRO_BATCH_SIZES':
      return [`micro-batch sizes ${sizes.join(', ')}: ${candidates}`,
              `--micro_batches=${sizes.join(',')}`];
    default:
      return [`an unknown change: ${candidates}`, ''];
  }
}

// What a plan says when nothing fitted as requested: that recompute was added, and the
// changes that each give candidates; nothing otherwise.
function planAdvice(plan) {
  const parts = [];
  if (plan.recomputeAdded) {
    parts.push(el('p', {id: 'plan-recompute-added'},
                  'Nothing fits as requested, without activation recompute: this plan, like a ' +
                  'search of the same settings, also searches selective and full recompute.'));
  }
  const advice = plan.advice || [];
  if (advice.length > 0) {
    parts.push(el('p', {}, plan.recomputeAdded
                               ? 'Each of these changes to the request alone gives candidates ' +
                                     '(the first is what this plan did):'
                               : 'Nothing fits. Each of these changes alone gives candidates:'));
    const changes = table([{text: 'change'}, {text: 'flags'}], advice.map(adviceRow));
    changes.setAttribute('id', 'plan-advice');
    parts.push(changes);
  }
  return parts;
}

// The candidates the ranking lists; the rest are counted under it.
const RANKING_ROWS = 10;

function planPage() {
  const inputs = PLAN_FIELDS.map(f => formRow(f.label, el('input', {type: f.type, id: f.id,
                                                                    value: f.value, min: 1})));
  const recompute = el('span', {class: 'form-row'},
                       el('span', {}, 'Recompute modes (--recompute_modes)'),
                       ...RECOMPUTE_MODES.map(m => {
                         const box = el('input', {type: 'checkbox', id: 'plan-recompute-' + m});
                         box.checked = m === 'none';
                         return el('label', {}, box, ' ', m, ' ');
                       }));
  const precision = el('select', {id: 'plan-precision'}, el('option', {value: 'BF16'}, 'bf16'),
                       el('option', {value: 'FP8'}, 'fp8'));
  const policy = el('select', {id: 'plan-memory-policy'},
                    el('option', {value: 'MEASURE_RISKY'}, 'measure_risky (probe RISKY too)'),
                    el('option', {value: 'SAFE_ONLY'}, 'safe_only'));
  const button = el('button', {id: 'plan-button'}, 'Plan');
  const output = el('div', {id: 'plan-output'});
  const explained = el('div', {id: 'explain-output'});
  const mapView = {showAll: false};
  button.addEventListener('click', () => guarded(async () => {
    try {
      const plan = await api('/api/plan', {
          method: 'POST', headers: {'Content-Type': 'application/json'},
          body: JSON.stringify(planRequestOfForm())});
      const counts = plan.counts || {};
      const candidates = plan.candidates || [];
      const ranking = table(
          [{text: '#', num: true}, {text: 'Configuration'},
           {text: 'Predicted TFLOP/s per GPU', num: true}, {text: 'Estimated memory'}, {text: ''}],
          candidates.slice(0, RANKING_ROWS).map((c, i) => {
            const explain = el('button', {class: 'explain-row'}, 'Explain');
            explain.addEventListener('click', () => explainConfig(c.config));
            return [i + 1, configLabel(c.config), fixed((c.predicted || {}).modelTflopsPerGpu, 1),
                    `${fixed(100 * ((c.memory || {}).fractionOfCapacity || 0), 0)}% ` +
                        ((c.memory || {}).verdict || ''), explain];
          }));
      ranking.setAttribute('id', 'plan-ranking');
      const rejections = (plan.rejections || []).map(r => [r.reason, r.count]);
      output.replaceChildren(...[
          el('p', {id: 'plan-counts'},
             `${counts.enumerated || 0} enumerated, ${counts.valid || 0} valid, ` +
             `${candidates.length} candidates, ${counts.memoryOutOfMemory || 0} out of memory. ` +
             'Predictions of the estimator, nothing probed.'),
          ...planAdvice(plan),
          rejections.length > 0 ? table([{text: 'rejected because'}, {text: 'configs', num: true}],
                                        rejections) : null,
          el('h2', {}, 'Projected cost of a search'), costProjection(plan.cost || {}),
          el('h2', {}, 'Predicted ranking'),
          candidates.length > RANKING_ROWS
              ? el('p', {class: 'muted'}, `The best ${RANKING_ROWS} of ${candidates.length}.`)
              : null,
          ranking,
          el('h2', {}, 'Memory map (estimated)'),
          memoryMapFigure(plan.memoryMap || {}, candidates, mapView)].filter(n => n !== null));
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) throw error;
      output.replaceChildren(el('p', {class: 'error', id: 'plan-error'}, error.message));
    }
  }));
  show(el('h1', {}, 'Planner'),
       el('p', {}, 'What `paratune plan` shows for a search spec: the candidates, their ' +
                   'predicted ranking, the memory map and what a search would cost. Nothing is ' +
                   'probed.'),
       el('div', {class: 'form'}, ...inputs, recompute,
          formRow('Precision (--fp8)', precision),
          formRow('Memory policy (--memory_policy)', policy), el('p', {}, button)),
       output,
       el('h2', {id: 'explain'}, 'Explain a configuration (plan --explain)'),
       el('p', {class: 'muted'}, 'Why a configuration is or is not a candidate of the plan ' +
                                 'above, with its memory and predicted step.'),
       explainForm(explained), explained);
}

// --- Routing --------------------------------------------------------------------------------

async function showWho() {
  const who = await api('/api/whoami');
  document.getElementById('who').textContent =
      who.tokens ? `signed in as ${who.principal} (${who.role})` : 'no token file: open access';
}

function route() {
  stopPolling();
  const hash = location.hash || '#/searches';
  guarded(async () => {
    await showWho();
    const search = /^#\/search\/(\d+)$/.exec(hash);
    if (search) return searchPage(search[1]);
    if (hash === '#/workers') return workersPage();
    if (hash === '#/plan') return planPage();
    return searchesPage();
  });
}

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', route);
