// termhost's browser page: the live list of the host's terminals (root state and
// root/terminalsChanged), and one terminal at a time in xterm.js, to watch or type,
// rename, clear, resize with the window and dispose, with the commands shell
// integration found listed beside it.
//
// The token is read once from the address's fragment (#tkn=…), kept in this tab's
// sessionStorage, and taken out of the address bar at once; it is sent only in the
// WebSocket handshake (see ahp.js), never in a URL.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { HostConnection, ROOT, isSendableToken } from './ahp.js';

const TOKEN_KEY = 'termhost.token';

// The fragment is read before anything else, so that nothing can copy the address
// with the token in it after this point.
takeTokenFromAddress();

const $ = (id) => document.getElementById(id);
const ui = {
  status: $('status'),
  notice: $('notice'),
  signOut: $('sign-out'),
  signIn: $('sign-in'),
  signInReason: $('sign-in-reason'),
  tokenInput: $('token-input'),
  tokenGo: $('token-go'),
  app: $('app'),
  list: $('terminals'),
  noTerminals: $('no-terminals'),
  newTerminal: $('new-terminal'),
  title: $('title'),
  size: $('size'),
  lifecycle: $('lifecycle'),
  claim: $('claim'),
  cwd: $('cwd'),
  clear: $('clear'),
  dispose: $('dispose'),
  screen: $('screen'),
  placeholder: $('placeholder'),
  markList: $('mark-list'),
  noMarks: $('no-marks'),
};

// clientId names this page to the host for as long as it is open: the claim of a
// terminal it creates, and the origin of what it dispatches.
const clientId = 'web-' + randomHex(8);

const app = {
  conn: null,
  // terminals is the root state's list, replaced whole by root/terminalsChanged.
  terminals: [],
  // The open terminal: its URI, whether its snapshot has come, the serverSeq the
  // snapshot was taken at, and its state as this page folds it.
  openUri: null,
  subscribed: false,
  fromSeq: 0,
  state: null,
  listedOpen: false,
  // marks are the open terminal's commands, by commandId, in order.
  marks: new Map(),
  retries: 0,
  retryTimer: 0,
  noticeTimer: 0,
};

const term = new Terminal({
  cursorBlink: true,
  scrollback: 5000,
  fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace',
  fontSize: 14,
  theme: { background: '#000000' },
});
const fit = new FitAddon();
term.loadAddon(fit);
term.open(ui.screen);
ui.screen.classList.add('idle');

term.onData((data) => sendInput(data));
term.onBinary((data) => sendInput(data));

wireControls();
connect();

// ---- signing in ----

function takeTokenFromAddress() {
  const hash = location.hash.slice(1);
  if (!hash) return;
  const params = new URLSearchParams(hash);
  if (!params.has('tkn')) return;
  const token = params.get('tkn').trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  params.delete('tkn');
  const rest = params.toString();
  history.replaceState(history.state, '', location.pathname + location.search + (rest ? '#' + rest : ''));
}

function showSignIn(reason) {
  disconnect();
  ui.app.hidden = true;
  ui.signOut.hidden = true;
  ui.signIn.hidden = false;
  ui.signInReason.textContent = reason;
  setStatus('signed out', 'bad');
  ui.tokenInput.focus();
}

