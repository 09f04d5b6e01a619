'use strict';
// Loads libdsh_persist once and declares every C function by its prototype
// copied from include/dsh_persist.h (a test diffs the two). Only two edits are
// made to a copied prototype: out parameters get koffi's `_Out_`, and an owned
// `char **out` becomes `dsh_owned_str *` (a disposable string freed with
// dsh_free right after koffi copies it; never the C runtime's free).
//
// Search order: DSH_PERSIST_LIB (nothing else when set), then the package
// directory (the npm package carries the library), then, in a checkout of the
// repository only, the crate's target/release (bindings/node → ../../target/release).
// The library's major.minor version must equal this package's.
//
// Synchronous calls read the thread-local last error; the Promise forms
// (src/async.js) call the `_ex` functions with koffi's `.async`, which run on
// worker threads and hand their failure back as a dsh_error object.

const fs = require('node:fs');
const path = require('node:path');
const koffi = require('koffi');
const { errorForStatus, InvariantError, Status } = require('./errors');

const PACKAGE_VERSION = require('../package.json').version;
const ENV_VAR = 'DSH_PERSIST_LIB';

function libraryFileName() {
  if (process.platform === 'darwin') return 'libdsh_persist.dylib';
  if (process.platform === 'win32') return 'dsh_persist.dll';
  return 'libdsh_persist.so';
}

/** The repository root when this package is used from a checkout (`<repo>/bindings/node`), else null. */
function checkoutRoot() {
  const root = path.resolve(__dirname, '..', '..', '..');
  const isFile = (p) => fs.existsSync(p) && fs.statSync(p).isFile();
  return isFile(path.join(root, 'Cargo.toml')) && isFile(path.join(root, 'include', 'dsh_persist.h')) ? root : null;
}

/** Where the library is looked for, in order. */
function candidatePaths() {
  const env = process.env[ENV_VAR];
  if (env) return [env];
  const name = libraryFileName();
  const paths = [path.join(__dirname, '..', name)];
  const root = checkoutRoot();
  if (root) paths.push(path.join(root, 'target', 'release', name));
  return paths;
}

function notFoundMessage(tried) {
  const name = libraryFileName();
  const lines = [`dsh-persist: libdsh_persist not found. Tried: ${tried.join('; ')}.`];
  if (process.env[ENV_VAR]) {
    lines.push(`${ENV_VAR} is set, so nothing else was tried: point it at a built ${name} or unset it.`);
  } else if (checkoutRoot()) {
    lines.push(`This is a checkout of dsh-persist: build the library with \`cargo build --release\` in ${checkoutRoot()}.`);
  } else {
    lines.push(
      'The installed package carries no library for this platform. Install the package built by ' +
        '`scripts/package.sh` in the repository (`npm install dist/dsh-persist-*.tgz`), ' +
        `or set ${ENV_VAR} to the path of a built ${name}.`,
    );
  }
  return lines.join('\n');
}

function loadLibrary() {
  const tried = [];
  for (const p of candidatePaths()) {
    if (!fs.existsSync(p)) {
      tried.push(`${p} (missing)`);
      continue;
    }
    try {
      return { lib: koffi.load(p), libraryPath: p };
    } catch (e) {
      throw new Error(`dsh-persist: cannot load ${p}: ${e.message}`);
    }
  }
  throw new Error(notFoundMessage(tried));
}

const { lib, libraryPath } = loadLibrary();

// Types of the header.
koffi.alias('dsh_status', 'int');
koffi.opaque('dsh_store');
koffi.opaque('dsh_session');
koffi.opaque('dsh_plan');
koffi.opaque('dsh_follow');
koffi.opaque('dsh_cancel');
koffi.opaque('dsh_error');
koffi.opaque('dsh_result');

// Borrowed strings (dsh_version, dsh_last_error*) are plain `const char *`.
const dsh_free = lib.func('void dsh_free(void *s)');
koffi.disposable('dsh_owned_str', 'str', dsh_free);

/**
 * Every C function of the header, by prototype (copied; `_Out_` and
 * `dsh_owned_str` are the only edits).
 */
