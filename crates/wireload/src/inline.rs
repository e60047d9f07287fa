//! `COPY t FROM STDIN` in scripts and the shell, as psql does it: the lines after the
//! statement, up to a line `\.` (or the end of the script), are the statement's data.

use wireload_sql::{CopyPath, Statement};

/// A piece of a script: SQL text, and the data of its last statement when that is a
/// `COPY ... FROM STDIN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The statements' text.
    pub sql: String,
    /// 1-based line of the script where `sql` starts.
    pub line: u64,
    /// The inline data, with the 1-based line where it starts.
    pub data: Option<(Vec<u8>, u64)>,
}

/// True when the last statement of `sql` is a `COPY ... FROM STDIN` (false when it does
/// not parse: running it reports the error).
pub fn ends_in_copy_from_stdin(sql: &str) -> bool {
    wireload_sql::parse_script(sql).is_ok_and(|statements| {
        statements.last().is_some_and(
            |p| matches!(&p.statement, Statement::CopyFrom(c) if c.path == CopyPath::Client),
        )
    })
}

/// True for the line that ends inline COPY data.
pub fn is_end_of_data(line: &str) -> bool {
    line.trim_end_matches(['\r', '\n']) == "\\."
}

/// Cuts `script` into pieces: the SQL up to each complete `COPY ... FROM STDIN` and that
/// statement's data lines (each ending in `\n`), then the rest.
pub fn split(script: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut sql = String::new();
    let mut start = 1u64;
    let mut lines = script.split_inclusive('\n').zip(1u64..);
    while let Some((line, n)) = lines.next() {
        if sql.is_empty() {
            start = n;
        }
        sql.push_str(line);
        if !wireload_sql::is_complete(&sql) || !ends_in_copy_from_stdin(&sql) {
            continue;
        }
        let mut data = Vec::new();
        for (line, _) in lines.by_ref() {
            if is_end_of_data(line) {
                break;
            }
            data.extend_from_slice(line.as_bytes());
            if !line.ends_with('\n') {
                data.push(b'\n');
            }
        }
        pieces.push(Piece {
            sql: std::mem::take(&mut sql),
            line: start,
            data: Some((data, n + 1)),
        });
    }
    if !sql.trim().is_empty() {
        pieces.push(Piece {
            sql,
            line: start,
            data: None,
        });
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_after_copy_from_stdin_is_cut_out() {
        let script = "CREATE TABLE t (a INT, b TEXT);\nCOPY t FROM STDIN (FORMAT csv);\n1,x\n2,\"y;\"\n\\.\nSELECT * FROM t;\n";
        let pieces = split(script);
        assert_eq!(
            pieces,
            vec![
                Piece {
                    sql: "CREATE TABLE t (a INT, b TEXT);\nCOPY t FROM STDIN (FORMAT csv);\n"
                        .into(),
                    line: 1,
                    data: Some((b"1,x\n2,\"y;\"\n".to_vec(), 3)),
                },
                Piece {
                    sql: "SELECT * FROM t;\n".into(),
                    line: 6,
                    data: None,
                },
            ]
        );
        // the end of the script ends the data too; a script without COPY is one piece
        let pieces = split("COPY t FROM stdin;\n1,x");
        assert_eq!(pieces[0].data, Some((b"1,x\n".to_vec(), 2)));
        assert_eq!(split("SELECT 1;\nSELECT 2;").len(), 1);
        // COPY ... FROM 'file' has no inline data
        assert_eq!(split("COPY t FROM 'f.csv';\n1,x\n").len(), 1);
    }
}
