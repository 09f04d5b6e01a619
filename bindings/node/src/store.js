'use strict';
// Store: an opened JSONL or SQLite store (dsh_store_*).

const { fns, call, callText, callRequiredText, callHandle } = require('./lib');
const { Handle } = require('./handle');
const { InvalidArgumentError, Status } = require('./errors');
const args = require('./args');
const { Session } = require('./session');
const { Follower } = require('./follow');

/**
 * An id a C string cannot carry — one holding U+0000 or a lone surrogate,
 * as logs written by the original may have — goes to the `_id_json` form
 * of a call as its JSON text (DIFFERENCES, exception 2); every other id
 * as itself. Returns `[fn, idArgument]`.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function byId(id, plain, idJson) {
  if (typeof id === 'string' && (id.includes('\0') || LONE_SURROGATE.test(id))) {
    return [idJson, JSON.stringify(id)];
  }
  return [plain, args.text(id, 'id')];
}

/**
 * A store: a backend plus the coordinator around it. Open with
 * `Store.open(config)`; close with `close()` (drains every live session) or
 * `using`. JSON results are parsed with JSON.parse; each has a `…Raw()`
 * variant returning the library's text, because JSON.parse rounds integers
 * beyond 2^53 that event data may hold.
 */
class Store extends Handle {
  /** @param {object} ptr from Store.open */
  constructor(ptr) {
    super(ptr, (p) => call(fns.dsh_store_close, p), 'store');
  }

  /**
   * Opens a store. `config` is an object or its JSON text, e.g.
   * `{backend: "jsonl", root: "/tmp/logs"}` or `{backend: "sqlite", path: "/tmp/s.db"}`.
   */
  static open(config) {
    const raw = args.jsonArg(config, 'config', { array: false });
    return new Store(callHandle(fns.dsh_store_open, raw));
  }

  /** Registers a new session (lazy: nothing is written until the first append). */
  create(header) {
    const raw = args.jsonArg(header, 'header', { array: false });
    call(fns.dsh_store_create, this._ptr(), raw);
  }

  /** Appends whole events durably. `events` is an array of event objects or its JSON text. */
  append(id, events) {
    const sid = args.text(id, 'id');
    const raw = args.jsonArg(events, 'events', { array: true, what: 'session event batch' });
    call(fns.dsh_store_append, this._ptr(), sid, raw);
  }

  /** append() with the events as JSON text (kept verbatim). */
  appendRaw(id, eventsJson) {
    this.append(id, args.text(eventsJson, 'eventsJson'));
  }

  /** JSON text of locate(); "null" for SQLite. */
  locateRaw(header) {
    const raw = args.jsonArg(header, 'header', { array: false });
    return callText(fns.dsh_store_locate, this._ptr(), raw) ?? 'null';
  }

  /** Where a session with this header lives: `{kind: "jsonl", path}` or null (SQLite). No I/O. */
  locate(header) {
    return JSON.parse(this.locateRaw(header));
  }

  loadRaw(id) {
    const [fn, sid] = byId(id, fns.dsh_store_load, fns.dsh_store_load_id_json);
    return callRequiredText(fn, this._ptr(), sid);
  }

  /** The balanced log `{meta, events}` (a crashed cold session is repaired first). */
  load(id) {
    return JSON.parse(this.loadRaw(id));
  }

  inspectRaw(id) {
    const [fn, sid] = byId(id, fns.dsh_store_inspect, fns.dsh_store_inspect_id_json);
    return callRequiredText(fn, this._ptr(), sid);
  }

  /** Like load() but changes nothing on disk. */
  inspect(id) {
    return JSON.parse(this.inspectRaw(id));
  }

  readFromRaw(id, fromSeq = 0) {
    const [fn, sid] = byId(id, fns.dsh_store_read_from, fns.dsh_store_read_from_id_json);
    const seq = args.uint64(fromSeq, 'fromSeq');
    return callRequiredText(fn, this._ptr(), sid, seq);
  }

  /** Stored events with seq >= fromSeq, no repair: `{meta, events}`. */
  readFrom(id, fromSeq = 0) {
    return JSON.parse(this.readFromRaw(id, fromSeq));
  }

  /** JSON text of readRaw(), or null when absent. */
  readRawText(id) {
    const [fn, sid] = byId(id, fns.dsh_store_read_raw, fns.dsh_store_read_raw_id_json);
    return callText(fn, this._ptr(), sid);
  }

  /** JSONL only: the stored artifact as written, or null when absent. SQLite throws UnsupportedError. */
  readRaw(id) {
    const t = this.readRawText(id);
    return t === null ? null : JSON.parse(t);
  }

  listRaw() {
    return callRequiredText(fns.dsh_store_list, this._ptr());
  }

  /** Headers of the materialized sessions (metadata only). */
  list() {
    return JSON.parse(this.listRaw());
  }

  listSnapshotsRaw() {
    return callRequiredText(fns.dsh_store_list_snapshots, this._ptr());
  }

