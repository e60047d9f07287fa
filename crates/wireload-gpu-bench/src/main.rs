//! The GPU CSV loading benchmark (bench/GPU.md): on-GPU parsing throughput in both modes,
//! its ramp-up with input size and its chunk-size sweep, host↔device copy bandwidth, end-to-end
//! loads from host memory against that bandwidth, the CPU loader for comparison, and a
//! byte-for-byte check of the device against the reference passes. Self-contained: the
//! data (TPC-H lineitem, a taxi-like numeric file, int_444) is generated in memory; results
//! are printed as markdown and, with `--json`, written as JSON.
//!
//! ```text
//! wireload-gpu-bench all --json gpu.json          # on a machine with an NVIDIA GPU
//! wireload-gpu-bench all --emulate                # smoke run on the CPU emulator
//! ```

mod data;
mod device;
mod report;
mod sections;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use serde_json::json;
use wireload_gpu::testing::Emulator;
use wireload_gpu::testing::cuda::CudaDevice;

use crate::data::{Data, sf_label};
use crate::device::{BenchDevice, describe_cuda, find_nvrtc};
use crate::report::{Report, host, host_line, utc_now};
use crate::sections::{Config, Ctx, fmt_bin, fmt_size};

/// A section of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Section {
    /// generate the data sets and show their sizes (no GPU needed)
    Data,
    /// the device's passes against the reference, byte for byte (exit status 1 on a difference)
    Verify,
    /// host↔device copy bandwidth, pinned and pageable
    Bandwidth,
    /// on-GPU parsing throughput, fast and quoted mode
    Ongpu,
    /// on-GPU throughput against input size
    Rampup,
    /// on-GPU throughput against bytes per warp
    Chunks,
    /// end-to-end loads from host memory, against the host→device bandwidth
    E2e,
    /// wireload's CPU loader on the same files (no GPU needed)
    Cpu,
    /// every section above, in order
    All,
}

impl Section {
    const ORDER: [Section; 8] = [
        Section::Data,
        Section::Verify,
        Section::Bandwidth,
        Section::Ongpu,
        Section::Rampup,
        Section::Chunks,
        Section::E2e,
        Section::Cpu,
    ];

    /// Runs without a device (the data sets, the CPU loader).
    fn host_only(self) -> bool {
        matches!(self, Section::Data | Section::Cpu)
    }

    fn name(self) -> &'static str {
        match self {
            Section::Data => "data",
            Section::Verify => "verify",
            Section::Bandwidth => "bandwidth",
            Section::Ongpu => "ongpu",
            Section::Rampup => "rampup",
            Section::Chunks => "chunks",
            Section::E2e => "e2e",
            Section::Cpu => "cpu",
            Section::All => "all",
        }
    }
}

/// Parses a byte count written as an integer or a float ("1e9").
fn parse_bytes(s: &str) -> Result<usize, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("not a number of bytes: {s}"))?;
    if !(1.0..1e15).contains(&v) {
        return Err(format!("a byte count between 1 and 1e15, got {s}"));
    }
    Ok(v as usize)
}

/// GPU CSV loading benchmark (CUDAFastCSV after Kumaigorodski et al., BTW 2021).
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// Sections to run, in the order given (`all`: every one)
    #[arg(value_enum, required = true)]
    sections: Vec<Section>,
    /// TPC-H scale factor of lineitem (SF 1: about 760 MB)
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Bytes of each synthetic file (taxi-like, int_444); "1e9" is accepted
    #[arg(long, default_value = "1e9", value_parser = parse_bytes)]
    size: usize,
    /// Timed runs per measurement (after one warm-up run); medians are reported
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Also write every measurement as JSON to this file (rewritten after each section)
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run on the CPU emulator with tiny inputs (a smoke test: no performance figures)
    #[arg(long)]
    emulate: bool,
    /// Random inputs `verify` compares
    #[arg(long, default_value_t = 300)]
    verify_inputs: u64,
    /// Largest record count of those inputs
    #[arg(long, default_value_t = 200)]
    verify_rows: usize,
    /// Threads of the CPU loader [default: all CPUs]
    #[arg(long)]
    cpu_threads: Option<usize>,
    /// Folder holding libnvrtc*.so* when the loader cannot find NVRTC (otherwise the CUDA
    /// toolkit's and the nvidia-cuda-nvrtc wheel's usual folders are tried)
    #[arg(long)]
    nvrtc_dir: Option<PathBuf>,
    /// Seed of the synthetic files
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn config(a: &Args) -> Config {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu_threads = a.cpu_threads.unwrap_or(cpus).max(1);
    if a.emulate {
        // The emulator runs every GPU thread as a fiber on the CPU: tiny inputs only.
        return Config {
            emulate: true,
            sf: 0.0005,
            size: 100_000,
            runs: 1,
            seed: a.seed,
            verify_inputs: a.verify_inputs.min(24),
            verify_rows: a.verify_rows.min(60),
            verify_bytes: 32 << 10,
            bandwidth_bytes: 4 << 20,
            ramp_sizes: vec![1_000, 10_000, 100_000, 1_000_000],
            max_partition: 256 << 10,
            chunks: vec![128, 256, 512, 1024, 2048, 4096],
            e2e_partitions: vec![16 << 10, 64 << 10, 256 << 10],
            e2e_streams: vec![2, 3, 4],
            cpu_threads,
        };
    }
    Config {
        emulate: false,
        sf: a.sf,
        size: a.size,
        runs: a.runs.max(1),
        seed: a.seed,
        verify_inputs: a.verify_inputs,
        verify_rows: a.verify_rows.max(1),
        verify_bytes: 8 << 20,
        bandwidth_bytes: 256 << 20,
        ramp_sizes: vec![
            1_000_000,
            10_000_000,
            100_000_000,
            1_000_000_000,
            4_000_000_000,
        ],
        max_partition: 1 << 30,
        chunks: vec![128, 256, 512, 1024, 2048, 4096],
        e2e_partitions: vec![16 << 20, 64 << 20, 256 << 20],
        e2e_streams: vec![2, 3, 4],
        cpu_threads,
    }
}

