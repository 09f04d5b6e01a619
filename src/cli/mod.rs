//! The `dsh-persist` command-line tool (SPEC §9, §10).
//!
//! One module per subcommand group: [`args`] (the command line), [`output`]
//! (JSON/human printing, tables, errors, exit codes), [`stores`] (opening the
//! selected store), [`read`] (list, snapshots, load, inspect, read-from,
//! raw), [`transcript`] (`cat`), [`verify`], [`convert`] and [`bench`].

mod args;
mod bench;
mod convert;
mod output;
mod read;
mod stores;
mod transcript;
mod verify;

use clap::Parser;
use clap::error::ErrorKind as ClapErrorKind;

use args::{Cli, Command};
use dsh_persist::Error;
use output::Outcome;

/// Runs the tool and returns the process exit code.
pub fn main() -> i32 {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, &argv),
    };
    let json = cli.json;
    match run(cli) {
        Ok(outcome) => outcome.code,
        Err(e) => output::report_error(&e, json),
    }
}

/// Help and version go to stdout with exit 0; anything else is a usage error
/// (exit 2), printed as a JSON error object when `--json` was given.
fn usage_error(e: clap::Error, argv: &[std::ffi::OsString]) -> i32 {
    match e.kind() {
        ClapErrorKind::DisplayHelp
        | ClapErrorKind::DisplayVersion
        | ClapErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ClapErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                output::EXIT_USAGE
            } else {
                0
            }
        }
        _ => {
            if argv.iter().any(|a| a == "--json") {
                output::print_error_json(
                    dsh_persist::ErrorKind::InvalidArgument.as_str(),
                    e.render().to_string().trim_end(),
                );
            } else {
                let _ = e.print();
            }
            output::EXIT_USAGE
        }
    }
}

fn run(cli: Cli) -> Result<Outcome, Error> {
    let json = cli.json;
    let store = cli.store;
    let given = store.count();
    if let Command::Bench(args) = &cli.command {
        if given > 0 {
            return Err(Error::invalid(
                "bench makes its own stores; it takes no --jsonl, --jsonl-raw, --sqlite or --postgres (set DSH_BENCH_POSTGRES_URL for its PostgreSQL rows)",
            ));
        }
        return bench::bench(args, json);
    }
    if given != 1 {
        return Err(Error::invalid(format!(
            "give exactly one store: --jsonl ROOT, --jsonl-raw ROOT, --sqlite FILE or --postgres URL ({given} given)"
        )));
    }
    match cli.command {
        Command::List => with_store(&store, |s| read::list(s, json)),
        Command::Snapshots => with_store(&store, |s| read::snapshots(s, json)),
        Command::Load { id } => with_store(&store, |s| read::load(s, &id, json)),
        Command::Inspect { id } => with_store(&store, |s| read::inspect(s, &id, json)),
        Command::ReadFrom { id, seq } => with_store(&store, |s| read::read_from(s, &id, seq, json)),
        Command::Raw { id } => with_store(&store, |s| read::raw(s, &id, json)),
        Command::Cat { id } => with_store(&store, |s| transcript::cat(s, &id, json)),
        Command::Verify => verify::verify(&store, json),
        Command::Convert { target } => convert::convert(&store, &target, json),
        Command::RssProbe { id } => with_store(&store, |s| bench::rss_probe_main(s, &id)),
        Command::Bench(_) => unreachable!("handled above"),
    }
}

/// Opens the existing store, runs `f`, and closes the store (so SQLite
/// removes its `-wal`/`-shm` files and a reading command leaves the store as
/// it found it).
fn with_store<F>(args: &args::StoreArgs, f: F) -> Result<Outcome, Error>
where
    F: FnOnce(&dsh_persist::store::Store) -> Result<Outcome, Error>,
{
    let store = stores::open_existing(args)?;
    let result = f(&store);
    let closed = store.close();
    let outcome = result?;
    closed?;
    Ok(outcome)
}
