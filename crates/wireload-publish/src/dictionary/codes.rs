//! Which entries of a client's dictionary a fragment's codes use, every code checked to be in
//! range: the server's check of encoded fragment columns.

use arrow::buffer::NullBuffer;

/// A code type of the wire: `u8`, `u16` or `u32`.
pub trait Code: Copy {
    /// The entry the code names.
    fn entry(self) -> usize;
}

impl Code for u8 {
    fn entry(self) -> usize {
        self as usize
    }
}

impl Code for u16 {
    fn entry(self) -> usize {
        self as usize
    }
}

impl Code for u32 {
    fn entry(self) -> usize {
        self as usize
    }
}

/// A code out of range: its row (in the fragment) and the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange {
    /// the row in the fragment
    pub row: usize,
    /// the code there
    pub code: usize,
}

/// Sets in `used` (a bitmap of `entries` bits, 64 a word) the entries the codes in `values`
/// use (those of valid rows, when `nulls` is given); the first code out of range, if any.
pub fn mark_used<T: Code>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    entries: usize,
    used: &mut [u64],
) -> Result<(), OutOfRange> {
    debug_assert!(used.len() >= entries.div_ceil(64));
    match size_of::<T>() {
        1 => mark_in_table(&mut [false; 1 << 8], values, nulls, entries, used),
        // the table's 65,536 flags cost as much as that many rows: only for more rows
        2 if values.len() >= 1 << 16 => mark_in_table(
            &mut vec![false; 1 << 16].into_boxed_slice(),
            values,
            nulls,
            entries,
            used,
        ),
        _ => mark_in_bitmap(values, nulls, entries, used),
    }
}

/// [`mark_used`] for narrow codes: a flag per possible code, set by a store per row (no
/// read-modify-write of a bitmap word that the next row may need again, as runs of one code
/// do), then checked against `entries` and folded into `used` once.
fn mark_in_table<T: Code>(
    seen: &mut [bool],
    values: &[T],
    nulls: Option<&NullBuffer>,
    entries: usize,
    used: &mut [u64],
) -> Result<(), OutOfRange> {
    // every code of T indexes `seen` (2^bits flags): the bounds checks are never taken
    match nulls {
        None => values.iter().for_each(|v| seen[v.entry()] = true),
        Some(nulls) => nulls
            .valid_indices()
            .for_each(|row| seen[values[row].entry()] = true),
    }
    if seen.iter().skip(entries).any(|&s| s) {
        return Err(first_out_of_range(values, nulls, entries));
    }
    // a dictionary may have more entries than the code type names
    let named = entries.min(seen.len());
    for (word, flags) in used.iter_mut().zip(seen[..named].chunks(64)) {
        *word |= flags
            .iter()
            .enumerate()
            .fold(0u64, |w, (bit, &s)| w | (u64::from(s) << bit));
    }
    Ok(())
}

/// [`mark_used`] for wide codes: a bit per entry set row by row (a table of every possible
/// code would be too large, and codes into a large dictionary rarely repeat a word in a row);
/// also for two-byte codes in fragments of fewer rows than the table would have flags.
fn mark_in_bitmap<T: Code>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    entries: usize,
    used: &mut [u64],
) -> Result<(), OutOfRange> {
    let mut mark = |row: usize| {
        let code = values[row].entry();
        if code >= entries {
            return Err(OutOfRange { row, code });
        }
        used[code / 64] |= 1 << (code % 64);
        Ok(())
    };
    match nulls {
        None => (0..values.len()).try_for_each(&mut mark),
        Some(nulls) => nulls.valid_indices().try_for_each(&mut mark),
    }
}

/// The first valid row whose code is `entries` or more (one is known to be there).
fn first_out_of_range<T: Code>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    entries: usize,
) -> OutOfRange {
    let out = |&row: &usize| values[row].entry() >= entries;
    let row = match nulls {
        None => (0..values.len()).find(out),
        Some(nulls) => nulls.valid_indices().find(out),
    }
    .expect("a code out of range was seen");
    OutOfRange {
        row,
        code: values[row].entry(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::buffer::BooleanBuffer;

    /// The check as the definition says it, row by row.
    fn reference<T: Code>(
        values: &[T],
        valid: Option<&[bool]>,
        entries: usize,
    ) -> Result<Vec<bool>, OutOfRange> {
        let mut used = vec![false; entries];
        for (row, v) in values.iter().enumerate() {
            if valid.is_some_and(|valid| !valid[row]) {
                continue;
            }
            let code = v.entry();
            if code >= entries {
                return Err(OutOfRange { row, code });
            }
            used[code] = true;
        }
        Ok(used)
    }

    fn check<T: Code + std::fmt::Debug>(values: &[T], valid: Option<&[bool]>, entries: usize) {
        let nulls = valid.map(|v| NullBuffer::new(BooleanBuffer::from(v.to_vec())));
        // bits already set by an earlier fragment stay set
        let mut used = vec![0u64; entries.div_ceil(64)];
        if entries > 0 {
            used[0] |= 1;
        }
        let got = mark_used(values, nulls.as_ref(), entries, &mut used);
        match reference(values, valid, entries) {
            Err(e) => assert_eq!(got, Err(e), "{values:?}"),
            Ok(mut want) => {
                assert_eq!(got, Ok(()));
                if entries > 0 {
                    want[0] = true;
                }
                let bits: Vec<bool> = (0..entries)
                    .map(|e| used[e / 64] & (1 << (e % 64)) != 0)
                    .collect();
                assert_eq!(bits, want);
            }
        }
    }

    /// A deterministic mix of codes below `limit`.
    fn codes(n: usize, limit: u64, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % limit
            })
            .collect()
    }

    #[test]
    fn every_width_marks_what_the_definition_marks_and_finds_the_first_code_out_of_range() {
        for entries in [0usize, 1, 3, 64, 65, 200, 256, 1000, 65_536, 70_000] {
            // 70,000 rows: two-byte codes take the table of flags
            for (n, seed) in [(0, 1), (1, 2), (500, 3), (5000, 4), (70_000, 5)] {
                // in range, and some rows beyond it
                for limit in [entries.max(1) as u64, entries as u64 + 3] {
                    let raw = codes(n, limit, seed + entries as u64);
                    let valid: Vec<bool> = (0..n).map(|r| r % 7 != 3).collect();
                    // codes under null rows may be anything
                    let masked: Vec<u64> = raw
                        .iter()
                        .zip(&valid)
                        .map(|(&c, &v)| if v { c } else { c + 100_000 })
                        .collect();
                    if limit <= 256 {
                        let v: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
                        check(&v, None, entries);
                        let m: Vec<u8> = masked.iter().map(|&c| c as u8).collect();
                        check(&m, Some(&valid), entries);
                    }
                    if limit <= 65_536 {
                        let v: Vec<u16> = raw.iter().map(|&c| c as u16).collect();
                        check(&v, None, entries);
                        let m: Vec<u16> = masked.iter().map(|&c| c as u16).collect();
                        check(&m, Some(&valid), entries);
                    }
                    let v: Vec<u32> = raw.iter().map(|&c| c as u32).collect();
                    check(&v, None, entries);
                    let m: Vec<u32> = masked.iter().map(|&c| c as u32).collect();
                    check(&m, Some(&valid), entries);
                }
            }
        }
    }
}
