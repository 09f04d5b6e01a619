//! The `dsh-persist` command-line tool (SPEC §9, §10).
//!
//! One module per subcommand group: [`args`] (the command line), [`output`]
//! (JSON/human printing, tables, errors, exit codes), [`progress`] (progress
//! on a terminal), [`stores`] (store detection, opening the selected store),
//! [`read`] (list, snapshots, load, inspect, read-from, raw), [`transcript`]
//! (`cat`), [`verify`], [`convert`], [`manage`] (delete, prune, salvage,
//! import), [`bench`] and [`docs`] (help, shell completions, man pages).

mod args;
mod bench;
mod bench_catalog;
mod bench_scale;
mod catalog;
mod convert;
mod docs;
mod manage;
mod output;
mod progress;
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
    if argv.get(1).is_some_and(|a| a == args::RSS_PROBE) {
        return rss_probe(&argv[1..]);
    }
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, &argv),
    };
    let json = cli.json;
    progress::set_quiet(cli.quiet);
    match run(cli) {
        Ok(outcome) => outcome.code,
        Err(e) => output::report_error(&e, json),
    }
}

/// The benchmark's internal `rss-probe` (see [`args::RssProbeCli`]).
fn rss_probe(argv: &[std::ffi::OsString]) -> i32 {
    let cli = match args::RssProbeCli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, argv),
    };
    progress::set_quiet(true);
    let result = match (cli.open_list, &cli.id) {
        (Some(runs), _) => bench::open_list_probe_main(&cli.store, runs),
        (None, Some(id)) => with_store(&cli.store, "", String::new(), |s| {
            bench::rss_probe_main(s, id, cli.append.as_deref())
        }),
        (None, None) => Err(Error::invalid("rss-probe needs a session id")),
    };
    match result {
        Ok(outcome) => outcome.code,
        Err(e) => output::report_error(&e, false),
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
    let storeless = match &cli.command {
        Command::Bench(_) => Some((
            "bench makes its own stores",
            " (set DSH_BENCH_POSTGRES_URL for its PostgreSQL rows)",
        )),
        Command::Completions { .. } | Command::Man { .. } | Command::Help { .. } => {
            Some(("this command reads no store", ""))
        }
        _ => None,
    };
    if let Some((why, hint)) = storeless {
        if given > 0 {
            return Err(Error::invalid(format!(
                "{why}; it takes no --store, --jsonl, --jsonl-raw, --sqlite or --postgres{hint}"
            )));
        }
    } else if given != 1 {
        return Err(Error::invalid(format!(
            "give exactly one store: --store PATH (its kind detected), --jsonl ROOT, --jsonl-raw ROOT, --sqlite FILE or --postgres URL ({given} given)"
        )));
    }
    match cli.command {
        Command::List(args) if catalog::wants_rich(&args) => {
            with_store(&store, "list", "listing the sessions".into(), |s| {
                catalog::list(s, &args, json)
            })
        }
        Command::List(_) => with_store(&store, "list", "listing the sessions".into(), |s| {
            read::list(s, json)
        }),
        // No spinner: search draws its own bar, follow runs until Ctrl-C.
        Command::Search(args) => {
            let s = stores::open_existing(&store)?;
            let r = catalog::search(&s, &args, json);
            let closed = s.close();
            let out = r?;
            closed?;
            Ok(out)
        }
        Command::Follow {
            id,
            from,
            exit_after,
        } => {
            let s = stores::open_existing(&store)?;
            catalog::follow(&s, &id, from, exit_after)
        }
        Command::Export(args) => with_store(&store, "export", reading(&args.id), |s| {
            catalog::export(s, &args)
        }),
        Command::Snapshots => with_store(&store, "snapshots", "listing the sessions".into(), |s| {
            read::snapshots(s, json)
        }),
        Command::Load { id } => {
            with_store(&store, "load", reading(&id), |s| read::load(s, &id, json))
        }
        Command::Inspect { id } => with_store(&store, "inspect", reading(&id), |s| {
            read::inspect(s, &id, json)
        }),
        Command::ReadFrom { id, seq } => with_store(&store, "read-from", reading(&id), |s| {
            read::read_from(s, &id, seq, json)
        }),
        Command::Raw { id } => with_store(&store, "raw", reading(&id), |s| read::raw(s, &id, json)),
        Command::Cat { id } => with_store(&store, "cat", reading(&id), |s| {
            transcript::cat(s, &id, json)
        }),
        Command::Verify => verify::verify(&store, json),
        // Session management (issue 19).
        Command::Delete { ids, yes } => with_store(&store, "delete", "deleting".into(), |s| {
            manage::delete(s, &ids, yes, json)
        }),
        Command::Prune {
            older_than_days,
            keep_newest,
            dry_run,
            yes,
        } => with_store(&store, "prune", "selecting sessions".into(), |s| {
            manage::prune(s, older_than_days, keep_newest, dry_run, yes, json)
        }),
        Command::Salvage { id, new_id } => with_store(&store, "salvage", reading(&id), |s| {
            manage::salvage(s, &id, &new_id, json)
        }),
        Command::Import { file, id } => with_store(&store, "import", "importing".into(), |s| {
            manage::import(s, &file, id.as_deref(), json)
        }),
        Command::Convert { target } => convert::convert(&store, &target, json),
        Command::Bench(args) => bench::bench(&args, json),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { out_dir } => docs::man(out_dir.as_deref()),
        Command::Help { command } => docs::help(&command),
    }
}

fn reading(id: &str) -> String {
    format!("reading session {}", dsh_persist::model::json::quote(id))
}

/// Opens the existing store, runs `f` with a spinner on a terminal (one
/// large log can take seconds), and closes the store (so SQLite removes its
/// `-wal`/`-shm` files and a reading command leaves the store as it found
/// it).
fn with_store<F>(args: &args::StoreArgs, what: &str, doing: String, f: F) -> Result<Outcome, Error>
where
    F: FnOnce(&dsh_persist::store::Store) -> Result<Outcome, Error>,
{
    let spinner = progress::Progress::spinner(what, &doing);
    let store = stores::open_existing(args)?;
    let result = f(&store);
    let closed = store.close();
    spinner.finish();
    let outcome = result?;
    closed?;
    Ok(outcome)
}