const PROTOTYPES = [
  'const char *dsh_version(void)',
  'const char *dsh_last_error(void)',
  'const char *dsh_last_error_code(void)',
  // dsh_free is declared above with a `void *` parameter (koffi.disposable needs it).
  // store
  'dsh_status dsh_store_open(const char *config_json, _Out_ dsh_store **out)',
  'dsh_status dsh_store_close(dsh_store *store)',
  'dsh_status dsh_store_locate(dsh_store *store, const char *header_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_create(dsh_store *store, const char *header_json)',
  'dsh_status dsh_store_append(dsh_store *store, const char *id, const char *events_json)',
  'dsh_status dsh_store_load(dsh_store *store, const char *id, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_inspect(dsh_store *store, const char *id, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_read_from(dsh_store *store, const char *id, uint64_t from_seq, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_read_raw(dsh_store *store, const char *id, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_list(dsh_store *store, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_list_snapshots(dsh_store *store, _Out_ dsh_owned_str *out_json)',
  // ids a C string cannot carry (U+0000, lone surrogates), as JSON string text
  'dsh_status dsh_store_load_id_json(dsh_store *store, const char *id_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_inspect_id_json(dsh_store *store, const char *id_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_read_from_id_json(dsh_store *store, const char *id_json, uint64_t from_seq, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_read_raw_id_json(dsh_store *store, const char *id_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_delete_id_json(dsh_store *store, const char *id_json)',
  // session management (issue 19)
  'dsh_status dsh_store_delete(dsh_store *store, const char *id)',
  'dsh_status dsh_store_prune(dsh_store *store, const char *options_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_salvage(dsh_store *store, const char *id, const char *new_id, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_import(dsh_store *store, const char *new_id, const char *jsonl, _Out_ dsh_owned_str *out_json)',
  // catalog reads
  'dsh_status dsh_store_list_summaries(dsh_store *store, const char *query_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_search(dsh_store *store, const char *query_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_store_export(dsh_store *store, const char *id, const char *format, _Out_ dsh_owned_str *out_text)',
  'dsh_status dsh_follow_open(dsh_store *store, const char *id, int64_t from_seq, _Out_ dsh_follow **out)',
  'dsh_status dsh_follow_next(dsh_follow *follow, uint32_t timeout_ms, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_follow_close(dsh_follow *follow)',
  // live sessions
  'dsh_status dsh_session_start(dsh_store *store, const char *header_json, _Out_ dsh_session **out)',
  'dsh_status dsh_session_resume(dsh_store *store, const char *id, _Out_ dsh_session **out)',
  'dsh_status dsh_session_fork(dsh_store *store, const char *source_id, int64_t boundary, const char *child_header_json, _Out_ dsh_session **out)',
  'dsh_status dsh_session_append(dsh_session *session, const char *type, const char *data_json, const char *options_json, _Out_ uint64_t *out_seq)',
  'dsh_status dsh_session_flush(dsh_session *session)',
  'dsh_status dsh_session_events(dsh_session *session, uint64_t from_seq, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_session_header(dsh_session *session, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_session_messages(dsh_session *session, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_session_background_error(dsh_session *session, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_session_close(dsh_session *session)',
  'void dsh_session_free(dsh_session *session)',
  // plan mode
  'dsh_status dsh_plan_new(const char *config_json, _Out_ dsh_plan **out)',
  'void dsh_plan_free(dsh_plan *plan)',
  'dsh_status dsh_plan_get(dsh_plan *plan, dsh_session *session, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_plan_set(dsh_plan *plan, dsh_session *session, bool active, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_plan_pre_step(dsh_plan *plan, dsh_session *session, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_plan_section(dsh_plan *plan, dsh_session *session, _Out_ dsh_owned_str *out_text)',
  'dsh_status dsh_plan_command(dsh_plan *plan, dsh_session *session, const char *raw_input, bool has_attachments, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_plan_exit_check(dsh_plan *plan, dsh_session *session, const char *plan_markdown, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_plan_exit_answer(dsh_plan *plan, dsh_session *session, const char *answer_json, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_plan_project(const char *events_json, _Out_ dsh_owned_str *out_json)',
  // cancel tokens, error objects and the _ex forms (src/async.js calls them with koffi's .async)
  'dsh_status dsh_store_open_ex(const char *config_json, _Out_ dsh_store **out, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_close_ex(dsh_store *store, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_create_ex(dsh_store *store, const char *header_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_append_ex(dsh_store *store, const char *id, const char *events_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_load_ex(dsh_store *store, const char *id, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_inspect_ex(dsh_store *store, const char *id, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_read_from_ex(dsh_store *store, const char *id, uint64_t from_seq, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_read_raw_ex(dsh_store *store, const char *id, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_list_ex(dsh_store *store, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_list_snapshots_ex(dsh_store *store, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_session_start_ex(dsh_store *store, const char *header_json, _Out_ dsh_session **out, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_session_resume_ex(dsh_store *store, const char *id, _Out_ dsh_session **out, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_session_fork_ex(dsh_store *store, const char *source_id, int64_t boundary, const char *child_header_json, _Out_ dsh_session **out, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_session_flush_ex(dsh_session *session, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_session_close_ex(dsh_session *session, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_plan_set_ex(dsh_plan *plan, dsh_session *session, bool active, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_plan_pre_step_ex(dsh_plan *plan, dsh_session *session, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_plan_command_ex(dsh_plan *plan, dsh_session *session, const char *raw_input, bool has_attachments, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_plan_exit_check_ex(dsh_plan *plan, dsh_session *session, const char *plan_markdown, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_plan_exit_answer_ex(dsh_plan *plan, dsh_session *session, const char *answer_json, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_delete_ex(dsh_store *store, const char *id, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_prune_ex(dsh_store *store, const char *options_json, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_salvage_ex(dsh_store *store, const char *id, const char *new_id, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_import_ex(dsh_store *store, const char *new_id, const char *jsonl, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_list_summaries_ex(dsh_store *store, const char *query_json, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_search_ex(dsh_store *store, const char *query_json, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_export_ex(dsh_store *store, const char *id, const char *format, _Out_ dsh_owned_str *out_text, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  // paged results (src/paged.js)
  'dsh_status dsh_store_load_paged_ex(dsh_store *store, const char *id, _Out_ dsh_result **out_result, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_inspect_paged_ex(dsh_store *store, const char *id, _Out_ dsh_result **out_result, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_read_from_paged_ex(dsh_store *store, const char *id, uint64_t from_seq, _Out_ dsh_result **out_result, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  // the same for ids a C string cannot carry (id as JSON string text)
  'dsh_status dsh_store_load_id_json_paged_ex(dsh_store *store, const char *id_json, _Out_ dsh_result **out_result, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_inspect_id_json_paged_ex(dsh_store *store, const char *id_json, _Out_ dsh_result **out_result, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_read_from_id_json_paged_ex(dsh_store *store, const char *id_json, uint64_t from_seq, _Out_ dsh_result **out_result, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_read_raw_id_json_ex(dsh_store *store, const char *id_json, _Out_ dsh_owned_str *out_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_store_delete_id_json_ex(dsh_store *store, const char *id_json, dsh_cancel *cancel, _Out_ dsh_error **out_error)',
  'dsh_status dsh_result_count(const dsh_result *result, _Out_ uint64_t *out_events, _Out_ uint64_t *out_bytes)',
  'dsh_status dsh_result_head(const dsh_result *result, _Out_ dsh_owned_str *out_json)',
  'dsh_status dsh_result_page(const dsh_result *result, uint64_t first, uint64_t max_bytes, _Out_ dsh_owned_str *out_json, _Out_ uint64_t *out_next)',
  'dsh_status dsh_result_text(const dsh_result *result, uint64_t offset, uint64_t max_bytes, _Out_ dsh_owned_str *out_text, _Out_ uint64_t *out_next)',
  'dsh_status dsh_result_free(dsh_result *result)',
  'uint64_t dsh_result_live(void)',
  'dsh_status dsh_cancel_new(_Out_ dsh_cancel **out)',
  'dsh_status dsh_cancel_cancel(dsh_cancel *cancel)',
  'dsh_status dsh_cancel_free(dsh_cancel *cancel)',
  'dsh_status dsh_error_status(const dsh_error *error)',
  'const char *dsh_error_message(const dsh_error *error)',
  'const char *dsh_error_code(const dsh_error *error)',
  'dsh_status dsh_error_free(dsh_error *error)',
];

