//! The dictionary step of the append/publish stage: chunks about to join a table with
//! dictionary columns get those columns encoded against their partition's order-preserving
//! dictionary ([`merge_column`]: fragment dictionaries sorted,
//! merged with each other and with the partition's, old codes re-encoded when it grows).
//! At most [`MERGE_COLUMNS`] partition columns merge at once, as in SAP HANA.
//!
//! A partition column's chunks form *dictionary runs*: consecutive chunks coded against one
//! dictionary. A write merges into the last run (the *open* run, whose dictionary the
//! partition holds) and re-encodes only its chunks; once the open run holds
//! [`DICTIONARY_RUN_ROWS`] rows, the next write seals it (its chunks keep their dictionary)
//! and starts a new run. So a merge never re-encodes more than a run, however large the
//! table has grown, where one dictionary per partition made every growing merge touch every
//! row before it.
//!
//! A Shared Loading client's partition arrives coded against a dictionary of its own, which
//! the merge takes as a run as it is (the paper's "create a new partition to avoid updating
//! the dictionary compression"): fragments all coded against one such dictionary start a
//! run, or extend the run of that very dictionary, with nothing merged or re-encoded; the
//! next partition seals an open run of [`ADOPT_AFTER_ROWS`] rows or more early (smaller
//! open runs take it in as any write). A step holding several client partitions (their
//! other columns plain, which gain from larger steps) makes each partition's coded columns a
//! run of its own; steps of coded columns only end at a client partition's boundary, and
//! no step mixes plain and coded fragments of a column ([`same_coding`]).
//!
//! `COMPRESSION auto` columns are decided here, by the first write that brings at least
//! [`AUTO_MIN_ROWS`] rows: a column is dictionary-encoded when samples of its fragments repeat
//! values (fewer than half distinct), its partitions' dictionaries stay within
//! [`AUTO_MAX_ENTRIES`] entries (two-byte codes, dictionaries that stay in cache when
//! decoded) and dictionary plus codes take at most [`AUTO_MAX_RATIO`] of the plain bytes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayData, ArrayRef};
use arrow::record_batch::RecordBatch;
use wireload_storage::dictionary::DictionaryError;
use wireload_storage::{
    Partition, StoredAs, TableDef, TableVersion, coded_against, column_bytes, replace_columns,
};

use crate::dictionary::{FragmentColumn, MergedColumn, encode_fragment, merge_column};
use crate::error::LoadError;
use crate::publish::Unit;

/// Partition columns merged at once.
pub const MERGE_COLUMNS: usize = 2;
/// Rows of an open dictionary run at which the next write seals it and starts a new run.
pub const DICTIONARY_RUN_ROWS: usize = 1 << 20;
/// Rows an open run must hold for a write of fragments over one dictionary of their own (a
/// Shared Loading client's partition) to seal it early and become a run as it is, instead
/// of being merged into it: smaller runs take the write in, so that many small pushes do not
/// make many small runs.
pub const ADOPT_AFTER_ROWS: usize = 1 << 16;
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
/// deciding undecided `auto` columns first. `version`'s chunks of an open run are
/// re-encoded in place where its dictionary grew; returns `added` encoded (and decoded where
/// a column is stored plain).
pub(crate) fn encode(
    def: &TableDef,
    version: &mut TableVersion,
    added: Vec<Vec<RecordBatch>>,
) -> Result<Vec<Vec<RecordBatch>>, LoadError> {
    encode_in_runs(def, version, added, RunRows::default())
}

/// Where runs end: an open run is sealed by the write after it holds `seal` rows, or by a
/// write of fragments over one dictionary of their own after it holds `adopt` rows.
#[derive(Debug, Clone, Copy)]
struct RunRows {
    seal: usize,
    adopt: usize,
}

impl Default for RunRows {
    fn default() -> Self {
        RunRows {
            seal: DICTIONARY_RUN_ROWS,
            adopt: ADOPT_AFTER_ROWS,
        }
    }
}

