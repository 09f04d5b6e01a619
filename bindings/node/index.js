'use strict';
// dsh-persist: crash-safe session logs of the DeepSeek Harness, from Node.
// A thin koffi wrapper over libdsh_persist (its C ABI).

const errors = require('./src/errors');
const { libraryPath, libraryVersion, PACKAGE_VERSION } = require('./src/lib');
const { Store } = require('./src/store');
const { Session } = require('./src/session');
const { PlanMode } = require('./src/plan');
const { Follower } = require('./src/follow');
require('./src/async_api'); // the *Async Promise forms
const exit = require('./src/exit');

module.exports = {
  Store,
  Session,
  PlanMode,
  Follower,
  Status: errors.Status,
  DshError: errors.DshError,
  InvalidArgumentError: errors.InvalidArgumentError,
  NotFoundError: errors.NotFoundError,
  ConflictError: errors.ConflictError,
  CorruptionError: errors.CorruptionError,
  FormatUnsupportedError: errors.FormatUnsupportedError,
  DshIOError: errors.DshIOError,
  BusyError: errors.BusyError,
  ClosedError: errors.ClosedError,
  InvariantError: errors.InvariantError,
  UnsupportedError: errors.UnsupportedError,
  CancelledError: errors.CancelledError,
  DshPanicError: errors.DshPanicError,
  installSignalHandlers: exit.installSignalHandlers,
  flushOpenSessions: exit.flushAll,
  liveResults: require('./src/paged').liveResults,
  version: PACKAGE_VERSION,
  libraryPath,
  libraryVersion,
};
