'use strict';
// The Promise forms of every operation that may touch the disk (issue 18),
// one line each over `runAsync` (src/async.js): they run off the event loop
// and resolve with what the synchronous method returns. Observation calls
// (load, inspect, readFrom, readRaw, list, listSnapshots, listSummaries,
// lastUpdated, search, export; and prune's listing, salvage's read) take
// `{signal}`: an AbortSignal that stops the read between chunks or rows and
// rejects with an AbortError, leaving the store unchanged. `append` stays
// synchronous (it does not touch the disk).

const { fns } = require('./lib');
const { runAsync } = require('./async');
const paged = require('./paged');
const { Store, byId } = require('./store');
const { Session } = require('./session');
const { PlanMode } = require('./plan');
const { InvalidArgumentError, Status } = require('./errors');
const args = require('./args');
const exit = require('./exit');

const sig = (opts) => (opts && opts.signal) || null;
const parse = (t) => JSON.parse(t);

async function pagedValue(fn, a, store, opts) {
  const signal = sig(opts);
  return paged.collect(await paged.readPaged(fn, a, [store], signal), signal);
}

async function pagedText(fn, a, store, opts) {
  const signal = sig(opts);
  return paged.collectText(await paged.readPaged(fn, a, [store], signal), signal);
}

/** `[fn, args]` of a paged view read of `id` (the `_id_json` form for ids a C string cannot carry). */
function viewArgs(store, id, plain, idJson) {
  const [fn, sid] = byId(id, plain, idJson);
  return [fn, [store._ptr(), sid]];
}

function readFromArgs(store, id, fromSeq) {
  const [fn, sid] = byId(id, fns.dsh_store_read_from_paged_ex, fns.dsh_store_read_from_id_json_paged_ex);
  return [fn, [store._ptr(), sid, args.uint64(fromSeq, 'fromSeq')]];
}

function checkSession(session) {
  if (!(session instanceof Session)) throw new TypeError(`session must be a Session, not ${args.typeName(session)}`);
}

// ---- Store ----
Store.openAsync = async function openAsync(config) {
  const raw = args.jsonArg(config, 'config', { array: false });
  return new Store(await runAsync(fns.dsh_store_open_ex, [raw], { out: 'handle' }));
};