/// [`encode`] with runs ending at `run_rows`.
fn encode_in_runs(
    def: &TableDef,
    version: &mut TableVersion,
    added: Vec<Vec<RecordBatch>>,
    run_rows: RunRows,
) -> Result<Vec<Vec<RecordBatch>>, LoadError> {
    if version.stored_as.iter().all(|e| *e == StoredAs::Plain) {
        return decode_plain(def, version, added);
    }
    let rows: usize = added.iter().flatten().map(RecordBatch::num_rows).sum();
    let mut tentative = Vec::new();
    if rows >= AUTO_MIN_ROWS {
        for c in 0..version.stored_as.len() {
            if version.stored_as[c] == StoredAs::Undecided {
                if repeats(def, &added, c)? {
                    tentative.push(c);
                } else {
                    version.stored_as[c] = StoredAs::Plain;
                }
            }
        }
    }
    let columns: Vec<usize> = (0..version.stored_as.len())
        .filter(|&c| version.stored_as[c] == StoredAs::Dictionary || tentative.contains(&c))
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
    let (jobs, plans): (Vec<(usize, usize)>, Vec<Plan>) = (0..chunks.len())
        .flat_map(|p| columns.iter().map(move |&c| (p, c)))
        .map(|(p, c)| {
            // a column `auto` has not decided on keeps one dictionary per step: its verdict
            // weighs the step's dictionary
            let adopt_groups = !tentative.contains(&c);
            let partition = &version.partitions[p];
            let plan = Plan::of(partition, &chunks[p], old[p], c, run_rows, adopt_groups);
            ((p, c), plan)
        })
        .filter(|(_, plan)| plan.roles.contains(&Role::Fragment))
        .unzip();
    let merged = merge_jobs(def, &chunks, &jobs, &plans)?;
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
        version.stored_as[c] = if keep {
            StoredAs::Dictionary
        } else {
            rejected.push(c);
            StoredAs::Plain
        };
    }
    // the merged columns into their chunks
    let mut replaced: Vec<Vec<Vec<(usize, ArrayRef)>>> =
        chunks.iter().map(|p| vec![Vec::new(); p.len()]).collect();
    for ((&(p, c), m), plan) in jobs.iter().zip(merged).zip(&plans) {
        if rejected.contains(&c) {
            continue;
        }
        let MergedColumn {
            dictionary,
            existing,
            incoming,
        } = m;
        let (encoded, fragments) = (plan.chunks(Role::Open), plan.chunks(Role::Fragment));
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

/// What the merge of a partition column does with one chunk's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Coded against the open run's dictionary: re-encoded when the dictionary grows.
    Open,
    /// Coded against a sealed run's dictionary: left as it is.
    Sealed,
    /// Plain, or coded against a dictionary of its own (a client's): merged into the run.
    Fragment,
}

/// The merge of one partition column: the dictionary it extends and each chunk's role.
#[derive(Debug)]
struct Plan {
    /// The open run's dictionary; None when the merge starts a new run.
    open: Option<ArrayRef>,
    /// The role of each chunk, old then added.
    roles: Vec<Role>,
    /// The added chunks in groups, each coded against a client's dictionary of its own
    /// (consecutive partitions of one push), counted in chunks: each group becomes a run as
    /// it is. Empty: the fragments merge into one run.
    groups: Vec<usize>,
}

impl Plan {
    /// The plan for column `c` of `partition`'s `chunks`, whose first `old` are the table's:
    /// the open run is sealed when it holds `run_rows.seal` rows or more, or `run_rows.adopt`
    /// or more and the added chunks are all coded against one other dictionary (a client's
    /// partition, which the merge then takes as a run as it is), or, with `adopt_groups`, against
    /// several in turn ([`client_groups`]: each a run as it is).
    fn of(
        partition: &Partition,
        chunks: &[RecordBatch],
        old: usize,
        c: usize,
        run_rows: RunRows,
        adopt_groups: bool,
    ) -> Plan {
        let open = partition.dictionary(c);
        let is_open = |d: &ArrayData| open.is_some_and(|o| o.to_data().ptr_eq(d));
        let coded: Vec<Option<ArrayData>> =
            chunks.iter().map(|b| coded_against(b.column(c))).collect();
        let roles = coded
            .iter()
            .enumerate()
            .map(|(k, d)| match d {
                None => Role::Fragment,
                Some(_) if k >= old => Role::Fragment,
                Some(d) if is_open(d) => Role::Open,
                Some(_) => Role::Sealed,
            })
            .collect();
        let mut plan = Plan {
            open: open.cloned(),
            roles,
            groups: Vec::new(),
        };
        let open_rows = plan.open_rows(chunks);
        let added = coded.get(old..).unwrap_or_default();
        if let Some(groups) = client_groups(added, &chunks[old..], open, run_rows.adopt)
            .filter(|_| adopt_groups && (open.is_none() || open_rows >= run_rows.adopt))
        {
            // several client partitions: each a run as it is, the open run sealed
            for role in plan.roles.iter_mut().filter(|r| **r == Role::Open) {
                *role = Role::Sealed;
            }
            plan.open = None;
            plan.groups = groups;
            return plan;
        }
        // the added chunks all coded against one dictionary that is not the open run's
        let foreign = || match added {
            [Some(first), rest @ ..] => {
                !is_open(first)
                    && rest
                        .iter()
                        .all(|d| d.as_ref().is_some_and(|d| d.ptr_eq(first)))
            }
            _ => false,
        };
        if open_rows >= run_rows.seal || (open_rows >= run_rows.adopt && foreign()) {
            for role in plan.roles.iter_mut().filter(|r| **r == Role::Open) {
                *role = Role::Sealed;
            }
            plan.open = None;
        }
        plan
    }

