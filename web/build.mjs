// Builds the browser page into a folder (../server/web/dist, which is committed and
// embedded into the binary): app.js (our code with xterm.js bundled in), app.css,
// index.html, icon.svg and the licences of what is bundled.
//
//   node build.mjs OUTDIR           write the build there
//   node build.mjs --check OUTDIR   exit 1, naming the files, if OUTDIR is not this build
import * as esbuild from 'esbuild';
import { readFile, writeFile, mkdir, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const check = args[0] === '--check';
const outdir = args[check ? 1 : 0];
if (!outdir) {
  console.error('usage: node build.mjs [--check] OUTDIR');
  process.exit(2);
}

async function build() {
  const files = new Map();
  const common = {
    bundle: true,
    minify: true,
    write: false,
    legalComments: 'none', // the licences go in licenses.txt
    logLevel: 'warning',
    absWorkingDir: here,
  };
  const js = await esbuild.build({
    ...common,
    entryPoints: ['src/main.js'],
    format: 'iife',
    target: ['es2020'],
    outfile: 'app.js',
  });
  const css = await esbuild.build({
    ...common,
    entryPoints: ['src/app.css'],
    outfile: 'app.css',
  });
  for (const f of [...js.outputFiles, ...css.outputFiles]) {
    files.set(f.path.split('/').pop(), Buffer.from(f.contents));
  }
  for (const name of ['index.html', 'icon.svg']) {
    files.set(name, await readFile(join(here, 'src', name)));
  }
  const licences = [];
  for (const pkg of ['@xterm/xterm', '@xterm/addon-fit']) {
    const meta = JSON.parse(await readFile(join(here, 'node_modules', pkg, 'package.json'), 'utf8'));
    const text = await readFile(join(here, 'node_modules', pkg, 'LICENSE'), 'utf8');
    licences.push(`${pkg} ${meta.version} (bundled into app.js and app.css)\n\n${text.trim()}\n`);
  }
  files.set('licenses.txt', Buffer.from(licences.join('\n' + '-'.repeat(72) + '\n\n')));
  return files;
}

const files = await build();
if (check) {
  const stale = [];
  for (const [name, body] of files) {
    const have = await readFile(join(outdir, name)).catch(() => null);
    if (!have || !have.equals(body)) stale.push(name);
  }
  const extra = (await readdir(outdir).catch(() => [])).filter((n) => !files.has(n));
  if (stale.length || extra.length) {
    console.error(`${outdir} is not the build of web/: ${[...stale, ...extra.map((n) => n + ' (not built)')].join(', ')}; run: npm --prefix web run build`);
    process.exit(1);
  }
  console.log(`${outdir} is current`);
} else {
  await mkdir(outdir, { recursive: true });
  for (const [name, body] of files) await writeFile(join(outdir, name), body);
  console.log(`built ${[...files.keys()].join(', ')} into ${outdir}`);
}
