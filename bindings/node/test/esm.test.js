'use strict';
// The ESM entry exports exactly the values index.d.ts declares, the same
// objects as the CommonJS entry; the package's `exports` map sends `import`
// to index.mjs and `require` to index.js; append() returns a number.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const ROOT = path.resolve(__dirname, '..');
const cjs = require('..');

/** The value exports (const, class, function) index.d.ts declares. */
function declaredValues() {
  const text = fs.readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8');
  const names = [...text.matchAll(/^export declare (?:abstract )?(?:const|let|var|class|function|enum) (\w+)/gm)].map(
    (m) => m[1],
  );
  return [...new Set(names)].sort();
}

test('ESM named exports equal the declared values and the CommonJS exports', async () => {
  const esm = await import(pathToFileURL(path.join(ROOT, 'index.mjs')).href);
  const declared = declaredValues();
  assert.ok(declared.length >= 19, declared.join(' '));
  const named = Object.keys(esm)
    .filter((k) => k !== 'default')
    .sort();
  assert.deepEqual(named, declared);
  assert.deepEqual(Object.keys(cjs).sort(), declared);
  for (const name of named) assert.equal(esm[name], cjs[name], name);
  assert.equal(esm.default, cjs);
  // The error classes are real at run time (the issue: they passed tsc, then were undefined).
  assert.equal(typeof esm.NotFoundError, 'function');
  assert.ok(new esm.NotFoundError(2, 'x') instanceof esm.DshError);
});

test('the exports map: import gives the ESM entry, require the CommonJS one', async () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.equal(pkg.exports['.'].import.default, './index.mjs');
  assert.equal(pkg.exports['.'].require.default, './index.js');
  for (const file of [pkg.exports['.'].import.types, pkg.exports['.'].require.types, './index.mjs', './index.js']) {
    assert.ok(fs.existsSync(path.join(ROOT, file)), file);
    assert.ok(pkg.files.includes(file.slice(2)), `${file} is not in "files"`);
  }
  // Self-reference by package name goes through the exports map.
  const esm = await import('dsh-persist');
  assert.equal(esm.Store, cjs.Store);
  assert.equal(require('dsh-persist'), cjs);
});

test('append returns a number; appendRaw the seq as the library reports it', () => {
  const store = cjs.Store.open({ backend: 'sqlite', path: ':memory:' });
  const s = store.start({ id: 'seq' });
  const first = s.append('turn/start', { turn: 1 });
  const second = s.appendRaw('turn/end', '{"turn":1,"reason":{"kind":"completed"}}');
  assert.equal(typeof first, 'number');
  assert.equal(first, 0);
  assert.equal(second, 1);
  s.close();
  store.close();
});
