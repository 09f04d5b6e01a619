'use strict';
// Smoke scenario of the installed npm package from CommonJS
// (scripts/check-packages.sh runs it in a scratch project, no DSH_PERSIST_LIB).
const assert = require('node:assert/strict');
const path = require('node:path');
const dsh = require('dsh-persist');
const { run } = require('./scenario.cjs');

run(dsh, process.argv[2], 'cjs');
assert.equal(path.dirname(dsh.libraryPath), path.dirname(require.resolve('dsh-persist/package.json')));
console.log(`node ${process.version} (CommonJS): smoke ok (library ${dsh.libraryPath})`);
