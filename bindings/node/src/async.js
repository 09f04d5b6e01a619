'use strict';
// The one helper that turns a synchronous operation into a Promise (issue 18):
// `runAsync` calls the operation's `_ex` C function with koffi's `.async` (it
// runs on a koffi worker thread, off the event loop), with a dsh_cancel token
// that an AbortSignal sets and a dsh_error out parameter that carries the
// failure back to this thread. The handles it touches are held in flight
// (close waits), and its arguments are kept referenced until it settles.
//
// A new operation gets its Promise form in one line: `runAsync(fns.dsh_x_ex,
// [args...], {handles, signal, result})`.

const { fns } = require('./lib');
const { errorForStatus, Status, InvariantError } = require('./errors');

/** The AbortError a call rejects with when its signal stopped it. */
function abortError(signal, message) {
  if (signal && signal.reason instanceof Error && signal.reason.name === 'AbortError') return signal.reason;
  const e = new DOMException(message || 'The operation was aborted', 'AbortError');
  if (signal && signal.reason !== undefined) e.cause = signal.reason;
  return e;
}

/** Reads and frees a dsh_error object (on this thread). */
function takeError(errPtr, fallbackStatus, name) {
  if (!errPtr) return errorForStatus(fallbackStatus, `${name} failed with status ${fallbackStatus}`, null);
  try {
    const status = fns.dsh_error_status(errPtr);
    const message = fns.dsh_error_message(errPtr) || `${name} failed with status ${status}`;
    const code = fns.dsh_error_code(errPtr) || null;
    return errorForStatus(status, message, code);
  } finally {
    fns.dsh_error_free(errPtr);
  }
}

/**
 * Runs `fn` (an `_ex` function) on a worker thread.
 * @param {Function} fn the koffi function of the `_ex` form
 * @param {unknown[]} args its arguments before the out value, cancel and out_error
 * @param {object} [opts]
 * @param {{_begin(): object, _end(): void}[]} [opts.handles] handles held in flight (their pointers are `args` already)
 * @param {AbortSignal} [opts.signal] aborts the call (observation calls)
 * @param {'none'|'text'|'handle'} [opts.out] the kind of out value the function has
 * @returns {Promise<unknown>} the out value (text, handle pointer) or undefined
 */
function runAsync(fn, args, opts = {}) {
  const { handles = [], signal = null, out = 'none' } = opts;
  if (signal && signal.aborted) return Promise.reject(abortError(signal));
  // Holding the handles first: a closed one throws here, before any work.
  const held = [];
  try {
    for (const h of handles) {
      h._begin();
      held.push(h);
    }
  } catch (e) {
    for (const h of held) h._end();
    return Promise.reject(e);
  }
  let token = null;
  if (signal) {
    const slot = [null];
    const st = fns.dsh_cancel_new(slot);
    if (st !== Status.OK) {
      for (const h of held) h._end();
      return Promise.reject(errorForStatus(st, 'dsh_cancel_new failed', null));
    }
    token = slot[0];
  }
  const outSlot = [null];
  const errSlot = [null];
  const callArgs = out === 'none' ? [...args, token, errSlot] : [...args, outSlot, token, errSlot];
  return new Promise((resolve, reject) => {
    const onAbort = () => fns.dsh_cancel_cancel(token);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    const settle = (err, status) => {
      if (signal) signal.removeEventListener('abort', onAbort);
      // `callArgs` (and so the argument strings and out slots) stayed
      // referenced by this closure until now.
      try {
        if (err) return reject(err);
        if (status !== Status.OK) {
          const e = takeError(errSlot[0], status, fn.info.name);
          if (status === Status.CANCELLED && signal) return reject(abortError(signal, e.message));
          return reject(e);
        }
        if (out === 'handle' && !outSlot[0]) {
          return reject(new InvariantError(Status.INVARIANT, `${fn.info.name} returned DSH_OK with a NULL handle`));
        }
        resolve(out === 'none' ? undefined : outSlot[0]);
      } finally {
        if (token) fns.dsh_cancel_free(token);
        for (const h of held) h._end();
        void callArgs;
      }
    };
    try {
      fn.async(...callArgs, settle);
    } catch (e) {
      settle(e);
    }
  });
}

module.exports = { runAsync, abortError };
