'use strict';
// Errors thrown by dsh-persist: one class per dsh_status of the library.
// Every failure carries the numeric `status`, its `kind` name, the
// machine-readable `code` (e.g. "SESSION_NOT_FOUND") or null, and a real
// `name`. An unknown status maps to DshError itself (libsignal Errors.ts).

const Status = Object.freeze({
  OK: 0,
  INVALID_ARGUMENT: 1,
  NOT_FOUND: 2,
  CONFLICT: 3,
  CORRUPTION: 4,
  FORMAT_UNSUPPORTED: 5,
  IO: 6,
  BUSY: 7,
  CLOSED: 8,
  INVARIANT: 9,
  UNSUPPORTED: 10,
  CANCELLED: 11,
  PANIC: 99,
});

class DshError extends Error {
  /**
   * @param {number} status the dsh_status number
   * @param {string} message the library's message (dsh_last_error())
   * @param {string|null} [code] the machine-readable code, if any
   */
  constructor(status, message, code = null) {
    super(message);
    Object.defineProperty(this, 'name', { value: new.target.name, enumerable: false, configurable: true });
    Object.defineProperties(this, {
      status: { value: status, enumerable: true },
      code: { value: code || null, enumerable: true },
    });
  }

  /** The status kind: "not_found", …; "unknown" for a status this version does not know. */
  get kind() {
    return this.constructor.kind;
  }
}
DshError.kind = 'unknown';

function kindClass(name, kind) {
  const cls = { [name]: class extends DshError {} }[name];
  cls.kind = kind;
  return cls;
}

const InvalidArgumentError = kindClass('InvalidArgumentError', 'invalid_argument');
const NotFoundError = kindClass('NotFoundError', 'not_found');
const ConflictError = kindClass('ConflictError', 'conflict');
const CorruptionError = kindClass('CorruptionError', 'corruption');
const FormatUnsupportedError = kindClass('FormatUnsupportedError', 'format_unsupported');
const DshIOError = kindClass('DshIOError', 'io');
const BusyError = kindClass('BusyError', 'busy');
const ClosedError = kindClass('ClosedError', 'closed');
const InvariantError = kindClass('InvariantError', 'invariant');
const UnsupportedError = kindClass('UnsupportedError', 'unsupported');
const CancelledError = kindClass('CancelledError', 'cancelled');
const DshPanicError = kindClass('DshPanicError', 'panic');

const BY_STATUS = new Map([
  [Status.INVALID_ARGUMENT, InvalidArgumentError],
  [Status.NOT_FOUND, NotFoundError],
  [Status.CONFLICT, ConflictError],
  [Status.CORRUPTION, CorruptionError],
  [Status.FORMAT_UNSUPPORTED, FormatUnsupportedError],
  [Status.IO, DshIOError],
  [Status.BUSY, BusyError],
  [Status.CLOSED, ClosedError],
  [Status.INVARIANT, InvariantError],
  [Status.UNSUPPORTED, UnsupportedError],
  [Status.CANCELLED, CancelledError],
  [Status.PANIC, DshPanicError],
]);

/** The error for a failure status; unknown statuses give a plain DshError. */
function errorForStatus(status, message, code) {
  const Cls = BY_STATUS.get(status) || DshError;
  return new Cls(status, message, code);
}

module.exports = {
  Status,
  DshError,
  InvalidArgumentError,
  NotFoundError,
  ConflictError,
  CorruptionError,
  FormatUnsupportedError,
  DshIOError,
  BusyError,
  ClosedError,
  InvariantError,
  UnsupportedError,
  CancelledError,
  DshPanicError,
  errorForStatus,
};
