'use strict';
// Benchmark, not a test (issue 18): the longest event-loop stall while a host
// works through the Promise forms, measured by a 1 ms ticker.
//   node bench/loop-stall.js [jsonl|jsonl-none|sqlite] [runs] [--semi-space=1,2,4|none]
// `--semi-space` (default 1,2,4): the large-read rows are run again in a
// child `node --max-semi-space-size=N` for each N (MiB), V8's young
// generation limit, which bounds each scavenge (see the README).
// Per scenario and over `runs` runs (default 5): the median and the largest
// of each run's longest stall (gap between ticks beyond the 1 ms period; the
// goal is <= 5 ms), the p99 of all gaps, the longest stall that overlapped
// no V8 garbage collection ("no GC"), the longest GC pause seen (from
// perf_hooks 'gc' entries; its kind, and the scavenges of the run with the
// most), the median time the call took. "on-CPU max" is the longest time the loop's
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
const { execFileSync } = require('node:child_process');
const dsh = require('..');
const { completeTurn } = require('../test/helpers');

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const option = (name, dflt) => {
  const a = process.argv.slice(2).find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? dflt : a.slice(name.length + 3);
};
const kind = positional[0] || 'jsonl';
const runs = Number(positional[1] || 5);
const semiSpaces = option('semi-space', '1,2,4') === 'none' ? [] : option('semi-space', '1,2,4').split(',').map(Number);
// In a child run: only the large reads, rows printed as JSON.
const child = option('child', null) !== null;

function config(dir) {
  return {
    jsonl: { backend: 'jsonl', root: path.join(dir, 'root') },
    'jsonl-none': { backend: 'jsonl', root: path.join(dir, 'root'), compression: 'none' },
    sqlite: { backend: 'sqlite', path: path.join(dir, 's.db') },
  }[kind];
}

const GC_KINDS = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak callbacks' };
const gcs = []; // [start, end, kind]
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration, GC_KINDS[(e.detail || e).kind] || 'other']);
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
  const t0 = performance.now();
  await work();
  const took = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 3));
  clearInterval(t);
  await new Promise((r) => setImmediate(r)); // let the gc observer deliver
  const mine = gcs.slice(gcFrom);
  const overlapsGc = ([a, b]) => mine.some(([g0, g1]) => g0 < b && g1 > a);
  const ms = ([a, b]) => Math.max(0, b - a - 1);
  const longestGc = mine.reduce((w, g) => (g[1] - g[0] > w[1] - w[0] ? g : w), [0, 0, '-']);
  return {
    took,
    gcKind: longestGc[2],
    scavenges: mine.filter((g) => g[2] === 'scavenge').length,
    worst: Math.max(0, ...gaps.map(ms)),
    noGc: Math.max(0, ...gaps.filter((g) => !overlapsGc(g)).map(ms)),
    gaps: gaps.map(ms),
    gcMax: longestGc[1] - longestGc[0],
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

/** One row: the stall figures over the runs, the time the call took, its longest GC pause. */
function summary(results) {
  const worst = results.map((x) => x.worst);
  const max = (f) => Math.max(...results.map(f)).toFixed(1);
  return (
    `median ${median(worst).toFixed(1)}  max ${Math.max(...worst).toFixed(1)}  p99 ${p99(results.flatMap((x) => x.gaps)).toFixed(1)}  ` +
    `no-GC max ${max((x) => x.noGc)}  GC pause max ${max((x) => x.gcMax)} (${results.reduce((w, x) => (x.gcMax > w.gcMax ? x : w)).gcKind}; ` +
    `${Math.max(...results.map((x) => x.scavenges))} scavenges)  ` +
    `on-CPU max ${max((x) => x.cpuMax)} (no GC ${max((x) => x.cpuNoGc)})  took ${median(results.map((x) => x.took)).toFixed(0)} ms  ` +
    `worst = ${breakdown(results)}`
  );
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
      [`loadAsync of ${count} events`, () => store.loadAsync('big'), true],
      [`iterateAsync over ${count} events`, async () => {
        let n = 0;
        for await (const ev of store.iterateAsync('big')) if (ev.seq >= 0) n++;
        if (n !== count) throw new Error(`iterated ${n} of ${count}`);
      }, true],
    ];
    const rows = [];
    for (const [what, work, large] of scenarios) {
      if (child && !large) continue;
      const results = [];
      for (let r = 0; r < runs; r++) {
        results.push(await stall(work));
        if (global.gc) global.gc();
      }
      rows.push([what, summary(results)]);
    }
    if (child) {
      await s.closeAsync();
      await store.closeAsync();
      process.stdout.write(JSON.stringify(rows));
      return;
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
    for (const mib of semiSpaces) {
      const out = execFileSync(process.execPath, [`--max-semi-space-size=${mib}`, __filename, kind, String(runs), '--child=1'], { encoding: 'utf8' });
      for (const [what, text] of JSON.parse(out)) rows.push([`${what}, semi-space ${mib} MiB`, text]);
    }
    const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
    console.log(`backend ${kind}, ${runs} runs, load average ${load} on ${os.cpus().length} cores`);
    console.log('longest event-loop stall in ms (1 ms ticker; goal <= 5 ms for the async forms)');
    const width = Math.max(...rows.map(([what]) => what.length));
    for (const [what, text] of rows) console.log(`  ${what.padEnd(width)} ${text}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
