//! The command line (SPEC §9): subcommands, store selection, `--json`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Reads, checks, converts and benchmarks DeepSeek Harness session stores
/// (JSONL+zstd, raw JSONL, SQLite or PostgreSQL).
#[derive(Parser, Debug)]
#[command(name = "dsh-persist", version, about, long_about = None)]
pub struct Cli {
    /// Print JSON on stdout; errors go to stderr as {"error":{"kind","message"}}.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Which store to open: exactly one of the four flags, before or after the
/// subcommand (`dsh-persist --jsonl ROOT list` = `dsh-persist list --jsonl
/// ROOT`). Checked when the command runs: every subcommand but `bench` needs
/// one.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// A JSONL root whose logs are zstd-compressed (`session.jsonl.zst`).
    #[arg(long, value_name = "ROOT", global = true)]
    pub jsonl: Option<PathBuf>,
    /// A JSONL root with uncompressed logs (`session.jsonl`).
    #[arg(long = "jsonl-raw", value_name = "ROOT", global = true)]
    pub jsonl_raw: Option<PathBuf>,
    /// A SQLite session database (schema 17).
    #[arg(long, value_name = "FILE", global = true)]
    pub sqlite: Option<PathBuf>,
    /// A PostgreSQL session store: `postgresql://user:password@host:port/db`
    /// (libpq's `sslmode`/`sslrootcert`/`sslcert`/`sslkey` parameters work).
    #[arg(long, value_name = "URL", global = true)]
    pub postgres: Option<String>,
    /// The schema of `--postgres` and `--to-postgres` (default `dsh`).
    #[arg(long = "postgres-schema", value_name = "NAME", global = true)]
    pub postgres_schema: Option<String>,
}

impl StoreArgs {
    /// How many store flags were given.
    pub fn count(&self) -> usize {
        [
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

/// Where `convert` writes: exactly one of the four flags.
#[derive(Args, Debug, Clone)]
#[group(id = "target", required = true, multiple = false)]
pub struct TargetArgs {
    /// Convert into a JSONL root with zstd-compressed logs.
    #[arg(long = "to-jsonl", value_name = "ROOT")]
    pub to_jsonl: Option<PathBuf>,
    /// Convert into a JSONL root with uncompressed logs.
    #[arg(long = "to-jsonl-raw", value_name = "ROOT")]
    pub to_jsonl_raw: Option<PathBuf>,
    /// Convert into a SQLite database (created if missing).
    #[arg(long = "to-sqlite", value_name = "FILE")]
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
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the stored sessions (id, created, cwd, parent, seed length).
    List,
    /// List the stored sessions with their revision tokens.
    Snapshots,
    /// Load a session: commits its crash repair (torn tail, closers) and
    /// prints the balanced log. Use `inspect` to leave the store untouched.
    Load {
        /// Session id.
        id: String,
    },
    /// Print the balanced log of a session without writing anything.
    Inspect { id: String },
    /// Print the stored events with seq >= SEQ (no repair, no closers).
    ReadFrom {
        id: String,
        /// First seq to return.
        #[arg(allow_negative_numbers = true)]
        seq: i64,
    },
    /// Print the decoded log file of a JSONL session, exactly as written.
    Raw { id: String },
    /// Print a readable transcript: turns, messages, tool calls and results
    /// (read-only).
    Cat { id: String },
    /// Check every session of a store; modifies nothing. Exit 4 on corruption.
    Verify,
    /// Copy every session into another store, logical logs byte for byte.
    Convert {
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Run the benchmark of SPEC §10 (use a release build).
    Bench(BenchArgs),
    /// (bench internal) Load a session and print this process's peak RSS.
    #[command(hide = true)]
    RssProbe { id: String },
}
