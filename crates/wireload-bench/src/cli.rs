//! Command-line flags of the `wireload-bench` binary.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use wireload_load::Schedule;

/// wireload's benchmarks, with machine-readable results (`--json`).
#[derive(Debug, Parser)]
#[command(name = "wireload-bench", version)]
pub struct Cli {
    /// Worker threads for loads and queries (default: all cores).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Which benchmark.
    #[command(subcommand)]
    pub command: Command,
}

/// A share from 0 to 1.
fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share from 0 to 1")),
    }
}

fn parse_compression(s: &str) -> Result<wireload_storage::Compression, String> {
    s.parse()
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The TPC-H load-work-unload cycle: load the 8 tables, run the 22 queries, unload to
    /// Arrow (LZ4), drop and reload; timed, repeatable.
    Tpch(TpchArgs),
    /// Point lookups on TPC-H `orders` by its primary key: index against scan, and through SQL.
    Lookup(LookupArgs),
    /// Keyed transactions on one thread before and while TPC-H `lineitem` loads beside them.
    Online(OnlineArgs),
    /// Shared Loading against PIPE and SEQ: one cell (table, bandwidth, with or without
    /// queries) end to end, client and server pinned to different cores.
    Shared(SharedArgs),
    /// Compare TPC-H answer files (`qN.csv`, as `tpch --answers` writes them) with the
    /// expected ones; print the comparison as JSON.
    Answers(AnswersArgs),
}

/// Flags of `wireload-bench shared`.
#[derive(Debug, Clone, Args)]
pub struct SharedArgs {
    /// lineitem (TPC-H) or wide (the warehouse-like table of bench/widegen.py).
    #[arg(long, default_value = "lineitem")]
    pub table: String,
    /// Directory of the data: lineitem.tbl (generated when missing) or wide.csv and
    /// wide.columns (from bench/widegen.py).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// TPC-H scale factor of a generated lineitem.
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// The client's socket bandwidth (token bucket): 1gbit, 10gbit...
    #[arg(long)]
    pub bandwidth: wireload_push::throttle::Bandwidth,
    /// Run the paper's Q1 and Q2 in batches of 10 against a second table while loading
    /// (and alone for a few seconds each round, for their latencies without a load).
    #[arg(long)]
    pub queries: bool,
    /// The server's `--load-nice` (its load threads' nice value).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..=19))]
    pub load_nice: Option<i32>,
    /// Modes, in the order they run (interleaved over the runs).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "all,size,none,auto,pipe,seq"
    )]
    pub modes: Vec<wireload_push::protocol::Mode>,
    /// Also run each push mode (not pipe) with LZ4 payloads.
    #[arg(long)]
    pub lz4: bool,
    /// `auto` with this share of its windows sent as text, fixed (push's `--text-share`).
    #[arg(long, value_name = "SHARE", value_parser = share)]
    pub text_share: Option<f64>,
    /// Fragments per partition of every push (push's `--fragments`; default: push's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub fragments: Option<u32>,
    /// Runs of every mode; figures are medians.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// The CPU the server is pinned to.
    #[arg(long, default_value_t = 1)]
    pub server_cpu: usize,
    /// The CPU the client is pinned to.
    #[arg(long, default_value_t = 0)]
    pub client_cpu: usize,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `wireload-bench online`.
#[derive(Debug, Args)]
pub struct OnlineArgs {
    /// Directory holding lineitem.tbl (written by `wireload gen tpch`).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Accounts in the table the transactions read and update.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub accounts: u64,
    /// Seconds of transactions alone before each load (and for each kind alone).
    #[arg(long, default_value_t = 3.0, value_name = "S")]
    pub idle_seconds: f64,
    /// Threads of the load; one run per value.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2",
        value_name = "N,..."
    )]
    pub load_threads: Vec<usize>,
    /// Merge schedules of the load (deferred, interleaved); one run per schedule and
    /// thread count.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "deferred,interleaved",
        value_name = "S,..."
    )]
    pub schedules: Vec<Schedule>,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `wireload-bench lookup`.
#[derive(Debug, Args)]
pub struct LookupArgs {
    /// Directory holding orders.tbl (written by `wireload gen tpch`).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Lookups answered by the index.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub lookups: usize,
    /// Lookups answered by scanning the key column.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub scans: usize,
    /// Queries run through SQL, with and without the index.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub sql: usize,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `wireload-bench tpch`.
#[derive(Debug, Args)]
pub struct TpchArgs {
    /// TPC-H scale factor (ignored with --data).
    #[arg(long, default_value_t = 1.0, value_name = "N")]
    pub sf: f64,
    /// Use the .tbl files already in DIR (written by `wireload gen tpch`) instead of generating.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Runs of the whole cycle, each on a fresh database; medians are reported.
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Directory for generated data and unloaded files (default: a temporary directory;
    /// /dev/shm keeps the files in memory).
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Write each query's result of the first run as qN.csv into DIR.
    #[arg(long, value_name = "DIR")]
    pub answers: Option<PathBuf>,
    /// Print the results as one JSON document on standard output.
    #[arg(long)]
    pub json: bool,
    /// Declare the tables without their primary keys (no indexes are built while loading).
    #[arg(long)]
    pub no_keys: bool,
    /// How every column is stored: plain (default), dictionary or auto.
    #[arg(long, value_name = "STORAGE", value_parser = parse_compression, default_value = "plain")]
    pub compression: wireload_storage::Compression,
}

/// How far answers may be from the expected ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToleranceArg {
    /// Another engine's answers at full precision (such as DuckDB's).
    Strict,
    /// TPC-H's validation rules, for the reference answers at SF 1.
    Validation,
}

/// Flags of `wireload-bench answers`.
#[derive(Debug, Args)]
pub struct AnswersArgs {
    /// Directory of the expected answers, `q1.csv` to `q22.csv` (such as
    /// bench/tpch_answers.py writes).
    #[arg(long, value_name = "DIR")]
    pub expected: PathBuf,
    /// How far answers may be from the expected ones.
    #[arg(long, value_enum, default_value = "strict")]
    pub tolerance: ToleranceArg,
    /// Directories of the answers to check, one JSON object each.
    #[arg(required = true, value_name = "DIR")]
    pub answers: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn flags() {
        let cli = Cli::try_parse_from([
            "wireload-bench",
            "--threads",
            "2",
            "tpch",
            "--sf",
            "0.01",
            "--runs",
            "2",
        ])
        .unwrap();
        assert_eq!(cli.threads, Some(2));
        assert!(matches!(
            cli.command,
            Command::Tpch(TpchArgs { runs: 2, .. })
        ));
        let cli = Cli::try_parse_from(["wireload-bench", "answers", "--expected", "e", "a", "b"])
            .unwrap();
        let Command::Answers(args) = cli.command else {
            panic!("not answers")
        };
        assert_eq!(args.answers.len(), 2);
        assert_eq!(args.tolerance, ToleranceArg::Strict);
        assert!(Cli::try_parse_from(["wireload-bench", "tpch", "--runs", "0"]).is_err());
    }
}
