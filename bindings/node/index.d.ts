// Types of dsh-persist, the Node binding of libdsh_persist.
// JSON results are typed loosely (`Json`); README.md and docs/bindings.md of the repository describe their shapes.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The dsh_status values (never renumbered). */
export declare const Status: Readonly<{
  OK: 0;
  INVALID_ARGUMENT: 1;
  NOT_FOUND: 2;
  CONFLICT: 3;
  CORRUPTION: 4;
  FORMAT_UNSUPPORTED: 5;
  IO: 6;
  BUSY: 7;
  CLOSED: 8;
  INVARIANT: 9;
  UNSUPPORTED: 10;
  CANCELLED: 11;
  PANIC: 99;
}>;

/** The keys every backend takes (README: "Store configuration"). */
export interface SharedStoreConfig {
  writeBatchMaxDelayMs?: number;
  preparedSessionCacheSize?: number;
  strict?: boolean;
  extraEventTypes?: string[];
  maxRecordBytes?: number;
  maxLogBytes?: number;
}

export type StoreConfig =
  | (SharedStoreConfig & {
      backend: 'jsonl';
      root: string;
      compression?: 'zstd' | 'none';
      packChunks?: boolean;
    })
  | (SharedStoreConfig & {
      backend: 'sqlite';
      path: string;
      journalMode?: 'wal' | 'delete' | 'truncate' | 'persist';
      busyTimeoutMs?: number;
    })
  | (SharedStoreConfig & {
      backend: 'postgres';
      url: string;
      schema?: string;
      poolSize?: number;
      connectTimeoutMs?: number;
      sslMode?: 'disable' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';
      sslRootCert?: string;
      sslCert?: string;
      sslKey?: string;
      applicationName?: string;
      /** A private directory on this host for append checkpoints and the search index. */
      cacheDir?: string;
    });

export interface SessionHeader {
  version?: 0;
  id: string;
  createdAt?: number;
  cwd?: string;
  parentSession?: string;
  seedLength?: number;
  origin?: 'subagent';
  delegationDepth?: number;
  agentPreset?: string;
}

export type SurfaceOp = 'append' | { op: 'replace'; start: number; end: number };

export interface SessionEvent {
  type: string;
  seq: number;
  time: number;
  data: Json;
  sourceEventSeqs?: number[];
  surfaceOp?: SurfaceOp;
  ignorable?: true;
}

export interface SessionView {
  meta: SessionHeader & { version: 0; createdAt: number };
  events: SessionEvent[];
}

export interface RawArtifact {
  meta: SessionHeader;
  filename: string;
  content: string;
}

// Session management (issue 19).
export interface PruneOptions {
  /** Delete sessions not updated for this many days. */
  olderThanDays?: number;
  /** Keep the K most recently updated sessions. */
  keepNewest?: number;
  /** Report what would be deleted; delete nothing. */
  dryRun?: boolean;
}

export interface PruneReport {
  dryRun: boolean;
  /** JSONL: the log file's mtime; SQLite/PostgreSQL: the last event's time. */
  updatedFrom: 'fileMtime' | 'lastEventTime' | null;
  deleted: Array<{ id: string; updatedAt: number }>;
  busy: Array<{ id: string; message: string }>;
  failed: Array<{ id: string; message: string }>;
  kept: number;
}

export interface SalvageReport {
  sourceId: string;
  newId: string;
  readEvents: number;
  keptEvents: number;
  closers: number;
  stopped: string | null;
}

export interface ImportReport {
  id: string;
  events: number;
  hadHeader: boolean;
}

export interface AppendOptions {
  surfaceOp?: SurfaceOp;
  sourceEventSeqs?: Array<number | bigint>;
  ignorable?: boolean;
}

