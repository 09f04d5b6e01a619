'use strict';
// The koffi prototypes are the header's, one for one; the library exports
// exactly them; loading and the version check.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const lib = require('../src/lib');

const HEADER = path.resolve(__dirname, '..', '..', '..', 'include', 'dsh_persist.h');

const normalize = (s) =>
  s
    .replace(/\s+/g, ' ')
    .replace(/\s*\*\s*/g, ' *')
    .replace(/\* \*/g, '**')
    .replace(/\(\s*/g, '(')
    .replace(/\s*\)/g, ')')
    .trim();

function headerPrototypes() {
  const text = fs
    .readFileSync(HEADER, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/[^\n]*/g, '');
  const out = new Map();
  for (const m of text.matchAll(/^(dsh_status|void|const char \*|uint64_t)\s*(dsh_\w+)\(([^)]*)\);/gm)) {
    out.set(m[2], normalize(`${m[1]} ${m[2]}(${m[3]})`));
  }
  return out;
}

/** Undo the two documented edits: `_Out_` and `dsh_owned_str *` for an owned `char **`. */
const asHeader = (proto) => normalize(proto.replace(/_Out_ /g, '').replace(/dsh_owned_str \*/g, 'char **'));

test('prototypes are copied from the header', () => {
  const header = headerPrototypes();
  assert.ok(header.size >= 35);
  const ours = new Map(lib.PROTOTYPES.map((p) => [p.match(/(dsh_\w+)\(/)[1], asHeader(p)]));
  ours.set('dsh_free', normalize('void dsh_free(char *s)')); // declared with `void *s` for koffi.disposable
  assert.deepEqual([...ours.keys()].sort(), [...header.keys()].sort());
  for (const [name, proto] of header) assert.equal(ours.get(name), proto, name);
});

test('the library exports exactly the declared functions', (t) => {
  const nm = spawnSync('nm', ['-D', '--defined-only', lib.libraryPath], { encoding: 'utf8' });
  if (nm.status !== 0) return t.skip('nm not available');
  const exported = [...nm.stdout.matchAll(/\bT (dsh_\w+)$/gm)].map((m) => m[1]).sort();
  assert.deepEqual(exported, [...Object.keys(lib.fns)].sort());
});

test('version check', () => {
  assert.equal(lib.libraryVersion.split('.').slice(0, 2).join('.'), lib.PACKAGE_VERSION.split('.').slice(0, 2).join('.'));
});

test('DSH_PERSIST_LIB is the only place looked at when set', () => {
  const dir = require('./helpers').tempDir();
  const missing = path.join(dir, 'nope.so');
  let r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.resolve(__dirname, '..'))})`], {
    env: { ...process.env, DSH_PERSIST_LIB: missing },
    encoding: 'utf8',
  });
  assert.notEqual(r.status, 0);
  assert.ok(r.stderr.includes('libdsh_persist not found') && r.stderr.includes(`${missing} (missing)`), r.stderr);
  const bogus = path.join(dir, 'bogus.so');
  fs.writeFileSync(bogus, 'not a library');
  r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.resolve(__dirname, '..'))})`], {
    env: { ...process.env, DSH_PERSIST_LIB: bogus },
    encoding: 'utf8',
  });
  assert.notEqual(r.status, 0);
  assert.ok(r.stderr.includes('cannot load'), r.stderr);
});

test('a package without its library says what to do', () => {
  // A copy of the package outside any checkout, without a library: what a
  // broken installation looks like.
  const dir = require('./helpers').tempDir();
  const pkg = path.join(dir, 'node_modules', 'dsh-persist');
  fs.mkdirSync(pkg, { recursive: true });
  for (const f of ['package.json', 'index.js', 'src']) fs.cpSync(path.resolve(__dirname, '..', f), path.join(pkg, f), { recursive: true });
  fs.symlinkSync(path.resolve(__dirname, '..', 'node_modules', 'koffi'), path.join(dir, 'node_modules', 'koffi'));
  const env = { ...process.env };
  delete env.DSH_PERSIST_LIB;
  const r = spawnSync(process.execPath, ['-e', "require('dsh-persist')"], { cwd: dir, env, encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.ok(r.stderr.includes('libdsh_persist not found'), r.stderr);
  assert.ok(r.stderr.includes(`${path.join(pkg, 'libdsh_persist.so')} (missing)`), r.stderr);
  assert.ok(r.stderr.includes('carries no library') && r.stderr.includes('scripts/package.sh'), r.stderr);
  assert.ok(r.stderr.includes('DSH_PERSIST_LIB') && !r.stderr.includes('target/release'), r.stderr);
});