    /// The chunks of role `role`, in order.
    fn chunks(&self, role: Role) -> Vec<usize> {
        (0..self.roles.len())
            .filter(|&k| self.roles[k] == role)
            .collect()
    }

    /// Rows of `chunks` (the plan's) that the merge re-encodes when the dictionary grows.
    fn open_rows(&self, chunks: &[RecordBatch]) -> usize {
        self.chunks(Role::Open)
            .into_iter()
            .map(|k| chunks[k].num_rows())
            .sum()
    }
}

/// The added chunks (`coded`, each chunk's dictionary, and the chunks) in groups of
/// consecutive chunks coded against one dictionary, counted in chunks, when there are two
/// groups or more, every chunk is coded, the first group's dictionary is not the open run's
/// (`open`), and every group but the last holds `adopt` rows or more (a run sealed as soon
/// as the next begins); None otherwise.
fn client_groups(
    coded: &[Option<ArrayData>],
    chunks: &[RecordBatch],
    open: Option<&ArrayRef>,
    adopt: usize,
) -> Option<Vec<usize>> {
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut last: Option<&ArrayData> = None;
    for (d, b) in coded.iter().zip(chunks) {
        let d = d.as_ref()?;
        match (last, groups.last_mut()) {
            (Some(l), Some(g)) if l.ptr_eq(d) => *g = (g.0 + 1, g.1 + b.num_rows()),
            _ => groups.push((1, b.num_rows())),
        }
        last = Some(d);
    }
    let first = coded.first()?.as_ref()?;
    let fits = groups.len() >= 2
        && !open.is_some_and(|o| o.to_data().ptr_eq(first))
        && groups[..groups.len() - 1].iter().all(|g| g.1 >= adopt);
    fits.then(|| groups.into_iter().map(|g| g.0).collect())
}

/// Rows of the largest open run of `version`'s dictionary columns that its next write
/// re-encodes when the dictionary grows (0 where that write starts a new run).
pub(crate) fn open_run_rows(version: &TableVersion) -> usize {
    open_rows(version, RunRows::default())
}

/// [`open_run_rows`] with runs ending at `run_rows`.
fn open_rows(version: &TableVersion, run_rows: RunRows) -> usize {
    let columns =
        (0..version.stored_as.len()).filter(|&c| version.stored_as[c] == StoredAs::Dictionary);
    columns
        .flat_map(|c| version.partitions.iter().map(move |p| (p, c)))
        .map(|(p, c)| {
            Plan::of(p, &p.chunks, p.chunks.len(), c, run_rows, false).open_rows(&p.chunks)
        })
        .max()
        .unwrap_or(0)
}

/// The dictionary each column of `unit` is coded against (None: plain); empty for a unit
/// without rows.
pub(crate) fn coding(unit: &Unit) -> Vec<Option<ArrayData>> {
    let first = unit.buffers.iter().flatten().next();
    first.map_or_else(Vec::new, |b| {
        b.columns()
            .iter()
            .map(|a| coded_against(a.as_ref()))
            .collect()
    })
}

