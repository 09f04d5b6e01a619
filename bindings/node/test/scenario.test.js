'use strict';
// The full scenario on every backend: create, live turns with tool calls,
// flush, a crash (a child process exiting mid-turn without closing), resume
// with repair, fork, list and snapshots.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');

const dsh = require('..');
const { Store, ConflictError, InvalidArgumentError, NotFoundError, UnsupportedError } = dsh;
const h = require('./helpers');

const PACKAGE = path.resolve(__dirname, '..');

// Runs in a child: turn 1 complete, turn 2 open and flushed, one more event
// appended but never durable, then a crash (SIGKILL: no exit handler runs;
// a normal exit would drain the session, see async.test.js).
const CHILD = `
const [pkg, helpers, configJson, id] = process.argv.slice(1);
const dsh = require(pkg);
const h = require(helpers);
const store = dsh.Store.open(JSON.parse(configJson));
const s = store.start({ id, cwd: '/work/project' });
h.completeTurn(s, 1);
h.openTurnWithCall(s, 2);
s.flush();
s.append('tool/result', h.toolResult(2, 1, 'call-2', 'never durable'), h.APPEND);
process.stdout.write(JSON.stringify({ appended: s.events().length }) + '\\n');
process.kill(process.pid, 'SIGKILL');
`;

function runCrashingChild(config, id) {
  const r = spawnSync(process.execPath, ['-e', CHILD, PACKAGE, path.join(__dirname, 'helpers.js'), JSON.stringify(config), id], {
    encoding: 'utf8',
    env: process.env,
    timeout: 60000,
  });
  assert.equal(r.signal, 'SIGKILL', r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop()).appended;
}

for (const backend of h.BACKENDS) {
  test(`full scenario (${backend})`, () => {
    const config = h.configFor(backend, h.tempDir(), { writeBatchMaxDelayMs: 60000 });

    // 1. store-level create + append of whole events
    {
      const store = Store.open(config);
      store.create({ id: 'cold', createdAt: 1, cwd: '/work/project' });
      store.append('cold', [
        { type: 'turn/start', seq: 0, time: 10, data: { turn: 1 } },
        { type: 'turn/end', seq: 1, time: 11, data: { turn: 1, reason: { kind: 'completed' } } },
      ]);
      assert.deepEqual(store.list().map((x) => x.id), ['cold']);
      assert.throws(() => store.create({ id: 'cold' }), (e) => e instanceof ConflictError && e.code === 'SESSION_ALREADY_EXISTS');
      assert.deepEqual(h.types(store.load('cold').events), ['turn/start', 'turn/end']);
      store[Symbol.dispose]();
      assert.ok(store.closed);
    }

    // 2. the crash
    assert.equal(runCrashingChild(config, 'crashy'), 25);

    const store = Store.open(config);
    try {
      const inspected = store.inspect('crashy').events;
      assert.deepEqual(h.types(inspected.slice(-3)), ['tool/result', 'step/end', 'turn/end']);
      const before = store.readFrom('crashy', 0).events;
      assert.equal(before.length, 24); // the unflushed tool/result was lost
      assert.equal(before.at(-1).type, 'tool/call');

      // 3. resume repairs the open turn
      const s = store.resume('crashy');
      const events = s.events();
      assert.equal(events[24].type, 'tool/result');
      assert.deepEqual(events[24].data.error, { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' });
      assert.deepEqual(events[24].data.message.source, { kind: 'tool', callId: 'call-2' });
      assert.deepEqual(events[24].sourceEventSeqs, [23]);
      assert.equal(events[25].type, 'step/end');
      assert.deepEqual(events[26].data.reason, { kind: 'interrupted' });
      assert.deepEqual(h.types(events.slice(27)), ['session/end-seed']);
      const msgs = s.messages();
      assert.equal(msgs.at(-1).content[0].toolCallId, 'call-2');
      assert.equal(msgs.at(-1).content[0].isError, true);
      assert.throws(() => store.resume('crashy'), ConflictError);
      const end3 = h.completeTurn(s, 3);
      s.flush();
      assert.equal(store.readFrom('crashy', end3).events[0].type, 'turn/end');
      s.close();
      const loaded = store.load('crashy');
      assert.equal(loaded.events.length, end3 + 1);

      // 4. fork
      const child = store.fork('crashy', 14, { id: 'child', createdAt: 5 });
      assert.equal(child.header.parentSession, 'crashy');
      assert.equal(child.header.seedLength, 15);
      assert.equal(child.header.cwd, '/work/project');
      assert.deepEqual(h.types(child.events(14)), ['turn/end', 'session/end-seed']);
      h.completeTurn(child, 2);
      child.close();
      assert.deepEqual(store.load('child').events.slice(0, 15), loaded.events.slice(0, 15));
      const gen = store.fork('crashy');
      const genId = gen.id;
      assert.equal(gen.header.seedLength, loaded.events.length);
      gen.close();
      assert.throws(() => store.fork('crashy', 5), (e) => e instanceof InvalidArgumentError && e.code === 'OPEN_TURN');
      assert.throws(() => store.fork('crashy', 10000), (e) => e.code === 'INVALID_BOUNDARY');
      assert.throws(() => store.fork('nobody'), (e) => e instanceof NotFoundError && e.code === 'SESSION_NOT_FOUND');

      // 5. list and snapshots
      const ids = store.list().map((x) => x.id).sort();
      assert.deepEqual(ids, ['cold', 'crashy', 'child', genId].sort());
      const rev = Object.fromEntries(store.listSnapshots().map((x) => [x.header.id, x.revision]));
      assert.deepEqual(Object.keys(rev).sort(), ids);
      const cold = store.resume('cold');
      h.completeTurn(cold, 2);
      cold.close();
      const after = Object.fromEntries(store.listSnapshots().map((x) => [x.header.id, x.revision]));
      assert.notEqual(after.cold, rev.cold);
      assert.equal(after.crashy, rev.crashy);
      assert.deepEqual(JSON.parse(store.loadRaw('crashy')), store.load('crashy'));
      assert.deepEqual(JSON.parse(store.listRaw()), store.list());
    } finally {
      store.close();
    }
  });
}

test('jsonl locate and readRaw', (t) => {
  const store = Store.open(h.configFor('jsonl', h.tempDir()));
  t.after(() => store.close());
  const where = store.locate({ id: 'a/b', cwd: '/home/me/my proj' });
  assert.equal(where.kind, 'jsonl');
  assert.ok(where.path.endsWith('--home-me-my~0020proj--/a~002Fb/session.jsonl.zstd'), where.path);
  assert.equal(store.readRaw('a/b'), null);
  const s = store.start({ id: 'a/b', cwd: '/home/me/my proj', createdAt: 7 });
  h.completeTurn(s, 1);
  s.close();
  const raw = store.readRaw('a/b');
  assert.equal(raw.filename, 'session.jsonl');
  assert.equal(
    raw.content.split('\n')[0],
    '{"type":"session","version":0,"id":"a/b","createdAt":7,"cwd":"/home/me/my proj","delegationDepth":0}',
  );
  assert.ok(fs.existsSync(where.path));
});

test('sqlite has no location and no raw artifact', (t) => {
  const store = Store.open(h.configFor('sqlite', h.tempDir()));
  t.after(() => store.close());
  assert.equal(store.locate({ id: 'x' }), null);
  assert.throws(() => store.readRaw('x'), (e) => e instanceof UnsupportedError && e.status === 10 && e.kind === 'unsupported');
});