/** Base of every error: the dsh_status, its kind, the machine-readable code. */
export declare class DshError extends Error {
  readonly status: number;
  /** "invalid_argument", "not_found", …; "unknown" for a status this version does not know. */
  readonly kind: string;
  /** e.g. "SESSION_ALREADY_EXISTS", "SESSION_NOT_FOUND", "INVALID_BOUNDARY", "OPEN_TURN"; null when none. */
  readonly code: string | null;
  constructor(status: number, message: string, code?: string | null);
}
export declare class InvalidArgumentError extends DshError {}
export declare class NotFoundError extends DshError {}
export declare class ConflictError extends DshError {}
export declare class CorruptionError extends DshError {}
export declare class FormatUnsupportedError extends DshError {}
export declare class DshIOError extends DshError {}
export declare class BusyError extends DshError {}
export declare class ClosedError extends DshError {}
export declare class InvariantError extends DshError {}
export declare class UnsupportedError extends DshError {}
/** A `_ex` call stopped by its cancel token (Promise forms reject with an AbortError instead). */
export declare class CancelledError extends DshError {}
export declare class DshPanicError extends DshError {}

declare abstract class Handle {
  /** Whether close() has been called. */
  readonly closed: boolean;
  /** Releases the handle; idempotent. */
  close(): void;
  [Symbol.dispose](): void;
}

/** An opened store. `…Raw()` variants return the library's JSON text (exact big integers). */
export declare class Store extends Handle {
  listSummaries(query?: ListQuery | null): SessionSummary[];
  listSummariesRaw(query?: ListQuery | string | null): string;
  lastUpdated(): string | null;
  search(query: string | SearchQuery): SearchResult;
  export(id: string, format?: 'md' | 'html'): string;
  follow(id: string, fromSeq?: number | bigint | null): Follower;
  static open(config: StoreConfig | string): Store;
  create(header: SessionHeader | string): void;
  append(id: string, events: SessionEvent[] | string): void;
  appendRaw(id: string, eventsJson: string): void;
  locate(header: SessionHeader | string): { kind: 'jsonl'; path: string } | null;
  locateRaw(header: SessionHeader | string): string;
  load(id: string): SessionView;
  loadRaw(id: string): string;
  inspect(id: string): SessionView;
  inspectRaw(id: string): string;
  readFrom(id: string, fromSeq?: number | bigint): SessionView;
  readFromRaw(id: string, fromSeq?: number | bigint): string;
  /** JSONL only; null when absent; SQLite throws UnsupportedError. */
  readRaw(id: string): RawArtifact | null;
  readRawText(id: string): string | null;
  list(): SessionHeader[];
  listRaw(): string;
  listSnapshots(): Array<{ header: SessionHeader; revision: string }>;
  listSnapshotsRaw(): string;
  /** Deletes a stored session (BusyError when live or held, NotFoundError when absent). */
  delete(id: string): void;
  prune(options: PruneOptions): PruneReport;
  pruneRaw(options: PruneOptions | string): string;
  /** Copies the intact prefix of a session that may no longer load into newId. */
  salvage(id: string, newId: string): SalvageReport;
  salvageRaw(id: string, newId: string): string;
  /** Imports a JSONL text of events into the new session newId: all or nothing. */
  importJsonl(newId: string, jsonl: string): ImportReport;
  importJsonlRaw(newId: string, jsonl: string): string;
  start(header: SessionHeader | string): Session;
  resume(id: string): Session;
  /** boundary: inclusive seq, -1 for the last event; child: header (null: generated id). */
  fork(sourceId: string, boundary?: number | bigint, child?: SessionHeader | string | null): Session;
}

/** A session as the rich listing shows it (`Store.listSummaries`). */
export interface SessionSummary {
  id: string;
  meta: SessionHeader;
  revision: string;
  createdAt: number;
  updatedAt: number;
  eventCount: number;
  turnCount: number;
  title: string | null;
  firstPrompt: string | null;
  lastPrompt: string | null;
  openTurn: boolean;
  bytes: number;
}

export interface ListQuery {
  sort?: 'updated' | 'created';
  ascending?: boolean;
  cwd?: string;
  updatedSince?: number;
  parent?: string;
  limit?: number;
}