function signInWithTyped() {
  const token = ui.tokenInput.value.trim();
  ui.tokenInput.value = '';
  if (!isSendableToken(token)) {
    showSignIn('That is not a token: a token has no spaces or quotes.');
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  connect();
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  closeTerminalView();
  showSignIn('Signed out.');
}

// ---- the connection ----

function wsURL() {
  return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/';
}

async function connect() {
  clearTimeout(app.retryTimer);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    showSignIn('This page has no token: sign in to see and use the terminals.');
    return;
  }
  if (!isSendableToken(token)) {
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn('The token in the address is not a token: it has spaces or quotes.');
    return;
  }
  disconnect();
  setStatus('connecting…');
  const conn = new HostConnection({ url: wsURL(), token, onMessage, onClose: (ev) => lost(conn, ev) });
  app.conn = conn;
  try {
    await conn.open();
  } catch {
    if (app.conn !== conn) return;
    app.conn = null;
    // The browser does not say why an upgrade failed. If the host answers its
    // health check, it is up, and it refused this token.
    if (await hostIsUp()) {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignIn('The host refused this token (it may have been revoked). Sign in again.');
    } else {
      retryLater('the host cannot be reached');
    }
    return;
  }
  let init;
  try {
    init = await conn.request('initialize', {
      channel: ROOT,
      protocolVersions: ['1.0.0'],
      clientId,
      clientInfo: { name: 'termhost-web', version: '1' },
      initialSubscriptions: [ROOT],
    });
  } catch (err) {
    if (app.conn === conn) retryLater(err.message);
    return;
  }
  if (app.conn !== conn) return;
  app.retries = 0;
  const root = (init.snapshots || []).find((s) => s.resource === ROOT);
  app.terminals = (root && root.state && root.state.terminals) || [];
  ui.signIn.hidden = true;
  ui.app.hidden = false;
  ui.signOut.hidden = false;
  const host = init.serverInfo ? `${init.serverInfo.name} ${init.serverInfo.version}` : 'the host';
  setStatus(`connected to ${host}`, 'ok');
  renderList();
  if (app.openUri) openTerminal(app.openUri, true);
}

function disconnect() {
  if (app.conn) app.conn.close();
  app.conn = null;
  app.subscribed = false;
}

function lost(conn, ev) {
  if (app.conn !== conn) return;
  app.conn = null;
  app.subscribed = false;
  retryLater(ev.reason || `the connection closed (${ev.code})`);
}

function retryLater(why) {
  const delay = Math.min(1000 * 2 ** app.retries, 10000);
  app.retries++;
  setStatus(`disconnected: ${why}; trying again in ${Math.round(delay / 1000)} s`, 'bad');
  clearTimeout(app.retryTimer);
  app.retryTimer = setTimeout(connect, delay);
}

async function hostIsUp() {
  try {
    const r = await fetch('/healthz', { cache: 'no-store' });
    return r.ok;
  } catch {
    return false;
  }
}

function onMessage(msg) {
  if (msg.method !== 'action' || !msg.params) return;
  const env = msg.params;
  if (env.channel === ROOT) {
    if (!env.rejectionReason && env.action && env.action.type === 'root/terminalsChanged') {
      app.terminals = env.action.terminals || [];
      renderList();
    }
    return;
  }
  // Actions before the snapshot, or already in it, are not applied (PROTOCOL.md 3:
  // every later action has serverSeq > fromSeq).
  if (env.channel !== app.openUri || !app.subscribed || env.serverSeq <= app.fromSeq) return;
  if (env.rejectionReason) {
    if (env.origin && env.origin.clientId === clientId) notice(env.rejectionReason);
    return;
  }
  applyAction(env.action);
}

// ---- the list ----

function renderList() {
  const open = app.openUri;
  ui.list.replaceChildren(
    ...app.terminals.map((t) => {
      const li = document.createElement('li');
      li.dataset.uri = t.resource;
      const exited = t.lifecycle && t.lifecycle.status === 'exited';
      if (exited) li.classList.add('exited');
      if (t.resource === open) li.classList.add('open');
      const b = document.createElement('button');
      b.type = 'button';
      const title = document.createElement('span');
      title.className = 't-title';
      title.textContent = t.title || t.resource;
      const meta = document.createElement('span');
      meta.className = 't-meta';
      meta.textContent = [lifecycleText(t.lifecycle), claimText(t.claim), nodeText(t._meta)].filter(Boolean).join(' · ');
      b.title = t.resource;
      b.append(title, meta);
      b.addEventListener('click', () => openTerminal(t.resource));
      li.append(b);
      return li;
    }),
  );
  ui.noTerminals.hidden = app.terminals.length > 0;
  // A terminal that leaves the list while open was disposed (by anyone).
  const listed = app.terminals.some((t) => t.resource === open);
  if (open && app.listedOpen && !listed) {
    closeTerminalView();
    notice('That terminal was disposed.');
  }
  if (listed) app.listedOpen = true;
}

