//! Row-level write-write conflicts: a transaction's writes to a table, made on a private
//! copy of the version it began with, replayed on the version that other writes published
//! since. The transaction's rows are found by comparing its copy with its base: rows deleted
//! (deletion vectors), rows changed in place (chunks whose columns differ), rows appended
//! (chunks past the base's). Another write touched the same row when it deleted it or
//! changed its values; then the later committer fails (first committer wins). Rows keep
//! their ids across those writes (deletion vectors, in-place updates and appends never move
//! a row), so the replay marks the same rows, copies the same values and appends the new
//! rows through the INSERT path (a key another write took meanwhile is a conflict too).
//!
//! A changed row is told by its values: a row another write set to a new value and back is
//! taken as untouched, which is the outcome of running that write first.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::compute::kernels::cmp::distinct;
use arrow::compute::{interleave, or};
use arrow::record_batch::RecordBatch;
use wireload_load::LoadControl;
use wireload_storage::{IndexDef, Partition, Table, TableDef, TableVersion};

use crate::error::SqlError;
use crate::replace::remove_entries;

/// `current` with the writes the transaction made to `private` (its copy of `base`)
/// replayed on it, numbered after both; `None` on a conflict: another write since `base`
/// deleted or changed a row the transaction wrote or took a key it inserted, or changed the
/// table's layout (a compaction, TRUNCATE) or indexes; and always for a table with
/// dictionary columns.
pub(crate) fn rebase(
    def: &Arc<TableDef>,
    base: &TableVersion,
    private: &TableVersion,
    current: &TableVersion,
) -> Result<Option<TableVersion>, SqlError> {
    // a write to a dictionary table may re-encode whole partitions: its rows are not
    // replayed on another write's codes (the later committer retries)
    if def.has_dictionaries()
        || index_defs(base) != index_defs(private)
        || index_defs(base) != index_defs(current)
        || !same_layout(base, private)
        || !same_layout(base, current)
    {
        return Ok(None);
    }
    let mut next = current.clone();
    let mut deleted = Vec::new();
    for (p, b) in base.partitions.iter().enumerate() {
        let (mine, theirs) = (&private.partitions[p], &current.partitions[p]);
        for c in 0..b.chunks.len() {
            if same_chunk(b, mine, c) {
                // the transaction wrote no row of it
                continue;
            }
            let live = live_rows(b, c);
            let gone_mine = &live & &!&live_rows(mine, c);
            let gone_theirs = &live & &!&live_rows(theirs, c);
            let changed_mine = changed(&b.chunks[c], &mine.chunks[c])?;
            let changed_theirs = changed(&b.chunks[c], &theirs.chunks[c])?;
            let wrote_mine = either(&gone_mine, changed_mine.as_ref());
            let wrote_theirs = either(&gone_theirs, changed_theirs.as_ref());
            if (&(&wrote_mine & &wrote_theirs) & &live).count_set_bits() > 0 {
                return Ok(None);
            }
            if let Some(rows) = changed_mine {
                let rows = &rows & &live;
                if rows.count_set_bits() > 0 {
                    next.partitions[p].chunks[c] =
                        take_rows(&b.chunks[c], &mine.chunks[c], &theirs.chunks[c], &rows)?;
                }
            }
            if gone_mine.count_set_bits() > 0 {
                next.partitions[p].delete(c, &gone_mine);
                deleted.push((p, c, BooleanArray::new(gone_mine, None)));
            }
        }
    }
    // the deleted rows' keys: their values in `current`, the same as the base's
    remove_entries(def, current, &mut next, &deleted)?;
    let appended: Vec<RecordBatch> = private
        .partitions
        .iter()
        .zip(&base.partitions)
        .flat_map(|(mine, b)| (b.chunks.len()..mine.chunks.len()).map(|c| mine.live_chunk(c)))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .collect();
    if !appended.is_empty() {
        let table = Table::with_version(Arc::clone(def), Arc::new(next));
        let what = format!("COMMIT of table \"{}\"", def.name);
        match wireload_publish::append_batches(&table, &what, 0, appended, &LoadControl::default())
        {
            Ok(_) => {}
            Err(
                wireload_load::LoadError::DuplicateKey { .. }
                | wireload_load::LoadError::DuplicateInTable { .. },
            ) => return Ok(None),
            Err(error) => {
                return Err(SqlError::Load {
                    table: def.name.clone(),
                    error,
                });
            }
        }
        next = table.snapshot().as_ref().clone();
    }
    next.number = current.number.max(private.number) + 1;
    Ok(Some(next))
}

