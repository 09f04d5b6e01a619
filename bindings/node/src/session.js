'use strict';
// Session: a live session this process writes (dsh_session_*).

const { fns, call, callText, callRequiredText } = require('./lib');
const { Handle } = require('./handle');
const { InvariantError, Status } = require('./errors');
const args = require('./args');
const exit = require('./exit');

/**
 * A live session, from store.start(), store.resume() or store.fork().
 * append() assigns seq and time and returns at once; a background writer
 * makes events durable within writeBatchMaxDelayMs. flush() waits for
 * durability; close() drains and releases the id. A session that is never
 * closed or flushed may lose its last batch (the finalizer is only a safety
 * net). The session keeps its Store object reachable.
 *
 * While open, the session holds its id's writer lock: another process or
 * store handle that starts, resumes or appends to the id gets a BusyError
 * (a ConflictError when creating it). When close() throws (its final drain
 * failed, e.g. a full disk), the session stays open with its pending events:
 * appends throw ClosedError, close() may be retried, and discard() gives up
 * and frees it, dropping what could not be written.
 */
class Session extends Handle {
  /**
   * @param {object} ptr
   * @param {import('./store').Store} store
   */
  constructor(ptr, store) {
    super(
      ptr,
      (p) => {
        call(fns.dsh_session_close, p);
        exit.untrack(p);
      },
      'session',
      (p) => {
        fns.dsh_session_free(p);
        exit.untrack(p);
      },
    );
    /** The store this session belongs to. */
    this.store = store;
    // Flushed at process exit while open (src/exit.js).
    exit.track(ptr);
  }

  /**
   * Appends one event; returns its seq, a Number (seqs are safe integers:
   * the library refuses a log that would pass 2^53 - 1).
   * `data` is serialized with JSON.stringify (BigInt values exactly); use
   * appendRaw() to pass JSON text.
   * @param {string} type
   * @param {unknown} data
   * @param {{surfaceOp?: "append"|{op:"replace",start:number,end:number}, sourceEventSeqs?: number[], ignorable?: boolean}} [options]
   * @returns {number}
   */
  append(type, data, options = {}) {
    if (data === undefined) throw new TypeError('data must be a JSON value, not undefined');
    args.assertJsonValue(data, `event ${JSON.stringify(String(type))} data`);
    const seq = this.appendRaw(type, args.stringify(data, 'data'), options);
    if (typeof seq !== 'number') {
      throw new InvariantError(Status.INVARIANT, `the library returned seq ${seq}, beyond the safe integer range`);
    }
    return seq;
  }

  /**
   * append() with `data` as JSON text, kept verbatim. Returns the seq as
   * the library reports it: a Number, or a BigInt if it were beyond 2^53
   * (which the library's seqs never are).
   * @returns {number | bigint}
   */
  appendRaw(type, dataJson, options = {}) {
    const rawType = args.text(type, 'type');
    const rawData = args.text(dataJson, 'dataJson');
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError(`options must be an object, not ${args.typeName(options)}`);
    }
    const opts = {};
    for (const [key, value] of Object.entries(options)) {
      if (value === undefined || value === null) continue;
      if (key === 'surfaceOp') {
        if (typeof value !== 'string' && (typeof value !== 'object' || Array.isArray(value))) {
          throw new TypeError(`options.surfaceOp must be a string or object, not ${args.typeName(value)}`);
        }
        opts.surfaceOp = value;
      } else if (key === 'sourceEventSeqs') {
        if (!Array.isArray(value)) {
          throw new TypeError(`options.sourceEventSeqs must be an array, not ${args.typeName(value)}`);
        }
        opts.sourceEventSeqs = value.map((s) => args.uint64(s, 'options.sourceEventSeqs[]'));
      } else if (key === 'ignorable') {
        if (args.bool(value, 'options.ignorable')) opts.ignorable = true;
      } else {
        // The core names the allowed keys.
        opts[key] = value;
      }
    }
    const rawOptions = Object.keys(opts).length ? args.stringify(opts, 'options') : null;
    const out = [0];
    call(fns.dsh_session_append, this._ptr(), rawType, rawData, rawOptions, out);
    return args.seqResult(out[0]);
  }

  /** Waits until every appended event is durable; throws the write error. */
  flush() {
    call(fns.dsh_session_flush, this._ptr());
  }

  /**
   * Frees the session without a successful drain (after close() threw): one
   * last drain is tried, events that still cannot be written are dropped,
   * the id is released. Idempotent.
   */
  discard() {
    this._discard();
  }

  eventsRaw(fromSeq = 0) {
    return callRequiredText(fns.dsh_session_events, this._ptr(), args.uint64(fromSeq, 'fromSeq'));
  }

  /** Events with seq >= fromSeq (in memory, durable or not). */
  events(fromSeq = 0) {
    return JSON.parse(this.eventsRaw(fromSeq));
  }

  headerRaw() {
    return callRequiredText(fns.dsh_session_header, this._ptr());
  }

  /** The session header. */
  get header() {
    return JSON.parse(this.headerRaw());
  }

  /** The session id. */
  get id() {
    return this.header.id;
  }

  messagesRaw() {
    return callRequiredText(fns.dsh_session_messages, this._ptr());
  }

  /** The model-visible transcript derived from the surface. */
  messages() {
    return JSON.parse(this.messagesRaw());
  }

  /** The last failed background write, or null. */
  backgroundError() {
    const t = callText(fns.dsh_session_background_error, this._ptr());
    return t === null || t === undefined ? null : JSON.parse(t);
  }
}

module.exports = { Session };
