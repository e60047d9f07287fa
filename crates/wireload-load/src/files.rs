//! One load of many sources into one table: every source is parsed (each with its own BOM,
//! header, name and line numbers in errors) and all their rows are published in one step by
//! one `Appender`, in source order then input order. A failure in any source publishes
//! nothing.
//!
//! Sources parse concurrently: a few driver threads (as many as the load's threads, at most
//! [`MAX_DRIVERS`]) take the sources in order, each opening its source (reading a stream,
//! decoding a compressed file) and parsing its chunks on the load's pool, so many small
//! files do not run one after another and no pool thread waits on a stream. Units are numbered across
//! sources: a source's first unit number is known once every source before it has been
//! parsed, so a source that starts before its turn keeps its chunks' buffers (the load holds
//! them until it publishes anyway) and hands them to the appender when its turn comes.
//!
//! ```text
//!   sources:  a.csv (3 chunks)   b.csv.gz (2 windows: 4 chunks)   c.csv (1 chunk)
//!   units:    0 1 2              3 4 5 6                          7
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use wireload_csv::ScanConfig;
use wireload_storage::Table;

use crate::options::LoadOptions;
use crate::parse::{CsvParse, Origin, Records};
use crate::pipeline::{self, data_start};
use crate::reject::RejectLog;
use crate::source::{Input, Source};
use wireload_publish::{Appender, LoadControl, LoadReport, Sink, Sites, install};
use wireload_publish::{KeySite, LoadError};

/// See [`crate::load_files`].
pub(crate) fn load_files(
    table: &Table,
    sources: &[Source],
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    if let [one] = sources {
        return pipeline::load(table, one, opts, ctl);
    }
    let t0 = Instant::now();
    if sources.is_empty() {
        return Err(LoadError::Options("no input files to load".into()));
    }
    let scan = ScanConfig::new(&opts.dialect, opts.mode).map_err(|e| LoadError::Options(e.0))?;
    // a missing file counts nothing: its open fails the load
    let total = sources.iter().filter_map(Source::size).sum();
    ctl.bytes_total.store(total, Relaxed);
    let names: Vec<String> = sources.iter().map(Source::name).collect();
    let appender = Appender::begin(table, &joined(&names), opts.merge)
        .with_schedule(opts.schedule)?
        .with_memory_budget(opts.memory_budget);
    let threads = install(opts.threads, rayon::current_num_threads)?;
    let ((bytes, units, rejects), published) = appender.run(ctl, None, threads, |appender| {
        let order = Order::new(appender, &names, opts.threads);
        // drivers take the sources in order; each parses its source on the pool
        let next = AtomicUsize::new(0);
        let drive = || {
            loop {
                let i = next.fetch_add(1, Relaxed);
                let Some(source) = sources.get(i) else {
                    return;
                };
                match parse_one(&order, i, source, &scan, opts, ctl) {
                    Ok((parsed, sink)) => order.finish(i, parsed, sink),
                    Err(e) => order.fail(i, e),
                }
            }
        };
        std::thread::scope(|s| {
            for _ in 1..threads.clamp(1, MAX_DRIVERS).min(sources.len()) {
                // a driver that cannot start leaves its sources to the others
                let _ = std::thread::Builder::new()
                    .name("wireload-files".into())
                    .spawn_scoped(s, drive);
            }
            drive();
        });
        let (bytes, units, rejects) = order.result()?;
        // each source kept to the limit alone: the load keeps to it in all
        match opts.reject_limit {
            Some(limit) if rejects.count > limit => Err(LoadError::TooManyRejects {
                rejected: rejects.count,
                limit,
                first: Box::new(rejects.kept.first().cloned().ok_or_else(|| {
                    LoadError::Internal("records were rejected but none was kept".into())
                })?),
            }),
            _ => Ok((bytes, units, rejects)),
        }
    })?;
    Ok(LoadReport {
        table: table.name().to_string(),
        rows: published.rows,
        bytes,
        seconds: t0.elapsed().as_secs_f64(),
        chunks: units,
        merge_seconds: published.merge_seconds,
        merge_steps: published.merge_steps,
        rejected: rejects.count,
        rejects: rejects.kept,
    })
}

/// Most sources parsed at once: each holds a few blocks when streamed (decoded), and a
/// few sources at once keep the pool busy with small files.
const MAX_DRIVERS: usize = 16;

/// The name the appender gives the whole load (in key errors found across sources).
fn joined(names: &[String]) -> String {
    match names {
        [first, .., last] if names.len() > 3 => {
            format!("{first} ... {last} ({} files)", names.len())
        }
        _ => names.join(", "),
    }
}

/// What a source's parse made: (CSV bytes parsed, units, the records it rejected).
type Parsed = (u64, usize, RejectLog);

/// The buffers of a unit kept until its source's turn: (unit number in the source,
/// buffers, sites).
type Kept = (usize, Vec<Option<RecordBatch>>, Sites);

