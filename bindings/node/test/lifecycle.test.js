'use strict';
// Handles: close twice, use after close, Symbol.dispose, the
// FinalizationRegistry safety net, and worker threads writing to one database.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Worker } = require('node:worker_threads');

const dsh = require('..');
const { Store, PlanMode, ClosedError } = dsh;
const h = require('./helpers');

for (const backend of h.BACKENDS) {
  test(`close twice and use after close (${backend})`, () => {
    const store = Store.open(h.configFor(backend, h.tempDir()));
    const s = store.start({ id: 's' });
    const plan = new PlanMode({ section: 'S' });
    for (const handle of [s, plan, store]) {
      handle.close();
      handle.close();
      assert.equal(handle.closed, true);
    }
    const closed = (e) => e instanceof ClosedError && e.status === 8 && e.kind === 'closed' && e.name === 'ClosedError';
    assert.throws(() => store.list(), (e) => closed(e) && e.message === 'this store is closed');
    assert.throws(() => s.append('turn/start', { turn: 1 }), closed);
    assert.throws(() => s.header, closed);
    assert.throws(() => plan.section(s), closed);
    assert.throws(() => store.start({ id: 't' }), closed);
    // Symbol.dispose closes too (for `using` where supported)
    const again = Store.open(h.configFor(backend, h.tempDir()));
    const u = again.start({ id: 'u' });
    u[Symbol.dispose]();
    again[Symbol.dispose]();
    assert.ok(u.closed && again.closed);
  });
}

test('a session keeps its store reachable', () => {
  const s = Store.open(h.configFor('jsonl', h.tempDir())).start({ id: 'kept' });
  h.completeTurn(s, 1);
  s.flush();
  assert.equal(s.store.load('kept').meta.id, 'kept');
  s.close();
  s.store.close();
});

// The FinalizationRegistry closes dropped handles (a safety net: it may run
// late or never). Checked in a child with --expose-gc.
const FINALIZER_CHILD = `
const [pkg, configJson] = process.argv.slice(1);
const dsh = require(pkg);
const config = JSON.parse(configJson);
(function () {
  const s = dsh.Store.open(config).start({ id: 'fin' });
  s.append('turn/start', { turn: 1 });
})();
(async () => {
  for (let i = 0; i < 50; i++) {
    global.gc();
    await new Promise((r) => setTimeout(r, 20));
    const probe = dsh.Store.open(config);
    try {
      const s = probe.resume('fin'); // only possible once the dropped session was closed (drained)
      process.stdout.write(JSON.stringify(s.events().map((e) => e.type)));
      s.close();
      probe.close();
      return;
    } catch (e) {
      probe.close();
      if (!(e instanceof dsh.ConflictError || e instanceof dsh.NotFoundError)) throw e;
    }
  }
  process.stdout.write('never finalized');
})();
`;

test('the finalizer closes a dropped session', () => {
  const config = h.configFor('sqlite', h.tempDir(), { writeBatchMaxDelayMs: 60000 });
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', FINALIZER_CHILD, path.resolve(__dirname, '..'), JSON.stringify(config)], {
    encoding: 'utf8',
    timeout: 60000,
  });
  assert.equal(r.status, 0, r.stderr);
  const types = JSON.parse(r.stdout);
  assert.equal(types[0], 'turn/start'); // the drain on finalization made it durable
});

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const dsh = require(workerData.pkg);
const h = require(workerData.helpers);
const store = dsh.Store.open(workerData.config);
const s = store.start({ id: workerData.id });
for (let turn = 1; turn <= 3; turn++) h.completeTurn(s, turn);
s.close();
store.close();
parentPort.postMessage('done');
`;

test('worker threads append to one SQLite database at once', async () => {
  const config = h.configFor('sqlite', h.tempDir(), { writeBatchMaxDelayMs: 5 });
  const main = Store.open(config);
  const ids = ['w0', 'w1', 'w2', 'w3'];
  const runs = ids.map(
    (id) =>
      new Promise((resolve, reject) => {
        const w = new Worker(WORKER, {
          eval: true,
          workerData: { pkg: path.resolve(__dirname, '..'), helpers: path.join(__dirname, 'helpers.js'), config, id },
        });
        w.once('message', resolve);
        w.once('error', reject);
        w.once('exit', (code) => code !== 0 && reject(new Error(`worker ${id} exited with ${code}`)));
      }),
  );
  const s = main.start({ id: 'main' });
  for (let turn = 1; turn <= 3; turn++) h.completeTurn(s, turn);
  s.close();
  await Promise.all(runs);
  for (const id of [...ids, 'main']) {
    const events = main.load(id).events;
    assert.equal(events.length, 45, id);
    assert.deepEqual(
      events.map((e) => e.seq),
      [...Array(45).keys()],
    );
  }
  assert.deepEqual(main.list().map((x) => x.id).sort(), [...ids, 'main'].sort());
  main.close();
});

test('a failed session close keeps the session for a retry; discard() gives up', () => {
  const fs = require('node:fs');
  const root = path.join(h.tempDir(), 'root');
  const config = { backend: 'jsonl', root, compression: 'none' };
  const store = Store.open(config);
  const s = store.start({ id: 'c', cwd: '/w' });
  s.append('turn/start', { turn: 1 });
  s.flush();
  const log = store.locate({ id: 'c', cwd: '/w' }).path;
  // The log moved away behind the session's back: the final drain fails.
  fs.renameSync(log, `${log}.away`);
  s.append('turn/end', { turn: 1, reason: { kind: 'completed' } });
  assert.throws(() => s.close(), dsh.DshError);
  assert.equal(s.closed, false);
  assert.throws(() => s.append('turn/start', { turn: 2 }), ClosedError);
  const other = Store.open(config);
  assert.throws(() => other.resume('c'), dsh.BusyError);
  other.close();
  fs.renameSync(`${log}.away`, log);
  s.close();
  assert.equal(s.closed, true);
  assert.deepEqual(store.load('c').events.map((e) => e.type), ['turn/start', 'turn/end']);
  const d = store.start({ id: 'd', cwd: '/w' });
  d.append('turn/start', { turn: 1 });
  d.flush();
  const dlog = store.locate({ id: 'd', cwd: '/w' }).path;
  fs.renameSync(dlog, `${dlog}.away`);
  d.append('turn/end', { turn: 1, reason: { kind: 'completed' } });
  assert.throws(() => d.close(), dsh.DshError);
  d.discard();
  assert.equal(d.closed, true);
  fs.renameSync(`${dlog}.away`, dlog);
  store.resume('d').close();
  store.close();
});