function lifecycleText(lc) {
  if (!lc || lc.status !== 'exited') return 'running';
  return lc.exitCode === undefined ? 'exited' : `exited (${lc.exitCode})`;
}

// nodeText names the cluster node a terminal runs on; a single host's rows carry none.
function nodeText(meta) {
  return meta && typeof meta.node === 'string' && meta.node ? `on ${meta.node}` : '';
}

function claimText(claim) {
  if (!claim) return '';
  if (claim.kind === 'client') return claim.clientId === clientId ? 'claimed by this page' : `claimed by ${claim.clientId}`;
  if (claim.kind === 'session') {
    const busy = claim.toolCallId ? ', running a tool call' : '';
    return `claimed by session ${claim.session}${busy}`;
  }
  return '';
}

// ---- the open terminal ----

async function openTerminal(uri, again = false) {
  const conn = app.conn;
  if (!conn || (!again && app.openUri === uri && app.subscribed)) return;
  if (app.openUri && app.openUri !== uri && app.subscribed) {
    try {
      conn.notify('unsubscribe', { channel: app.openUri });
    } catch {}
  }
  if (app.openUri !== uri) app.listedOpen = false;
  app.openUri = uri;
  app.subscribed = false;
  app.state = null;
  renderList();
  let res;
  try {
    res = await conn.request('subscribe', { channel: uri });
  } catch (err) {
    if (app.openUri === uri && app.conn === conn) {
      closeTerminalView();
      notice(`Cannot open ${uri}: ${err.message}`);
    }
    return;
  }
  if (app.openUri !== uri || app.conn !== conn) return;
  const snap = res && res.snapshot;
  if (!snap) {
    closeTerminalView();
    notice(`${uri} has no state to show`);
    return;
  }
  app.subscribed = true;
  app.fromSeq = snap.fromSeq;
  app.state = snap.state;
  renderSnapshot(snap.state);
  fitToWindow();
  term.focus();
}

function closeTerminalView() {
  if (app.openUri && app.subscribed && app.conn) {
    try {
      app.conn.notify('unsubscribe', { channel: app.openUri });
    } catch {}
  }
  app.openUri = null;
  app.subscribed = false;
  app.state = null;
  app.listedOpen = false;
  clearMarks();
  term.reset();
  ui.screen.classList.add('idle');
  ui.placeholder.hidden = false;
  renderToolbar();
  renderList();
}

function renderSnapshot(st) {
  clearMarks();
  term.reset();
  // Without a pseudoterminal, lines end in a bare "\n" (no ONLCR).
  term.options.convertEol = st.isPty === false;
  term.options.disableStdin = exited(st);
  if (st.cols && st.rows) term.resize(st.cols, st.rows);
  for (const part of st.content || []) {
    if (part.type === 'command') {
      addMark(part);
      term.write(part.output || '');
    } else if (typeof part.value === 'string') {
      term.write(part.value);
    }
  }
  ui.screen.classList.remove('idle');
  ui.placeholder.hidden = true;
  renderToolbar();
}

// inOrder runs fn once xterm has parsed everything written before it: writes are
// queued, while resize, clear and markers act at once.
function inOrder(fn) {
  term.write('', fn);
}

