'use strict';
// The Promise forms of the issue-19 calls (deleteAsync, pruneAsync,
// salvageAsync, importJsonlAsync, listSummariesAsync, lastUpdatedAsync,
// searchAsync, exportAsync) on JSONL and SQLite, and an aborted search and
// listing over many sessions (AbortError, nothing changed).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

const { Store, BusyError, NotFoundError, ConflictError, InvalidArgumentError } = require('..');
const h = require('./helpers');

function turnEvents(turn, first, text = 'hi', time = 5) {
  return [
    { type: 'turn/start', seq: first, time, data: { turn } },
    {
      type: 'user/message',
      seq: first + 1,
      time,
      data: { id: `u${turn}`, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } },
      surfaceOp: 'append',
    },
    { type: 'turn/end', seq: first + 2, time, data: { turn, reason: { kind: 'completed' } } },
  ];
}

function stored(store, id, text = 'hi', time = 5) {
  store.create({ id, createdAt: 1, cwd: '/p' });
  store.append(id, turnEvents(1, 0, text, time));
}

/** Every file under `dir` with its digest (what "unchanged" means). */
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

const ids = async (store) => (await store.listAsync()).map((x) => x.id).sort();

for (const backend of ['jsonl', 'sqlite']) {
  test(`the issue-19 async calls on ${backend}`, async () => {
    const store = Store.open(h.configFor(backend, h.tempDir()));
    try {
      stored(store, 'a', 'find the needle here', 5);
      stored(store, 'b', 'nothing', 7);
      stored(store, 'c', 'nothing', 9);

      const rows = await store.listSummariesAsync();
      assert.deepEqual(rows.map((r) => r.id).sort(), ['a', 'b', 'c']);
      assert.equal(rows.find((r) => r.id === 'a').eventCount, 3);
      assert.equal((await store.listSummariesAsync({ limit: 1 })).length, 1);
      assert.equal(await store.lastUpdatedAsync(), store.lastUpdated());

      const found = await store.searchAsync('NEEDLE');
      assert.deepEqual(found.hits.map((x) => x.id), ['a']);
      assert.equal((await store.searchAsync({ text: 'nothing', limit: 1 })).truncated, true);
      assert.match(await store.exportAsync('a'), /needle/);
      assert.match(await store.exportAsync('a', 'html'), /<html/i);
      await assert.rejects(store.exportAsync('a', 'pdf'), InvalidArgumentError);
      await assert.rejects(store.exportAsync('zz'), NotFoundError);

      const live = store.resume('a');
      await assert.rejects(store.deleteAsync('a'), BusyError);
      live.close();
      await store.deleteAsync('a');
      await assert.rejects(store.deleteAsync('a'), NotFoundError);
      assert.deepEqual(await ids(store), ['b', 'c']);

      const dry = await store.pruneAsync({ keepNewest: 1, dryRun: true });
      assert.equal(dry.dryRun, true);
      assert.equal(dry.deleted.length, 1);
      assert.deepEqual(await ids(store), ['b', 'c']);
      assert.equal((await store.pruneAsync({ keepNewest: 1 })).deleted.length, 1);
      assert.equal((await ids(store)).length, 1);
      await assert.rejects(store.pruneAsync({}), InvalidArgumentError);

      store.create({ id: 'open', createdAt: 1 });
      store.append('open', [...turnEvents(1, 0), { type: 'turn/start', seq: 3, time: 6, data: { turn: 2 } }]);
      const r = await store.salvageAsync('open', 'closed');
      assert.deepEqual([r.keptEvents, r.closers, r.stopped], [4, 1, null]);
      assert.equal((await store.inspectAsync('closed')).events.at(-1).type, 'turn/end');
      await assert.rejects(store.salvageAsync('open', 'closed'), ConflictError);

      const lines = turnEvents(1, 0).map((e) => JSON.stringify(e)).join('\n');
      assert.deepEqual(await store.importJsonlAsync('imp', lines), { id: 'imp', events: 3, hadHeader: false });
      assert.equal((await store.loadAsync('imp')).events.length, 3);
      await assert.rejects(store.importJsonlAsync('bad', lines.split('\n').slice(1).join('\n')), InvalidArgumentError);
      assert.ok(!(await ids(store)).includes('bad'));
    } finally {
      await store.closeAsync();
    }
  });

  test(`an aborted search, listing and prune over many sessions on ${backend} change nothing`, async () => {
    const dir = h.tempDir();
    const cache = h.tempDir(); // the search index cache, outside the store
    const store = Store.open(h.configFor(backend, dir));
    try {
      for (let i = 0; i < 300; i++) stored(store, `s${String(i).padStart(3, '0')}`, `text ${i}`);
      const before = snapshot(dir);
      const calls = [
        (o) => store.searchAsync({ text: 'text', cacheDir: cache }, o),
        (o) => store.listSummariesAsync(null, o),
        (o) => store.pruneAsync({ keepNewest: 1 }, o),
      ];
      for (const call of calls) {
        const ac = new AbortController();
        const p = call({ signal: ac.signal });
        ac.abort(); // the call has just begun on its worker thread
        const settled = await p.then(() => 'done', (e) => e);
        if (settled === 'done') {
          // Only a prune whose deletions had begun when the abort arrived:
          // they all ran (documented; never a part).
          assert.equal(call, calls[2], 'an aborted read finished');
          assert.equal((await ids(store)).length, 1, 'keepNewest: 1 kept one');
          return;
        }
        assert.equal(settled.name, 'AbortError', String(settled));
        assert.equal(snapshot(dir), before, 'nothing written');
      }
      assert.equal((await ids(store)).length, 300, 'the aborted prune deleted nothing');
      // Not aborted: the same calls finish.
      assert.equal((await store.searchAsync({ text: 'text', cacheDir: cache, limit: 1000 }, { signal: new AbortController().signal })).hits.length, 300);
      assert.equal((await store.listSummariesAsync(null, { signal: new AbortController().signal })).length, 300);
    } finally {
      await store.closeAsync();
    }
  });
}
