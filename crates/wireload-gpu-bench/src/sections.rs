//! The bench's sections: each measures, prints a markdown table and adds its JSON.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use wireload_gpu::testing::layout::Status;
use wireload_gpu::testing::{
    DEFAULT_PARTITION, DEFAULT_STREAMS, HostMemory, Parsed, Plan, Workspace, WorkspacePool, check,
    load_into_pooled,
};
use wireload_gpu::{GpuError, GpuOptions, PassMode};
use wireload_load::{LoadControl, LoadOptions, Source, load_into};
use wireload_storage::{Partitioning, Table, TableDef};
use wireload_types::TableSchema;

use crate::data::{Data, Dataset, Kind, prefix_len, split_records};
use crate::device::{BenchDevice, Sample, start, stop, timer_name};
use crate::report::{Md, Report, Stats, fmt_mb, fmt_ms, fmt_rate, gbps, range, rates};

/// Sizes and repetitions of a run (the `--emulate` run shrinks them all).
#[derive(Debug, Clone)]
pub struct Config {
    /// the CPU emulator instead of the GPU
    pub emulate: bool,
    /// lineitem's scale factor
    pub sf: f64,
    /// bytes of each synthetic file
    pub size: usize,
    /// timed runs after one warm-up
    pub runs: usize,
    /// seed of the synthetic files
    pub seed: u64,
    /// random inputs `verify` compares
    pub verify_inputs: u64,
    /// their largest record count
    pub verify_rows: usize,
    /// bytes of each data set `verify` compares
    pub verify_bytes: usize,
    /// bytes per copy in `bandwidth`
    pub bandwidth_bytes: usize,
    /// input sizes of `rampup` (10^6-byte units in the labels)
    pub ramp_sizes: Vec<usize>,
    /// largest piece parsed at once on the device (inputs above go in pieces, times summed)
    pub max_partition: usize,
    /// bytes per warp in `chunks`
    pub chunks: Vec<usize>,
    /// partition sizes of `e2e`
    pub e2e_partitions: Vec<usize>,
    /// stream counts of `e2e`
    pub e2e_streams: Vec<usize>,
    /// threads of the CPU loader
    pub cpu_threads: usize,
}

/// What the sections share.
pub struct Ctx<D: BenchDevice> {
    /// the device
    pub dev: Arc<D>,
    /// sizes
    pub cfg: Config,
    /// the data sets
    pub data: Data,
    /// the JSON document
    pub report: Report,
    /// pinned host→device bandwidth measured in this run (GB/s, median)
    pub h2d: Option<f64>,
    /// the CPU loader's row count per data set and size
    pub cpu_rows: BTreeMap<(Kind, usize), u64>,
    /// the sources of the load sections, per data set
    pub sources: BTreeMap<Kind, (Arc<Dataset>, Source, usize)>,
    /// differences, errors and wrong row counts; any makes the exit status 1
    pub failures: Vec<String>,
}

impl<D: BenchDevice> Ctx<D> {
    fn note_failure(&mut self, what: String) {
        eprintln!("FAILURE: {what}");
        self.failures.push(what);
    }

    /// The file of `kind` the throughput sections use, and its length.
    fn standard(&mut self, kind: Kind) -> (Arc<Dataset>, usize) {
        self.data.standard(kind, self.cfg.sf, self.cfg.size)
    }

    /// The file of `kind` as a load source (shared, not copied, when it is the whole
    /// generated file).
    fn source(&mut self, kind: Kind) -> (Arc<Dataset>, Source, usize) {
        if let Some(s) = self.sources.get(&kind) {
            return s.clone();
        }
        let (ds, n) = self.standard(kind);
        let data: Arc<[u8]> = if n == ds.data.len() {
            Arc::clone(&ds.data)
        } else {
            Arc::from(&ds.data[..n])
        };
        let src = Source::Bytes {
            name: format!("{}.csv", kind.key()),
            data,
        };
        let v = (ds, src, n);
        self.sources.insert(kind, v.clone());
        v
    }

    /// Rows the CPU loader loads from the file of `kind` (loaded once, then remembered).
    fn cpu_rows(&mut self, kind: Kind) -> Result<u64, String> {
        let (ds, src, n) = self.source(kind);
        if let Some(&r) = self.cpu_rows.get(&(kind, n)) {
            return Ok(r);
        }
        let t = new_table(&ds);
        let opts = cpu_options(&ds, self.cfg.cpu_threads);
        let r = load_into(&t, &src, &opts, &LoadControl::default())
            .map_err(|e| format!("the CPU loader failed on {}: {e}", ds.label))?;
        self.cpu_rows.insert((kind, n), r.rows);
        Ok(r.rows)
    }

    fn emulated(&self) -> bool {
        self.dev.emulated()
    }
}

/// A new table for `ds`'s columns.
fn new_table(ds: &Dataset) -> Table {
    let def = TableDef::new(
        "t",
        TableSchema {
            columns: ds.columns.clone(),
        },
        Partitioning::Single,
    )
    .expect("the bench's tables are valid");
    Table::new(def)
}

fn cpu_options(ds: &Dataset, threads: usize) -> LoadOptions {
    LoadOptions {
        dialect: ds.dialect(),
        threads: Some(threads),
        ..LoadOptions::default()
    }
}

