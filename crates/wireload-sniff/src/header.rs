//! Whether the first record is a header, and the column names.
//!
//! The rule, after the types of the other sampled records are known:
//! - When some column of the other records is not TEXT (DuckDB's rule): the first record
//!   is a header when one of its fields in such a column is named (not NULL, not blank)
//!   and does not fit the column's type. `id,name` over `1,bob` is a header; `1,2,3` over
//!   `4,5,6` is not; `name,2023` over `bob,5` is not either (`2023` fits BIGINT), as in
//!   DuckDB. Blank names are allowed here, as DuckDB allows them: spreadsheet exports and
//!   R or pandas files with row names leave header cells blank, and a blank fits every
//!   type, so it cannot tell a data record either.
//! - When every column is TEXT, or there is no other record: a header when all its fields
//!   are named, no two alike, and none of them has the shape of a BOOLEAN, number, DATE
//!   or TIMESTAMP. `name,city` over `bob,paris` is a header (text over text cannot be
//!   told apart, and files with a header are the more common; DuckDB decides the same).

use wireload_types::{Field, Formats, SqlType};

use crate::types::{Candidates, LADDER};

/// One field of the first record: its bytes and whether it was quoted.
pub(crate) type FirstField = (Vec<u8>, bool);

/// Whether field `i` can stand in a header of text columns: not NULL and not blank,
/// except the first (R's row names).
fn named(i: usize, field: &FirstField, null: &[u8]) -> bool {
    let is_null = !field.1 && field.0 == null;
    (!is_null && !field.0.trim_ascii().is_empty()) || i == 0
}

/// Whether the text has the shape and value of a type narrower than TEXT. A single
/// letter (`x`, `y`, `t`) is a name, though it spells a BOOLEAN.
fn typed(field: &FirstField, null: &[u8]) -> bool {
    let f = Field {
        bytes: &field.0,
        quoted: field.1,
    };
    let text = field.0.trim_ascii();
    let letter = text.len() == 1 && text[0].is_ascii_alphabetic();
    !text.is_empty()
        && !letter
        && LADDER[..LADDER.len() - 1]
            .iter()
            .any(|ty| Candidates::fits(ty, f, null, &Formats::default()))
}

/// Whether `first` is a header over the other records, whose column types are `types`
/// with dates and timestamps in `formats` (no types when there are no other records);
/// see the module doc.
pub(crate) fn is_header(
    first: &[FirstField],
    types: &[SqlType],
    formats: &Formats,
    null: &[u8],
) -> bool {
    if types.iter().any(|t| !t.is_string()) {
        return first.iter().zip(types).enumerate().any(|(i, (f, ty))| {
            let field = Field {
                bytes: &f.0,
                quoted: f.1,
            };
            !ty.is_string() && named(i, f, null) && !Candidates::fits(ty, field, null, formats)
        });
    }
    let all_named = first.iter().enumerate().all(|(i, f)| named(i, f, null))
        && first.iter().any(|f| !f.0.trim_ascii().is_empty());
    if !all_named {
        return false;
    }
    let unique = first.iter().enumerate().all(|(i, f)| {
        first[..i]
            .iter()
            .all(|g| g.0.trim_ascii() != f.0.trim_ascii())
    });
    unique && !first.iter().any(|f| typed(f, null))
}

/// The column names: the header's fields trimmed of surrounding whitespace (or none
/// without a header), padded or cut to `ncols`, made unique as the loader's
/// `unique_column_names` does: a blank name becomes `columnN` (1-based), a repeated one
/// gets `_2`, `_3`...
pub(crate) fn column_names(header: Option<&[FirstField]>, ncols: usize) -> Vec<String> {
    let given: Vec<String> = (0..ncols)
        .map(|i| {
            header
                .and_then(|h| h.get(i))
                .map(|f| String::from_utf8_lossy(&f.0).trim().to_string())
                .unwrap_or_default()
        })
        .collect();
    wireload_types::unique_column_names(&given)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::FormatGuesses;

    fn first(fields: &[&str]) -> Vec<FirstField> {
        fields
            .iter()
            .map(|f| (f.as_bytes().to_vec(), false))
            .collect()
    }

    fn rest(columns: &[&[&[u8]]]) -> Vec<SqlType> {
        let guesses = FormatGuesses::default();
        let candidates: Vec<Candidates> = columns
            .iter()
            .map(|values| {
                let fields: Vec<Field<'_>> = values.iter().map(|v| Field::unquoted(v)).collect();
                let mut c = Candidates::default();
                c.observe(&fields, b"", &guesses);
                c
            })
            .collect();
        crate::types::resolve(&candidates, &guesses).0
    }

    fn is_header(first: &[FirstField], types: &[SqlType], null: &[u8]) -> bool {
        super::is_header(first, types, &Formats::default(), null)
    }

    #[test]
    fn header_rule() {
        let ints: &[&[u8]] = &[b"1", b"2"];
        let text: &[&[u8]] = &[b"bob", b"alice"];
        assert!(is_header(
            &first(&["id", "name"]),
            &rest(&[ints, text]),
            b""
        ));
        assert!(!is_header(
            &first(&["1", "carl"]),
            &rest(&[ints, text]),
            b""
        ));
        assert!(!is_header(
            &first(&["name", "2023"]),
            &rest(&[text, ints]),
            b""
        ));
        // blank names are allowed beside typed columns (DuckDB), but a blank fits
        // every type and so never makes a header alone
        assert!(is_header(&first(&["id", ""]), &rest(&[ints, text]), b""));
        assert!(is_header(&first(&["", "x"]), &rest(&[ints, ints]), b""));
        assert!(is_header(
            &first(&["x", "", "y"]),
            &rest(&[ints, ints, ints]),
            b""
        ));
        assert!(!is_header(&first(&["", "7"]), &rest(&[ints, ints]), b""));
        // beside text columns only the first may be blank
        assert!(is_header(&first(&["", "name"]), &rest(&[text, text]), b""));
        assert!(!is_header(&first(&["name", ""]), &rest(&[text, text]), b""));
        // all text: unique names that look like no value
        assert!(is_header(
            &first(&["name", "city"]),
            &rest(&[text, text]),
            b""
        ));
        assert!(!is_header(&first(&["x", "x"]), &rest(&[text, text]), b""));
        assert!(!is_header(
            &first(&["name", "2024-01-01"]),
            &rest(&[text, text]),
            b""
        ));
        assert!(is_header(&first(&["x", "y"]), &rest(&[text, text]), b""));
        assert!(!is_header(&first(&["true", "city"]), &[], b""));
        assert!(is_header(&first(&["a", "b", "c"]), &[], b""));
    }

    #[test]
    fn names_are_trimmed_padded_and_unique() {
        let h = first(&[" a ", "a", "", "a_2", "b"]);
        assert_eq!(
            column_names(Some(&h), 6),
            ["a", "a_2", "column3", "a_2_2", "b", "column6"]
        );
        assert_eq!(column_names(None, 2), ["column1", "column2"]);
        assert_eq!(column_names(Some(&h[..2]), 1), ["a"]);
    }
}
