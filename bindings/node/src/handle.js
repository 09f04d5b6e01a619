'use strict';
// The lifecycle every handle class shares (model: wasm-bindgen's generated
// classes: __destroy_into_raw, free, FinalizationRegistry.unregister).
//
// - `_ptr()` returns the raw pointer or throws ClosedError once closed.
// - `close()` is idempotent: it nulls the pointer, unregisters from the
//   FinalizationRegistry, then calls the C close/free function exactly once.
//   A handle built with a `keepOnFailure` release (sessions) gets its pointer
//   back when the C close throws, so the close can be retried; `_discard()`
//   then frees it for good.
// - `[Symbol.dispose]` is close, for `using`.
// - The FinalizationRegistry is only a safety net: finalizers may run late or
//   never, so close sessions explicitly to make them durable.
//
// Promise forms (src/async.js) run on worker threads: each holds the handle
// in flight (`_begin`/`_end`); a synchronous close() refuses while one is,
// and closeAsync() waits for them. Handles cannot be shared with JS workers.

const { ClosedError, ConflictError, Status } = require('./errors');

const registry = new FinalizationRegistry(({ release, discard, ptr }) => {
  try {
    release(ptr);
  } catch {
    // a finalizer never throws; a close that failed gives up
    if (discard) {
      try {
        discard(ptr);
      } catch {
        // nothing more to do
      }
    }
  }
});

class Handle {
  #ptr;
  #release;
  #discard;
  #kind;
  #inflight = 0;
  #idle = [];

  /**
   * @param {object} ptr the koffi pointer
   * @param {(ptr: object) => void} release the C close/free call
   * @param {string} kind "store", "session", "plan controller" (messages)
   * @param {((ptr: object) => void) | null} [discard] when given, a release
   *   that throws leaves the handle open (retry close); this frees it for good
   */
  constructor(ptr, release, kind, discard = null) {
    this.#ptr = ptr;
    this.#release = release;
    this.#discard = discard;
    this.#kind = kind;
    registry.register(this, { release, discard, ptr }, this);
  }

  /** Whether close() has been called. */
  get closed() {
    return this.#ptr === null;
  }

  /** The raw pointer; throws ClosedError once closed. */
  _ptr() {
    if (this.#ptr === null) throw new ClosedError(Status.CLOSED, `this ${this.#kind} is closed`);
    return this.#ptr;
  }

  /** Marks an async call in flight on this handle (close waits for it); returns the pointer. */
  _begin() {
    const ptr = this._ptr();
    this.#inflight += 1;
    return ptr;
  }

  /** Ends what `_begin()` started. */
  _end() {
    this.#inflight -= 1;
    if (this.#inflight === 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** Resolves once no async call is in flight. */
  _idle() {
    return this.#inflight === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * Takes the pointer for an async close (after `_idle()`): the handle reads
   * as closed; `_reattach(ptr)` gives it back when the close failed and may
   * be retried. Null when already closed.
   */
  _detach() {
    const ptr = this.#ptr;
    if (ptr === null) return null;
    this.#ptr = null;
    registry.unregister(this);
    return ptr;
  }

  _reattach(ptr) {
    if (!this.#discard) return;
    this.#ptr = ptr;
    registry.register(this, { release: this.#release, discard: this.#discard, ptr }, this);
  }

  /** Releases the handle. Idempotent. Throws while an async call on it is in flight. */
  close() {
    const ptr = this.#ptr;
    if (ptr === null) return;
    if (this.#inflight > 0) {
      throw new ConflictError(Status.CONFLICT, `this ${this.#kind} has ${this.#inflight} async call(s) in flight: await them (or use closeAsync()) before close()`);
    }
    this.#ptr = null;
    registry.unregister(this);
    try {
      this.#release(ptr);
    } catch (e) {
      if (this.#discard) {
        // The C handle is still valid: keep it for a retry.
        this.#ptr = ptr;
        registry.register(this, { release: this.#release, discard: this.#discard, ptr }, this);
      }
      throw e;
    }
  }

  /** Frees the handle without a successful close (handles with a discard). */
  _discard() {
    const ptr = this.#ptr;
    if (ptr === null || !this.#discard) return;
    this.#ptr = null;
    registry.unregister(this);
    this.#discard(ptr);
  }

  [Symbol.dispose]() {
    this.close();
  }
}

module.exports = { Handle };
