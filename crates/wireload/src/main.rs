//! The `wireload` binary: interactive SQL shell, one-shot SQL, scripts, TPC-H data
//! generation, the demo, the server (`wireload serve`) and its Shared Loading client
//! (`wireload push`). The benchmarks are the `wireload-bench` binary.

mod cli;
mod demo;
mod generate;
mod inline;
mod interrupt;
mod oneshot;
mod output;
mod progress;
mod push;
mod render;
mod runner;
mod script;
mod serve;
mod shell;

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use crate::cli::{Cli, Command, GenCommand};
use crate::runner::Runner;

fn run(cli: Cli) -> Result<()> {
    let threads = cli.threads.map(usize::from);
    if cli.file.is_some() && cli.command.is_some() {
        anyhow::bail!("-f runs a script; it cannot be combined with a command");
    }
    let all_cores = || {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    };
    match &cli.command {
        Some(Command::Gen(GenCommand::Tpch(args))) => {
            generate::run(args, threads.unwrap_or_else(all_cores))
        }
        Some(Command::Demo(args)) => demo::run(
            &Runner::new(threads)?,
            args,
            threads.unwrap_or_else(all_cores),
        ),
        Some(Command::Sql(args)) => oneshot::run(&Runner::new(threads)?, args),
        Some(Command::Sniff(args)) => oneshot::sniff(args),
        Some(Command::Serve(args)) => serve::run(args, threads),
        Some(Command::Push(args)) => push::run(args, threads.unwrap_or_else(all_cores)),
        None => {
            let runner = Runner::new(threads)?;
            if let Some(path) = &cli.file {
                let sql = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                script::run(&runner, &sql, &path.display().to_string())
            } else if std::io::stdin().is_terminal() {
                shell::run(&runner)
            } else {
                let mut sql = String::new();
                std::io::stdin()
                    .read_to_string(&mut sql)
                    .context("cannot read standard input")?;
                script::run(&runner, &sql, "<stdin>")
            }
        }
    }
}

/// True when the error is a closed standard output (e.g. `wireload ... | head`).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
