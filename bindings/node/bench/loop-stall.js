'use strict';
// Benchmark, not a test (issue 18): the longest event-loop stall while a host
// works through the Promise forms, measured by a 1 ms ticker.
//   node bench/loop-stall.js [jsonl|jsonl-none|sqlite]
// Prints, per scenario, the longest gap between ticks beyond the 1 ms period
// (the goal is <= 5 ms), for 200 append+flushAsync cycles and a 100k-event
// loadAsync, and for comparison the same work through the synchronous calls.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const dsh = require('..');
const { completeTurn } = require('../test/helpers');

const kind = process.argv[2] || 'jsonl';

function config(dir) {
  return {
    jsonl: { backend: 'jsonl', root: path.join(dir, 'root') },
    'jsonl-none': { backend: 'jsonl', root: path.join(dir, 'root'), compression: 'none' },
    sqlite: { backend: 'sqlite', path: path.join(dir, 's.db') },
  }[kind];
}

/** Runs `work` (async) with a 1 ms ticker; returns the longest stall in ms. */
async function stall(work) {
  let last = performance.now();
  let worst = 0;
  const t = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 5));
  last = performance.now();
  await work();
  await new Promise((r) => setTimeout(r, 3));
  clearInterval(t);
  return Math.max(0, worst);
}

const yieldLoop = () => new Promise((r) => setImmediate(r));

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-stall-'));
  try {
    const store = await dsh.Store.openAsync(config(dir));
    const big = await store.startAsync({ id: 'big' });
    for (let turn = 1, n = 0; n < 100_000; turn++) n = completeTurn(big, turn) + 1;
    await big.closeAsync();
    const count = (await store.inspectAsync('big')).events.length;

    const s = await store.startAsync({ id: 'cycles' });
    const rows = [];
    rows.push(['200 x append+flushAsync', await stall(async () => {
      for (let i = 0; i < 200; i++) {
        s.append('turn/start', { turn: i + 1 });
        s.append('turn/end', { turn: i + 1, reason: { kind: 'completed' } });
        await s.flushAsync();
      }
    })]);
    rows.push([`loadRawAsync of ${count} events`, await stall(() => store.loadRawAsync('big'))]);
    // loadAsync = loadRawAsync + JSON.parse on the loop (the parse is the host's).
    rows.push([`loadAsync of ${count} events`, await stall(() => store.loadAsync('big'))]);
    rows.push(['200 x append+flush (sync)', await stall(async () => {
      for (let i = 200; i < 400; i++) {
        s.append('turn/start', { turn: i + 1 });
        s.append('turn/end', { turn: i + 1, reason: { kind: 'completed' } });
        s.flush();
        await yieldLoop();
      }
    })]);
    rows.push([`load of ${count} events (sync)`, await stall(async () => store.load('big'))]);
    await s.closeAsync();
    await store.closeAsync();
    console.log(`backend ${kind}: longest event-loop stall (1 ms ticker; goal <= 5 ms for the async forms)`);
    for (const [what, ms] of rows) console.log(`  ${what.padEnd(34)} ${ms.toFixed(1)} ms`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
