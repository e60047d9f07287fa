//! The dictionary step of the append/publish stage: chunks about to join a table with
//! dictionary columns get those columns encoded against their partition's order-preserving
//! dictionary ([`wireload_storage::dictionary::merge_column`]: fragment dictionaries sorted,
//! merged with each other and with the partition's, old codes re-encoded when it grows).
//! At most [`MERGE_COLUMNS`] partition columns merge at once, as in SAP HANA.
//!
//! `COMPRESSION auto` columns are decided here, by the first write that brings at least
//! [`AUTO_MIN_ROWS`] rows: a column is dictionary-encoded when samples of its fragments repeat
//! values (fewer than half distinct), its partitions' dictionaries stay within
//! [`AUTO_MAX_ENTRIES`] entries (two-byte codes, dictionaries that stay in cache when
//! decoded) and dictionary plus codes take at most [`AUTO_MAX_RATIO`] of the plain bytes.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{Array, ArrayRef};
use arrow::record_batch::RecordBatch;
use wireload_storage::dictionary::{FragmentColumn, MergedColumn, encode_fragment, merge_column};
use wireload_storage::{Encoding, TableDef, TableVersion, column_bytes, replace_columns};

use crate::error::LoadError;

/// Partition columns merged at once.
pub const MERGE_COLUMNS: usize = 2;
/// Rows a write must bring before `COMPRESSION auto` decides.
pub const AUTO_MIN_ROWS: usize = 10_000;
/// Most dictionary entries per partition `auto` accepts.
pub const AUTO_MAX_ENTRIES: usize = 1 << 16;
/// Largest (dictionary + codes) / plain bytes `auto` accepts.
pub const AUTO_MAX_RATIO: f64 = 0.5;
/// Fragments sampled (and rows of each) to see whether an `auto` column repeats values.
const AUTO_SAMPLES: usize = 8;
const AUTO_SAMPLE_ROWS: usize = 16_384;

/// Encodes the dictionary columns of `version` (which may hold chunks whose dictionary
/// columns are plain) and of `added` (plain chunks about to be appended, per partition),
/// deciding undecided `auto` columns first. `version`'s chunks are re-encoded in place where
/// their dictionary grew; returns `added` encoded.
pub(crate) fn encode(
    def: &TableDef,
    version: &mut TableVersion,
    added: Vec<Vec<RecordBatch>>,
) -> Result<Vec<Vec<RecordBatch>>, LoadError> {
    if version.encodings.iter().all(|e| *e == Encoding::Plain) {
        return Ok(added);
    }
    let rows: usize = added.iter().flatten().map(RecordBatch::num_rows).sum();
    let mut tentative = Vec::new();
    if rows >= AUTO_MIN_ROWS {
        for c in 0..version.encodings.len() {
            if version.encodings[c] == Encoding::Undecided {
                if repeats(def, &added, c)? {
                    tentative.push(c);
                } else {
                    version.encodings[c] = Encoding::Plain;
                }
            }
        }
    }
    let columns: Vec<usize> = (0..version.encodings.len())
        .filter(|&c| version.encodings[c] == Encoding::Dictionary || tentative.contains(&c))
        .collect();
    // every chunk of a partition, old then added: those whose column is not encoded yet
    // are fragments to merge
    let mut chunks: Vec<Vec<RecordBatch>> = version
        .partitions
        .iter()
        .map(|p| p.chunks.clone())
        .collect();
    let old: Vec<usize> = chunks.iter().map(Vec::len).collect();
    for (p, new) in chunks.iter_mut().zip(added) {
        p.extend(new);
    }
    let jobs: Vec<(usize, usize)> = (0..chunks.len())
        .flat_map(|p| columns.iter().map(move |&c| (p, c)))
        .filter(|&(p, c)| {
            chunks[p]
                .iter()
                .any(|b| !wireload_storage::is_dictionary(b.column(c).data_type()))
        })
        .collect();
    let merged = merge_jobs(def, version, &chunks, &jobs)?;
    // auto verdicts over every partition of a tentative column
    let mut rejected = Vec::new();
    for &c in &tentative {
        let (mut plain, mut encoded, mut entries) = (0usize, 0usize, 0usize);
        for ((p, _), m) in jobs.iter().zip(&merged).filter(|((_, jc), _)| *jc == c) {
            plain += chunks[*p]
                .iter()
                .map(|b| column_bytes(b.column(c)))
                .sum::<usize>();
            encoded += m.incoming.iter().map(column_bytes).sum::<usize>()
                + m.dictionary.to_data().get_slice_memory_size().unwrap_or(0);
            entries = entries.max(m.dictionary.len());
        }
        let keep = entries <= AUTO_MAX_ENTRIES && encoded as f64 <= AUTO_MAX_RATIO * plain as f64;
        version.encodings[c] = if keep {
            Encoding::Dictionary
        } else {
            rejected.push(c);
            Encoding::Plain
        };
    }
    // the merged columns into their chunks
    let mut replaced: Vec<Vec<Vec<(usize, ArrayRef)>>> =
        chunks.iter().map(|p| vec![Vec::new(); p.len()]).collect();
    for (&(p, c), m) in jobs.iter().zip(merged) {
        if rejected.contains(&c) {
            continue;
        }
        let MergedColumn {
            dictionary,
            existing,
            incoming,
        } = m;
        let (encoded, fragments): (Vec<usize>, Vec<usize>) = (0..chunks[p].len())
            .partition(|&k| wireload_storage::is_dictionary(chunks[p][k].column(c).data_type()));
        if let Some(existing) = existing {
            for (k, a) in encoded.into_iter().zip(existing) {
                replaced[p][k].push((c, a));
            }
        }
        for (k, a) in fragments.into_iter().zip(incoming) {
            replaced[p][k].push((c, a));
        }
        version.partitions[p].set_dictionary(c, dictionary);
    }
    let mut out = Vec::with_capacity(chunks.len());
    for (p, (batches, swaps)) in chunks.into_iter().zip(replaced).enumerate() {
        let mut batches: Vec<RecordBatch> = batches
            .into_iter()
            .zip(swaps)
            .map(|(b, s)| {
                if s.is_empty() {
                    Ok(b)
                } else {
                    replace_columns(&b, s).map_err(|e| internal(def, e))
                }
            })
            .collect::<Result<_, _>>()?;
        let new = batches.split_off(old[p]);
        version.partitions[p].chunks = batches;
        out.push(new);
    }
    Ok(out)
}

