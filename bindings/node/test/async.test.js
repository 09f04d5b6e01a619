'use strict';
// The Promise forms (issue 18): every async call on each backend (JSONL zstd,
// JSONL raw, SQLite; PostgreSQL when DSH_TEST_POSTGRES_URL is set), AbortSignal
// on a 100k-event load (AbortError, store unchanged), the in-flight guard,
// and the exit drain (a child process that exits without close()).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');

const dsh = require('..');
const { BACKENDS, tempDir, configFor, completeTurn, userMessage, APPEND } = require('./helpers');

const PG_URL = process.env.DSH_TEST_POSTGRES_URL || '';
const kinds = PG_URL ? [...BACKENDS, 'postgres'] : BACKENDS;

function config(kind, dir) {
  if (kind !== 'postgres') return configFor(kind, dir);
  return { backend: 'postgres', url: PG_URL, schema: `node_async_${crypto.randomBytes(6).toString('hex')}` };
}

/** Every file under `dir` with its size and digest (what "unchanged" means). */
function snapshot(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (!p.endsWith('-shm')) out.push(`${p} ${crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex')}`);
    }
  };
  walk(dir);
  return out.sort().join('\n');
}

for (const kind of kinds) {
  test(`every async call on ${kind}`, async () => {
    const dir = tempDir();
    const store = await dsh.Store.openAsync(config(kind, dir));
    const s = await store.startAsync({ id: 'a1' });
    const n = completeTurn(s, 1) + 1; // seq of its turn/end + 1
    await s.flushAsync();
    assert.equal((await store.inspectAsync('a1')).events.length, n);
    assert.equal((await store.readFromAsync('a1', 3)).events[0].seq, 3);
    assert.deepEqual((await store.listAsync()).map((h) => h.id), ['a1']);
    assert.equal((await store.listSnapshotsAsync()).length, 1);
    // Two calls at once on one store, then close waits for both.
    const both = Promise.all([store.loadAsync('a1'), store.listAsync()]);
    assert.throws(() => s.store.close(), dsh.ConflictError, 'a sync close refuses while calls are in flight');
    await both;
    await s.closeAsync();
    await s.closeAsync(); // idempotent
    assert.equal((await store.loadAsync('a1')).events.length, n);
    if (kind.startsWith('jsonl')) assert.equal((await store.readRawAsync('a1')).filename, 'session.jsonl');
    else await assert.rejects(store.readRawAsync('a1'), dsh.UnsupportedError);

    await store.createAsync({ id: 'c1' });
    await store.appendAsync('c1', [{ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } }]);
    assert.equal((await store.inspectAsync('c1')).events.length, 2, 'the open turn closed in memory');

    const r = await store.resumeAsync('a1');
    completeTurn(r, 2);
    const f = await store.forkAsync('a1', n - 1, { id: 'f1' });
    assert.equal(f.header.parentSession, 'a1');
    await f.closeAsync();

    const plan = new dsh.PlanMode({ section: 'plan' });
    const set = await plan.setAsync(r, true);
    assert.ok(['committed', 'queued'].includes(set.outcome), JSON.stringify(set));
    assert.equal(typeof (await plan.preStepAsync(r)).appended, 'boolean');
    assert.equal((await plan.commandAsync(r, '/plan')).kind !== undefined, true);
    plan.close();
    await r.closeAsync();

    // Errors cross threads with their kind, message and code.
    const e = await store.loadAsync('missing').catch((x) => x);
    assert.ok(e instanceof dsh.NotFoundError, String(e));
    assert.match(e.message, /missing/);
    await store.closeAsync();
    await assert.rejects(store.listAsync(), dsh.ClosedError);
  });
}

/** A stored log of 100k events whose last turn is open (a load repairs it). */
function bigOpenLog(store, id) {
  const s = store.start({ id });
  let n = 0;
  let turn = 1;
  while (n + 17 <= 100_000) n = completeTurn(s, turn++) + 1;
  s.append('turn/start', { turn });
  s.append('user/message', userMessage('last', 'go on'), APPEND);
  s.close();
  return n + 2;
}

for (const kind of ['jsonl', 'sqlite']) {
  test(`an aborted 100k-event load on ${kind} rejects with AbortError and changes nothing`, async () => {
    const dir = tempDir();
    const store = dsh.Store.open(config(kind, dir));
    const n = bigOpenLog(store, 'big');
    const before = snapshot(dir);
    for (const call of [(o) => store.loadAsync('big', o), (o) => store.inspectAsync('big', o), (o) => store.readFromAsync('big', 5, o)]) {
      const ac = new AbortController();
      const p = call({ signal: ac.signal });
      ac.abort(); // the read has just begun on its worker thread
      await assert.rejects(p, (e) => e.name === 'AbortError');
      assert.equal(snapshot(dir), before, 'nothing written');
    }
    // Aborted before the call: rejected at once.
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(store.listAsync({ signal: ac.signal }), (e) => e.name === 'AbortError');
    // Not aborted: the load repairs.
    const loaded = await store.loadAsync('big', { signal: new AbortController().signal });
    assert.ok(loaded.events.length > n);
    assert.notEqual(snapshot(dir), before);
    await store.closeAsync();
  });
}

test('a process that exits without close() loses no event', () => {
  for (const kind of ['jsonl', 'sqlite']) {
    const dir = tempDir();
    const cfg = JSON.stringify(config(kind, dir));
    const child = `
      const dsh = require(${JSON.stringify(path.resolve(__dirname, '..'))});
      const { completeTurn } = require(${JSON.stringify(path.join(__dirname, 'helpers.js'))});
      const store = dsh.Store.open({ ...${cfg}, writeBatchMaxDelayMs: 60000 });
      const s = store.start({ id: 'exit1' });
      let n = 0;
      for (let t = 1; t <= 20; t++) n = completeTurn(s, t) + 1;
      process.stdout.write(String(n));
      ${kind === 'sqlite' ? 'process.exit(0);' : '/* the event loop just ends */'}
    `;
    const r = spawnSync(process.execPath, ['-e', child], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const n = Number(r.stdout);
    assert.equal(n, 300);
    const store = dsh.Store.open(JSON.parse(cfg));
    assert.equal(store.load('exit1').events.length, n, `${kind}: every event of the child is stored`);
    store.close();
  }
});
