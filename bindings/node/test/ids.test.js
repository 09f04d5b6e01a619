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
