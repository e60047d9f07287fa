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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray};
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
/// columns are plain) and of `added` (chunks about to be appended, per partition: columns
/// plain, or encoded against a dictionary of their own, a Shared Loading client's),
/// deciding undecided `auto` columns first. `version`'s chunks are re-encoded in place where
/// their dictionary grew; returns `added` encoded (and decoded where a column is stored
/// plain).
pub(crate) fn encode(
    def: &TableDef,
    version: &mut TableVersion,
    added: Vec<Vec<RecordBatch>>,
) -> Result<Vec<Vec<RecordBatch>>, LoadError> {
    if version.encodings.iter().all(|e| *e == Encoding::Plain) {
        return decode_plain(def, version, added);
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
    // every chunk of a partition, old then added: the old ones whose column is not encoded
    // yet and all added ones are fragments to merge
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
        .filter(|&(p, c)| (0..chunks[p].len()).any(|k| !stored(&chunks[p], old[p], k, c)))
        .collect();
    let merged = merge_jobs(def, version, &chunks, &old, &jobs)?;
    // auto verdicts over every partition of a tentative column
    let mut rejected = Vec::new();
    for &c in &tentative {
        let (mut plain, mut encoded, mut entries) = (0usize, 0usize, 0usize);
        for ((p, _), m) in jobs.iter().zip(&merged).filter(|((_, jc), _)| *jc == c) {
            for b in &chunks[*p] {
                plain += column_bytes(&plain_column(def, b.column(c), c)?);
            }
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
        let (encoded, fragments): (Vec<usize>, Vec<usize>) =
            (0..chunks[p].len()).partition(|&k| stored(&chunks[p], old[p], k, c));
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
    decode_plain(def, version, out)
}

/// True when column `c` of chunk `k` of a partition (whose first `old` chunks are the
/// table's) is stored against the partition's dictionary: an old chunk's encoded column.
fn stored(chunks: &[RecordBatch], old: usize, k: usize, c: usize) -> bool {
    k < old && wireload_storage::is_dictionary(chunks[k].column(c).data_type())
}

/// Column `c` of a chunk as plain values.
fn plain_column(def: &TableDef, column: &ArrayRef, c: usize) -> Result<ArrayRef, LoadError> {
    let ty = wireload_storage::dictionary::value_type(column);
    wireload_storage::conform_array(column, &ty).map_err(|e| LoadError::Mismatch {
        file: def.name.clone(),
        message: format!(
            "column \"{}\": cannot decode: {e}",
            def.schema.columns[c].name
        ),
    })
}

/// `added` with the encoded columns of columns stored plain decoded (a client encoded
/// them, or `auto` decided against a dictionary).
fn decode_plain(
    def: &TableDef,
    version: &TableVersion,
    added: Vec<Vec<RecordBatch>>,
) -> Result<Vec<Vec<RecordBatch>>, LoadError> {
    added
        .into_iter()
        .map(|chunks| {
            chunks
                .into_iter()
                .map(|b| {
                    let swaps = (0..b.num_columns())
                        .filter(|&c| {
                            version.encodings[c] != Encoding::Dictionary
                                && wireload_storage::is_dictionary(b.column(c).data_type())
                        })
                        .map(|c| Ok((c, plain_column(def, b.column(c), c)?)))
                        .collect::<Result<Vec<_>, LoadError>>()?;
                    if swaps.is_empty() {
                        Ok(b)
                    } else {
                        replace_columns(&b, swaps).map_err(|e| internal(def, e))
                    }
                })
                .collect()
        })
        .collect()
}

/// Merges partition column `(p, c)` of every job, at most [`MERGE_COLUMNS`] at once.
fn merge_jobs(
    def: &TableDef,
    version: &TableVersion,
    chunks: &[Vec<RecordBatch>],
    old: &[usize],
    jobs: &[(usize, usize)],
) -> Result<Vec<MergedColumn>, LoadError> {
    let results: Vec<Mutex<Option<Result<MergedColumn, LoadError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let j = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(p, c)) = jobs.get(j) else { break };
            let (existing, incoming): (Vec<usize>, Vec<usize>) =
                (0..chunks[p].len()).partition(|&k| stored(&chunks[p], old[p], k, c));
            let existing: Vec<ArrayRef> = existing
                .into_iter()
                .map(|k| chunks[p][k].column(c).clone())
                .collect();
            let incoming = incoming
                .into_iter()
                .map(|k| fragment(chunks[p][k].column(c)))
                .collect();
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

/// A chunk's column as a fragment to merge: plain values, or a client's dictionary and
/// codes (checked by the merge).
fn fragment(column: &ArrayRef) -> FragmentColumn {
    match column.as_any_dictionary_opt() {
        Some(d) => FragmentColumn::Encoded {
            dictionary: Arc::clone(d.values()),
            codes: Arc::new(arrow::array::make_array(d.keys().to_data())),
        },
        None => FragmentColumn::Plain(Arc::clone(column)),
    }
}

/// True when samples of column `c` of `added` repeat values (fewer than half distinct).
fn repeats(def: &TableDef, added: &[Vec<RecordBatch>], c: usize) -> Result<bool, LoadError> {
    let all: Vec<&RecordBatch> = added.iter().flatten().collect();
    let step = all.len().div_ceil(AUTO_SAMPLES).max(1);
    for b in all.iter().step_by(step) {
        let column = b.column(c);
        let sample = plain_column(def, &column.slice(0, column.len().min(AUTO_SAMPLE_ROWS)), c)?;
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