/// "1 timed run", "5 timed runs".
pub fn runs_text(runs: usize) -> String {
    format!("{runs} timed run{}", if runs == 1 { "" } else { "s" })
}

/// "1 MB", "10 MB", "1 GB", "4 GB", "100 kB" (powers of ten).
pub fn fmt_size(n: usize) -> String {
    let units = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    for (u, name) in units {
        if n as f64 >= u {
            let v = n as f64 / u;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{} {name}", v.round())
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{n} B")
}

/// "64 MiB", "16 KiB" (powers of two).
pub fn fmt_bin(n: usize) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

fn mode_name(m: PassMode) -> &'static str {
    match m {
        PassMode::Auto => "fast (Auto)",
        PassMode::Quoted => "quoted",
    }
}

fn mode_key(m: PassMode) -> &'static str {
    match m {
        PassMode::Auto => "fast",
        PassMode::Quoted => "quoted",
    }
}

fn samples_json(v: &[Sample]) -> Value {
    json!({
        "seconds": v.iter().map(|s| s.seconds).collect::<Vec<_>>(),
        "wall_seconds": v.iter().map(|s| s.wall).collect::<Vec<_>>(),
    })
}

/// A bar's verdict, or why none is given.
fn verdict(emulated: bool, met: bool) -> &'static str {
    if emulated {
        "not evaluated (emulator run)"
    } else if met {
        "met"
    } else {
        "NOT met"
    }
}

// ---------------------------------------------------------------------------------------
// on-GPU parsing

/// One on-GPU measurement: the input parsed `runs` times after a warm-up, outputs left on
/// the device.
#[derive(Debug, Default)]
pub struct OnGpu {
    /// input bytes
    pub bytes: usize,
    /// pieces parsed one after another (inputs above the largest partition)
    pub partitions: usize,
    /// records found
    pub rows: u64,
    /// the quoted passes ran (in any piece)
    pub quoted: bool,
    /// fields the kernels left to the host
    pub fallbacks: u64,
    /// pieces the kernels flagged (errors, an unterminated quote)
    pub flagged: usize,
    /// per timed run, summed over the pieces
    pub samples: Vec<Sample>,
}

impl OnGpu {
    fn seconds(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.seconds).collect()
    }

    /// (median, slowest, fastest) GB/s.
    pub fn gbps(&self) -> (f64, f64, f64) {
        rates(self.bytes, &self.seconds(), 1e9)
    }

    fn json(&self) -> Value {
        let (med, lo, hi) = self.gbps();
        json!({
            "bytes": self.bytes,
            "partitions": self.partitions,
            "rows": self.rows,
            "quoted_passes": self.quoted,
            "host_fields": self.fallbacks,
            "flagged_partitions": self.flagged,
            "gbps_median": med,
            "gbps_min": lo,
            "gbps_max": hi,
            "samples": samples_json(&self.samples),
        })
    }
}