  /** Headers with revision tokens, without reading logs. */
  listSnapshots() {
    return JSON.parse(this.listSnapshotsRaw());
  }

  // -- session management (issue 19) --------------------------------------

  /** Deletes a stored session; the id is free afterwards (BusyError when live or held). */
  delete(id) {
    const [fn, sid] = byId(id, fns.dsh_store_delete, fns.dsh_store_delete_id_json);
    call(fn, this._ptr(), sid);
  }

  pruneRaw(options) {
    const raw = args.jsonArg(options, 'options', { array: false });
    return callRequiredText(fns.dsh_store_prune, this._ptr(), raw);
  }

  /**
   * Deletes sessions not updated for `olderThanDays` days and/or all but the
   * `keepNewest` newest (both: a session must match both); `dryRun` reports only.
   */
  prune(options) {
    return JSON.parse(this.pruneRaw(options));
  }

  salvageRaw(id, newId) {
    return callRequiredText(fns.dsh_store_salvage, this._ptr(), args.text(id, 'id'), args.text(newId, 'newId'));
  }

  /** Copies the intact prefix of a session that may no longer load, closed, into `newId`. */
  salvage(id, newId) {
    return JSON.parse(this.salvageRaw(id, newId));
  }

  importJsonlRaw(newId, jsonl) {
    return callRequiredText(fns.dsh_store_import, this._ptr(), args.text(newId, 'newId'), args.text(jsonl, 'jsonl'));
  }

  /** Imports a JSONL text of events (optionally after a header line) into `newId`: all or nothing. */
  importJsonl(newId, jsonl) {
    return JSON.parse(this.importJsonlRaw(newId, jsonl));
  }

  listSummariesRaw(query = null) {
    const raw = query === null || query === undefined ? null : args.jsonArg(query, 'query', { array: false });
    return callRequiredText(fns.dsh_store_list_summaries, this._ptr(), raw);
  }

  /**
   * The rich listing (updated time, event and turn counts, title, first and
   * last prompt, open turn, bytes), reading only a window of each log.
   * `query`: `{sort?: "updated"|"created", ascending?, cwd?, updatedSince?, parent?, limit?}`.
   */
  listSummaries(query = null) {
    return JSON.parse(this.listSummariesRaw(query));
  }

  /** The id of the most recently updated session, or null. */
  lastUpdated() {
    const rows = this.listSummaries({ limit: 1 });
    return rows.length ? rows[0].id : null;
  }

  /** Full-text search: `query` is the text or `{text, limit?, cwd?, cacheDir?}`. */
  search(query) {
    const raw = typeof query === 'string' ? JSON.stringify(query) : args.jsonArg(query, 'query', { array: false });
    return JSON.parse(callRequiredText(fns.dsh_store_search, this._ptr(), raw));
  }

  /** The transcript as Markdown (`"md"`) or self-contained HTML (`"html"`). */
  export(id, format = 'md') {
    return callRequiredText(fns.dsh_store_export, this._ptr(), args.text(id, 'id'), args.text(format, 'format'));
  }

  /** A follower of `id` from `fromSeq` on (omitted: only events appended from now on). */
  follow(id, fromSeq = null) {
    const sid = args.text(id, 'id');
    const from = fromSeq === null || fromSeq === undefined ? -1 : Number(args.uint64(fromSeq, 'fromSeq'));
    return new Follower(callHandle(fns.dsh_follow_open, this._ptr(), sid, from));
  }

  /** Starts a new live session. */
  start(header) {
    const raw = args.jsonArg(header, 'header', { array: false });
    return new Session(callHandle(fns.dsh_session_start, this._ptr(), raw), this);
  }

  /** Resumes a stored session (repairing a crashed tail first). */
  resume(id) {
    const sid = args.text(id, 'id');
    return new Session(callHandle(fns.dsh_session_resume, this._ptr(), sid), this);
  }

  /**
   * Forks `sourceId` at the inclusive `boundary` seq (-1: the last event)
   * into a new live session; `child` is its header (null: a generated id).
   */
  fork(sourceId, boundary = -1, child = null) {
    const sid = args.text(sourceId, 'sourceId');
    if (typeof boundary !== 'number' && typeof boundary !== 'bigint') {
      throw new TypeError(`boundary must be a number or bigint, not ${args.typeName(boundary)}`);
    }
    if (typeof boundary === 'number' ? !Number.isSafeInteger(boundary) || boundary < -1 : boundary < -1n || boundary >= 1n << 63n) {
      throw new InvalidArgumentError(Status.INVALID_ARGUMENT, `boundary must be -1 (last) or a seq, got ${boundary}`);
    }
    const rawChild = child === null || child === undefined ? null : args.jsonArg(child, 'child', { array: false });
    return new Session(callHandle(fns.dsh_session_fork, this._ptr(), sid, boundary, rawChild), this);
  }
}

module.exports = { Store, byId };
