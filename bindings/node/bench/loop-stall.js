'use strict';
// Benchmark, not a test (issue 18): the longest event-loop stall while a host
// works through the Promise forms, measured by a 1 ms ticker.
//   node bench/loop-stall.js [jsonl|jsonl-none|sqlite] [runs]
// Per scenario and over `runs` runs (default 5): the median and the largest
// of each run's longest stall (gap between ticks beyond the 1 ms period; the
// goal is <= 5 ms), the p99 of all gaps, the longest stall that overlapped
// no V8 garbage collection ("no GC"), and the longest GC pause seen (from
// perf_hooks 'gc' entries). "on-CPU max" is the longest time the loop's
// thread actually ran within one gap (its thread CPU clock; in
// parentheses: within a gap that overlapped no GC, i.e. the wrapper's and
// the library's own steps, plus incremental marking, which reports no GC
// entry); the wait for a core comes from /proc/self/schedstat (Linux; it
// lags by up to a scheduler tick): a
// stall much longer than it is the thread waiting for a core (a loaded
// machine), not work on the loop. Then, once each, the same work through the
// synchronous calls for comparison. The machine load (os.loadavg) is printed.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { PerformanceObserver } = require('node:perf_hooks');
const dsh = require('..');
const { completeTurn } = require('../test/helpers');

const kind = process.argv[2] || 'jsonl';
const runs = Number(process.argv[3] || 5);

function config(dir) {
  return {
    jsonl: { backend: 'jsonl', root: path.join(dir, 'root') },
    'jsonl-none': { backend: 'jsonl', root: path.join(dir, 'root'), compression: 'none' },
    sqlite: { backend: 'sqlite', path: path.join(dir, 's.db') },
  }[kind];
}

const gcs = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
}).observe({ entryTypes: ['gc'] });

// This thread's CPU time, exact (clock_gettime(CLOCK_THREAD_CPUTIME_ID) through
// koffi; /proc's run time lags by up to a scheduler tick, 4 ms here).
const threadCpuMs = (() => {
  try {
    const { koffi } = require('../src/lib');
    const timespec = koffi.struct('dsh_bench_timespec', { sec: 'int64', nsec: 'long' });
    const clock = koffi.load('libc.so.6').func('int clock_gettime(int, _Out_ dsh_bench_timespec *)');
    return () => {
      const ts = {};
      clock(3, ts); // CLOCK_THREAD_CPUTIME_ID
      return Number(ts.sec) * 1e3 + Number(ts.nsec) / 1e6;
    };
  } catch {
    return () => NaN;
  }
})();

/** The main thread's [time on a CPU, time waiting for one] so far in ms (Linux), or NaNs. */
function schedMs() {
  try {
    const f = fs.readFileSync('/proc/self/schedstat', 'latin1').split(' ');
    return [threadCpuMs(), Number(f[1]) / 1e6];
  } catch {
    return [threadCpuMs(), NaN];
  }
}

/** Runs `work` (async) with a 1 ms ticker; returns {worst, noGc, gaps, gcMax, cpuMax}. */
async function stall(work) {
  const gaps = []; // [start, end, on-CPU ms, waiting-for-a-core ms] of each tick interval
  let last = performance.now();
  let lastSched = schedMs();
  const t = setInterval(() => {
    const now = performance.now();
    const sched = schedMs();
    gaps.push([last, now, sched[0] - lastSched[0], sched[1] - lastSched[1]]);
    last = now;
    lastSched = sched;
  }, 1);
  await new Promise((r) => setTimeout(r, 5));
  gaps.length = 0;
  last = performance.now();
  lastSched = schedMs();
  const gcFrom = gcs.length;
  await work();
  await new Promise((r) => setTimeout(r, 3));
  clearInterval(t);
  await new Promise((r) => setImmediate(r)); // let the gc observer deliver
  const mine = gcs.slice(gcFrom);
  const overlapsGc = ([a, b]) => mine.some(([g0, g1]) => g0 < b && g1 > a);
  const ms = ([a, b]) => Math.max(0, b - a - 1);
  return {
    worst: Math.max(0, ...gaps.map(ms)),
    noGc: Math.max(0, ...gaps.filter((g) => !overlapsGc(g)).map(ms)),
    gaps: gaps.map(ms),
    gcMax: Math.max(0, ...mine.map(([a, b]) => b - a)),
    cpuMax: Math.max(0, ...gaps.map((g) => g[2])),
    cpuNoGc: Math.max(0, ...gaps.filter((g) => !overlapsGc(g)).map((g) => g[2])),
    worstGap: gaps.reduce((w, g) => (ms(g) > ms(w) ? g : w), [0, 0, 0, 0]),
  };
}

