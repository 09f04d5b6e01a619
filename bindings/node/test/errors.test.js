'use strict';
// Every reachable status becomes its error class (status, kind, code, name,
// the library's message); wrong argument types are TypeErrors.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const dsh = require('..');
const { Store, PlanMode } = dsh;
const lib = require('../src/lib');
const { errorForStatus } = require('../src/errors');
const h = require('./helpers');

function is(Cls, status, kind, extra = () => true) {
  return (e) => {
    assert.equal(e.constructor, Cls, `${e.name}: ${e.message}`);
    assert.ok(e instanceof dsh.DshError && e instanceof Error);
    assert.equal(e.status, status);
    assert.equal(e.kind, kind);
    assert.equal(e.name, Cls.name);
    assert.ok(e.message.length > 0);
    assert.ok(extra(e), e.message);
    return true;
  };
}

test('invalid argument', () => {
  const bad = is(dsh.InvalidArgumentError, 1, 'invalid_argument');
  assert.throws(() => Store.open('{"backend": "jsonl"'), bad);
  const dir = h.tempDir();
  assert.throws(() => Store.open({ backend: 'jsonl', root: dir, bogus: 1 }), (e) => bad(e) && e.message.includes('bogus'));
  const store = Store.open(h.configFor('jsonl', dir));
  try {
    assert.throws(() => store.create({ id: 'x', createdAt: -1 }), (e) => bad(e) && e.message.includes('createdAt'));
    const s = store.start({ id: 's' });
    // JSON.stringify would write null / 0: the wrapper keeps NaN and -0 so the core refuses them
    for (const x of [NaN, -0, Infinity]) {
      assert.throws(
        () => s.append('turn/start', { turn: 1, x }),
        (e) => bad(e) && e.message.includes('losslessly JSON-serializable') && e.message.includes('"turn/start"'),
      );
    }
    assert.throws(() => s.append('turn/end', { turn: 1, reason: { kind: 'completed' } }), bad);
    assert.throws(() => s.appendRaw('turn/start', '{"turn":1}', { surfaceOp: 'append' }), (e) => bad(e) && e.message.includes('surfaceOp'));
    assert.throws(() => s.append('turn/start', { turn: 1 }, { bogus: 1 }), (e) => bad(e) && e.message.includes('bogus'));
    assert.throws(() => s.append('turn/\0start', { turn: 1 }), (e) => bad(e) && e.message.includes('NUL'));
    s.close();
  } finally {
    store.close();
  }
});

test('not found, conflict, unsupported', () => {
  const store = Store.open(h.configFor('sqlite', h.tempDir()));
  try {
    assert.throws(() => store.load('nope'), is(dsh.NotFoundError, 2, 'not_found'));
    assert.throws(() => store.resume('nope'), dsh.NotFoundError);
    assert.throws(() => store.readFrom('nope', 0), dsh.NotFoundError);
    store.create({ id: 'dup' });
    assert.throws(() => store.start({ id: 'dup' }), is(dsh.ConflictError, 3, 'conflict', (e) => e.code === 'SESSION_ALREADY_EXISTS'));
    assert.throws(() => store.readRaw('dup'), is(dsh.UnsupportedError, 10, 'unsupported'));
  } finally {
    store.close();
  }
});

/** A compression-none root with one session `s` (15 events), its lines edited by `edit`. */
function noneLog(edit) {
  const config = h.configFor('jsonl-none', h.tempDir());
  const store = Store.open(config);
  const s = store.start({ id: 's', createdAt: 1 });
  h.completeTurn(s, 1);
  s.close();
  const file = store.locate({ id: 's' }).path;
  store.close();
  const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
  fs.writeFileSync(file, edit(lines).join('\n') + '\n');
  return config;
}

test('corruption', () => {
  const config = noneLog((l) => [...l.slice(0, 3), '{not json', ...l.slice(3)]);
  const store = Store.open(config);
  try {
    assert.throws(() => store.load('s'), is(dsh.CorruptionError, 4, 'corruption', (e) => e.message.includes('line')));
  } finally {
    store.close();
  }
});

test('format unsupported', () => {
  const config = noneLog((l) => [...l, JSON.stringify({ type: 'future/thing', seq: 15, time: 1, data: {} })]);
  const store = Store.open(config);
  assert.throws(() => store.load('s'), is(dsh.FormatUnsupportedError, 5, 'format_unsupported', (e) => e.message.includes('future/thing')));
  store.close();
  const extended = Store.open({ ...config, extraEventTypes: ['future/thing'] });
  assert.equal(extended.load('s').events.at(-1).type, 'future/thing');
  extended.close();
});

