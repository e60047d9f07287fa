//! Compaction: a table's deleted rows dropped in the background. The chunks that have
//! deletions are replaced by their live rows (the others are kept as they are) and every
//! index is built again over the rows' new places; built without the writer lock, the
//! result is published only when no other write was published meanwhile, as a version
//! that is no write (`WriteGuard::publish_compacted`): readers never wait, and
//! transactions do not conflict with it.

use wireload_storage::{Table, TableVersion};

use crate::error::LoadError;
use crate::indexing::rebuild_indexes;

/// Fewest deleted rows a compaction is started for.
const MIN_DELETED: usize = 1024;

/// Times a compaction is built before it gives up on a table that keeps being written.
const ATTEMPTS: usize = 3;

/// True when `version`'s deleted rows are worth dropping: at least [`MIN_DELETED`], and at
/// least a quarter of the rows its chunks hold (so that the rebuilds cost a constant per
/// deleted row).
pub fn worth_compacting(version: &TableVersion) -> bool {
    let deleted = version.deleted_rows();
    deleted >= MIN_DELETED && deleted * 4 >= deleted + version.num_rows()
}

/// Drops the deleted rows of `table` on the current rayon pool (see the module's doc).
/// Returns true when it published a compacted version; false when there was nothing to
/// drop, or when other writes kept publishing first.
pub fn compact(table: &Table) -> Result<bool, LoadError> {
    for _ in 0..ATTEMPTS {
        let base = table.snapshot();
        if base.deleted_rows() == 0 {
            return Ok(false);
        }
        let next = rebuild_indexes(table.def(), base.as_ref().clone())?;
        let guard = table.begin_write();
        if guard.base().number == base.number {
            guard.publish_compacted(next);
            return Ok(true);
        }
    }
    Ok(false)
}
