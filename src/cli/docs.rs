//! Documentation generated from the clap definition of the command line:
//! `help [COMMAND]…`, `completions SHELL` (clap_complete) and `man`
//! (clap_mangen), so help, completions and man pages never drift apart.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

use dsh_persist::Error;
use dsh_persist::model::json::quote;

use super::args::{Cli, Shell};
use super::output::{Outcome, print_out};

/// The clap definition with every subcommand's `bin_name` set
/// (`dsh-persist inspect`), as help and man pages show it.
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// `help [COMMAND]…`: the long help of the tool or of a subcommand, on
/// stdout (exit 0); an unknown subcommand is a usage error.
pub fn help(path: &[String]) -> Result<Outcome, Error> {
    let mut cmd = command();
    for (depth, name) in path.iter().enumerate() {
        let Some(sub) = cmd
            .get_subcommands()
            .find(|s| {
                !s.is_hide_set() && (s.get_name() == name || s.get_all_aliases().any(|a| a == name))
            })
            .cloned()
        else {
            let parent = if depth == 0 {
                "dsh-persist".to_string()
            } else {
                format!("dsh-persist {}", path[..depth].join(" "))
            };
            return Err(Error::invalid(format!(
                "{parent} has no subcommand {}; see `{parent} --help`",
                quote(name)
            )));
        };
        cmd = sub;
    }
    let text = cmd.render_help().to_string();
    print_out(&text);
    Ok(Outcome::ok())
}

/// `completions SHELL`: the completion script on stdout.
pub fn completions(shell: Shell) -> Result<Outcome, Error> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "dsh-persist", &mut out);
    if shell == Shell::Bash {
        out = fix_bash_state_labels(&out);
    }
    write_stdout(&out);
    Ok(Outcome::ok())
}

/// clap_complete's bash script spells the states of subcommands two ways
/// when the binary name holds a `-` (clap issue #6421): the loop that
/// follows the words sets `dsh__persist__subcmd__verify`, the `case` arms
/// test `dsh__subcmd__persist__subcmd__verify`, so nothing after a
/// subcommand completes. The arms are respelled the way the loop spells
/// them (what the upstream fix does).
fn fix_bash_state_labels(script: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(script)
        .replace("dsh__subcmd__persist__subcmd__", "dsh__persist__subcmd__")
        .into_bytes()
}

/// `man`: the tool's page on stdout; with `--out-dir DIR`, the tool's page
/// and one per visible subcommand written there (`dsh-persist-verify.1`),
/// their paths printed.
pub fn man(out_dir: Option<&Path>) -> Result<Outcome, Error> {
    let cmd = command();
    let Some(dir) = out_dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut out)
            .map_err(|e| Error::io("cannot render the man page", e))?;
        write_stdout(&out);
        return Ok(Outcome::ok());
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::io(
            format!("cannot create {}", quote(&dir.display().to_string())),
            e,
        )
    })?;
    let mut written = Vec::new();
    write_pages(cmd, dir, &mut written)?;
    let list: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    print_out(&list.join("\n"));
    Ok(Outcome::ok())
}

fn write_pages(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<(), Error> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub.clone(), dir, written)?;
    }
    let page = clap_mangen::Man::new(cmd);
    let path = dir.join(page.get_filename());
    let mut out = Vec::new();
    page.render(&mut out)
        .map_err(|e| Error::io("cannot render a man page", e))?;
    std::fs::write(&path, out).map_err(|e| {
        Error::io(
            format!("cannot write {}", quote(&path.display().to_string())),
            e,
        )
    })?;
    written.push(path);
    Ok(())
}

fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}