/// Parses `data` (whole records of `ds`) on the device with `opts`: in one piece when it
/// fits in `max_part`, else piece by piece (each uploaded before its parse; only the
/// parses are timed).
pub fn measure_ongpu<D: BenchDevice>(
    dev: &Arc<D>,
    ds: &Dataset,
    data: &[u8],
    opts: &GpuOptions,
    runs: usize,
    max_part: usize,
) -> Result<OnGpu, GpuError> {
    let plan = Arc::new(Plan::new(&ds.columns, &ds.dialect())?);
    let parts = split_records(data, max_part);
    let mut ws = Workspace::new(Arc::clone(dev), plan, opts)?;
    let single = parts.len() == 1;
    if single {
        ws.load_input(data)?;
        dev.sync(ws.stream())?;
    }
    let mut out = OnGpu {
        bytes: data.len(),
        partitions: parts.len(),
        ..OnGpu::default()
    };
    for run in 0..=runs {
        let mut sum = Sample {
            seconds: 0.0,
            wall: 0.0,
        };
        for p in &parts {
            if !single {
                ws.load_input(&data[p.clone()])?;
                dev.sync(ws.stream())?;
            }
            let c = start(&**dev, ws.stream())?;
            let parsed = ws.parse(false)?;
            let s = stop(&**dev, ws.stream(), c)?;
            sum.seconds += s.seconds;
            sum.wall += s.wall;
            if run == 0 {
                out.rows += parsed.rows() as u64;
                match &parsed {
                    Parsed::Done(_) => {
                        out.quoted = true;
                        out.flagged += 1;
                    }
                    Parsed::OnDevice(p) => {
                        out.quoted |= p.quoted;
                        out.fallbacks += p.status.fallbacks as u64;
                        // an error flagged: the status differs from a clean one beyond
                        // the fallback count
                        let clean = Status {
                            fallbacks: p.status.fallbacks,
                            pad: p.status.pad,
                            ..Status::default()
                        };
                        if p.status != clean {
                            out.flagged += 1;
                        }
                    }
                }
            }
        }
        if run > 0 {
            out.samples.push(sum);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// data

/// `data`: the data sets the throughput sections use, generated now.
pub fn data<D: BenchDevice>(ctx: &mut Ctx<D>) {
    println!("## data: the files, generated in memory\n");
    println!(
        "Lineitem: TPC-H via tpchgen (`.tbl` text, `|` after every field), parts of about \
         16 MB in parallel. Taxi-like: the 18 columns of NYC Yellow Taxi 2019 (9 DOUBLE, 5 \
         INTEGER, a SMALLINT, 2 TIMESTAMP, a CHAR(1) flag; empty congestion surcharges are \
         NULL), fixed-seed random values. int_444: three fields of four random digits. \
         Synthetic files are blocks of 65536 records, each from its own seed, so a smaller \
         file is a prefix of a larger one (`rampup` generates larger ones).\n"
    );
    let mut md = Md::new(&[
        ("data set", false),
        ("columns", true),
        ("MB", true),
        ("records", true),
        ("bytes/record", true),
        ("generated in s", true),
    ]);
    let mut rows = Vec::new();
    for kind in Kind::ALL {
        let (ds, n) = ctx.standard(kind);
        let records = count_expected(&ds, n);
        md.row(vec![
            ds.label.clone(),
            ds.columns.len().to_string(),
            fmt_mb(n),
            records.to_string(),
            format!("{:.1}", n as f64 / records.max(1) as f64),
            format!("{:.2}", ds.gen_seconds),
        ]);
        rows.push(json!({
            "data_set": ds.label,
            "schema": kind.schema(),
            "bytes": n,
            "records": records,
            "generated_bytes": ds.data.len(),
            "gen_seconds": ds.gen_seconds,
        }));
    }
    md.print();
    ctx.report.section("data", json!({ "data_sets": rows }));
}

// ---------------------------------------------------------------------------------------
// verify

/// `verify`: the device's passes against the plain-Rust reference, byte for byte.
pub fn verify<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let n = ctx.cfg.verify_inputs;
    let rows = ctx.cfg.verify_rows;
    println!("## verify: the device's passes against the reference, byte for byte\n");
    println!(
        "`check::check_device` on {n} random inputs (1 to {rows} records each; many types, \
         NULLs, quotes with delimiters, newlines and doubled quotes inside, CR/LF/CRLF, \
         errors; chunks of 128, 256, 512 and 1024 bytes; both modes), then \
         `check::compare_on` on the first {} of each data set in both modes: every \
         intermediate array (chunk counts, prefix sums, FieldsIndex, tapes, spans) and every \
         output byte.\n",
        fmt_bin(ctx.cfg.verify_bytes)
    );
    let t = Instant::now();
    let mut md = Md::new(&[
        ("inputs", false),
        ("compared", true),
        ("quoted mode", true),
        ("differences", true),
        ("seconds", true),
    ]);
    let mut j = serde_json::Map::new();
    match check::check_device(&ctx.dev, 0..n, rows) {
        Ok(r) => {
            md.row(vec![
                "random (check_device)".into(),
                r.inputs.to_string(),
                r.quoted.to_string(),
                r.failures.len().to_string(),
                format!("{:.1}", t.elapsed().as_secs_f64()),
            ]);
            j.insert(
                "random".into(),
                json!({
                    "inputs": r.inputs,
                    "quoted": r.quoted,
                    "failures": r.failures,
                    "seconds": t.elapsed().as_secs_f64(),
                }),
            );
            for f in r.failures {
                ctx.note_failure(format!("verify: {f}"));
            }
        }
        Err(e) => {
            md.row(vec![
                "random (check_device)".into(),
                "-".into(),
                "-".into(),
                format!("error: {e}"),
                format!("{:.1}", t.elapsed().as_secs_f64()),
            ]);
            j.insert("random".into(), json!({ "error": e.to_string() }));
            ctx.note_failure(format!("verify: check_device failed: {e}"));
        }
    }
    md.print();

    let mut md = Md::new(&[
        ("data set", false),
        ("bytes", true),
        ("records", true),
        ("mode", false),
        ("result", false),
        ("seconds", true),
    ]);
    let mut sets = Vec::new();
    for kind in Kind::ALL {
        let (ds, n) = ctx.standard(kind);
        let bytes = &ds.data[..prefix_len(&ds.data[..n], ctx.cfg.verify_bytes)];
        let records = bytecount::count(bytes, b'\n');
        for mode in [PassMode::Auto, PassMode::Quoted] {
            let opts = GpuOptions {
                mode,
                ..GpuOptions::default()
            };
            let t = Instant::now();
            let r = check::compare_on(&ctx.dev, &ds.columns, &ds.dialect(), bytes, &opts);
            let secs = t.elapsed().as_secs_f64();
            let result = match &r {
                Ok(None) => "identical".to_string(),
                Ok(Some(d)) => format!("DIFFERENT: {d}"),
                Err(e) => format!("error: {e}"),
            };
            if !matches!(r, Ok(None)) {
                ctx.note_failure(format!("verify {} {}: {result}", ds.label, mode_key(mode)));
            }
            md.row(vec![
                ds.label.clone(),
                bytes.len().to_string(),
                records.to_string(),
                mode_name(mode).into(),
                result.replace('|', "\\|"),
                format!("{secs:.2}"),
            ]);
            sets.push(json!({
                "data_set": ds.label,
                "bytes": bytes.len(),
                "records": records,
                "mode": mode_key(mode),
                "identical": matches!(r, Ok(None)),
                "result": result,
                "seconds": secs,
            }));
        }
    }
    md.print();
    j.insert("data_sets".into(), Value::Array(sets));
    ctx.report.section("verify", Value::Object(j));
}

// ---------------------------------------------------------------------------------------
// bandwidth

/// A device allocation freed on drop.
struct DevBuf<'a, D: BenchDevice> {
    dev: &'a D,
    ptr: u64,
}

impl<D: BenchDevice> Drop for DevBuf<'_, D> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from this device's alloc, and every copy using it was
        // synchronized before (each timed copy ends with a sync of its stream).
        unsafe { self.dev.free(self.ptr) };
    }
}

