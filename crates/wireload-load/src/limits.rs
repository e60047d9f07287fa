//! Load limits: the longest line a load takes (`MAX_LINE_SIZE`) and the default of the
//! memory its buffers may hold (`MEMORY_LIMIT`; the budget itself is kept by the
//! `wireload_publish::Appender`).
//!
//! A line is the bytes between two line ends (`\n` or `\r`), as error messages count
//! lines; every record holds its lines, so a line over the limit means a record over it.
//! A stream also fails once a record not yet ended has grown past the limit (so an
//! unclosed quote cannot make a window grow without bound), even when its lines are short.

use wireload_csv::line_of;

use wireload_publish::LoadError;

/// Where the first line of `data[from..to]` longer than `limit` bytes starts (`from` is
/// a line start); None when every line fits. Jumps about `limit` bytes per step (to the
/// last line end within reach), so a limit costs little however short the lines are.
pub(crate) fn long_line(data: &[u8], from: usize, to: usize, limit: usize) -> Option<usize> {
    let mut at = from;
    while to - at > limit {
        // the lines starting before the last line end in reach end within the limit
        match memchr::memrchr2(b'\n', b'\r', &data[at..=at + limit]) {
            Some(i) => at += i + 1,
            None => return Some(at),
        }
    }
    None
}

/// Fails when a line of `data[from..to]` is longer than `limit` (when set): `data` starts
/// `byte` bytes and `lines` line ends into the input named `file`.
pub(crate) fn check_lines(
    data: &[u8],
    from: usize,
    to: usize,
    limit: Option<usize>,
    file: &str,
    byte: u64,
    lines: u64,
) -> Result<(), LoadError> {
    let Some(limit) = limit else { return Ok(()) };
    match long_line(data, from, to, limit) {
        Some(at) => Err(too_long(
            file,
            lines + line_of(data, at),
            byte + at as u64,
            limit,
        )),
        None => Ok(()),
    }
}

/// The error of a record over `limit` starting at `line` and `byte`.
pub(crate) fn too_long(file: &str, line: u64, byte: u64, limit: usize) -> LoadError {
    LoadError::LineTooLong {
        file: file.to_string(),
        line,
        byte,
        limit,
    }
}

/// The memory budget a load gets when none is given: 80% of the memory the system has
/// available now (`MemAvailable` of `/proc/meminfo`); `u64::MAX` (no limit) where that is
/// unknown.
pub fn default_memory_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| mem_available(&info))
        .map_or(u64::MAX, |bytes| bytes / 5 * 4)
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`), in bytes; None where unknown.
pub fn total_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_bytes(&info, "MemTotal:")
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    meminfo_bytes(meminfo, "MemAvailable:")
}

/// The field `key` (`MemTotal:`) of a `/proc/meminfo` text, in bytes.
fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix(key))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_found_exactly_at_the_limit() {
        let data = b"ab\ncdef\r\nxyz\rlast";
        // lines: ab (0), cdef (3), "" (8), xyz (9), last (13)
        assert_eq!(long_line(data, 0, data.len(), 4), None);
        assert_eq!(long_line(data, 0, data.len(), 3), Some(3));
        assert_eq!(long_line(data, 9, data.len(), 3), Some(13));
        assert_eq!(long_line(data, 0, 8, 3), Some(3));
        assert_eq!(long_line(data, 0, 7, 3), Some(3));
        assert_eq!(long_line(data, 0, 6, 3), None);
        let long = [b"a\n".repeat(1000), b"x".repeat(50), b"\n".to_vec()].concat();
        assert_eq!(long_line(&long, 0, long.len(), 50), None);
        assert_eq!(long_line(&long, 0, long.len(), 49), Some(2000));
        let err = check_lines(&long, 0, long.len(), Some(49), "f.csv", 10, 5).unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.csv: line 1006, byte 2010: a record longer than the limit of 49 bytes \
             (MAX_LINE_SIZE); raise MAX_LINE_SIZE to load it"
        );
        assert!(check_lines(&long, 0, long.len(), None, "f.csv", 0, 0).is_ok());
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let info = "MemTotal:       16318412 kB\nMemFree:  1000 kB\nMemAvailable:   8000 kB\n";
        assert_eq!(mem_available(info), Some(8_192_000));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(meminfo_bytes(info, "MemTotal:"), Some(16318412 * 1024));
        assert!(default_memory_budget() > 0);
    }
}