fn main() {
    let args = Args::parse();
    let cfg = config(&args);
    let code = if cfg.emulate {
        run(Arc::new(Emulator::default()), "".into(), &args, cfg)
    } else if args.sections.iter().all(|s| s.host_only()) {
        // data generation and the CPU loader touch no device
        let none = "none (the data and cpu sections use no device)".to_string();
        run(Arc::new(Emulator::default()), none, &args, cfg)
    } else {
        let nvrtc = match find_nvrtc(args.nvrtc_dir.as_deref()) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("wireload-gpu-bench: {e}");
                std::process::exit(2);
            }
        };
        match CudaDevice::shared() {
            Ok(dev) => {
                let desc = describe_cuda(&dev, &nvrtc);
                run(dev, desc, &args, cfg)
            }
            Err(e) => {
                eprintln!("wireload-gpu-bench: no GPU: {e} (use --emulate for a smoke run)");
                2
            }
        }
    };
    std::process::exit(code);
}

/// Runs the sections on `dev`; the exit status.
fn run<D: BenchDevice>(dev: Arc<D>, desc: String, args: &Args, cfg: Config) -> i32 {
    let t0 = Instant::now();
    let desc = if desc.is_empty() {
        dev.describe()
    } else {
        desc
    };
    let mut list: Vec<Section> = Vec::new();
    for s in &args.sections {
        if *s == Section::All {
            list.extend(Section::ORDER);
        } else {
            list.push(*s);
        }
    }
    let names: Vec<&str> = list.iter().map(|s| s.name()).collect();
    let command: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                "wireload-gpu-bench".to_string()
            } else {
                a
            }
        })
        .collect();
    let command = command.join(" ");
    let (date, start) = utc_now();
    let host = host();
    let build = format!(
        "wireload-gpu {} ({} build{})",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        option_env!("WIRELOAD_BENCH_COMMIT").map_or(String::new(), |c| format!(", commit {c}"))
    );
    println!(
        "# wireload-gpu-bench: {} ({date})\n",
        if args.sections.contains(&Section::All) {
            "all".to_string()
        } else {
            names.join(", ")
        }
    );
    if cfg.emulate {
        println!(
            "**Emulator run: the CUDA kernels run on the CPU (every GPU thread a fiber) with \
             tiny inputs. This is a smoke test of the bench; none of its figures is a \
             performance figure.**\n"
        );
    }
    println!("- Command: `{command}`");
    println!("- Started: {start}");
    println!("- Device: {desc}");
    println!("- Host: {}", host_line(&host));
    println!("- Build: {build}");
    println!(
        "- Data (generated in memory): lineitem {} (TPC-H via tpchgen, `|`-separated); taxi-like \
         {} and int_444 {} (seed {}); largest piece parsed at once on the device {}",
        sf_label(cfg.sf),
        fmt_size(cfg.size),
        fmt_size(cfg.size),
        cfg.seed,
        fmt_bin(cfg.max_partition)
    );
    println!(
        "- Timing: {} after one warm-up per measurement; median (slowest–fastest); \
         GB/s = 10^9 bytes/s, MB/s = 10^6 bytes/s, MB = 10^6 bytes",
        sections::runs_text(cfg.runs)
    );
    println!();
    let meta = json!({
        "command": command,
        "date": date,
        "started": start,
        "device": desc,
        "emulated": cfg.emulate,
        "host": host,
        "build": build,
        "sections": names,
        "sf": cfg.sf,
        "synthetic_bytes": cfg.size,
        "seed": cfg.seed,
        "runs": cfg.runs,
        "max_partition": cfg.max_partition,
        "cpu_threads": cfg.cpu_threads,
    });
    let mut ctx = Ctx {
        dev,
        data: Data::new(cfg.seed),
        cfg,
        report: Report::new(args.json.clone(), meta),
        h2d: None,
        cpu_rows: Default::default(),
        sources: Default::default(),
        failures: Vec::new(),
    };
    for s in list {
        let t = Instant::now();
        match s {
            Section::Data => sections::data(&mut ctx),
            Section::Verify => sections::verify(&mut ctx),
            Section::Bandwidth => sections::bandwidth(&mut ctx),
            Section::Ongpu => sections::ongpu(&mut ctx),
            Section::Rampup => sections::rampup(&mut ctx),
            Section::Chunks => sections::chunks(&mut ctx),
            Section::E2e => sections::e2e(&mut ctx),
            Section::Cpu => sections::cpu(&mut ctx),
            Section::All => unreachable!("expanded above"),
        }
        eprintln!(
            "[{}] done in {:.1} s ({:.1} s since start)",
            s.name(),
            t.elapsed().as_secs_f64(),
            t0.elapsed().as_secs_f64()
        );
    }
    let (_, end) = utc_now();
    let total = t0.elapsed().as_secs_f64();
    println!("## Summary\n");
    println!("- Finished: {end} ({total:.1} s)");
    if ctx.failures.is_empty() {
        println!("- No differences, errors or wrong row counts.");
    } else {
        println!("- {} FAILURES:", ctx.failures.len());
        for f in &ctx.failures {
            println!("  - {}", f.replace('\n', " "));
        }
    }
    ctx.report.set(
        "summary",
        json!({ "finished": end, "seconds": total, "failures": ctx.failures }),
    );
    i32::from(!ctx.failures.is_empty())
}