test('io', () => {
  const dir = h.tempDir();
  // (A missing SQLite parent directory is no error: it is created at the
  // first write, like the original's.)
  const file = path.join(dir, 'afile');
  fs.writeFileSync(file, 'x');
  assert.throws(() => Store.open({ backend: 'jsonl', root: path.join(file, 'root') }), is(dsh.DshIOError, 6, 'io'));
  assert.throws(() => Store.open({ backend: 'jsonl', root: file }), (e) => e instanceof dsh.DshIOError && e.message.includes(file));
});

test('background error is reported, flush retries', async () => {
  const dir = h.tempDir();
  const root = path.join(dir, 'root');
  const store = Store.open({ backend: 'jsonl', root, writeBatchMaxDelayMs: 10 });
  const s = store.start({ id: 's', cwd: '/p' });
  fs.renameSync(root, path.join(dir, 'moved'));
  fs.writeFileSync(root, 'now a file');
  s.append('turn/start', { turn: 1 });
  const deadline = Date.now() + 10000;
  while (s.backgroundError() === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const err = s.backgroundError();
  assert.equal(err.kind, 'io');
  assert.ok(err.message.length > 0);
  assert.throws(() => s.flush(), dsh.DshIOError);
  fs.unlinkSync(root);
  fs.renameSync(path.join(dir, 'moved'), root);
  s.flush();
  assert.equal(s.backgroundError(), null);
  s.close();
  store.close();
});

// A second process holds the write lock (two SQLite copies in one process
// would not see each other's POSIX locks). Uses python3's sqlite3 module.
const LOCK_HOLDER = `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
c.execute("ROLLBACK")
`;
const havePython = spawnSync('python3', ['-c', 'import sqlite3'], { encoding: 'utf8' }).status === 0;

test('busy', { skip: !havePython && 'python3 with sqlite3 is needed to hold a lock from another process' }, async () => {
  const file = path.join(h.tempDir(), 's.db');
  const store = Store.open({ backend: 'sqlite', path: file, busyTimeoutMs: 50 });
  // The first write creates the database (mode 0600) before the holder opens it.
  store.create({ id: 'z' });
  store.append('z', [{ type: 'turn/start', seq: 0, time: 0, data: { turn: 1 } }]);
  store.create({ id: 'a' });
  const holder = spawn('python3', ['-c', LOCK_HOLDER, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve, reject) => {
      holder.stdout.once('data', (d) => (String(d).trim() === 'locked' ? resolve() : reject(new Error(String(d)))));
      holder.once('error', reject);
    });
    const event = [{ type: 'turn/start', seq: 0, time: 0, data: { turn: 1 } }];
    assert.throws(() => store.append('a', event), is(dsh.BusyError, 7, 'busy'));
  } finally {
    holder.stdin.end('\n');
    await new Promise((r) => holder.once('exit', r));
  }
  store.append('a', [{ type: 'turn/start', seq: 0, time: 0, data: { turn: 1 } }]);
  store.close();
});

test('closed, from the library', () => {
  const store = Store.open(h.configFor('jsonl', h.tempDir()));
  const s = store.start({ id: 's' });
  s.append('turn/start', { turn: 1 });
  store.close();
  assert.throws(
    () => s.append('step/start', { turn: 1, step: 1 }),
    is(dsh.ClosedError, 8, 'closed', (e) => e.message !== 'this session is closed'),
  );
  s.close();
});

test('invariant', () => {
  // a result text with a NUL character cannot be a C string
  const store = Store.open(h.configFor('jsonl', h.tempDir()));
  const plan = new PlanMode({ section: 'a\u0000b' });
  const s = store.start({ id: 's' });
  try {
    assert.equal(plan.section(s), '');
    plan.set(s, true);
    assert.throws(() => plan.section(s), is(dsh.InvariantError, 9, 'invariant', (e) => e.message.includes('NUL')));
  } finally {
    s.close();
    plan.close();
    store.close();
  }
});

test('statuses that need a panic map by table', () => {
  for (const [status, Cls, kind] of [
    [9, dsh.InvariantError, 'invariant'],
    [99, dsh.DshPanicError, 'panic'],
  ]) {
    const e = errorForStatus(status, 'boom', '');
    assert.equal(e.constructor, Cls);
    assert.equal(e.kind, kind);
    assert.equal(e.code, null);
    assert.equal(e.name, Cls.name);
  }
  const unknown = errorForStatus(42, 'from the future', 'X');
  assert.equal(unknown.constructor, dsh.DshError);
  assert.equal(unknown.kind, 'unknown');
  assert.equal(unknown.code, 'X');
  // status and code are read-only
  assert.throws(() => {
    'use strict';
    unknown.status = 1;
  }, TypeError);
});

