//! `dsh-persist`: the command-line tool over every store (SPEC §9) and the
//! benchmark (SPEC §10). The code lives in `src/cli/` and is compiled into
//! this binary only, so the library (and its C ABI) stays free of the
//! argument parser.

#[path = "../cli/mod.rs"]
mod cli;

fn main() {
    std::process::exit(cli::main());
}
