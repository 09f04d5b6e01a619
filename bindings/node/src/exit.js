'use strict';
// No lost turn at exit (issue 18). A live session's last events wait in the
// write-behind window; a process that ends without close() would lose them.
// - On a normal end (the event loop empties, or process.exit()), every open
//   session is flushed synchronously from a process.on('exit') handler.
// - Signals (SIGINT, SIGTERM) end the process without 'exit' unless
//   handled: `installSignalHandlers()` (opt-in) installs handlers that flush
//   every open session, remove themselves and re-raise the signal, so the
//   process still dies of it (exit status and parent's view unchanged).
// - A crash (SIGKILL, abort) runs nothing: the window is lost, the store
//   recovers the rest (crash recovery).

const { fns } = require('./lib');

/**
 * The C pointers of the sessions open in this process (pointers, not the
 * Session objects, so tracking never keeps a dropped session from its
 * finalizer). A pointer whose session a finalizer closed is still safe to
 * pass: the library checks every handle (DSH_CLOSED).
 */
const open = new Set();

function track(ptr) {
  open.add(ptr);
}

function untrack(ptr) {
  open.delete(ptr);
}

/** Flushes every open session synchronously; returns how many failed. */
function flushAll() {
  let failed = 0;
  for (const ptr of open) {
    // Concurrent calls on a session are allowed (only close is exclusive),
    // so an async call still in flight does not stop this flush.
    if (fns.dsh_session_flush(ptr) !== 0) failed += 1;
  }
  return failed;
}

process.on('exit', () => {
  flushAll();
});

/**
 * Installs handlers for `signals` (default SIGINT and SIGTERM) that flush every
 * open session and then re-raise the signal with the default action. Returns
 * a function that removes them. Opt-in: a host with its own handlers should
 * call `flushOpenSessions()` from them instead.
 * @param {{signals?: NodeJS.Signals[]}} [opts]
 * @returns {() => void}
 */
function installSignalHandlers(opts = {}) {
  const signals = opts.signals || ['SIGINT', 'SIGTERM'];
  const handlers = new Map();
  const uninstall = () => {
    for (const [sig, h] of handlers) process.removeListener(sig, h);
    handlers.clear();
  };
  for (const sig of signals) {
    const h = () => {
      flushAll();
      uninstall();
      process.kill(process.pid, sig);
    };
    handlers.set(sig, h);
    process.on(sig, h);
  }
  return uninstall;
}

module.exports = { track, untrack, flushAll, installSignalHandlers };
