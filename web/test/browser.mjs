// The browser page end to end, in headless Chromium driven by playwright-core. Run
// by server/browser_test.go against a host it started; it reads:
//
//   TERMHOST_URL        the page, http://HOST:PORT/
//   TERMHOST_SIGNIN_URL the page with the owner's token, as serve prints it (…/#tkn=…)
//   TERMHOST_TOKEN      the owner's token
//   TERMHOST_LISTED     the title of a terminal the Go side made before the page opened
//   TERMHOST_PTY        1 if the host runs shells under a pseudoterminal (marks, stty)
//   TERMHOST_ARTIFACTS  a folder for the screenshots and Chromium's profile
//   CHROMIUM            the browser (default /usr/bin/chromium)
//
// It says what it does step by step on stdout, ends with "ok", and exits 1 with the
// reason (and a screenshot of each page) at the first thing a person would see wrong.
import { chromium } from 'playwright-core';
import { join } from 'node:path';

const base = need('TERMHOST_URL');
const signInURL = need('TERMHOST_SIGNIN_URL');
const token = need('TERMHOST_TOKEN');
const listed = need('TERMHOST_LISTED');
const artifacts = need('TERMHOST_ARTIFACTS');
const pty = process.env.TERMHOST_PTY === '1';
const WAIT = 20000;

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return v;
}

const started = Date.now();
function step(text) {
  console.log(`step at ${((Date.now() - started) / 1000).toFixed(1)} s: ${text}`);
}

class Failure extends Error {}

function check(cond, what) {
  if (!cond) throw new Failure(what);
}

// The flags Chromium needs on this kind of machine (a closed network, root, no GPU);
// playwright adds --headless and takes the profile folder as userDataDir.
const flags = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const context = await chromium.launchPersistentContext(join(artifacts, 'chromium-profile'), {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: flags,
  viewport: { width: 1200, height: 760 },
});

// Everything a page does that a person would call broken, and every address it asks
// for: the token must be in none of them.
const problems = [];
const addresses = [];
const sockets = new Map(); // page name -> WebSocket URLs it opened
const pages = new Map();

async function openPage(name) {
  const page = await context.newPage();
  pages.set(name, page);
  sockets.set(name, []);
  page.on('console', (m) => {
    const text = m.text();
    if (/Content.Security.Policy|Refused to (load|execute|apply|connect)/i.test(text)) problems.push(`${name}: ${text}`);
  });
  page.on('pageerror', (err) => problems.push(`${name}: uncaught ${err.message}`));
  page.on('request', (r) => addresses.push(r.url()));
  page.on('websocket', (ws) => {
    sockets.get(name).push(ws.url());
    addresses.push(ws.url());
  });
  return page;
}

// rows are the lines xterm shows, as a person reads them.
function rows(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#screen .xterm-rows > div')].map((d) => d.textContent.replace(/\u00a0/g, ' ').trimEnd()),
  );
}

// front shows page: Chromium throttles animation frames in a tab behind another,
// and xterm renders on them.
async function front(page) {
  await page.bringToFront();
}

