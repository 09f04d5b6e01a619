// Smoke scenario of the installed npm package from ESM, with named imports
// (scripts/check-packages.sh runs it in a scratch project, no DSH_PERSIST_LIB).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as dsh from 'dsh-persist';
import { Store, NotFoundError, DshIOError, libraryPath } from 'dsh-persist';

const require = createRequire(import.meta.url);
const { run } = require('./scenario.cjs');
assert.equal(typeof Store, 'function');
assert.equal(typeof NotFoundError, 'function');
assert.equal(typeof DshIOError, 'function');
run(dsh, process.argv[2], 'esm');
assert.equal(path.dirname(libraryPath), path.dirname(require.resolve('dsh-persist/package.json')));
console.log(`node ${process.version} (ESM): smoke ok (library ${libraryPath})`);