/** name -> koffi function */
const fns = { dsh_free };
for (const proto of PROTOTYPES) {
  const fn = lib.func(proto);
  fns[fn.info.name] = fn;
}

/**
 * Calls a status function; on failure reads dsh_last_error() (and the code)
 * at once, on this thread, and throws the matching DshError subclass.
 */
function call(fn, ...args) {
  const status = fn(...args);
  if (status !== Status.OK) {
    const message = fns.dsh_last_error() || `${fn.info.name} failed with status ${status}`;
    const code = fns.dsh_last_error_code() || null;
    throw errorForStatus(status, message, code);
  }
}

/** Calls `fn(...args, &out)` for an owned string result; null when the library returned NULL. */
function callText(fn, ...args) {
  const out = [null];
  call(fn, ...args, out);
  return out[0];
}

/** As callText for results the C contract never leaves NULL. */
function callRequiredText(fn, ...args) {
  const text = callText(fn, ...args);
  if (text === null || text === undefined) {
    throw new InvariantError(Status.INVARIANT, `${fn.info.name} returned DSH_OK with a NULL result`);
  }
  return text;
}

/** Calls `fn(...args, &out)` for a handle result. */
function callHandle(fn, ...args) {
  const out = [null];
  call(fn, ...args, out);
  if (!out[0]) throw new InvariantError(Status.INVARIANT, `${fn.info.name} returned DSH_OK with a NULL handle`);
  return out[0];
}

const libraryVersion = fns.dsh_version();
{
  const want = PACKAGE_VERSION.split('.').slice(0, 2).join('.');
  const got = String(libraryVersion).split('.').slice(0, 2).join('.');
  if (want !== got) {
    throw new Error(
      `dsh-persist ${PACKAGE_VERSION} needs libdsh_persist ${want}.x, but ${libraryPath} is version ${libraryVersion}; ` +
        'rebuild the library or install the matching package',
    );
  }
}

module.exports = {
  koffi,
  fns,
  call,
  callText,
  callRequiredText,
  callHandle,
  PROTOTYPES,
  libraryPath,
  libraryVersion,
  PACKAGE_VERSION,
};
