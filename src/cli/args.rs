//! The command line (SPEC §9): subcommands, store selection, `--json`,
//! `--quiet`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueHint};

/// Reads, checks, converts and benchmarks DeepSeek Harness session stores
/// (JSONL+zstd, raw JSONL, SQLite or PostgreSQL).
#[derive(Parser, Debug)]
#[command(
    name = "dsh-persist",
    version,
    disable_help_subcommand = true,
    after_help = "Exit codes: 0 ok, 2 usage, 3 not found, 4 corruption, 5 format unsupported, 1 anything else."
)]
pub struct Cli {
    /// Print JSON on stdout; errors go to stderr as {"error":{"kind","message"}}.
    #[arg(long, global = true)]
    pub json: bool,

    /// Draw no progress on stderr (progress is drawn only when stderr is a
    /// terminal).
    #[arg(short, long, global = true)]
    pub quiet: bool,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Which store to open: `--store` (the kind is detected) or one of the
/// four explicit flags, before or after the subcommand (`dsh-persist
/// --store ROOT list` = `dsh-persist list --store ROOT`). Checked when the
/// command runs: every subcommand that reads a store needs exactly one.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// The store, its kind detected: a JSONL root of zstd logs
    /// (`session.jsonl.zstd`) or of raw logs (`session.jsonl`), a SQLite
    /// session database, or a PostgreSQL store's `postgres://` or
    /// `postgresql://` URL (as `--postgres`).
    #[arg(short, long, value_name = "PATH", global = true, value_hint = ValueHint::AnyPath)]
    pub store: Option<PathBuf>,
    /// A JSONL root whose logs are zstd-compressed (`session.jsonl.zstd`).
    #[arg(long, value_name = "ROOT", global = true, value_hint = ValueHint::DirPath)]
    pub jsonl: Option<PathBuf>,
    /// A JSONL root with uncompressed logs (`session.jsonl`).
    #[arg(long = "jsonl-raw", value_name = "ROOT", global = true, value_hint = ValueHint::DirPath)]
    pub jsonl_raw: Option<PathBuf>,
    /// A SQLite session database (schema 17).
    #[arg(long, value_name = "FILE", global = true, value_hint = ValueHint::FilePath)]
    pub sqlite: Option<PathBuf>,
    /// A PostgreSQL session store: `postgresql://user:password@host:port/db`
    /// (libpq's `sslmode`/`sslrootcert`/`sslcert`/`sslkey` parameters work).
    #[arg(long, value_name = "URL", global = true)]
    pub postgres: Option<String>,
    /// The schema of a PostgreSQL store (`--postgres`, `--to-postgres`, or
    /// a URL given to `--store` or `--to`; default `dsh`).
    #[arg(long = "postgres-schema", value_name = "NAME", global = true)]
    pub postgres_schema: Option<String>,
    /// A private directory on this host for a PostgreSQL store's caches
    /// (its `cacheDir`): append checkpoints, so that a cold append
    /// continues from one instead of reading the whole log, and the search
    /// index. Default: none.
    #[arg(long = "postgres-cache-dir", value_name = "DIR", global = true, value_hint = ValueHint::DirPath)]
    pub postgres_cache_dir: Option<PathBuf>,
}

