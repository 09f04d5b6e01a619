'use strict';
// The catalog reads on every backend: rich listing, search, export, follow.

const test = require('node:test');
const assert = require('node:assert/strict');

const { Store, Follower, NotFoundError } = require('..');
const h = require('./helpers');

for (const kind of h.BACKENDS) {
  test(`catalog reads (${kind})`, () => {
    const config = h.configFor(kind, h.tempDir());
    const store = Store.open(config);
    const a = store.start({ id: 'a', cwd: '/a' });
    h.completeTurn(a, 1);
    a.append('session/title', { title: 'Files <here>', messageSeqs: [1], source: { kind: 'fallback' } });
    a.close();
    const b = store.start({ id: 'b', cwd: '/b' });
    h.completeTurn(b, 1);
    b.close();

    const rows = store.listSummaries();
    assert.equal(rows.length, 2);
    const ra = rows.find((r) => r.id === 'a');
    assert.equal(ra.title, 'Files <here>');
    assert.equal(ra.turnCount, 1);
    assert.equal(ra.openTurn, false);
    assert.equal(ra.eventCount, store.readFrom('a').events.length);
    assert.equal(store.lastUpdated(), 'b');
    assert.deepEqual(store.listSummaries({ cwd: '/a' }).map((r) => r.id), ['a']);

    const found = store.search('FILE.TXT');
    assert.equal(found.hits.length, 2);
    assert.ok(found.hits.every((x) => x.role === 'tool'));
    assert.equal(store.search({ text: 'file.txt', limit: 1 }).truncated, true);

    assert.match(store.export('a', 'md'), /^# Files <here>/);
    assert.match(store.export('a', 'html'), /<title>Files &lt;here&gt;<\/title>/);

    const f = store.follow('b');
    assert.ok(f instanceof Follower);
    assert.deepEqual(f.next(0), []);
    const other = Store.open(config);
    const live = other.resume('b');
    h.completeTurn(live, 2);
    live.close();
    let got = [];
    for (let i = 0; i < 50 && got.length === 0; i++) got = got.concat(f.next(100));
    assert.ok(got.length > 0);
    assert.equal(got[got.length - 1].seq + 1 >= got.length, true);
    f.close();
    other.close();
    assert.throws(() => store.follow('nope'), NotFoundError);
    store.close();
  });
}
