'use strict';
// Session: a live session this process writes (SPEC §6.1, dsh_session_*).

const { fns, call, callText, callRequiredText } = require('./lib');
const { Handle } = require('./handle');
const args = require('./args');

/**
 * A live session, from store.start(), store.resume() or store.fork().
 * append() assigns seq and time and returns at once; a background writer
 * makes events durable within writeBatchMaxDelayMs. flush() waits for
 * durability; close() drains and releases the id. A session that is never
 * closed or flushed may lose its last batch (the finalizer is only a safety
 * net). The session keeps its Store object reachable.
 */
class Session extends Handle {
  /**
   * @param {object} ptr
   * @param {import('./store').Store} store
   */
  constructor(ptr, store) {
    super(ptr, (p) => call(fns.dsh_session_close, p), 'session');
    /** The store this session belongs to. */
    this.store = store;
  }

  /**
   * Appends one event; returns its seq (a Number; a BigInt beyond 2^53).
   * `data` is serialized with JSON.stringify (BigInt values exactly); use
   * appendRaw() to pass JSON text.
   * @param {string} type
   * @param {unknown} data
   * @param {{surfaceOp?: "append"|{op:"replace",start:number,end:number}, sourceEventSeqs?: number[], ignorable?: boolean}} [options]
   */
  append(type, data, options = {}) {
    if (data === undefined) throw new TypeError('data must be a JSON value, not undefined');
    args.assertJsonValue(data, `event ${JSON.stringify(String(type))} data`);
    return this.appendRaw(type, args.stringify(data, 'data'), options);
  }

  /** append() with `data` as JSON text, kept verbatim. */
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