export interface SearchQuery {
  text: string;
  limit?: number;
  cwd?: string;
  cacheDir?: string;
}

export interface SearchResult {
  hits: Array<{ id: string; seq: number; role: 'user' | 'assistant' | 'tool'; snippet: string }>;
  sessions: number;
  indexed: number;
  truncated: boolean;
  skipped: Array<{ id: string; error: string }>;
}

/** A follower of one session (`Store.follow`). */
export declare class Follower extends Handle {
  /** The new events; an empty array when none came within `timeoutMs` (0: look once). */
  next(timeoutMs?: number): SessionEvent[];
  nextRaw(timeoutMs?: number): string;
}

/** A live session. Close it (or flush) to make its events durable. */
export declare class Session extends Handle {
  readonly store: Store;
  /** Appends one event and returns its seq (seqs are safe integers). BigInt values in data are written exactly. */
  append(type: string, data: unknown, options?: AppendOptions): number;
  /** append() with data as JSON text, kept verbatim; the seq as the library reports it (a bigint only beyond 2^53, which seqs never reach). */
  appendRaw(type: string, dataJson: string, options?: AppendOptions): number | bigint;
  flush(): void;
  /** After close() threw: frees the session, dropping events that still cannot be written. */
  discard(): void;
  events(fromSeq?: number | bigint): SessionEvent[];
  eventsRaw(fromSeq?: number | bigint): string;
  readonly header: SessionHeader;
  headerRaw(): string;
  readonly id: string;
  messages(): Json[];
  messagesRaw(): string;
  backgroundError(): { kind: string; message: string; code?: string } | null;
}

export interface ReviewAnswer {
  answers?: Array<{ id: string; selected?: string[]; custom?: string | null }>;
  dismissed?: boolean;
}

export declare class PlanMode extends Handle {
  constructor(config: { section: string } | string);
  get(session: Session): { active: boolean; pending?: boolean };
  set(session: Session, active: boolean): { outcome: 'committed' | 'queued' | 'cancelled' | 'noop'; narration?: Json };
  preStep(session: Session): { appended: boolean; narration?: Json };
  section(session: Session): string;
  command(
    session: Session,
    rawInput: string,
    hasAttachments?: boolean,
  ): { kind: 'success' | 'error'; text: string; steer?: Json; narration?: Json };
  exitCheck(session: Session, planMarkdown: string): { ok: true; review: Json } | { ok: false; error: string };
  exitAnswer(session: Session, answer: ReviewAnswer | string): { approved: true } | { approved: false; error: string };
  static project(events: SessionEvent[] | string): { active: boolean; pending: boolean };
}

/** This package's version. */
export declare const version: string;
/** The loaded library file and its dsh_version(). */
export declare const libraryPath: string;
export declare const libraryVersion: string;

// ---- Promise forms (issue 18) ----
// They run on worker threads, off the event loop, and resolve with what the
// synchronous method returns. A handle with a call in flight refuses a
// synchronous close() (ConflictError); closeAsync() waits for its calls.

/** Observation calls take an AbortSignal: the read stops between chunks or rows and rejects with an AbortError (a DOMException); the store is unchanged. */
export interface AsyncReadOptions {
  signal?: AbortSignalLike;
}

/** Options of `iterateAsync`: the first seq, and the signal. */
export interface IterateOptions extends AsyncReadOptions {
  fromSeq?: number | bigint;
}