/// Merges partition column `(p, c)` of every job, at most [`MERGE_COLUMNS`] at once.
fn merge_jobs(
    def: &TableDef,
    version: &TableVersion,
    chunks: &[Vec<RecordBatch>],
    jobs: &[(usize, usize)],
) -> Result<Vec<MergedColumn>, LoadError> {
    let results: Vec<Mutex<Option<Result<MergedColumn, LoadError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let j = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(p, c)) = jobs.get(j) else { break };
            let (existing, incoming): (Vec<ArrayRef>, Vec<ArrayRef>) = chunks[p]
                .iter()
                .map(|b| b.column(c).clone())
                .partition(|a| wireload_storage::is_dictionary(a.data_type()));
            let incoming = incoming.into_iter().map(FragmentColumn::Plain).collect();
            let dictionary = version.partitions[p].dictionary(c);
            let r =
                merge_column(dictionary, &existing, incoming).map_err(|e| LoadError::Mismatch {
                    file: def.name.clone(),
                    message: format!(
                        "column \"{}\": dictionary merge failed: {e}",
                        def.schema.columns[c].name
                    ),
                });
            *results[j].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    };
    let workers = MERGE_COLUMNS.min(jobs.len());
    rayon::scope(|s| {
        for _ in 1..workers {
            s.spawn(|_| work());
        }
        work();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect()
}

/// True when samples of column `c` of `added` repeat values (fewer than half distinct).
fn repeats(def: &TableDef, added: &[Vec<RecordBatch>], c: usize) -> Result<bool, LoadError> {
    let all: Vec<&RecordBatch> = added.iter().flatten().collect();
    let step = all.len().div_ceil(AUTO_SAMPLES).max(1);
    for b in all.iter().step_by(step) {
        let column = b.column(c);
        let sample = column.slice(0, column.len().min(AUTO_SAMPLE_ROWS));
        let values = sample.len() - sample.null_count();
        if values < 1024 {
            continue;
        }
        let (dictionary, _) = encode_fragment(&sample).map_err(|e| LoadError::Mismatch {
            file: def.name.clone(),
            message: format!(
                "column \"{}\": cannot sample for COMPRESSION auto: {e}",
                def.schema.columns[c].name
            ),
        })?;
        if dictionary.len() * 2 > values {
            return Ok(false);
        }
    }
    Ok(true)
}

fn internal(def: &TableDef, e: arrow::error::ArrowError) -> LoadError {
    LoadError::Mismatch {
        file: def.name.clone(),
        message: format!("internal: cannot place encoded columns: {e}"),
    }
}
