//! Checking TPC-H query results against the reference answers for scale factor 1
//! that ship with `tpchgen`.

use arrow::record_batch::RecordBatch;

use crate::render;

/// Numbers may differ by this much (the reference answers are rounded to 2 decimals).
const TOLERANCE: f64 = 0.01;

/// The reference answer of TPC-H query `query` at scale factor `sf` as rows of trimmed
/// fields, when one exists (only at SF 1).
fn reference_rows(query: i32, sf: f64) -> Option<Vec<Vec<String>>> {
    if sf != 1.0 {
        return None;
    }
    let text = tpchgen::q_and_a::answers_sf1::answer(query)?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    lines.next()?; // the header
    Some(
        lines
            .map(|l| l.split('|').map(|f| f.trim().to_string()).collect())
            .collect(),
    )
}

fn same_value(ours: &str, reference: &str) -> bool {
    match (ours.parse::<f64>(), reference.parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() <= TOLERANCE,
        _ => ours.trim() == reference,
    }
}

/// Compares rows of text with the reference rows; `Err` says the first difference.
fn compare(ours: &[Vec<String>], reference: &[Vec<String>]) -> Result<(), String> {
    if ours.len() != reference.len() {
        return Err(format!(
            "{} rows, the reference answer has {}",
            ours.len(),
            reference.len()
        ));
    }
    for (i, (row, expected)) in ours.iter().zip(reference).enumerate() {
        if row.len() != expected.len() {
            return Err(format!(
                "row {} has {} columns, the reference has {}",
                i + 1,
                row.len(),
                expected.len()
            ));
        }
        for (j, (a, b)) in row.iter().zip(expected).enumerate() {
            if !same_value(a, b) {
                return Err(format!(
                    "row {}, column {}: {a}, the reference answer has {b}",
                    i + 1,
                    j + 1
                ));
            }
        }
    }
    Ok(())
}

/// Compares a result of TPC-H query `query` at scale factor `sf` with its reference answer:
/// `None` when there is none for this scale factor.
pub fn check(query: i32, sf: f64, batches: &[RecordBatch]) -> Option<Result<(), String>> {
    let reference = reference_rows(query, sf)?;
    Some(
        render::cells(batches)
            .map_err(|e| e.to_string())
            .and_then(|ours| compare(&ours, &reference)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &[&[&str]]) -> Vec<Vec<String>> {
        text.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn reference_answers_exist_only_at_sf1() {
        assert!(reference_rows(1, 0.1).is_none());
        let q1 = reference_rows(1, 1.0).unwrap();
        assert_eq!(q1.len(), 4);
        assert_eq!(q1[0][0], "A");
        assert_eq!(reference_rows(6, 1.0).unwrap(), rows(&[&["123141078.23"]]));
    }

    #[test]
    fn compares_with_tolerance() {
        let reference = rows(&[&["A", "25.52", "1478493"]]);
        assert!(compare(&rows(&[&["A", "25.522005", "1478493"]]), &reference).is_ok());
        assert!(compare(&rows(&[&["A", "25.60", "1478493"]]), &reference).is_err());
        assert!(compare(&rows(&[&["B", "25.52", "1478493"]]), &reference).is_err());
        assert!(compare(&rows(&[]), &reference).is_err());
    }
}
