'use strict';
// Paged results (issue 18): loadAsync, inspectAsync, readFromAsync, their
// …RawAsync forms and iterateAsync read into a dsh_result and take it page by
// page on the loop. They equal the synchronous results on every backend
// (JSONL zstd and raw, SQLite; PostgreSQL when DSH_TEST_POSTGRES_URL is set)
// for logs across page boundaries, events larger than a page, non-ASCII text
// and empty results; an abort while paging rejects with AbortError and frees
// the result (liveResults() back to 0); errors keep their classes.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const dsh = require('..');
const { BACKENDS, tempDir, configFor, completeTurn, userMessage, APPEND } = require('./helpers');

const PG_URL = process.env.DSH_TEST_POSTGRES_URL || '';
const kinds = PG_URL ? [...BACKENDS, 'postgres'] : BACKENDS;

function config(kind, dir) {
  if (kind !== 'postgres') return configFor(kind, dir);
  return { backend: 'postgres', url: PG_URL, schema: `node_paged_${crypto.randomBytes(6).toString('hex')}` };
}

const turnTo = (s, events) => {
  let n = 0;
  for (let turn = 1; n < events; turn++) n = completeTurn(s, turn) + 1;
  return n;
};

/** Resolves once a paged read has made its result (the read is done; paging is next). */
async function resultMade() {
  while (dsh.liveResults() === 0) await new Promise((r) => setImmediate(r));
}

for (const kind of kinds) {
  test(`paged reads equal the synchronous ones on ${kind}`, async () => {
    const store = await dsh.Store.openAsync(config(kind, tempDir()));
    try {
      // One turn (a page), ~4,000 events (many pages), a turn holding a
      // 200 kB message (an event beyond a page) with non-ASCII text.
      for (const [id, events] of [['one', 1], ['many', 4000]]) {
        const s = store.start({ id });
        turnTo(s, events);
        s.close();
      }
      const s = store.start({ id: 'big' });
      s.append('turn/start', { turn: 1 });
      s.append('user/message', userMessage('u1', 'é€😀 '.repeat(40_000)), APPEND);
      s.append('user/message', userMessage('u2', 'after the big one'), APPEND);
      s.append('turn/end', { turn: 1, reason: { kind: 'completed' } });
      s.close();
      for (const id of ['one', 'many', 'big']) {
        assert.deepEqual(await store.loadAsync(id), store.load(id), `load ${id}`);
        assert.deepEqual(await store.inspectAsync(id), store.inspect(id), `inspect ${id}`);
        assert.equal(await store.loadRawAsync(id), store.loadRaw(id), `loadRaw ${id}`);
        assert.equal(await store.inspectRawAsync(id), store.inspectRaw(id), `inspectRaw ${id}`);
        for (const from of [0, 1, 2, 1000, 1_000_000]) {
          assert.deepEqual(await store.readFromAsync(id, from), store.readFrom(id, from), `readFrom ${id} ${from}`);
          assert.equal(await store.readFromRawAsync(id, from), store.readFromRaw(id, from), `readFromRaw ${id} ${from}`);
          const events = [];
          for await (const ev of store.iterateAsync(id, { fromSeq: from })) events.push(ev);
          assert.deepEqual(events, store.readFrom(id, from).events, `iterate ${id} ${from}`);
        }
      }
      // An empty result: past the end of the log.
      const empty = await store.readFromAsync('many', 1_000_000);
      assert.deepEqual(empty.events, []);
      assert.equal(empty.meta.id, 'many');
      assert.equal(dsh.liveResults(), 0, 'every result was freed');
    } finally {
      await store.closeAsync();
    }
  });

  test(`an abort while paging rejects with AbortError and frees the result on ${kind}`, async () => {
    const store = await dsh.Store.openAsync(config(kind, tempDir()));
    try {
      const s = store.start({ id: 'p' });
      const n = turnTo(s, 30_000);
      s.close();
      const before = store.inspectRaw('p');
      for (const call of [(o) => store.loadAsync('p', o), (o) => store.inspectAsync('p', o), (o) => store.readFromAsync('p', 0, o), (o) => store.loadRawAsync('p', o)]) {
        const ac = new AbortController();
        const p = call({ signal: ac.signal });
        await resultMade();
        for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r)); // a few pages in
        ac.abort();
        await assert.rejects(p, (e) => e.name === 'AbortError');
        assert.equal(dsh.liveResults(), 0, 'the aborted read freed its result');
      }
      // The iterator: abort after the first events, and break out of another.
      const ac = new AbortController();
      let seen = 0;
      await assert.rejects(
        (async () => {
          for await (const ev of store.iterateAsync('p', { signal: ac.signal })) {
            assert.equal(ev.seq, seen++);
            if (seen === 10) ac.abort();
          }
        })(),
        (e) => e.name === 'AbortError',
      );
      assert.ok(seen < n, 'the iteration stopped early');
      assert.equal(dsh.liveResults(), 0);
      for await (const ev of store.iterateAsync('p')) if (ev.seq === 5) break;
      assert.equal(dsh.liveResults(), 0, 'break frees the result');
      // An iterator never started makes no read.
      store.iterateAsync('p');
      assert.equal(dsh.liveResults(), 0);
      assert.equal(store.inspectRaw('p'), before, 'nothing changed');
      assert.equal((await store.loadAsync('p')).events.length, n);
    } finally {
      await store.closeAsync();
    }
  });

  test(`paged reads keep the error classes on ${kind}`, async () => {
    const store = await dsh.Store.openAsync(config(kind, tempDir()));
    await assert.rejects(store.loadAsync('missing'), dsh.NotFoundError);
    await assert.rejects(store.inspectRawAsync('missing'), dsh.NotFoundError);
    await assert.rejects(store.readFromAsync('missing', 0), dsh.NotFoundError);
    await assert.rejects(
      (async () => {
        for await (const ev of store.iterateAsync('missing')) void ev;
      })(),
      dsh.NotFoundError,
    );
    await assert.rejects(store.readFromAsync('x', -1), dsh.InvalidArgumentError);
    assert.throws(() => store.readFromRawAsync('x', -1), dsh.InvalidArgumentError);
    await assert.rejects(store.loadAsync(42), TypeError);
    const pre = new AbortController();
    pre.abort();
    await assert.rejects(store.loadAsync('missing', { signal: pre.signal }), (e) => e.name === 'AbortError');
    await store.closeAsync();
    await assert.rejects(store.loadAsync('missing'), dsh.ClosedError);
    assert.equal(dsh.liveResults(), 0);
  });
}