impl StoreArgs {
    /// How many store flags were given.
    pub fn count(&self) -> usize {
        [
            self.store.is_some(),
            self.jsonl.is_some(),
            self.jsonl_raw.is_some(),
            self.sqlite.is_some(),
            self.postgres.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

/// Where `convert` writes: exactly one of the five flags.
#[derive(Args, Debug, Clone)]
#[group(id = "target", required = true, multiple = false)]
pub struct TargetArgs {
    /// Convert into an existing store, its kind detected, or a PostgreSQL
    /// URL (a new root or file needs one of the flags below).
    #[arg(long, value_name = "PATH", value_hint = ValueHint::AnyPath)]
    pub to: Option<PathBuf>,
    /// Convert into a JSONL root with zstd-compressed logs.
    #[arg(long = "to-jsonl", value_name = "ROOT", value_hint = ValueHint::DirPath)]
    pub to_jsonl: Option<PathBuf>,
    /// Convert into a JSONL root with uncompressed logs.
    #[arg(long = "to-jsonl-raw", value_name = "ROOT", value_hint = ValueHint::DirPath)]
    pub to_jsonl_raw: Option<PathBuf>,
    /// Convert into a SQLite database (created if missing).
    #[arg(long = "to-sqlite", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub to_sqlite: Option<PathBuf>,
    /// Convert into a PostgreSQL store (its tables are created if missing).
    #[arg(long = "to-postgres", value_name = "URL")]
    pub to_postgres: Option<String>,
}

/// The benchmark's options (SPEC §10).
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// The workload: zstd-compressed JSONL, one event per line.
    /// Default: `<crate>/../shared/bench/workload-100k.jsonl.zst`.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// Directory for the temporary stores (default: a new temp dir, removed
    /// afterwards).
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Directory holding the original's `bench-run1.json` / `bench-run2.json`.
    /// Default: `<crate>/../shared/fixtures/upstream`.
    #[arg(long = "reference-dir", value_name = "DIR")]
    pub reference_dir: Option<PathBuf>,
    /// Use only the first N workload events, cut back to the last complete
    /// turn (tests; the figures are then not comparable with the original's).
    #[arg(long = "limit-events", value_name = "N", hide = true)]
    pub limit_events: Option<usize>,
    /// Keep the temporary stores (for profiling); their directory is printed
    /// on stderr.
    #[arg(long, hide = true)]
    pub keep: bool,
    /// Number of small sessions (default 1000).
    #[arg(long = "small-sessions", value_name = "N", hide = true)]
    pub small_sessions: Option<usize>,
    /// Growth rows instead of the comparison: sessions of 1M and 5M events
    /// (per-call append cost at the start and end, load time, peak RSS per
    /// event, reopen + append) and 100k small sessions. Takes minutes.
    #[arg(long)]
    pub scale: bool,
    /// With --scale: one session of N events instead of 1M and 5M.
    #[arg(long = "scale-events", value_name = "N", requires = "scale")]
    pub scale_events: Option<u64>,
}

/// `list`: sorting and filters of the rich listing (any of them, or
/// `--long`, makes `list` show the summaries instead of the headers).
#[derive(Args, Debug, Clone, Default)]
pub struct ListArgs {
    /// Summaries: updated time, events, turns, title, prompts, size.
    #[arg(short, long)]
    pub long: bool,
    /// Print only the id of the most recently updated session.
    #[arg(long)]
    pub last: bool,
    /// Sort by `updated` (default) or `created`, newest first.
    #[arg(long, value_name = "KEY")]
    pub sort: Option<String>,
    /// Oldest first.
    #[arg(long)]
    pub ascending: bool,
    /// Only sessions whose cwd is DIR.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Only sessions updated since (ms since the epoch, or an age: 30m, 12h, 7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only forks of session ID.
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// At most N sessions.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

/// `search`: full-text search over message text.
#[derive(Args, Debug, Clone)]
pub struct SearchArgs {
    /// The text to look for (case-insensitive for ASCII letters).
    pub text: String,
    /// At most N hits (default 100).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only sessions whose cwd is DIR.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Keep the search index in DIR (default: the store's .dsh-persist-cache; PostgreSQL: none).
    #[arg(long = "cache-dir", value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub cache_dir: Option<PathBuf>,
}

/// `export`: a transcript as Markdown or HTML.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// The session id.
    pub id: String,
    /// md or html.
    #[arg(long, value_name = "FORMAT", default_value = "md")]
    pub format: String,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub out: Option<PathBuf>,
}

/// `completions`' shells.
pub use clap_complete::Shell;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the stored sessions (id, created, cwd, parent, seed length).
    List(ListArgs),
    /// List the stored sessions with their revision tokens.
    Snapshots,
    /// Load a session: commits its crash repair (torn tail, closers) and
    /// prints the balanced log. Use `inspect` to leave the store untouched.
    Load {
        /// Session id (as `list` shows it).
        id: String,
    },
    /// Print the balanced log of a session without writing anything.
    Inspect {
        /// Session id (as `list` shows it).
        id: String,
    },
    /// Print the stored events with seq >= SEQ (no repair, no closers).
    ReadFrom {
        /// Session id (as `list` shows it).
        id: String,
        /// First seq to return.
        #[arg(allow_negative_numbers = true)]
        seq: i64,
    },
    /// Print the decoded log file of a JSONL session, exactly as written.
    Raw {
        /// Session id (as `list` shows it).
        id: String,
    },
    /// Print a readable transcript: turns, messages, tool calls and results
    /// (read-only).
    Cat {
        /// Session id (as `list` shows it).
        id: String,
    },
    /// Check every session and file of a store (the whole physical layout,
    /// not only what `list` shows); modifies nothing. Exit 4 on corruption.
    Verify,
    /// Copy every session into another store, logical logs byte for byte.
    Convert {
        #[command(flatten)]
        target: TargetArgs,
    },
    // Session management, the writing half (issue 19; src/cli/manage.rs).
    /// Delete sessions (JSONL: the session directory, atomically; SQLite,
    /// PostgreSQL: the rows). Asks first on a terminal; a live or otherwise
    /// held session is busy.
    Delete {
        /// Session ids (as `list` shows them).
        #[arg(required = true)]
        ids: Vec<String>,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(short, long)]
        yes: bool,
    },
    /// Delete the sessions not updated for N days and/or all but the newest
    /// K (both given: a session must match both). Updated: the log file's
    /// mtime on JSONL, the last event's time on SQLite and PostgreSQL.
    /// Busy sessions are skipped and reported.
    Prune {
        /// Delete sessions not updated for this many days (fractions work).
        #[arg(long = "older-than-days", value_name = "N")]
        older_than_days: Option<f64>,
        /// Keep the K most recently updated sessions.
        #[arg(long = "keep-newest", value_name = "K")]
        keep_newest: Option<usize>,
        /// Print what would be deleted; delete nothing.
        #[arg(long = "dry-run")]
        dry_run: bool,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(short, long)]
        yes: bool,
    },
    /// Copy the intact prefix of a session that no longer loads (everything
    /// before its first bad record), closed like a crash repair, into a new
    /// session. The source is not changed.
    Salvage {
        /// The damaged session.
        id: String,
        /// The id of the new session.
        new_id: String,
    },
    /// Import a JSONL file of events (one per line as stored, optionally
    /// after a session header line; zstd-compressed works too) into a new
    /// session, checked like an append: all or nothing.
    Import {
        /// The file (`-`: stdin).
        #[arg(value_hint = ValueHint::FilePath)]
        file: PathBuf,
        /// The new session's id (default: a new UUID).
        #[arg(long)]
        id: Option<String>,
    },
    /// Full-text search over user, assistant and tool-result text of every session.
    Search(SearchArgs),
    /// Print new events of a session as JSON lines as they are appended (Ctrl-C ends).
    Follow {
        /// The session id.
        id: String,
        /// Start at this seq (default: only events appended from now on).
        #[arg(long, value_name = "SEQ")]
        from: Option<u64>,
        /// Stop after N events.
        #[arg(long = "exit-after", value_name = "N", hide = true)]
        exit_after: Option<u64>,
    },
    /// Export a transcript to Markdown or self-contained HTML.
    Export(ExportArgs),
    /// Run the benchmark of SPEC §10 beside the original's figures (use a
    /// release build), or with `--scale` the growth rows.
    Bench(BenchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell to complete for.
        shell: Shell,
    },
    /// Print the man page (roff), or write one page per subcommand.
    Man {
        /// Write `dsh-persist.1` and a `dsh-persist-<command>.1` page per
        /// subcommand into this directory instead.
        #[arg(long = "out-dir", value_name = "DIR", value_hint = ValueHint::DirPath)]
        out_dir: Option<PathBuf>,
    },
    /// Print the help of dsh-persist or of a subcommand.
    Help {
        /// The subcommand (none: the tool itself).
        command: Vec<String>,
    },
}

/// The benchmark's internal probe, `dsh-persist rss-probe STORE ID`: a
/// process that only opens the store and loads one session, then prints
/// its peak RSS (or, with `--open-list RUNS`, times `Store::open` + `list`
/// RUNS times). Parsed apart from [`Cli`] so it is in no help, completion
/// or man page.
#[derive(Parser, Debug)]
#[command(name = "dsh-persist rss-probe")]
pub struct RssProbeCli {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Append this file's JSON array of events instead of loading.
    #[arg(long, value_name = "FILE")]
    pub append: Option<PathBuf>,
    /// Time this many `Store::open` + `list` calls instead of loading.
    #[arg(long, value_name = "RUNS", conflicts_with = "append")]
    pub open_list: Option<usize>,
    /// Session id (not with `--open-list`).
    #[arg(required_unless_present = "open_list")]
    pub id: Option<String>,
}

/// The first argument that selects [`RssProbeCli`].
pub const RSS_PROBE: &str = "rss-probe";