test('call() reads the last error of this thread, which the next call clears', () => {
  assert.throws(() => lib.callText(lib.fns.dsh_plan_project, '['), dsh.InvalidArgumentError);
  assert.notEqual(lib.fns.dsh_last_error(), '');
  assert.equal(lib.callText(lib.fns.dsh_plan_project, '[]'), '{"active":false,"pending":false}');
  assert.equal(lib.fns.dsh_last_error(), '');
  assert.equal(lib.fns.dsh_last_error_code(), '');
});

test('wrong argument types', () => {
  assert.throws(() => Store.open(null), TypeError);
  assert.throws(() => Store.open(['backend']), TypeError);
  assert.throws(() => Store.open(42), TypeError);
  const store = Store.open(h.configFor('jsonl', h.tempDir()));
  try {
    assert.throws(() => store.load(42), TypeError);
    assert.throws(() => store.create(['id']), TypeError);
    assert.throws(() => store.append('x', { not: 'an array' }), TypeError);
    assert.throws(() => store.readFrom('x', '0'), TypeError);
    assert.throws(() => store.readFrom('x', -1), dsh.InvalidArgumentError);
    assert.throws(() => store.readFrom('x', 1.5), dsh.InvalidArgumentError);
    assert.throws(() => store.fork('x', '1'), TypeError);
    assert.throws(() => store.fork('x', -2), dsh.InvalidArgumentError);
    const s = store.start({ id: 's' });
    assert.throws(() => s.append(1, {}), TypeError);
    assert.throws(() => s.append('turn/start'), TypeError);
    assert.throws(() => s.appendRaw('turn/start', { turn: 1 }), TypeError);
    assert.throws(() => s.append('turn/start', { turn: 1 }, { ignorable: 'yes' }), TypeError);
    assert.throws(() => s.append('user/message', {}, { sourceEventSeqs: '1' }), TypeError);
    assert.throws(() => s.append('turn/start', { turn: 1 }, 'append'), TypeError);
    assert.throws(() => s.events(null), TypeError);
    const plan = new PlanMode({ section: 'S' });
    assert.throws(() => plan.get(store), TypeError);
    assert.throws(() => plan.set(s, 1), TypeError);
    assert.throws(() => plan.command(s, '', null), TypeError);
    assert.throws(() => plan.section({}), TypeError);
    plan.close();
    // the koffi prototypes type the handles: a store pointer is not a session
    assert.throws(() => lib.fns.dsh_session_flush(store._ptr()), TypeError);
    s.close();
  } finally {
    store.close();
  }
});

test('values outside JSON are refused at the boundary, naming the event type', () => {
  const store = Store.open(h.configFor('jsonl', h.tempDir()));
  try {
    const cyclic = { a: 1 };
    cyclic.self = cyclic;
    const values = [undefined, () => 0, Symbol('s'), new Map([['k', 1]]), Infinity, NaN, -0, cyclic, new Date(0)];
    for (const [i, value] of values.entries()) {
      const id = `b${i}`;
      store.create({ id });
      assert.throws(
        () => store.append(id, [{ type: 'todo/write', seq: 0, time: 1, data: { todos: [], extra: value } }]),
        (e) => e instanceof dsh.InvalidArgumentError
          && e.message.includes('not losslessly JSON-serializable')
          && e.message.includes('"todo/write"'),
        String(value),
      );
    }
    // data itself a function
    store.create({ id: 'fn' });
    assert.throws(
      () => store.append('fn', [{ type: 'turn/start', seq: 0, time: 1, data: () => 0 }]),
      (e) => e instanceof dsh.InvalidArgumentError && e.message.includes('non-JSON-serializable'),
    );
    // a BigInt stays accepted as its exact integer text
    store.create({ id: 'big' });
    store.append('big', [{ type: 'todo/write', seq: 0, time: 1, data: { n: 12345678901234567890n } }]);
    assert.ok(store.readFromRaw('big', 0).includes('12345678901234567890'));
    const s = store.start({ id: 'live' });
    assert.throws(() => s.append('turn/start', { turn: 1, f: () => 0 }),
      (e) => e instanceof dsh.InvalidArgumentError && e.message.includes('"turn/start"'));
    s.close();
  } finally {
    store.close();
  }
});