/// Parses source `i`, handing its units to `order`.
fn parse_one<'o, 'a, 't>(
    order: &'o Order<'a, 't>,
    i: usize,
    source: &Source,
    scan: &ScanConfig,
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<(Parsed, FileSink<'o, 'a, 't>), LoadError> {
    if ctl.cancel.load(Relaxed) {
        return Err(LoadError::Cancelled);
    }
    if order.failed_before(i) {
        return Err(LoadError::Options(format!(
            "not loaded: a file before {} failed",
            order.names[i]
        )));
    }
    let name = &order.names[i];
    let def = order.appender.def();
    let sink = FileSink {
        order,
        index: i,
        base: order.turn_of(i),
        kept: Mutex::default(),
    };
    let (input, parse_ctl) = pipeline::open(source, ctl, opts)?;
    let parsed = match input {
        Input::Whole(whole) => install(opts.threads, || {
            let data = whole.bytes();
            let start = data_start(data, scan, opts.dialect.header, name)?;
            pipeline::check_whole(data, opts, name)?;
            // the chunk tasks count the records' bytes
            ctl.bytes_done.fetch_add(start as u64, Relaxed);
            let sample = &data[start..(start + (1 << 20)).min(data.len())];
            let parse = CsvParse::new(def, opts, name.clone(), sample)?;
            let records = Records {
                data,
                start,
                chunks: parse.chunker().chunks(data, start),
                lines: None,
                // not whole: the input is unmapped before the load publishes, so rows of
                // unique keys carry their lines
                origin: Origin {
                    byte: 0,
                    lines: 0,
                    whole: false,
                },
                release: Some(&whole),
            };
            let units = parse.parse_window(records, 0, &sink, &parse_ctl)?;
            Ok::<_, LoadError>((data.len() as u64, units, parse.take_rejects()))
        })??,
        // read on this thread, each window parsed on the pool: a slow stream keeps no pool
        // thread waiting
        Input::Stream(blocks) => {
            pipeline::stream_windows(def, blocks, scan, opts, &parse_ctl, name, &sink)?
        }
    };
    Ok((parsed, sink))
}

/// Where the sources of a load hand their units: numbers them across sources, in order.
struct Order<'a, 't> {
    appender: &'a Appender<'t>,
    names: &'a [String],
    /// the load's threads (`LoadOptions::threads`)
    threads: Option<usize>,
    turns: Mutex<Turns>,
    /// the lowest source that failed (usize::MAX: none); sources after it stop
    failed: AtomicUsize,
    /// the error of each source that failed
    errors: Mutex<BTreeMap<usize, LoadError>>,
}

/// Whose turn it is to hand units over.
#[derive(Default)]
struct Turns {
    /// the first source not handed over whole yet
    next: usize,
    /// its first unit number
    base: usize,
    /// CSV bytes of the sources before it
    bytes: u64,
    /// the records the sources before it rejected
    rejects: RejectLog,
    /// sources parsed before their turn came
    waiting: BTreeMap<usize, (Parsed, Vec<Kept>)>,
}

impl<'a, 't> Order<'a, 't> {
    fn new(appender: &'a Appender<'t>, names: &'a [String], threads: Option<usize>) -> Self {
        Order {
            appender,
            names,
            threads,
            turns: Mutex::default(),
            failed: AtomicUsize::new(usize::MAX),
            errors: Mutex::default(),
        }
    }

    /// The first unit number of source `i`, when its turn has come.
    fn turn_of(&self, i: usize) -> Option<usize> {
        let turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        (turns.next == i).then_some(turns.base)
    }

    /// True when a source before `i` failed: `i` may stop.
    fn failed_before(&self, i: usize) -> bool {
        self.failed.load(Relaxed) < i
    }

    /// Source `i` failed with `e`.
    fn fail(&self, i: usize, e: LoadError) {
        self.failed.fetch_min(i, Relaxed);
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(i)
            .or_insert(e);
    }

    /// Hands unit `n` (numbered across sources) of source `i` to the appender (`charged`:
    /// counted against the memory budget already); an error of its rows names the source.
    fn hand_over(
        &self,
        i: usize,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        charged: bool,
    ) -> Result<(), LoadError> {
        let taken = if charged {
            self.appender.take_charged(n, buffers, sites, None)
        } else {
            self.appender.take(n, buffers, sites, None)
        };
        taken.map_err(|e| rename(e, self.appender.file(), &self.names[i]))
    }

