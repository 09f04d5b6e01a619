'use strict';
// The smoke scenario shared by smoke.cjs and smoke.mjs: the one of smoke.py.
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');

const USER = { id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } };

function run(dsh, scratch, tag) {
  const configs = [
    { backend: 'jsonl', root: path.join(scratch, `jsonl-${tag}`) },
    { backend: 'sqlite', path: path.join(scratch, `sessions-${tag}.db`) },
  ];
  for (const config of configs) {
    let store = dsh.Store.open(config);
    const s = store.start({ id: 'smoke', cwd: scratch });
    const seq = s.append('turn/start', { turn: 1 });
    assert.equal(seq, 0);
    assert.equal(typeof seq, 'number');
    s.append('user/message', USER, { surfaceOp: 'append' });
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } });
    s.close();
    store.close();
    store = dsh.Store.open(config);
    const view = store.load('smoke');
    assert.deepEqual(
      view.events.map((e) => e.type),
      ['turn/start', 'user/message', 'turn/end'],
    );
    assert.equal(view.meta.cwd, scratch);
    assert.deepEqual(
      store.list().map((h) => h.id),
      ['smoke'],
    );
    assert.throws(() => store.load('absent'), dsh.NotFoundError);
    store.close();
  }
  // A JSONL root below a regular file cannot be created (a missing SQLite
  // parent directory is made at the first write, so it is no error).
  const blocker = path.join(scratch, 'blocker-file');
  fs.writeFileSync(blocker, '');
  assert.throws(
    () => dsh.Store.open({ backend: 'jsonl', root: path.join(blocker, 'root') }),
    dsh.DshIOError,
  );
}

module.exports = { run };
