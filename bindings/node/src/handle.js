'use strict';
// The lifecycle every handle class shares (model: wasm-bindgen's generated
// classes: __destroy_into_raw, free, FinalizationRegistry.unregister).
//
// - `_ptr()` returns the raw pointer or throws ClosedError once closed.
// - `close()` is idempotent: it nulls the pointer, unregisters from the
//   FinalizationRegistry, then calls the C close/free function exactly once.
// - `[Symbol.dispose]` is close, for `using`.
// - The FinalizationRegistry is only a safety net: finalizers may run late or
//   never, so close sessions explicitly to make them durable.
//
// Calls are synchronous, so on one JS thread no call can be in flight while
// close runs; handles cannot be shared with worker threads.

const { ClosedError, Status } = require('./errors');

const registry = new FinalizationRegistry(({ release, ptr }) => {
  try {
    release(ptr);
  } catch {
    // a finalizer never throws
  }
});

class Handle {
  #ptr;
  #release;
  #kind;

  /**
   * @param {object} ptr the koffi pointer
   * @param {(ptr: object) => void} release the C close/free call
   * @param {string} kind "store", "session", "plan controller" (messages)
   */
  constructor(ptr, release, kind) {
    this.#ptr = ptr;
    this.#release = release;
    this.#kind = kind;
    registry.register(this, { release, ptr }, this);
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

  /** Releases the handle. Idempotent. */
  close() {
    const ptr = this.#ptr;
    if (ptr === null) return;
    this.#ptr = null;
    registry.unregister(this);
    this.#release(ptr);
  }

  [Symbol.dispose]() {
    this.close();
  }
}

module.exports = { Handle };