async function waitRows(page, what, pred) {
  await front(page);
  const deadline = Date.now() + WAIT;
  let last = [];
  for (;;) {
    last = await rows(page);
    if (pred(last)) return last;
    if (Date.now() > deadline) throw new Failure(`no ${what} on the screen within ${WAIT} ms; it shows:\n${last.filter(Boolean).join('\n')}`);
    // xterm renders on animation frames: wait for the next one rather than a time.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  }
}

const showsLine = (want) => (rs) => rs.some((r) => r.trim() === want);
const showsPrompt = (rs) => rs.some((r) => /[$#%>]$/.test(r.trim()));

async function text(page, selector) {
  return (await page.locator(selector).textContent()) || '';
}

// waitText waits until the element's text satisfies pred, checked here (the page's
// policy allows no eval) on each animation frame.
async function waitText(page, selector, what, pred) {
  await front(page);
  const deadline = Date.now() + WAIT;
  for (;;) {
    const el = page.locator(selector);
    const t = (await el.count()) > 0 ? (await el.first().textContent()) || '' : null;
    if (t !== null && pred(t)) return t;
    if (Date.now() > deadline) throw new Failure(`${what}: ${selector} shows ${JSON.stringify(t)}`);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  }
}

async function typeLine(page, line) {
  await front(page);
  await page.locator('#screen .xterm').click();
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
}

let failed = false;
try {
  // ---- signed in from the address printed by serve ----
  step('open the page with #tkn= in the address');
  const one = await openPage('one');
  await one.goto(signInURL);
  await waitText(one, '#status', 'the page did not connect', (t) => t.startsWith('connected'));
  const href = await one.evaluate(() => location.href);
  check(!href.includes('#') && !href.includes(token), `the token is still in the address bar: ${href}`);
  check((await one.evaluate(() => sessionStorage.getItem('termhost.token'))) === token, 'the token is not kept in sessionStorage');

  step('see the list of terminals');
  await waitText(one, '#terminals', `the list does not show ${listed}`, (t) => t.includes(listed));

  step('create a terminal and type echo hi');
  await one.click('#new-terminal');
  await one.locator('#terminals li.open').waitFor({ timeout: WAIT });
  const uri = await one.locator('#terminals li.open').getAttribute('data-uri');
  check(uri && uri.startsWith('ahp-terminal:/web-'), `the new terminal's URI is ${uri}`);
  await waitText(one, '#lifecycle', 'the new terminal is not running', (t) => t === 'running');
  await waitText(one, '#claim', 'the claim is not shown', (t) => t === 'claimed by this page');
  // On pipes bash prints no prompt: what is typed waits in its input until it reads.
  if (pty) await waitRows(one, 'prompt', showsPrompt);
  await typeLine(one, 'echo hi');
  await waitRows(one, '"hi"', showsLine('hi'));

  // ---- a second page watches the same terminal live ----
  step('a second page opens the same terminal');
  const two = await openPage('two');
  await two.goto(signInURL);
  await waitText(two, '#status', 'the second page did not connect', (t) => t.startsWith('connected'));
  await two.locator(`#terminals li[data-uri="${uri}"] button`).click();
  await waitRows(two, '"hi" (from the snapshot)', showsLine('hi'));
  const claimOnTwo = await text(two, '#claim');
  check(claimOnTwo.startsWith('claimed by web-'), `the second page shows the claim as ${JSON.stringify(claimOnTwo)}`);
  await typeLine(one, 'echo live-$((6*7))');
  await waitRows(two, '"live-42" typed on the first page', showsLine('live-42'));

  // ---- commands beside the scrollback ----
  if (pty) {
    step('the commands shell integration found are listed, with exit code and duration');
    await typeLine(one, 'false');
    await one.locator('#mark-list li.fail', { hasText: 'false' }).waitFor({ timeout: WAIT });
    const failMeta = await text(one, '#mark-list li.fail .m-meta');
    check(/^exit 1 · \d/.test(failMeta), `the failed command's mark says ${JSON.stringify(failMeta)}`);
    const hi = one.locator('#mark-list li.ok', { hasText: 'echo hi' });
    await hi.waitFor({ timeout: WAIT });
    const hiMeta = await hi.locator('.m-meta').textContent();
    check(/^exit 0 · [\d.]+ (ms|s)$/.test(hiMeta), `echo hi's mark says ${JSON.stringify(hiMeta)}`);

    step('a mark scrolls the terminal back to its command');
    await typeLine(one, 'seq 1 300');
    await waitRows(one, '"300"', showsLine('300'));
    check(!(await rows(one)).some((r) => r.endsWith('echo hi')), 'echo hi is still on screen after 300 lines');
    await hi.locator('button').click();
    await waitRows(one, 'the line of echo hi after clicking its mark', (rs) => rs.some((r) => r.endsWith('echo hi')));
  } else {
    step('no pseudoterminal here: command marks are not checked');
  }

  // ---- resize with the window ----
  step('resize the window');
  const before = await text(one, '#size');
  check(/^\d+×\d+$/.test(before), `the size shown is ${JSON.stringify(before)}`);
  await one.setViewportSize({ width: 900, height: 560 });
  await waitText(one, '#size', 'the terminal did not follow the window', (t) => /^\d+×\d+$/.test(t) && t !== before);
  const after = await text(one, '#size');
  const [cols, rows_] = after.split('×').map(Number);
  check(cols < Number(before.split('×')[0]) && rows_ < Number(before.split('×')[1]), `a smaller window made the terminal ${after}, from ${before}`);
  await waitText(two, '#size', 'the second page does not show the new size', (t) => t === after);
  const grid = await one.evaluate(() => document.querySelectorAll('#screen .xterm-rows > div').length);
  check(grid === rows_, `xterm shows ${grid} rows, the terminal has ${rows_}`);
  if (pty) {
    await typeLine(one, 'stty size');
    await waitRows(one, `"${rows_} ${cols}" from stty size`, showsLine(`${rows_} ${cols}`));
  }

  // ---- rename ----
  step('rename the terminal');
  await one.fill('#title', 'renamed-by-page');
  await one.press('#title', 'Enter');
  for (const [name, page] of [['one', one], ['two', two]]) {
    await waitText(page, `#terminals li[data-uri="${uri}"] .t-title`, `the list on page ${name} does not show the new title`, (t) => t === 'renamed-by-page');
  }
  check((await two.inputValue('#title')) === 'renamed-by-page', 'the second page\'s title field does not show the new title');

  const shot = join(artifacts, 'page.png');
  await one.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);

  // ---- clear ----
  step('clear the terminal');
  await one.click('#clear');
  for (const [name, page] of [['one', one], ['two', two]]) {
    await waitRows(page, `a cleared screen on page ${name}`, (rs) => !rs.some((r) => r === 'hi' || r === 'live-42'));
  }
  check((await one.locator('#mark-list li').count()) === 0, 'the marks are still listed after clear');

  // ---- dispose ----
  step('dispose the terminal');
  await one.click('#dispose');
  for (const [name, page] of [['one', one], ['two', two]]) {
    try {
      await page.locator(`#terminals li[data-uri="${uri}"]`).waitFor({ state: 'detached', timeout: WAIT });
    } catch {
      throw new Failure(`the disposed terminal is still listed on page ${name}`);
    }
    await page.locator('#placeholder').waitFor({ state: 'visible', timeout: WAIT });
  }
  await waitText(two, '#notice', 'the second page does not say the terminal was disposed', (t) => t.includes('disposed'));

  // ---- no token, or a wrong one: a sign-in message and no data ----
  step('a page without a token is asked to sign in');
  const three = await openPage('three');
  await three.goto(base);
  await three.locator('#sign-in').waitFor({ state: 'visible', timeout: WAIT });
  check((await text(three, '#sign-in h1')).includes('Sign in'), 'no sign-in heading');
  check(await three.locator('#app').isHidden(), 'the terminal list is shown without a token');
  check((await three.locator('#terminals li').count()) === 0, 'terminals are listed without a token');
  check(sockets.get('three').length === 0, `a page without a token connected: ${sockets.get('three')}`);

  step('a page with a wrong token is refused');
  const four = await openPage('four');
  await four.goto(`${base}#tkn=th_not-a-real-token`);
  await waitText(four, '#sign-in-reason', 'the refused page does not say why', (t) => t.includes('refused this token'));
  check(await four.locator('#app').isHidden(), 'the terminal list is shown with a wrong token');
  check((await four.locator('#terminals li').count()) === 0, 'terminals are listed with a wrong token');
  check((await four.evaluate(() => sessionStorage.getItem('termhost.token'))) === null, 'a refused token is kept');

  // ---- what no step could see ----
  const leaked = addresses.filter((a) => a.includes(token));
  check(leaked.length === 0, `the token went out in an address: ${leaked.join(', ')}`);
  check(problems.length === 0, `the pages reported:\n${problems.join('\n')}`);
  console.log('ok');
} catch (err) {
  failed = true;
  console.error(err instanceof Failure ? `FAIL: ${err.message}` : `FAIL: ${err.stack || err}`);
  if (problems.length) console.error(`the pages also reported:\n${problems.join('\n')}`);
  for (const [name, page] of pages) {
    const path = join(artifacts, `failure-${name}.png`);
    try {
      await page.screenshot({ path });
      console.error(`screenshot: ${path}`);
    } catch {}
  }
} finally {
  await context.close();
}
process.exit(failed ? 1 : 0);