/** The largest stall of all runs split into on-CPU / waiting for a core / other (blocked). */
function breakdown(results) {
  const g = results.map((x) => x.worstGap).reduce((w, x) => (x[1] - x[0] > w[1] - w[0] ? x : w));
  const total = g[1] - g[0];
  return `${g[2].toFixed(1)} on-CPU + ${g[3].toFixed(1)} waiting for a core + ${Math.max(0, total - g[2] - g[3]).toFixed(1)} other`;
}

const yieldLoop = () => new Promise((r) => setImmediate(r));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p99 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))];

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-stall-'));
  try {
    const store = await dsh.Store.openAsync(config(dir));
    const big = await store.startAsync({ id: 'big' });
    for (let turn = 1, n = 0; n < 100_000; turn++) n = completeTurn(big, turn) + 1;
    await big.closeAsync();
    const count = (await store.inspectAsync('big')).events.length;

    const s = await store.startAsync({ id: 'cycles' });
    let turn = 0;
    const scenarios = [
      ['200 x append+flushAsync', async () => {
        for (let i = 0; i < 200; i++) {
          turn += 1;
          s.append('turn/start', { turn });
          s.append('turn/end', { turn, reason: { kind: 'completed' } });
          await s.flushAsync();
        }
      }],
      [`loadRawAsync of ${count} events`, () => store.loadRawAsync('big')],
      [`loadAsync of ${count} events`, () => store.loadAsync('big')],
      [`iterateAsync over ${count} events`, async () => {
        let n = 0;
        for await (const ev of store.iterateAsync('big')) if (ev.seq >= 0) n++;
        if (n !== count) throw new Error(`iterated ${n} of ${count}`);
      }],
    ];
    const rows = [];
    for (const [what, work] of scenarios) {
      const results = [];
      for (let r = 0; r < runs; r++) {
        results.push(await stall(work));
        if (global.gc) global.gc();
      }
      const worst = results.map((x) => x.worst);
      rows.push([
        what,
        `median ${median(worst).toFixed(1)}  max ${Math.max(...worst).toFixed(1)}  p99 ${p99(results.flatMap((x) => x.gaps)).toFixed(1)}  ` +
          `no-GC max ${Math.max(...results.map((x) => x.noGc)).toFixed(1)}  GC pause max ${Math.max(...results.map((x) => x.gcMax)).toFixed(1)}  ` +
          `on-CPU max ${Math.max(...results.map((x) => x.cpuMax)).toFixed(1)} (no GC ${Math.max(...results.map((x) => x.cpuNoGc)).toFixed(1)})  ` +
          `worst = ${breakdown(results)}`,
      ]);
    }
    const sync = [
      ['200 x append+flush (sync)', async () => {
        for (let i = 0; i < 200; i++) {
          turn += 1;
          s.append('turn/start', { turn });
          s.append('turn/end', { turn, reason: { kind: 'completed' } });
          s.flush();
          await yieldLoop();
        }
      }],
      [`load of ${count} events (sync)`, async () => store.load('big')],
    ];
    for (const [what, work] of sync) rows.push([what, `${(await stall(work)).worst.toFixed(1)} (one run)`]);
    await s.closeAsync();
    await store.closeAsync();
    const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
    console.log(`backend ${kind}, ${runs} runs, load average ${load} on ${os.cpus().length} cores`);
    console.log('longest event-loop stall in ms (1 ms ticker; goal <= 5 ms for the async forms)');
    for (const [what, text] of rows) console.log(`  ${what.padEnd(34)} ${text}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
