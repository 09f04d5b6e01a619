'use strict';
// Data fidelity: big integers through BigInt input and the raw-text variants
// (JSON.parse would round them), and logs written by the original.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const dsh = require('..');
const { Store } = dsh;
const h = require('./helpers');

const BIG = 12345678901234567890123456789n;
const NEG = -98765432109876543210n;

for (const backend of h.BACKENDS) {
  test(`big integers round trip through raw variants (${backend})`, () => {
    const store = Store.open(h.configFor(backend, h.tempDir()));
    const s = store.start({ id: 'big' });
    s.append('turn/start', { turn: 1 });
    s.append('step/start', { turn: 1, step: 1 });
    // BigInt values are written digit for digit
    s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'n', arguments: { big: BIG, neg: NEG } });
    const seq = s.appendRaw(
      'tool/call',
      '{"turn":1,"step":1,"callId":"c2","name":"n","arguments":{"big":99999999999999999999999,"f":1.50,"e":1E21}}',
    );
    assert.equal(seq, 3);
    assert.ok(s.eventsRaw(2).includes(`"arguments":{"big":${BIG},"neg":${NEG}}`));
    assert.ok(s.eventsRaw(3).includes('"arguments":{"big":99999999999999999999999,"f":1.5,"e":1e+21}'));
    // the parsed variant rounds, as JSON.parse does: that is why the raw one exists
    assert.notEqual(BigInt(s.events(2)[0].data.arguments.big), BIG);
    s.flush();
    assert.ok(store.readFromRaw('big', 0).includes(String(BIG)));
    assert.ok(store.inspectRaw('big').includes('99999999999999999999999'));
    assert.throws(
      () => s.append('step/end', { turn: 2 ** 53 + 2, step: 1 }),
      (e) => e instanceof dsh.InvalidArgumentError && e.message.includes('losslessly JSON-serializable'),
    );
    s.close();
    const loaded = store.loadRaw('big');
    assert.ok(loaded.includes(String(BIG)) && loaded.includes(String(NEG)));
    if (backend !== 'sqlite') assert.ok(store.readRawText('big').includes(String(BIG)));
    store.close();
  });
}

test('store.appendRaw keeps key order and digits (jsonl)', () => {
  const store = Store.open(h.configFor('jsonl', h.tempDir()));
  store.create({ id: 'raw' });
  store.appendRaw(
    'raw',
    '[{"seq":0,"type":"turn/start","data":{"turn":1},"time":5},' +
      '{"type":"session/title","seq":1,"time":6,"data":{"z":1,"a":123456789012345678901234567890}},' +
      '{"type":"turn/end","seq":2,"time":7,"data":{"turn":1,"reason":{"kind":"completed"}}}]',
  );
  const text = store.loadRaw('raw');
  assert.ok(text.includes('{"seq":0,"type":"turn/start","data":{"turn":1},"time":5}'));
  assert.ok(text.includes('"data":{"z":1,"a":123456789012345678901234567890}'));
  store.close();
});

function copyFixture(rel) {
  const src = path.join(h.FIXTURES, rel);
  if (!fs.existsSync(src)) return null;
  const dest = path.join(h.tempDir(), path.basename(rel));
  fs.cpSync(src, dest, { recursive: true });
  const walk = (p) => {
    const st = fs.statSync(p);
    if (st.isDirectory()) {
      fs.chmodSync(p, 0o700);
      for (const e of fs.readdirSync(p)) walk(path.join(p, e));
    } else fs.chmodSync(p, 0o600);
  };
  walk(dest);
  return dest;
}

function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]));
  return v;
}

const expected = (root) => JSON.parse(fs.readFileSync(path.join(h.FIXTURES, `expected-${root}.json`), 'utf8'));

for (const id of ['numbers-escapes', 'conv-basic', 'open-turn', 'surface-replace']) {
  test(`upstream jsonl fixture ${id} round trip`, (t) => {
    const root = copyFixture('jsonl/jsonl-zstd-packed');
    if (!root) return t.skip('fixtures not available');
    const want = expected('jsonl-zstd-packed').sessions[id];
    const store = Store.open({ backend: 'jsonl', root, compression: 'zstd' });
    try {
      assert.equal(store.readRaw(id).content, want.readRawBefore.ok.content);
      assert.deepEqual(canonical(store.inspect(id)), want.inspect.ok);
      assert.deepEqual(canonical(store.load(id)), want.inspect.ok);
    } finally {
      store.close();
    }
  });
}

test('upstream sqlite fixture round trip', (t) => {
  const root = copyFixture('sqlite/corpus');
  if (!root) return t.skip('fixtures not available');
  const want = expected('sqlite-corpus').sessions['numbers-escapes'];
  const store = Store.open({ backend: 'sqlite', path: path.join(root, 'sessions.db') });
  try {
    assert.deepEqual(canonical(store.inspect('numbers-escapes')), want.inspect.ok);
    // the original wrote 12345678901234567890 as a JS number: 12345678901234567000
    assert.ok(store.loadRaw('numbers-escapes').includes('12345678901234567000'));
  } finally {
    store.close();
  }
});

test('upstream refused root', (t) => {
  const root = copyFixture('jsonl/jsonl-zstd-refused');
  if (!root) return t.skip('fixtures not available');
  const dump = expected('jsonl-zstd-refused');
  const refused = Object.entries(dump.sessions).filter(([, e]) => e.inspect?.error?.class === 'SessionFormatUnsupportedError');
  assert.ok(refused.length > 0);
  const store = Store.open({ backend: 'jsonl', root, compression: 'zstd' });
  try {
    for (const [id, entry] of refused) {
      assert.throws(
        () => store.inspect(id),
        (e) => e instanceof dsh.FormatUnsupportedError && e.message.split(root).join('<ROOT>') === entry.inspect.error.message,
      );
    }
  } finally {
    store.close();
  }
});