/// True when one merge step may take units of codings `a` and `b`: each column plain in
/// both or coded in both, and where some column is coded against two dictionaries (two
/// client partitions), some column plain in both. Such a column's merge gains from larger
/// steps (each re-encodes the open run), and [`Plan`] keeps every partition's coded
/// columns as runs of their own. A step of coded columns only takes one partition (it has
/// nothing to merge), nor does a step mix plain fragments (text a client left to the
/// server) with coded ones, which merged the coded ones into the open run.
pub(crate) fn same_coding(a: &[Option<ArrayData>], b: &[Option<ArrayData>]) -> bool {
    let (mut plain, mut apart) = (false, false);
    for (x, y) in a.iter().zip(b) {
        match (x, y) {
            (Some(x), Some(y)) => apart |= !x.ptr_eq(y),
            (None, None) => plain = true,
            _ => return false,
        }
    }
    plain || !apart
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
                            version.stored_as[c] != StoredAs::Dictionary
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
    chunks: &[Vec<RecordBatch>],
    jobs: &[(usize, usize)],
    plans: &[Plan],
) -> Result<Vec<MergedColumn>, LoadError> {
    let results: Vec<Mutex<Option<Result<MergedColumn, LoadError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let j = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(p, c)) = jobs.get(j) else { break };
            let plan = &plans[j];
            let existing: Vec<ArrayRef> = plan
                .chunks(Role::Open)
                .into_iter()
                .map(|k| chunks[p][k].column(c).clone())
                .collect();
            let incoming: Vec<FragmentColumn> = plan
                .chunks(Role::Fragment)
                .into_iter()
                .map(|k| fragment(chunks[p][k].column(c)))
                .collect();
            let r = if plan.groups.is_empty() {
                merge_column(plan.open.as_ref(), &existing, incoming)
            } else {
                merge_groups(&plan.groups, incoming)
            };
            let r = r.map_err(|e| LoadError::Mismatch {
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

/// Merges each group of `incoming` (counted in fragments, [`Plan::groups`]) as a run that
/// starts the column, as it is where its fragments share one checked dictionary; the
/// dictionary returned is the last group's, which stays open.
fn merge_groups(
    groups: &[usize],
    mut incoming: Vec<FragmentColumn>,
) -> Result<MergedColumn, DictionaryError> {
    let mut merged: Option<MergedColumn> = None;
    for &n in groups {
        let rest = incoming.split_off(n);
        let run = merge_column(None, &[], incoming)?;
        incoming = rest;
        merged = Some(match merged {
            None => run,
            Some(mut all) => {
                all.incoming.extend(run.incoming);
                all.dictionary = run.dictionary;
                all
            }
        });
    }
    Ok(merged.expect("a plan's groups are two at least"))
}

/// A chunk's column as a fragment to merge: plain values, or a dictionary array over a
/// client's dictionary (which the merge checks; the codes are in range by Arrow's
/// invariant, checked when the array was made).
fn fragment(column: &ArrayRef) -> FragmentColumn {
    if wireload_storage::is_dictionary(column.data_type()) {
        FragmentColumn::Coded(Arc::clone(column))
    } else {
        FragmentColumn::Plain(Arc::clone(column))
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

#[cfg(test)]
mod tests {
    use arrow::array::StringArray;
    use arrow::array::cast::AsArray as _;
    use wireload_storage::{Compression, Partitioning, Table, plain_batch};
    use wireload_types::{ColumnDef, SqlType, TableSchema};

    use super::*;

    fn def() -> TableDef {
        let column = ColumnDef {
            name: "s".into(),
            ty: SqlType::Text,
            nullable: true,
        };
        let schema = TableSchema {
            columns: vec![column],
        };
        TableDef::new("t", schema, Partitioning::Single)
            .unwrap()
            .with_compression(vec![Compression::Dictionary])
            .unwrap()
    }

    /// Appends a chunk of `values` to `version`, open runs sealed at 4 rows.
    fn write(def: &TableDef, version: &mut TableVersion, values: &[&str]) {
        let batch = RecordBatch::try_new(
            Arc::clone(&def.arrow_schema),
            vec![Arc::new(StringArray::from(values.to_vec()))],
        )
        .unwrap();
        let added = encode_in_runs(def, version, vec![vec![batch]], RUNS).unwrap();
        version.append(added);
    }

    /// Appends a chunk coded against `dictionary` (a client's) with `codes`; returns its
    /// column as handed over.
    fn write_coded(
        def: &TableDef,
        version: &mut TableVersion,
        dictionary: &ArrayRef,
        codes: &[u8],
    ) -> ArrayRef {
        let batch = coded(dictionary, codes);
        let column = Arc::clone(batch.column(0));
        let added = encode_in_runs(def, version, vec![vec![batch]], RUNS).unwrap();
        version.append(added);
        column
    }

    /// Runs of the tests: sealed at 4 rows, or at 2 by a client's partition.
    const RUNS: RunRows = RunRows { seal: 4, adopt: 2 };

    /// The dictionary of each chunk.
    fn dictionaries(version: &TableVersion) -> Vec<ArrayRef> {
        let chunks = &version.partitions[0].chunks;
        chunks
            .iter()
            .map(|b| Arc::clone(b.column(0).as_any_dictionary().values()))
            .collect()
    }

    fn entries(dictionary: &ArrayRef) -> Vec<&str> {
        dictionary.as_string::<i32>().iter().flatten().collect()
    }

    fn same(a: &ArrayRef, b: &ArrayRef) -> bool {
        a.to_data().ptr_eq(&b.to_data())
    }

    fn rows(version: &TableVersion) -> Vec<String> {
        let chunks = &version.partitions[0].chunks;
        chunks
            .iter()
            .flat_map(|b| {
                let plain = plain_batch(b).unwrap();
                let column = plain.column(0).as_string::<i32>().clone();
                column
                    .iter()
                    .map(|v| v.unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn a_write_re_encodes_only_the_open_run_and_seals_it_when_full() {
        let def = def();
        let mut version = Table::new(def.clone()).snapshot().as_ref().clone();
        write(&def, &mut version, &["m", "c", "m"]);
        assert_eq!(open_rows(&version, RUNS), 3);
        // 3 rows open, under 4: the chunk joins the run, whose dictionary grows
        write(&def, &mut version, &["z", "a"]);
        let d = dictionaries(&version);
        assert_eq!(entries(&d[0]), ["a", "c", "m", "z"]);
        assert!(same(&d[0], &d[1]));
        assert!(same(&d[1], version.partitions[0].dictionary(0).unwrap()));
        // 5 rows open: sealed, none for the next write to re-encode
        assert_eq!(open_rows(&version, RUNS), 0);
        write(&def, &mut version, &["b"]);
        let after = dictionaries(&version);
        assert!(
            same(&after[0], &d[0]) && same(&after[1], &d[1]),
            "a sealed run moved"
        );
        assert_eq!(entries(&after[2]), ["b"]);
        assert!(same(
            &after[2],
            version.partitions[0].dictionary(0).unwrap()
        ));
        assert_eq!(open_rows(&version, RUNS), 1);
        // the new run grows and is re-encoded; the sealed one stays as it was
        write(&def, &mut version, &["a", "b"]);
        let last = dictionaries(&version);
        assert!(same(&last[0], &d[0]));
        assert_eq!(entries(&last[2]), ["a", "b"]);
        assert!(same(&last[2], &last[3]));
        assert_eq!(rows(&version), ["m", "c", "m", "z", "a", "b", "a", "b"]);
        assert_eq!(version.dictionary_entries(0), Some(6));
    }

    #[test]
    fn a_clients_partition_becomes_a_run_as_it_is_once_the_open_run_holds_enough() {
        let def = def();
        let mut version = Table::new(def.clone()).snapshot().as_ref().clone();
        let strings = |v: &[&str]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
        let (d1, d2, d3) = (strings(&["a", "k"]), strings(&["b", "x"]), strings(&["c"]));
        // no run yet: the partition's fragments are taken as they are, in one run
        let first = write_coded(&def, &mut version, &d1, &[1, 0]);
        let second = write_coded(&def, &mut version, &d1, &[0]);
        let chunks = &version.partitions[0].chunks;
        assert!(same(chunks[0].column(0), &first) && same(chunks[1].column(0), &second));
        assert!(same(version.partitions[0].dictionary(0).unwrap(), &d1));
        // 3 rows open, at least 2: the next partition seals the run and is a run of its own
        let third = write_coded(&def, &mut version, &d2, &[1]);
        let d = dictionaries(&version);
        assert!(same(&d[0], &d1) && same(&d[1], &d1) && same(&d[2], &d2));
        assert!(same(version.partitions[0].chunks[2].column(0), &third));
        // 1 row open, under 2: not sealed by a third partition, which is merged in
        write_coded(&def, &mut version, &d3, &[0]);
        let d = dictionaries(&version);
        assert_eq!(entries(&d[2]), ["b", "c", "x"]);
        assert!(same(&d[2], &d[3]) && same(&d[0], &d1));
        assert_eq!(rows(&version), ["k", "a", "a", "x", "c"]);
        // a plain write into the open run of 2 rows: merged, as before
        write(&def, &mut version, &["d"]);
        assert_eq!(entries(&dictionaries(&version)[4]), ["b", "c", "d", "x"]);
        assert_eq!(version.dictionary_entries(0), Some(6));
    }

    #[test]
    fn one_write_larger_than_a_run_is_one_run() {
        let def = def();
        let mut version = Table::new(def.clone()).snapshot().as_ref().clone();
        write(&def, &mut version, &["e", "d", "c", "b", "a", "a"]);
        assert_eq!(open_rows(&version, RUNS), 0);
        write(&def, &mut version, &["e"]);
        let d = dictionaries(&version);
        assert_eq!(entries(&d[0]), ["a", "b", "c", "d", "e"]);
        assert_eq!(entries(&d[1]), ["e"]);
        assert_eq!(rows(&version), ["e", "d", "c", "b", "a", "a", "e"]);
    }

    /// A chunk coded against `dictionary` with `codes`.
    fn coded(dictionary: &ArrayRef, codes: &[u8]) -> RecordBatch {
        let column: ArrayRef = Arc::new(
            arrow::array::DictionaryArray::<arrow::datatypes::UInt8Type>::try_new(
                arrow::array::UInt8Array::from(codes.to_vec()),
                Arc::clone(dictionary),
            )
            .unwrap(),
        );
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("s", column.data_type().clone(), true),
        ]));
        RecordBatch::try_new(schema, vec![column]).unwrap()
    }

    #[test]
    fn a_write_of_several_client_partitions_makes_each_a_run_as_it_is() {
        let def = def();
        let strings = |v: &[&str]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
        let (d1, d2, d3) = (strings(&["a", "k"]), strings(&["b", "x"]), strings(&["c"]));
        let mut version = Table::new(def.clone()).snapshot().as_ref().clone();
        write(&def, &mut version, &["m", "c"]);
        let open = Arc::clone(version.partitions[0].dictionary(0).unwrap());
        // two partitions in one write, the first of 2 rows or more: each a run as it is
        let write = [coded(&d1, &[1]), coded(&d1, &[0]), coded(&d2, &[1, 0])];
        let columns: Vec<ArrayRef> = write.iter().map(|b| Arc::clone(b.column(0))).collect();
        let added = encode_in_runs(&def, &mut version, vec![write.to_vec()], RUNS).unwrap();
        for (b, c) in added[0].iter().zip(&columns) {
            assert!(same(b.column(0), c), "a client's chunk was re-encoded");
        }
        version.append(added);
        let d = dictionaries(&version);
        assert!(same(&d[0], &open), "the open run was not sealed as it was");
        assert!(same(&d[1], &d1) && same(&d[2], &d1) && same(&d[3], &d2));
        assert!(same(version.partitions[0].dictionary(0).unwrap(), &d2));
        assert_eq!(rows(&version), ["m", "c", "k", "a", "x", "b"]);
        // a first partition of 1 row, under 2: the write is merged into the open run
        let write = [coded(&d3, &[0]), coded(&d1, &[1, 0])];
        let added = encode_in_runs(&def, &mut version, vec![write.to_vec()], RUNS).unwrap();
        version.append(added);
        let d = dictionaries(&version);
        assert!(same(&d[3], &d[4]) && same(&d[4], &d[5]));
        assert_eq!(entries(&d[4]), ["a", "b", "c", "k", "x"]);
        assert!(same(&d[2], &d1), "a sealed run moved");
        assert_eq!(
            rows(&version),
            ["m", "c", "k", "a", "x", "b", "c", "k", "a"]
        );
    }
}