/**
 * What the Promise forms use of an `AbortSignal` (Node's global one, or any
 * object of that shape): declared here so the types need neither the DOM
 * library nor @types/node.
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface Store {
  closeAsync(): Promise<void>;
  createAsync(header: SessionHeader | string): Promise<void>;
  appendAsync(id: string, events: SessionEvent[] | string): Promise<void>;
  loadAsync(id: string, opts?: AsyncReadOptions): Promise<SessionView>;
  loadRawAsync(id: string, opts?: AsyncReadOptions): Promise<string>;
  inspectAsync(id: string, opts?: AsyncReadOptions): Promise<SessionView>;
  inspectRawAsync(id: string, opts?: AsyncReadOptions): Promise<string>;
  readFromAsync(id: string, fromSeq?: number | bigint, opts?: AsyncReadOptions): Promise<SessionView>;
  readFromRawAsync(id: string, fromSeq?: number | bigint, opts?: AsyncReadOptions): Promise<string>;
  /**
   * The events of `readFromAsync(id, fromSeq)` one at a time
   * (`for await (const ev of store.iterateAsync(id))`): read off the loop at
   * the first `next()`, then parsed a page at a time; leaving the loop early
   * frees the read.
   */
  iterateAsync(id: string, opts?: IterateOptions): AsyncGenerator<SessionEvent, void, undefined>;
  readRawAsync(id: string, opts?: AsyncReadOptions): Promise<RawArtifact | null>;
  listAsync(opts?: AsyncReadOptions): Promise<SessionHeader[]>;
  listSnapshotsAsync(opts?: AsyncReadOptions): Promise<Array<{ header: SessionHeader; revision: string }>>;
  startAsync(header: SessionHeader | string): Promise<Session>;
  resumeAsync(id: string, opts?: AsyncReadOptions): Promise<Session>;
  forkAsync(sourceId: string, boundary?: number | bigint, child?: SessionHeader | string | null, opts?: AsyncReadOptions): Promise<Session>;
  deleteAsync(id: string): Promise<void>;
  /** The signal stops the listing; once the deletions begin they all run. */
  pruneAsync(options: PruneOptions, opts?: AsyncReadOptions): Promise<PruneReport>;
  /** The signal stops the read of the source; once the write begins it finishes. */
  salvageAsync(id: string, newId: string, opts?: AsyncReadOptions): Promise<SalvageReport>;
  importJsonlAsync(newId: string, jsonl: string): Promise<ImportReport>;
  listSummariesAsync(query?: ListQuery | null, opts?: AsyncReadOptions): Promise<SessionSummary[]>;
  lastUpdatedAsync(opts?: AsyncReadOptions): Promise<string | null>;
  searchAsync(query: string | SearchQuery, opts?: AsyncReadOptions): Promise<SearchResult>;
  exportAsync(id: string, format?: 'md' | 'html', opts?: AsyncReadOptions): Promise<string>;
}
// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace Store {
  function openAsync(config: StoreConfig | string): Promise<Store>;
}

export interface Session {
  flushAsync(): Promise<void>;
  /** Waits for the session's calls in flight, then drains and releases it (a failed drain leaves it open: retry, or discard()). */
  closeAsync(): Promise<void>;
}

export interface PlanMode {
  setAsync(session: Session, active: boolean): Promise<ReturnType<PlanMode['set']>>;
  preStepAsync(session: Session): Promise<ReturnType<PlanMode['preStep']>>;
  commandAsync(session: Session, rawInput: string, hasAttachments?: boolean): Promise<ReturnType<PlanMode['command']>>;
  exitCheckAsync(session: Session, planMarkdown: string): Promise<ReturnType<PlanMode['exitCheck']>>;
  exitAnswerAsync(session: Session, answer: ReviewAnswer | string): Promise<ReturnType<PlanMode['exitAnswer']>>;
}

/**
 * Opt-in: installs SIGINT/SIGTERM (or `signals`) handlers that flush every open
 * session, remove themselves and re-raise the signal. Returns a function that
 * removes them. (A normal exit flushes open sessions without this.)
 */
export declare function installSignalHandlers(opts?: { signals?: string[] }): () => void;
/** Flushes every open session synchronously (for a host's own signal handlers); returns how many failed. */
export declare function flushOpenSessions(): number;
/**
 * How many paged read results (`dsh_result`) are live in this process: 0
 * when no loadAsync/inspectAsync/readFromAsync/iterateAsync is in progress
 * (for a host's leak checks).
 */
export declare function liveResults(): number;
