//! `wireload-bench`: wireload's benchmarks, each a subcommand with machine-readable
//! results. `tpch` times the TPC-H load–work–unload cycle, `lookup` point lookups through
//! the primary-key index, `online` transactions beside a load, and `shared` Shared Loading
//! end to end against the `wireload` binary beside this one; `answers` checks TPC-H answer
//! files, for bench/cycle.py.

mod answers;
mod cli;
mod lookup;
mod online;
mod runner;
mod shared;
mod tpch;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use crate::cli::{Cli, Command};

fn run(cli: Cli) -> Result<()> {
    let threads = cli.threads.map(usize::from);
    let workers = threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    });
    match &cli.command {
        Command::Tpch(args) => tpch::run(args, threads, workers),
        Command::Lookup(args) => lookup::lookup(args, threads),
        Command::Online(args) => online::online(args, threads),
        Command::Shared(args) => shared::run(args),
        Command::Answers(args) => answers::run(args),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