/// Pinned host→device copy bandwidth (GB/s, median of `runs`) of `bytes`.
fn h2d_pinned<D: BenchDevice>(dev: &D, bytes: usize, runs: usize) -> Result<f64, GpuError> {
    let s = dev.new_stream()?;
    let buf = DevBuf {
        dev,
        ptr: dev.alloc(bytes)?,
    };
    let host = dev.alloc_pinned(bytes)?;
    let mut secs = Vec::new();
    for run in 0..=runs {
        let c = start(dev, &s)?;
        // SAFETY: the device buffer holds `bytes` bytes; the pinned source lives until the
        // sync in `stop`.
        unsafe { dev.h2d(&s, buf.ptr, host.bytes()?)? };
        let t = stop(dev, &s, c)?;
        if run > 0 {
            secs.push(t.seconds);
        }
    }
    Ok(gbps(bytes, Stats::of(&secs).median))
}

/// `bandwidth`: copies between host and device memory.
pub fn bandwidth<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let bytes = ctx.cfg.bandwidth_bytes;
    let runs = ctx.cfg.runs.max(5);
    println!("## bandwidth: copies between host and device memory\n");
    println!(
        "One copy of {} per run on one stream (cuMemcpyHtoDAsync / cuMemcpyDtoHAsync), \
         {} after a warm-up; page-locked (pinned, cuMemHostAlloc) and \
         ordinary pageable host memory (touched before).\n",
        fmt_bin(bytes),
        runs_text(runs)
    );
    if ctx.emulated() {
        println!("(On the emulator \"device\" memory is host memory: these are memcpy.)\n");
    }
    let dev = Arc::clone(&ctx.dev);
    let mut md = Md::new(&[
        ("direction", false),
        ("host memory", false),
        ("GB/s median", true),
        ("slowest–fastest", true),
        ("ms median", true),
        ("timer", false),
    ]);
    let mut rows = Vec::new();
    let r = (|| -> Result<(), GpuError> {
        let s = dev.new_stream()?;
        let buf = DevBuf {
            dev: &*dev,
            ptr: dev.alloc(bytes)?,
        };
        let mut pinned = dev.alloc_pinned(bytes)?;
        pinned.bytes_mut()?.fill(0x5a);
        let mut pageable = vec![0x5au8; bytes];
        for (dir, mem) in [
            ("host→device", "pinned"),
            ("device→host", "pinned"),
            ("host→device", "pageable"),
            ("device→host", "pageable"),
        ] {
            let mut samples = Vec::new();
            for run in 0..=runs {
                let c = start(&*dev, &s)?;
                // SAFETY: the device buffer holds `bytes` bytes, as do both host buffers;
                // the host buffers are neither moved nor touched until the sync in `stop`.
                unsafe {
                    match (dir, mem) {
                        ("host→device", "pinned") => dev.h2d(&s, buf.ptr, pinned.bytes()?)?,
                        ("device→host", "pinned") => dev.d2h(&s, pinned.bytes_mut()?, buf.ptr)?,
                        ("host→device", _) => dev.h2d(&s, buf.ptr, &pageable)?,
                        _ => dev.d2h(&s, &mut pageable, buf.ptr)?,
                    }
                }
                let t = stop(&*dev, &s, c)?;
                if run > 0 {
                    samples.push(t);
                }
            }
            let secs: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
            let (med, lo, hi) = rates(bytes, &secs, 1e9);
            if (dir, mem) == ("host→device", "pinned") {
                ctx.h2d = Some(med);
            }
            md.row(vec![
                dir.into(),
                mem.into(),
                fmt_rate(med),
                range(lo, hi),
                fmt_ms(Stats::of(&secs).median),
                timer_name(&*dev).into(),
            ]);
            rows.push(json!({
                "direction": if dir == "host→device" { "h2d" } else { "d2h" },
                "host_memory": mem,
                "bytes": bytes,
                "gbps_median": med,
                "gbps_min": lo,
                "gbps_max": hi,
                "samples": samples_json(&samples),
            }));
        }
        Ok(())
    })();
    md.print();
    if let Err(e) = r {
        println!("error: {e}\n");
        ctx.note_failure(format!("bandwidth: {e}"));
    }
    ctx.report.section(
        "bandwidth",
        json!({ "bytes": bytes, "runs": runs, "copies": rows }),
    );
}

/// The pinned host→device bandwidth of this run: measured by `bandwidth`, or now.
fn h2d<D: BenchDevice>(ctx: &mut Ctx<D>) -> Option<f64> {
    if ctx.h2d.is_none() {
        match h2d_pinned(&*ctx.dev, ctx.cfg.bandwidth_bytes, ctx.cfg.runs.max(5)) {
            Ok(v) => ctx.h2d = Some(v),
            Err(e) => ctx.note_failure(format!("host→device bandwidth: {e}")),
        }
    }
    ctx.h2d
}