function applyAction(a) {
  const st = app.state;
  switch (a.type) {
    case 'terminal/data':
      term.write(a.data);
      break;
    case 'terminal/resized':
      st.cols = a.cols;
      st.rows = a.rows;
      inOrder(() => term.resize(a.cols, a.rows));
      break;
    case 'terminal/titleChanged':
      st.title = a.title;
      break;
    case 'terminal/cwdChanged':
      st.cwd = a.cwd;
      break;
    case 'terminal/claimed':
      st.claim = a.claim;
      break;
    case 'terminal/exited':
      st.lifecycle = { status: 'exited', exitCode: a.exitCode };
      term.options.disableStdin = true;
      break;
    case 'terminal/cleared':
      st.content = [];
      inOrder(() => term.clear());
      clearMarks();
      break;
    case 'terminal/commandDetectionAvailable':
      st.supportsCommandDetection = true;
      break;
    case 'terminal/commandExecuted':
      st.supportsCommandDetection = true;
      addMark({ commandId: a.commandId, commandLine: a.commandLine, timestamp: a.timestamp, isComplete: false });
      break;
    case 'terminal/commandFinished':
      finishMark(a);
      break;
    default:
      return; // an action this page does not know changes nothing it shows
  }
  renderToolbar();
}

function exited(st) {
  return !!(st && st.lifecycle && st.lifecycle.status === 'exited');
}

function renderToolbar() {
  const st = app.state;
  const on = !!st;
  ui.title.disabled = !on;
  ui.clear.disabled = !on;
  ui.dispose.disabled = !on;
  if (document.activeElement !== ui.title) ui.title.value = on ? st.title || '' : '';
  ui.size.textContent = on && st.cols && st.rows ? `${st.cols}×${st.rows}` : '';
  ui.lifecycle.textContent = on ? lifecycleText(st.lifecycle) : '';
  ui.lifecycle.className = 'chip ' + (on ? (exited(st) ? 'fail' : 'ok') : '');
  ui.claim.textContent = ui.claim.title = on ? claimText(st.claim) : '';
  ui.cwd.textContent = ui.cwd.title = on && st.cwd ? folderOf(st.cwd) : '';
  ui.noMarks.textContent = on && !st.supportsCommandDetection ? 'No shell integration in this terminal.' : 'No commands yet.';
  ui.noMarks.hidden = app.marks.size > 0;
}

function folderOf(uri) {
  try {
    const u = new URL(uri);
    return u.protocol === 'file:' ? decodeURIComponent(u.pathname) : uri;
  } catch {
    return uri;
  }
}

function sendInput(data) {
  if (!app.conn || !app.subscribed || exited(app.state)) return;
  try {
    app.conn.dispatch(app.openUri, { type: 'terminal/input', data });
  } catch {}
}

// ---- commands beside the scrollback ----

function addMark(part) {
  const mark = { ...part, marker: null, li: document.createElement('li') };
  app.marks.set(part.commandId, mark);
  // The command's output starts where the cursor is once what came before it is
  // written: the marker stays on that line as the scrollback moves.
  inOrder(() => {
    if (app.marks.get(part.commandId) === mark) mark.marker = term.registerMarker(0);
    renderMark(mark);
  });
  renderMark(mark);
  ui.markList.append(mark.li);
  ui.noMarks.hidden = true;
  mark.li.scrollIntoView({ block: 'nearest' });
}

function finishMark(a) {
  const mark = app.marks.get(a.commandId);
  if (!mark) return;
  mark.isComplete = true;
  mark.exitCode = a.exitCode;
  mark.durationMs = a.durationMs;
  renderMark(mark);
}

function renderMark(mark) {
  const li = mark.li;
  li.className = !mark.isComplete ? 'running' : mark.exitCode === undefined || mark.exitCode === 0 ? 'ok' : 'fail';
  const b = document.createElement('button');
  b.type = 'button';
  const line = document.createElement('span');
  line.className = 'm-line';
  line.textContent = mark.commandLine || '(a command)';
  const meta = document.createElement('span');
  meta.className = 'm-meta';
  const parts = [];
  if (!mark.isComplete) parts.push('running');
  else {
    parts.push(mark.exitCode === undefined ? 'done' : `exit ${mark.exitCode}`);
    if (mark.durationMs !== undefined) parts.push(duration(mark.durationMs));
  }
  const gone = mark.marker && mark.marker.isDisposed;
  if (gone) parts.push('out of the scrollback');
  meta.textContent = parts.join(' · ');
  b.append(line, meta);
  if (mark.timestamp) b.title = `started ${new Date(mark.timestamp).toLocaleString()}`;
  b.disabled = gone;
  b.addEventListener('click', () => scrollToMark(mark));
  li.replaceChildren(b);
}

