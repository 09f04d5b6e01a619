'use strict';
// Session management (issue 19): delete, prune, salvage, importJsonl on
// every backend the Node tests run (JSONL zstd, JSONL raw, SQLite).

const test = require('node:test');
const assert = require('node:assert/strict');

const { Store, BusyError, NotFoundError, ConflictError, InvalidArgumentError } = require('..');
const h = require('./helpers');

function turnEvents(turn, first, time = 5) {
  return [
    { type: 'turn/start', seq: first, time, data: { turn } },
    {
      type: 'user/message',
      seq: first + 1,
      time,
      data: { id: `u${turn}`, role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } },
      surfaceOp: 'append',
    },
    { type: 'turn/end', seq: first + 2, time, data: { turn, reason: { kind: 'completed' } } },
  ];
}

function stored(store, id) {
  store.create({ id, createdAt: 1, cwd: '/p' });
  store.append(id, turnEvents(1, 0));
}

const ids = (store) => store.list().map((x) => x.id).sort();

for (const backend of h.BACKENDS) {
  test(`delete, prune, salvage, importJsonl (${backend})`, () => {
    const store = Store.open(h.configFor(backend, h.tempDir()));
    try {
      for (const id of ['a', 'b', 'c']) stored(store, id);
      const live = store.resume('a');
      assert.throws(() => store.delete('a'), BusyError);
      live.close();
      store.delete('a');
      assert.throws(() => store.delete('a'), NotFoundError);
      assert.deepEqual(ids(store), ['b', 'c']);

      const dry = store.prune({ keepNewest: 1, dryRun: true });
      assert.equal(dry.dryRun, true);
      assert.equal(dry.deleted.length, 1);
      assert.deepEqual(ids(store), ['b', 'c']);
      assert.equal(store.prune({ keepNewest: 1 }).deleted.length, 1);
      assert.equal(ids(store).length, 1);
      assert.throws(() => store.prune({}), InvalidArgumentError);

      store.create({ id: 'open', createdAt: 1 });
      store.append('open', [...turnEvents(1, 0), { type: 'turn/start', seq: 3, time: 6, data: { turn: 2 } }]);
      const r = store.salvage('open', 'closed');
      assert.deepEqual([r.keptEvents, r.closers, r.stopped], [4, 1, null]);
      assert.equal(store.inspect('closed').events.at(-1).type, 'turn/end');
      assert.throws(() => store.salvage('open', 'closed'), ConflictError);

      const lines = turnEvents(1, 0).map((e) => JSON.stringify(e)).join('\n');
      assert.deepEqual(store.importJsonl('imp', lines), { id: 'imp', events: 3, hadHeader: false });
      assert.equal(store.load('imp').events.length, 3);
      assert.throws(() => store.importJsonl('bad', lines.split('\n').slice(1).join('\n')), InvalidArgumentError);
      assert.ok(!ids(store).includes('bad'));
    } finally {
      store.close();
    }
  });
}