// ---------------------------------------------------------------------------------------
// ongpu

/// `ongpu`: parsing throughput with the input in device memory and the outputs left there.
pub fn ongpu<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let runs = ctx.cfg.runs;
    println!("## ongpu: parsing in device memory (paper Fig. 16, 19)\n");
    println!(
        "The input is uploaded once; each run is one `Workspace::parse` (every pass: counts, \
         scan, FieldsIndex, tapes, deserialization, string gather) with the outputs left in \
         device memory; {} after a warm-up; GB/s = input bytes / median time. \
         Default options: chunk 1024 bytes per warp. Fast = PassMode::Auto (the fast passes: \
         these files hold no quote), quoted = PassMode::Quoted (FieldsIndex with sentinels + \
         stream compaction).\n",
        runs_text(runs)
    );
    let mut md = Md::new(&[
        ("data set", false),
        ("MB", true),
        ("records", true),
        ("mode", false),
        ("passes run", false),
        ("GB/s median", true),
        ("slowest–fastest", true),
        ("ms median", true),
        ("host fields", true),
        ("timer", false),
    ]);
    let mut rows = Vec::new();
    let mut lineitem: BTreeMap<&str, f64> = BTreeMap::new();
    for kind in Kind::ALL {
        let (ds, n) = ctx.standard(kind);
        for mode in [PassMode::Auto, PassMode::Quoted] {
            let opts = GpuOptions {
                mode,
                ..GpuOptions::default()
            };
            let r = measure_ongpu(
                &ctx.dev,
                &ds,
                &ds.data[..n],
                &opts,
                runs,
                ctx.cfg.max_partition,
            );
            match r {
                Ok(m) => {
                    let (med, lo, hi) = m.gbps();
                    if kind == Kind::Lineitem {
                        lineitem.insert(mode_key(mode), med);
                    }
                    let what = format!("ongpu {} {}", ds.label, mode_key(mode));
                    check_parsed(ctx, &what, &m, count_expected(&ds, n));
                    md.row(vec![
                        ds.label.clone(),
                        fmt_mb(n),
                        m.rows.to_string(),
                        mode_name(mode).into(),
                        if m.quoted { "quoted" } else { "fast" }.into(),
                        fmt_rate(med),
                        range(lo, hi),
                        fmt_ms(Stats::of(&m.seconds()).median),
                        m.fallbacks.to_string(),
                        timer_name(&*ctx.dev).into(),
                    ]);
                    let mut v = m.json();
                    v["data_set"] = json!(ds.label);
                    v["mode"] = json!(mode_key(mode));
                    rows.push(v);
                }
                Err(e) => {
                    ctx.note_failure(format!("ongpu {} {}: {e}", ds.label, mode_key(mode)));
                    md.row(vec![
                        ds.label.clone(),
                        fmt_mb(n),
                        "-".into(),
                        mode_name(mode).into(),
                        "-".into(),
                        format!("error: {e}"),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                    ]);
                    rows.push(json!({
                        "data_set": ds.label, "mode": mode_key(mode), "error": e.to_string()
                    }));
                }
            }
        }
    }
    md.print();
    let emu = ctx.emulated();
    let mut bars = Vec::new();
    if let Some(&fast) = lineitem.get("fast") {
        let met = fast >= 150.0;
        println!(
            "- Bar: fast mode parses lineitem in device memory at ≥ 150 GB/s: {} GB/s, {}",
            fmt_rate(fast),
            verdict(emu, met)
        );
        bars.push(json!({"bar": "lineitem fast >= 150 GB/s", "value": fast, "met": !emu && met}));
        if let Some(&quoted) = lineitem.get("quoted") {
            let ratio = if fast > 0.0 { quoted / fast } else { 0.0 };
            let met = ratio >= 0.5;
            println!(
                "- Bar: quoted mode ≥ 50% of fast mode on lineitem: {} / {} GB/s = {:.0}%, {}",
                fmt_rate(quoted),
                fmt_rate(fast),
                ratio * 100.0,
                verdict(emu, met)
            );
            bars.push(
                json!({"bar": "lineitem quoted >= 0.5 x fast", "value": ratio, "met": !emu && met}),
            );
        }
        println!();
    }
    ctx.report.section(
        "ongpu",
        json!({ "runs": runs, "results": rows, "bars": bars }),
    );
}

/// Notes a failure when a measurement found other than `expected` records or the kernels
/// flagged a piece (these files are valid: neither may happen).
fn check_parsed<D: BenchDevice>(ctx: &mut Ctx<D>, what: &str, m: &OnGpu, expected: u64) {
    if m.rows != expected || m.flagged > 0 {
        ctx.note_failure(format!(
            "{what}: {} records found, {expected} expected, {} pieces flagged",
            m.rows, m.flagged
        ));
    }
}

/// Records in the first `n` bytes of `ds`.
fn count_expected(ds: &Dataset, n: usize) -> u64 {
    if n == ds.data.len() {
        ds.rows
    } else {
        crate::data::count_rows(&ds.data[..n])
    }
}