function scrollToMark(mark) {
  const m = mark.marker;
  if (!m || m.isDisposed || m.line < 0) {
    renderMark(mark);
    return;
  }
  // The marker is on the first line of output; the command line is the one above.
  const line = Math.max(0, m.line - 1);
  term.scrollToLine(Math.max(0, line - 2));
  term.selectLines(line, line);
  term.focus();
}

function clearMarks() {
  for (const m of app.marks.values()) if (m.marker) m.marker.dispose();
  app.marks.clear();
  ui.markList.replaceChildren();
  ui.noMarks.hidden = false;
}

function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

// ---- controls ----

function wireControls() {
  ui.tokenGo.addEventListener('click', signInWithTyped);
  ui.tokenInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') signInWithTyped();
  });
  ui.signOut.addEventListener('click', signOut);
  ui.newTerminal.addEventListener('click', newTerminal);
  ui.clear.addEventListener('click', () => dispatchOpen({ type: 'terminal/cleared' }));
  ui.dispose.addEventListener('click', disposeOpen);
  ui.title.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') ui.title.blur();
    if (e.key === 'Escape') {
      ui.title.value = (app.state && app.state.title) || '';
      ui.title.blur();
    }
  });
  ui.title.addEventListener('change', () => {
    const title = ui.title.value.trim();
    if (app.state && title && title !== app.state.title) dispatchOpen({ type: 'terminal/titleChanged', title });
  });
  // The terminal follows its box: a new size is proposed to the host, and the
  // xterm takes the size the host echoes (terminal/resized), so every page
  // watching it shows the same grid.
  let pending = 0;
  new ResizeObserver(() => {
    clearTimeout(pending);
    pending = setTimeout(fitToWindow, 60);
  }).observe(ui.screen);
}

function dispatchOpen(action) {
  if (!app.conn || !app.subscribed) return;
  try {
    app.conn.dispatch(app.openUri, action);
  } catch (err) {
    notice(err.message);
  }
}

function fitToWindow() {
  const st = app.state;
  if (!app.subscribed || !st || exited(st)) return;
  const d = fit.proposeDimensions();
  if (!d || !Number.isFinite(d.cols) || !Number.isFinite(d.rows)) return;
  const cols = Math.max(2, d.cols);
  const rows = Math.max(1, d.rows);
  if (cols === st.cols && rows === st.rows) return;
  dispatchOpen({ type: 'terminal/resized', cols, rows });
}

async function newTerminal() {
  const conn = app.conn;
  if (!conn) return;
  const d = fit.proposeDimensions();
  const params = { channel: 'ahp-terminal:/web-' + randomHex(6), claim: { kind: 'client', clientId } };
  if (d && Number.isFinite(d.cols) && Number.isFinite(d.rows)) {
    params.cols = Math.max(2, d.cols);
    params.rows = Math.max(1, d.rows);
  }
  ui.newTerminal.disabled = true;
  try {
    await conn.request('createTerminal', params);
  } catch (err) {
    notice(`No new terminal: ${err.message}`);
    return;
  } finally {
    ui.newTerminal.disabled = false;
  }
  await openTerminal(params.channel);
}

async function disposeOpen() {
  const uri = app.openUri;
  if (!uri || !app.conn) return;
  try {
    await app.conn.request('disposeTerminal', { channel: uri });
  } catch (err) {
    notice(`Not disposed: ${err.message}`);
    return;
  }
  if (app.openUri === uri) closeTerminalView();
}

// ---- small things ----

function setStatus(text, kind = '') {
  ui.status.textContent = text;
  ui.status.className = kind;
}

function notice(text) {
  ui.notice.textContent = text;
  clearTimeout(app.noticeTimer);
  app.noticeTimer = setTimeout(() => (ui.notice.textContent = ''), 8000);
}

function randomHex(bytes) {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