    /// Source `i` is parsed: when its turn has come, hands over what it kept and what the
    /// sources after it that wait kept.
    fn finish(&self, i: usize, parsed: Parsed, sink: FileSink<'_, 'a, 't>) {
        let kept = sink.kept.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut ready = Vec::new();
        {
            let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
            turns.waiting.insert(i, (parsed, kept));
            loop {
                let next = turns.next;
                let Some(((bytes, units, rejects), kept)) = turns.waiting.remove(&next) else {
                    break;
                };
                turns.rejects.count += rejects.count;
                let room = turns.rejects.room();
                turns
                    .rejects
                    .kept
                    .extend(rejects.kept.into_iter().take(room));
                if !kept.is_empty() {
                    ready.push((next, turns.base, kept));
                }
                turns.base += units;
                turns.bytes += bytes;
                turns.next += 1;
            }
        }
        // outside the lock: other sources finish meanwhile
        for (source, base, kept) in ready {
            let handed = install(self.threads, || {
                kept.into_par_iter().try_for_each(|(n, buffers, sites)| {
                    self.hand_over(source, base + n, buffers, sites, true)
                })
            })
            .and_then(|handed| handed);
            if let Err(e) = handed {
                self.fail(source, e);
            }
        }
    }

    /// (CSV bytes, units, rejects) of the load, or the error of the first source that failed.
    fn result(self) -> Result<Parsed, LoadError> {
        let errors = self.errors.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some((_, e)) = errors.into_iter().next() {
            return Err(e);
        }
        let turns = self.turns.into_inner().unwrap_or_else(|e| e.into_inner());
        if turns.next != self.names.len() {
            return Err(LoadError::Internal(format!(
                "{} of {} sources handed over",
                turns.next,
                self.names.len()
            )));
        }
        Ok((turns.bytes, turns.base, turns.rejects))
    }
}

/// The sink of one source: its units go to the appender numbered after the units of the
/// sources before it, or are kept until that number is known.
struct FileSink<'o, 'a, 't> {
    order: &'o Order<'a, 't>,
    index: usize,
    /// its first unit number, when its turn had come when it started
    base: Option<usize>,
    kept: Mutex<Vec<Kept>>,
}

impl Sink for FileSink<'_, '_, '_> {
    fn wants_sites(&self) -> bool {
        self.order.appender.wants_sites()
    }

    fn failed(&self) -> bool {
        self.order.failed_before(self.index) || self.order.appender.stopped()
    }

    fn take(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        _input: Option<&[u8]>,
    ) -> Result<(), LoadError> {
        match self.base {
            Some(base) => self
                .order
                .hand_over(self.index, base + n, buffers, sites, false),
            None => {
                // kept until the source's turn: they count against the budget now
                self.order.appender.charge(&buffers)?;
                self.kept
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((n, buffers, sites));
                Ok(())
            }
        }
    }
}

/// `e` with the rows it names in `from` named in `to` (a key error inside one source's
/// buffer names the source, not the whole load).
fn rename(mut e: LoadError, from: &str, to: &str) -> LoadError {
    let fix = |site: &mut KeySite| match site {
        KeySite::Line { file, .. } | KeySite::Row { file, .. } if file == from => {
            *file = to.to_string();
        }
        _ => {}
    };
    match &mut e {
        LoadError::NullKey { site, .. } => fix(site),
        LoadError::DuplicateKey { first, second, .. } => {
            fix(first);
            fix(second);
        }
        _ => {}
    }
    e
}

/// See [`crate::expand_paths`].
pub(crate) fn expand_paths(pattern: &str) -> Result<Vec<PathBuf>, LoadError> {
    if !pattern.contains(['*', '?', '[']) {
        return Ok(vec![PathBuf::from(pattern)]);
    }
    let options = glob::MatchOptions {
        // as a shell does: `*` does not match hidden files
        require_literal_leading_dot: true,
        ..glob::MatchOptions::new()
    };
    let entries = glob::glob_with(pattern, options)
        .map_err(|e| LoadError::Options(format!("invalid file pattern '{pattern}': {e}")))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| LoadError::Io {
            path: e.path().display().to_string(),
            source: e.into(),
        })?;
        if path.is_file() {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(LoadError::Io {
            path: pattern.to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no file matches the pattern",
            ),
        });
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_is_named_by_its_files() {
        let names = |n: usize| (1..=n).map(|i| format!("f{i}.csv")).collect::<Vec<_>>();
        assert_eq!(joined(&names(2)), "f1.csv, f2.csv");
        assert_eq!(joined(&names(3)), "f1.csv, f2.csv, f3.csv");
        assert_eq!(joined(&names(5)), "f1.csv ... f5.csv (5 files)");
    }

    #[test]
    fn key_sites_are_renamed_to_their_file() {
        let e = LoadError::NullKey {
            index: "pk".into(),
            column: "id".into(),
            site: KeySite::Line {
                file: "a, b".into(),
                line: 3,
                byte: 9,
            },
        };
        assert_eq!(
            rename(e, "a, b", "b").to_string(),
            "null value in column \"id\" violates unique constraint \"pk\" at b: line 3, byte 9"
        );
    }
}