// ---------------------------------------------------------------------------------------
// rampup

/// `rampup`: on-GPU throughput against the input size (fast mode).
pub fn rampup<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let runs = ctx.cfg.runs;
    let sizes = ctx.cfg.ramp_sizes.clone();
    let max = *sizes.iter().max().expect("sizes");
    println!("## rampup: on-GPU throughput against input size (paper Fig. 11)\n");
    println!(
        "As `ongpu`, fast mode (PassMode::Auto), default chunk; the first whole records of \
         each file up to the size; inputs above {} are parsed as consecutive pieces of at most \
         that size (each uploaded before its parse, the parse times summed). Lineitem above \
         the generated scale factor is generated at a larger one.\n",
        fmt_bin(ctx.cfg.max_partition)
    );
    let mut md = Md::new(&[
        ("data set", false),
        ("size", false),
        ("MB", true),
        ("pieces", true),
        ("records", true),
        ("GB/s median", true),
        ("slowest–fastest", true),
        ("ms median", true),
    ]);
    let mut rows = Vec::new();
    for kind in [Kind::Int444, Kind::Lineitem] {
        let ds = match kind {
            Kind::Lineitem => ctx.data.lineitem_at_least(max),
            _ => ctx.data.synthetic(kind, max),
        };
        let label = match kind {
            Kind::Lineitem => ds.label.clone(),
            _ => kind.key().to_string(),
        };
        for &size in &sizes {
            let n = prefix_len(&ds.data, size);
            let opts = GpuOptions::default();
            let r = measure_ongpu(
                &ctx.dev,
                &ds,
                &ds.data[..n],
                &opts,
                runs,
                ctx.cfg.max_partition,
            );
            match r {
                Ok(m) => {
                    let (med, lo, hi) = m.gbps();
                    let what = format!("rampup {label} {}", fmt_size(size));
                    check_parsed(ctx, &what, &m, count_expected(&ds, n));
                    md.row(vec![
                        label.clone(),
                        fmt_size(size),
                        fmt_mb(n),
                        m.partitions.to_string(),
                        m.rows.to_string(),
                        fmt_rate(med),
                        range(lo, hi),
                        fmt_ms(Stats::of(&m.seconds()).median),
                    ]);
                    let mut v = m.json();
                    v["data_set"] = json!(label);
                    v["size"] = json!(size);
                    rows.push(v);
                }
                Err(e) => {
                    ctx.note_failure(format!("rampup {label} {}: {e}", fmt_size(size)));
                    md.row(vec![
                        label.clone(),
                        fmt_size(size),
                        fmt_mb(n),
                        "-".into(),
                        "-".into(),
                        format!("error: {e}"),
                        "-".into(),
                        "-".into(),
                    ]);
                    rows.push(json!({"data_set": label, "size": size, "error": e.to_string()}));
                }
            }
        }
    }
    md.print();
    ctx.report.section(
        "rampup",
        json!({ "runs": runs, "max_partition": ctx.cfg.max_partition, "results": rows }),
    );
}

// ---------------------------------------------------------------------------------------
// chunks

/// `chunks`: on-GPU throughput against the bytes per warp.
pub fn chunks<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let runs = ctx.cfg.runs;
    let sizes = ctx.cfg.chunks.clone();
    println!("## chunks: bytes per warp (paper Fig. 10)\n");
    println!(
        "As `ongpu`, with `GpuOptions::chunk` swept; \"vs 1024\" is the throughput relative to \
         the default chunk of 1024 bytes in the same mode.\n"
    );
    let mut md = Md::new(&[
        ("data set", false),
        ("mode", false),
        ("chunk bytes", true),
        ("GB/s median", true),
        ("slowest–fastest", true),
        ("ms median", true),
        ("vs 1024", true),
    ]);
    let mut rows = Vec::new();
    for kind in [Kind::Int444, Kind::Lineitem] {
        let (ds, n) = ctx.standard(kind);
        for mode in [PassMode::Auto, PassMode::Quoted] {
            let mut results: Vec<(usize, Result<OnGpu, GpuError>)> = Vec::new();
            for &chunk in &sizes {
                let opts = GpuOptions {
                    chunk,
                    mode,
                    ..GpuOptions::default()
                };
                let r = measure_ongpu(
                    &ctx.dev,
                    &ds,
                    &ds.data[..n],
                    &opts,
                    runs,
                    ctx.cfg.max_partition,
                );
                results.push((chunk, r));
            }
            let base = results
                .iter()
                .find(|(c, _)| *c == 1024)
                .and_then(|(_, r)| r.as_ref().ok())
                .map(|m| m.gbps().0);
            let expected = count_expected(&ds, n);
            for (chunk, r) in results {
                match r {
                    Ok(m) => {
                        let (med, lo, hi) = m.gbps();
                        let what = format!("chunks {} {} {chunk}", ds.label, mode_key(mode));
                        check_parsed(ctx, &what, &m, expected);
                        md.row(vec![
                            ds.label.clone(),
                            mode_name(mode).into(),
                            chunk.to_string(),
                            fmt_rate(med),
                            range(lo, hi),
                            fmt_ms(Stats::of(&m.seconds()).median),
                            base.map_or("-".into(), |b| format!("{:.2}", med / b)),
                        ]);
                        let mut v = m.json();
                        v["data_set"] = json!(ds.label);
                        v["mode"] = json!(mode_key(mode));
                        v["chunk"] = json!(chunk);
                        rows.push(v);
                    }
                    Err(e) => {
                        ctx.note_failure(format!(
                            "chunks {} {} {chunk}: {e}",
                            ds.label,
                            mode_key(mode)
                        ));
                        md.row(vec![
                            ds.label.clone(),
                            mode_name(mode).into(),
                            chunk.to_string(),
                            format!("error: {e}"),
                            "-".into(),
                            "-".into(),
                            "-".into(),
                        ]);
                        rows.push(json!({
                            "data_set": ds.label, "mode": mode_key(mode), "chunk": chunk,
                            "error": e.to_string()
                        }));
                    }
                }
            }
        }
    }
    md.print();
    ctx.report
        .section("chunks", json!({ "runs": runs, "results": rows }));
}