Object.assign(Store.prototype, {
  async closeAsync() {
    await this._idle();
    const ptr = this._detach();
    if (ptr !== null) await runAsync(fns.dsh_store_close_ex, [ptr]);
  },
  createAsync(header) {
    const raw = args.jsonArg(header, 'header', { array: false });
    return runAsync(fns.dsh_store_create_ex, [this._ptr(), raw], { handles: [this] });
  },
  appendAsync(id, events) {
    const raw = args.jsonArg(events, 'events', { array: true, what: 'session event batch' });
    return runAsync(fns.dsh_store_append_ex, [this._ptr(), args.text(id, 'id'), raw], { handles: [this] });
  },
  // load, inspect and readFrom read into a paged result (src/paged.js): the
  // log is read on a worker thread, then taken on the loop page by page. As
  // before, the …RawAsync forms throw on bad arguments, the parsed ones reject.
  // An id a C string cannot carry goes to the `_id_json` form (byId), as in
  // the synchronous methods.
  loadRawAsync(id, opts) {
    return pagedText(...viewArgs(this, id, fns.dsh_store_load_paged_ex, fns.dsh_store_load_id_json_paged_ex), this, opts);
  },
  async loadAsync(id, opts) {
    return pagedValue(...viewArgs(this, id, fns.dsh_store_load_paged_ex, fns.dsh_store_load_id_json_paged_ex), this, opts);
  },
  inspectRawAsync(id, opts) {
    return pagedText(...viewArgs(this, id, fns.dsh_store_inspect_paged_ex, fns.dsh_store_inspect_id_json_paged_ex), this, opts);
  },
  async inspectAsync(id, opts) {
    return pagedValue(...viewArgs(this, id, fns.dsh_store_inspect_paged_ex, fns.dsh_store_inspect_id_json_paged_ex), this, opts);
  },
  readFromRawAsync(id, fromSeq = 0, opts) {
    return pagedText(...readFromArgs(this, id, fromSeq), this, opts);
  },
  async readFromAsync(id, fromSeq = 0, opts) {
    return pagedValue(...readFromArgs(this, id, fromSeq), this, opts);
  },
  /**
   * The stored events with `seq >= fromSeq` (as readFromAsync) one at a time:
   * `for await (const ev of store.iterateAsync(id, {fromSeq, signal}))`.
   * The read runs at the first `next()`; leaving the loop early frees it.
   */
  iterateAsync(id, opts = {}) {
    const signal = sig(opts);
    const [fn, a] = readFromArgs(this, id, (opts && opts.fromSeq) ?? 0);
    return paged.iterate(() => paged.readPaged(fn, a, [this], signal), signal);
  },
  async readRawAsync(id, opts) {
    const [fn, sid] = byId(id, fns.dsh_store_read_raw_ex, fns.dsh_store_read_raw_id_json_ex);
    const t = await runAsync(fn, [this._ptr(), sid], { handles: [this], signal: sig(opts), out: 'text' });
    return t === null || t === undefined ? null : parse(t);
  },
  async listAsync(opts) {
    return parse(await runAsync(fns.dsh_store_list_ex, [this._ptr()], { handles: [this], signal: sig(opts), out: 'text' }));
  },
  async listSnapshotsAsync(opts) {
    return parse(await runAsync(fns.dsh_store_list_snapshots_ex, [this._ptr()], { handles: [this], signal: sig(opts), out: 'text' }));
  },
  async startAsync(header) {
    const raw = args.jsonArg(header, 'header', { array: false });
    return new Session(await runAsync(fns.dsh_session_start_ex, [this._ptr(), raw], { handles: [this], out: 'handle' }), this);
  },
  async resumeAsync(id, opts) {
    const a = [this._ptr(), args.text(id, 'id')];
    return new Session(await runAsync(fns.dsh_session_resume_ex, a, { handles: [this], signal: sig(opts), out: 'handle' }), this);
  },
  async forkAsync(sourceId, boundary = -1, child = null, opts) {
    if (typeof boundary !== 'number' && typeof boundary !== 'bigint') {
      throw new TypeError(`boundary must be a number or bigint, not ${args.typeName(boundary)}`);
    }
    if (typeof boundary === 'number' ? !Number.isSafeInteger(boundary) || boundary < -1 : boundary < -1n || boundary >= 1n << 63n) {
      throw new InvalidArgumentError(Status.INVALID_ARGUMENT, `boundary must be -1 (last) or a seq, got ${boundary}`);
    }
    const rawChild = child === null || child === undefined ? null : args.jsonArg(child, 'child', { array: false });
    const a = [this._ptr(), args.text(sourceId, 'sourceId'), boundary, rawChild];
    return new Session(await runAsync(fns.dsh_session_fork_ex, a, { handles: [this], signal: sig(opts), out: 'handle' }), this);
  },
  // -- session management and the catalog reads (issue 19) --
  deleteAsync(id) {
    const [fn, sid] = byId(id, fns.dsh_store_delete_ex, fns.dsh_store_delete_id_json_ex);
    return runAsync(fn, [this._ptr(), sid], { handles: [this] }).then(() => undefined);
  },
  async pruneAsync(options, opts) {
    // The signal stops the listing; once the deletions begin they all run.
    const raw = args.jsonArg(options, 'options', { array: false });
    return parse(await runAsync(fns.dsh_store_prune_ex, [this._ptr(), raw], { handles: [this], signal: sig(opts), out: 'text' }));
  },
  async salvageAsync(id, newId, opts) {
    // The signal stops the read of the source; once the write begins it finishes.
    const a = [this._ptr(), args.text(id, 'id'), args.text(newId, 'newId')];
    return parse(await runAsync(fns.dsh_store_salvage_ex, a, { handles: [this], signal: sig(opts), out: 'text' }));
  },
  async importJsonlAsync(newId, jsonl) {
    const a = [this._ptr(), args.text(newId, 'newId'), args.text(jsonl, 'jsonl')];
    return parse(await runAsync(fns.dsh_store_import_ex, a, { handles: [this], out: 'text' }));
  },
  async listSummariesAsync(query = null, opts) {
    const raw = query === null || query === undefined ? null : args.jsonArg(query, 'query', { array: false });
    return parse(await runAsync(fns.dsh_store_list_summaries_ex, [this._ptr(), raw], { handles: [this], signal: sig(opts), out: 'text' }));
  },
  async lastUpdatedAsync(opts) {
    const rows = await this.listSummariesAsync({ limit: 1 }, opts);
    return rows.length ? rows[0].id : null;
  },
  async searchAsync(query, opts) {
    const raw = typeof query === 'string' ? JSON.stringify(query) : args.jsonArg(query, 'query', { array: false });
    return parse(await runAsync(fns.dsh_store_search_ex, [this._ptr(), raw], { handles: [this], signal: sig(opts), out: 'text' }));
  },
  exportAsync(id, format = 'md', opts) {
    const a = [this._ptr(), args.text(id, 'id'), args.text(format, 'format')];
    return runAsync(fns.dsh_store_export_ex, a, { handles: [this], signal: sig(opts), out: 'text' });
  },
});

// ---- Session ----
Object.assign(Session.prototype, {
  flushAsync() {
    return runAsync(fns.dsh_session_flush_ex, [this._ptr()], { handles: [this] });
  },
  async closeAsync() {
    await this._idle();
    const ptr = this._detach();
    if (ptr === null) return;
    try {
      await runAsync(fns.dsh_session_close_ex, [ptr]);
      exit.untrack(ptr);
    } catch (e) {
      this._reattach(ptr); // the drain failed: retry close, or discard()
      throw e;
    }
  },
});

// ---- PlanMode (the calls that may append to the session) ----
function planAsync(plan, fn, session, ...rest) {
  checkSession(session);
  return runAsync(fn, [plan._ptr(), session._ptr(), ...rest], { handles: [plan, session], out: 'text' }).then(parse);
}

Object.assign(PlanMode.prototype, {
  setAsync(session, active) {
    return planAsync(this, fns.dsh_plan_set_ex, session, args.bool(active, 'active'));
  },
  preStepAsync(session) {
    return planAsync(this, fns.dsh_plan_pre_step_ex, session);
  },
  commandAsync(session, rawInput, hasAttachments = false) {
    return planAsync(this, fns.dsh_plan_command_ex, session, args.text(rawInput, 'rawInput'), args.bool(hasAttachments, 'hasAttachments'));
  },
  exitCheckAsync(session, planMarkdown) {
    return planAsync(this, fns.dsh_plan_exit_check_ex, session, args.text(planMarkdown, 'planMarkdown'));
  },
  exitAnswerAsync(session, answer) {
    return planAsync(this, fns.dsh_plan_exit_answer_ex, session, args.jsonArg(answer, 'answer', { array: false }));
  },
});

module.exports = {};
