'use strict';
// Ids a C string cannot carry (DIFFERENCES, exception 2): sessions the
// original wrote with U+0000 or a lone surrogate in their id are listed and
// reached by the ordinary methods, which pass such an id to the library's
// `_id_json` calls as its JSON text.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { Store, CorruptionError, NotFoundError } = require('..');
const h = require('./helpers');

const EVENTS =
  '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n' +
  '{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n';

function writeLog(root, segment, idJson) {
  const dir = path.join(root, '--w--', segment);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'session.jsonl'),
    `{"type":"session","version":0,"id":${idJson},"createdAt":1,"cwd":"/w","delegationDepth":0}\n${EVENTS}`,
  );
}

test('ids with U+0000 and lone surrogates are listed and reached', () => {
  const root = path.join(h.tempDir(), 'root');
  writeLog(root, 'a~0000b', '"a\\u0000b"');
  writeLog(root, '~D800x', '"\\ud800x"');
  const store = Store.open({ backend: 'jsonl', root, compression: 'none' });
  try {
    assert.deepEqual(store.list().map((x) => x.id).sort(), ['a\0b', '\ud800x'].sort());
    assert.deepEqual(store.load('a\0b').events.map((e) => e.type), ['turn/start', 'turn/end']);
    assert.equal(store.inspect('a\0b').events.length, 2);
    assert.equal(store.readFrom('a\0b', 1).events.length, 1);
    assert.equal(store.readRaw('a\0b').filename, 'session.jsonl');
    const lone = store.readFrom('\ud800x');
    assert.equal(lone.meta.id, '\ud800x');
    assert.equal(lone.events.length, 2);
    // Its header fails validation at load, as in the original.
    assert.throws(() => store.load('\ud800x'), (e) => e instanceof CorruptionError && e.message.includes('lone surrogate'));
    store.delete('a\0b');
    assert.throws(() => store.load('a\0b'), NotFoundError);
    assert.deepEqual(store.list().map((x) => x.id), ['\ud800x']);
  } finally {
    store.close();
  }
});

test('the async forms reach the same ids as the sync methods', async () => {
  const root = path.join(h.tempDir(), 'root');
  writeLog(root, 'a~0000b', '"a\\u0000b"');
  writeLog(root, '~D800x', '"\\ud800x"');
  const store = await Store.openAsync({ backend: 'jsonl', root, compression: 'none' });
  try {
    assert.deepEqual(await store.loadAsync('a\0b'), store.load('a\0b'));
    assert.equal(await store.loadRawAsync('a\0b'), store.loadRaw('a\0b'));
    assert.deepEqual(await store.inspectAsync('a\0b'), store.inspect('a\0b'));
    assert.equal(await store.inspectRawAsync('a\0b'), store.inspectRaw('a\0b'));
    assert.deepEqual(await store.readFromAsync('a\0b', 1), store.readFrom('a\0b', 1));
    assert.equal(await store.readFromRawAsync('\ud800x', 1), store.readFromRaw('\ud800x', 1));
    assert.deepEqual(await store.readRawAsync('a\0b'), store.readRaw('a\0b'));
    const seen = [];
    for await (const ev of store.iterateAsync('\ud800x', { fromSeq: 1 })) seen.push(ev);
    assert.deepEqual(seen, store.readFrom('\ud800x', 1).events);
    const lone = await store.readFromAsync('\ud800x');
    assert.equal(lone.meta.id, '\ud800x');
    assert.equal(lone.events.length, 2);
    // Errors keep their classes (the header fails validation at load).
    await assert.rejects(store.loadAsync('\ud800x'), (e) => e instanceof CorruptionError && e.message.includes('lone surrogate'));
    await assert.rejects(store.inspectAsync('\ud800x'), CorruptionError);
    // An aborted signal stops the read before it starts.
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(store.loadAsync('a\0b', { signal: ac.signal }), (e) => e.name === 'AbortError');
    await store.deleteAsync('a\0b');
    await assert.rejects(store.loadAsync('a\0b'), NotFoundError);
    await assert.rejects(store.deleteAsync('a\0b'), NotFoundError);
    assert.deepEqual((await store.listAsync()).map((x) => x.id), ['\ud800x']);
    assert.equal(require('..').liveResults(), 0);
  } finally {
    await store.closeAsync();
  }
});