// ---------------------------------------------------------------------------------------
// e2e

/// `e2e`: loads from host memory into a table, on the device.
pub fn e2e<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let runs = ctx.cfg.runs;
    println!("## e2e: end to end from host memory into a table (paper Fig. 12, 14, 15)\n");
    let h2d = h2d(ctx);
    println!(
        "`load_into_pooled` from `Source::Bytes` (the file in host memory) into a new \
         table: partitions staged in pinned memory and streamed, the passes, outputs copied \
         back, Arrow batches assembled and appended; the wall time of the call, {} \
         after a warm-up, a new table each. \"of h2d\" = GB/s over this run's pinned \
         host→device copy bandwidth ({}). Records checked against the CPU loader's.\n",
        runs_text(runs),
        h2d.map_or("not measured".into(), |v| format!("{} GB/s", fmt_rate(v)))
    );
    let mut md = Md::new(&[
        ("data set", false),
        ("MB", true),
        ("partition", true),
        ("streams", true),
        ("GB/s median", true),
        ("slowest–fastest", true),
        ("of h2d", true),
        ("records", true),
        ("= CPU loader", false),
        ("partitions", true),
        ("by the CPU", true),
        ("host fields", true),
    ]);
    let mut rows = Vec::new();
    let mut best: BTreeMap<Kind, (f64, usize, usize)> = BTreeMap::new();
    let mut default_cfg: BTreeMap<Kind, f64> = BTreeMap::new();
    let parts = ctx.cfg.e2e_partitions.clone();
    let streams = ctx.cfg.e2e_streams.clone();
    // workspaces (pinned and device buffers) are kept between loads, as the library's
    // load_into keeps them; the warm-up run allocates them
    let pool = WorkspacePool::new(Arc::clone(&ctx.dev));
    for kind in Kind::ALL {
        let (ds, src, n) = ctx.source(kind);
        let cpu_rows = match ctx.cpu_rows(kind) {
            Ok(r) => Some(r),
            Err(e) => {
                ctx.note_failure(format!("e2e: {e}"));
                None
            }
        };
        for &partition in &parts {
            for &nstreams in &streams {
                let opts = GpuOptions {
                    partition,
                    streams: nstreams,
                    ..GpuOptions::default()
                };
                let mut secs = Vec::new();
                let mut last = None;
                let mut err = None;
                for run in 0..=runs {
                    let table = new_table(&ds);
                    let t = Instant::now();
                    let r = load_into_pooled(
                        &pool,
                        &table,
                        &src,
                        &ds.dialect(),
                        &opts,
                        &LoadControl::default(),
                    );
                    let wall = t.elapsed().as_secs_f64();
                    drop(table);
                    match r {
                        Ok(rep) => {
                            if run > 0 {
                                secs.push(wall);
                            }
                            last = Some(rep);
                        }
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
                let cfg = format!("{} {} x{}", ds.label, fmt_bin(partition), nstreams);
                match (err, last) {
                    (None, Some(rep)) => {
                        let (med, lo, hi) = rates(n, &secs, 1e9);
                        let ok = cpu_rows == Some(rep.load.rows);
                        if !ok {
                            ctx.note_failure(format!(
                                "e2e {cfg}: {} records, the CPU loader {:?}",
                                rep.load.rows, cpu_rows
                            ));
                        }
                        let of = h2d.map(|b| med / b);
                        let e = best.entry(kind).or_insert((0.0, partition, nstreams));
                        if med > e.0 {
                            *e = (med, partition, nstreams);
                        }
                        if partition == DEFAULT_PARTITION && nstreams == DEFAULT_STREAMS {
                            default_cfg.insert(kind, med);
                        }
                        md.row(vec![
                            ds.label.clone(),
                            fmt_mb(n),
                            fmt_bin(partition),
                            nstreams.to_string(),
                            fmt_rate(med),
                            range(lo, hi),
                            of.map_or("-".into(), |v| format!("{:.1}%", v * 100.0)),
                            rep.load.rows.to_string(),
                            if ok { "yes" } else { "NO" }.into(),
                            rep.partitions.to_string(),
                            rep.cpu.to_string(),
                            rep.fallbacks.to_string(),
                        ]);
                        rows.push(json!({
                            "data_set": ds.label,
                            "bytes": n,
                            "partition": partition,
                            "streams": nstreams,
                            "gbps_median": med,
                            "gbps_min": lo,
                            "gbps_max": hi,
                            "of_h2d": of,
                            "rows": rep.load.rows,
                            "cpu_loader_rows": cpu_rows,
                            "rows_match": ok,
                            "partitions": rep.partitions,
                            "quoted_partitions": rep.quoted,
                            "cpu_partitions": rep.cpu,
                            "host_fields": rep.fallbacks,
                            "wall_seconds": secs,
                        }));
                    }
                    (e, _) => {
                        let e = e.map_or("no result".to_string(), |e| e.to_string());
                        ctx.note_failure(format!("e2e {cfg}: {e}"));
                        md.row(vec![
                            ds.label.clone(),
                            fmt_mb(n),
                            fmt_bin(partition),
                            nstreams.to_string(),
                            format!("error: {e}"),
                            "-".into(),
                            "-".into(),
                            "-".into(),
                            "-".into(),
                            "-".into(),
                            "-".into(),
                            "-".into(),
                        ]);
                        rows.push(json!({
                            "data_set": ds.label, "partition": partition, "streams": nstreams,
                            "error": e
                        }));
                    }
                }
            }
        }
    }
    md.print();
    let emu = ctx.emulated();
    let mut bars = Vec::new();
    if let (Some(b), Some(&(v, p, s))) = (h2d, best.get(&Kind::Lineitem)) {
        let ratio = v / b;
        let met = ratio >= 0.8;
        println!(
            "- Bar: the end-to-end load of lineitem reaches ≥ 80% of the measured host→device \
             copy bandwidth: best {} GB/s ({} partitions, {s} streams) / {} GB/s = {:.0}%, {}",
            fmt_rate(v),
            fmt_bin(p),
            fmt_rate(b),
            ratio * 100.0,
            verdict(emu, met)
        );
        if let Some(&d) = default_cfg.get(&Kind::Lineitem) {
            println!(
                "- With the default options ({} partitions, {} streams): {} GB/s = {:.0}%",
                fmt_bin(DEFAULT_PARTITION),
                DEFAULT_STREAMS,
                fmt_rate(d),
                d / b * 100.0
            );
        }
        println!();
        bars.push(json!({
            "bar": "lineitem e2e >= 0.8 x pinned h2d",
            "value": ratio,
            "best": {"gbps": v, "partition": p, "streams": s},
            "h2d_gbps": b,
            "met": !emu && met,
        }));
    }
    ctx.report.section(
        "e2e",
        json!({ "runs": runs, "h2d_gbps": h2d, "results": rows, "bars": bars }),
    );
}

// ---------------------------------------------------------------------------------------
// cpu

/// `cpu`: wireload's CPU loader on the same files.
pub fn cpu<D: BenchDevice>(ctx: &mut Ctx<D>) {
    let runs = ctx.cfg.runs;
    let threads = ctx.cfg.cpu_threads;
    println!("## cpu: wireload's CPU loader on the same files\n");
    println!(
        "`wireload_load::load_into` from `Source::Bytes` into a new table with {threads} \
         threads, the wall time of the call, {} after a warm-up.\n",
        runs_text(runs)
    );
    let mut md = Md::new(&[
        ("data set", false),
        ("MB", true),
        ("threads", true),
        ("MB/s median", true),
        ("slowest–fastest", true),
        ("ms median", true),
        ("records", true),
    ]);
    let mut rows = Vec::new();
    for kind in Kind::ALL {
        let (ds, src, n) = ctx.source(kind);
        let opts = cpu_options(&ds, threads);
        let mut secs = Vec::new();
        let mut result = Ok(0);
        for run in 0..=runs {
            let table = new_table(&ds);
            let t = Instant::now();
            let r = load_into(&table, &src, &opts, &LoadControl::default());
            let wall = t.elapsed().as_secs_f64();
            drop(table);
            match r {
                Ok(rep) => {
                    if run > 0 {
                        secs.push(wall);
                    }
                    result = Ok(rep.rows);
                }
                Err(e) => {
                    result = Err(e.to_string());
                    break;
                }
            }
        }
        match result {
            Ok(records) => {
                ctx.cpu_rows.insert((kind, n), records);
                let (med, lo, hi) = rates(n, &secs, 1e6);
                md.row(vec![
                    ds.label.clone(),
                    fmt_mb(n),
                    threads.to_string(),
                    fmt_rate(med),
                    range(lo, hi),
                    fmt_ms(Stats::of(&secs).median),
                    records.to_string(),
                ]);
                rows.push(json!({
                    "data_set": ds.label,
                    "bytes": n,
                    "threads": threads,
                    "mbps_median": med,
                    "mbps_min": lo,
                    "mbps_max": hi,
                    "rows": records,
                    "wall_seconds": secs,
                }));
            }
            Err(e) => {
                ctx.note_failure(format!("cpu {}: {e}", ds.label));
                md.row(vec![
                    ds.label.clone(),
                    fmt_mb(n),
                    threads.to_string(),
                    format!("error: {e}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
                rows.push(json!({"data_set": ds.label, "error": e}));
            }
        }
    }
    md.print();
    ctx.report.section(
        "cpu",
        json!({ "runs": runs, "threads": threads, "results": rows }),
    );
}
