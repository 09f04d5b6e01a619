// ESM entry of dsh-persist: the objects of the CommonJS entry (index.js) as
// named exports, and the whole module as the default export. The names are
// those index.d.ts declares (test/esm.test.js compares the three lists).
import dsh from './index.js';

export const {
  Store,
  Session,
  PlanMode,
  Follower,
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
  installSignalHandlers,
  flushOpenSessions,
  liveResults,
  version,
  libraryPath,
  libraryVersion,
} = dsh;

export default dsh;
