'use strict';
// Paged results of the large reads (issue 18): loadAsync, inspectAsync,
// readFromAsync (and their …RawAsync forms) read the log on a worker thread
// into a `dsh_result` the library keeps, then take it on the event loop in
// small pieces: the head `{meta, events: []}`, then pages of events (each a
// JSON array text, parsed and appended), yielding to the loop (setImmediate)
// between pages, so no single step parses or decodes megabytes. The page
// size adapts to keep one step (parse and use of a page) near PAGE_TARGET_MS
// on this machine.
//
// An AbortSignal is honoured while the library reads (its cancel token) and
// between pages (checked before each); the result is freed on every path
// (`dsh_result_live()` counts the live ones).

const { fns, call, callRequiredText } = require('./lib');
const { runAsync, abortError } = require('./async');

/** The time one synchronous step on the loop aims at. */
const PAGE_TARGET_MS = 0.5;
const MIN_PAGE_BYTES = 4 << 10;
const MAX_PAGE_BYTES = 128 << 10;
const FIRST_PAGE_BYTES = 32 << 10;

const yieldLoop = () => new Promise((resolve) => setImmediate(resolve));

/** The next page size, from how long the last one took (grows at most 2x a page). */
function nextBudget(budget, bytes, ms) {
  const rate = bytes / Math.max(ms, 0.05); // bytes per ms
  const want = Math.min(rate * PAGE_TARGET_MS, 2 * budget);
  return Math.round(Math.min(MAX_PAGE_BYTES, Math.max(MIN_PAGE_BYTES, want)));
}

/** Runs a `_paged_ex` read on a worker thread; resolves with the dsh_result pointer. */
function readPaged(fn, args, handles, signal) {
  return runAsync(fn, args, { handles, signal, out: 'handle' });
}

function counts(result) {
  const events = [0];
  const bytes = [0];
  call(fns.dsh_result_count, result, events, bytes);
  return { events: Number(events[0]), bytes: Number(bytes[0]) };
}

function checkSignal(signal) {
  if (signal && signal.aborted) throw abortError(signal);
}

/**
 * Yields the parsed pages of events of `result` (arrays), from index 0,
 * yielding to the loop between pages. Does not free the result.
 */
async function* pages(result, signal) {
  const n = counts(result).events;
  let first = 0;
  let budget = FIRST_PAGE_BYTES;
  while (first < n) {
    checkSignal(signal);
    const t0 = performance.now();
    const out = [null];
    const next = [0];
    call(fns.dsh_result_page, result, first, budget, out, next);
    const text = out[0];
    first = Number(next[0]);
    yield JSON.parse(text);
    // The step includes what the consumer did with the page (iterate: every event).
    budget = nextBudget(budget, text.length, performance.now() - t0);
    await yieldLoop();
  }
  checkSignal(signal);
}

/** The whole value of `result` (`{meta, events}`), built page by page. Frees it. */
async function collect(result, signal) {
  try {
    const value = JSON.parse(callRequiredText(fns.dsh_result_head, result));
    const events = value.events;
    for await (const page of pages(result, signal)) {
      for (let i = 0; i < page.length; i++) events.push(page[i]);
    }
    return value;
  } finally {
    fns.dsh_result_free(result);
  }
}

/** The whole text of `result` (what the synchronous call returns), slice by slice. Frees it. */
async function collectText(result, signal) {
  try {
    const total = counts(result).bytes;
    let text = '';
    let offset = 0;
    let budget = 4 * FIRST_PAGE_BYTES;
    while (offset < total) {
      checkSignal(signal);
      const t0 = performance.now();
      const out = [null];
      const next = [0];
      call(fns.dsh_result_text, result, offset, budget, out, next);
      const piece = out[0];
      text += piece; // a rope: no copy of what came before
      const n = Number(next[0]);
      budget = nextBudget(budget, n - offset, performance.now() - t0);
      offset = n;
      await yieldLoop();
    }
    checkSignal(signal);
    return text;
  } finally {
    fns.dsh_result_free(result);
  }
}

// An async iterator abandoned before its end (never finished, never
// `return()`ed) frees its result when it is collected.
const abandoned = new FinalizationRegistry((holder) => {
  if (holder.result) fns.dsh_result_free(holder.result);
  holder.result = null;
});

/**
 * An async iterator of the events of a paged read. `start()` resolves with
 * the dsh_result pointer (the read runs on its first `next()`).
 */
function iterate(start, signal) {
  const holder = { result: null };
  const free = () => {
    if (holder.result) fns.dsh_result_free(holder.result);
    holder.result = null;
  };
  async function* events() {
    try {
      holder.result = await start();
      for await (const page of pages(holder.result, signal)) {
        for (let i = 0; i < page.length; i++) yield page[i];
      }
    } finally {
      free();
    }
  }
  const gen = events();
  abandoned.register(gen, holder);
  return gen;
}

/** How many dsh_result objects are live (made and not freed) in this process. */
function liveResults() {
  return Number(fns.dsh_result_live());
}

module.exports = { readPaged, collect, collectText, iterate, liveResults, yieldLoop };
