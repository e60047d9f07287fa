//! `wireload push`: Shared Loading from this machine into a table of a wireload server.

use anyhow::{Context, Result};
use wireload_load::Dialect;
use wireload_push::client::{PushOptions, PushReport, push};
use wireload_push::pipe::{PipeOptions, pipe};
use wireload_push::protocol::Mode;
use wireload_push::throttle::throttled;

use crate::cli::PushArgs;
use crate::oneshot::{one_byte, optional_byte};

/// Runs `wireload push`; prints what it did.
pub fn run(args: &PushArgs, threads: usize) -> Result<()> {
    let report = execute(args, threads)?;
    let steps = |s: &wireload_push::protocol::Steps| {
        s.cpu_s
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!((v * 1000.0).round() / 1000.0)))
            .collect::<serde_json::Map<_, _>>()
    };
    if args.json {
        let doc = serde_json::json!({
            "mode": args.mode.name(),
            "rows": report.rows,
            "file_bytes": report.file_bytes,
            "bytes_sent": report.bytes_sent,
            "seconds": report.seconds,
            "throughput_mb_s": report.mb_per_s(),
            "client_cpu_s": report.client_cpu_s,
            "server_cpu_s": report.server_steps.total(),
            "client_steps": steps(&report.client_steps),
            "server_steps": steps(&report.server_steps),
            "encoded_fragment_columns": report.encoded_columns.0,
            "encodable_fragment_columns": report.encoded_columns.1,
            "text_fragments": report.text.0,
            "text_bytes": report.text.1,
        });
        println!("{doc}");
    } else {
        println!(
            "pushed {} rows ({:.1} MB of CSV) into {} in {:.2} s ({:.0} MB/s, mode {}): \
             {:.1} MB sent ({:.0}% of the files), client CPU {:.2} s, server CPU {:.2} s",
            report.rows,
            report.file_bytes as f64 / 1e6,
            args.table,
            report.seconds,
            report.mb_per_s(),
            args.mode.paper_name(),
            report.bytes_sent as f64 / 1e6,
            100.0 * report.bytes_sent as f64 / report.file_bytes.max(1) as f64,
            report.client_cpu_s,
            report.server_steps.total(),
        );
    }
    Ok(())
}

/// Pushes as `args` say.
pub fn execute(args: &PushArgs, threads: usize) -> Result<PushReport> {
    let user = args
        .user
        .clone()
        .or_else(|| std::env::var("WIRELOAD_USER").ok());
    let password = args
        .password
        .clone()
        .or_else(|| std::env::var("WIRELOAD_PASSWORD").ok());
    let mut dialect = Dialect {
        header: args.header,
        ..Dialect::default()
    };
    if let Some(v) = &args.delimiter {
        dialect.delimiter = one_byte("delimiter", v)?;
    }
    if let Some(v) = &args.quote {
        dialect.quote = optional_byte("quote", v)?;
        dialect.escape = dialect.quote;
    }
    if let Some(n) = &args.null {
        dialect.null = n.as_bytes().to_vec();
    }
    if args.mode == Mode::Pipe {
        return run_pipe(args, &dialect, user, password);
    }
    let defaults = PushOptions::new(&args.server, &args.table, args.mode);
    let opts = PushOptions {
        credentials: user.zip(password),
        dialect,
        chunk_bytes: args.chunk_mib.max(1) << 20,
        // fragments given: exactly those partitions
        fragments_per_partition: args
            .fragments
            .unwrap_or(defaults.fragments_per_partition)
            .max(1),
        min_partitions: match args.fragments {
            Some(_) => 1,
            None => defaults.min_partitions,
        },
        partitions_in_flight: args.partitions_in_flight.max(1),
        threads,
        bandwidth: args.bandwidth,
        lz4: args.lz4,
        text_share: args.text_share,
        ..defaults
    };
    Ok(push(&args.files, &opts)?)
}

/// `pipe`: COPY FROM STDIN over the PostgreSQL protocol, through the same token bucket.
fn run_pipe(
    args: &PushArgs,
    dialect: &Dialect,
    user: Option<String>,
    password: Option<String>,
) -> Result<PushReport> {
    let mut opts = PipeOptions::new(&args.table, user.unwrap_or_else(|| "wireload".into()));
    opts.password = password;
    opts.delimiter = dialect.delimiter;
    opts.header = dialect.header;
    opts.quote = dialect.quote;
    opts.null = Some(String::from_utf8_lossy(&dialect.null).into_owned());
    let file_bytes = args
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()))
        .sum::<std::io::Result<u64>>()
        .context("reading the files' sizes")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let cpu0 = wireload_push::account::process_cpu_seconds();
    let (report, sent) = rt.block_on(async {
        let stream = tokio::net::TcpStream::connect(&args.pg)
            .await
            .with_context(|| format!("connecting to {}", args.pg))?;
        stream.set_nodelay(true)?;
        let stream = throttled(stream, args.bandwidth);
        let sent = stream.counter();
        let report = pipe(stream, &args.files, &opts).await?;
        anyhow::Ok((report, sent))
    })?;
    Ok(PushReport {
        rows: report.rows,
        file_bytes,
        bytes_sent: sent.load(std::sync::atomic::Ordering::Relaxed),
        seconds: report.seconds,
        client_cpu_s: wireload_push::account::process_cpu_seconds() - cpu0,
        ..PushReport::default()
    })
}