/// The definitions of a version's indexes.
fn index_defs(v: &TableVersion) -> Vec<&IndexDef> {
    v.indexes.iter().map(|i| i.def.as_ref()).collect()
}

/// True when `later` holds every chunk of `base`, each with the same number of rows (so
/// that row ids mean the same rows in both).
fn same_layout(base: &TableVersion, later: &TableVersion) -> bool {
    base.partitions.len() == later.partitions.len()
        && base.partitions.iter().zip(&later.partitions).all(|(b, l)| {
            l.chunks.len() >= b.chunks.len()
                && b.chunks
                    .iter()
                    .zip(&l.chunks)
                    .all(|(x, y)| x.num_rows() == y.num_rows())
        })
}

/// True when chunk `c` of `later` is chunk `c` of `base` (the same arrays, the same
/// deletions): no row of it was deleted or changed in between.
fn same_chunk(base: &Partition, later: &Partition, c: usize) -> bool {
    let same_deletions = match (base.deletions(c), later.deletions(c)) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
        _ => false,
    };
    same_deletions
        && base.chunks[c]
            .columns()
            .iter()
            .zip(later.chunks[c].columns())
            .all(|(x, y)| Arc::ptr_eq(x, y))
}

/// The live rows of chunk `c` of `part`, one bit per row.
fn live_rows(part: &Partition, c: usize) -> BooleanBuffer {
    match part.deletions(c) {
        Some(d) => d.live().clone(),
        None => BooleanBuffer::new_set(part.chunks[c].num_rows()),
    }
}

/// The rows of `base` whose values `later` (the same chunk in a later version) changed;
/// `None` when it shares every column with `base`.
fn changed(base: &RecordBatch, later: &RecordBatch) -> Result<Option<BooleanBuffer>, SqlError> {
    let mut rows: Option<BooleanArray> = None;
    for (x, y) in base.columns().iter().zip(later.columns()) {
        if Arc::ptr_eq(x, y) {
            continue;
        }
        let differ = distinct(x, y)?;
        rows = Some(match rows {
            None => differ,
            Some(r) => or(&r, &differ)?,
        });
    }
    Ok(rows.map(|r| r.values().clone()))
}

/// `a`, or `a | b`.
fn either(a: &BooleanBuffer, b: Option<&BooleanBuffer>) -> BooleanBuffer {
    match b {
        Some(b) => a | b,
        None => a.clone(),
    }
}

/// `theirs` with the values of `mine` at `rows`, in the columns where `mine` differs from
/// `base`.
fn take_rows(
    base: &RecordBatch,
    mine: &RecordBatch,
    theirs: &RecordBatch,
    rows: &BooleanBuffer,
) -> Result<RecordBatch, SqlError> {
    let at: Vec<(usize, usize)> = rows
        .iter()
        .enumerate()
        .map(|(r, hit)| (hit as usize, r))
        .collect();
    let columns = (0..base.num_columns())
        .map(|i| {
            let (b, m, t) = (base.column(i), mine.column(i), theirs.column(i));
            if Arc::ptr_eq(b, m) {
                Ok(Arc::clone(t))
            } else {
                interleave(&[t.as_ref() as &dyn Array, m.as_ref()], &at)
            }
        })
        .collect::<Result<Vec<ArrayRef>, _>>()?;
    Ok(RecordBatch::try_new(theirs.schema(), columns)?)
}
