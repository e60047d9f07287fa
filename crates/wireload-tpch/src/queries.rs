//! The 22 TPC-H queries (TPC-H specification 3.0, clause 2.4) with the validation
//! substitution parameters (clause 2.4.x.3, what `qgen -d` writes), one file each in
//! `sql/` of this crate. The `wireload` binary's tests check their answers at SF 0.01
//! against DuckDB's with [`crate::answers`].

/// One TPC-H query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpchQuery {
    /// The query number, 1 to 22.
    pub number: u32,
    /// The query's name in the specification, lower case (e.g. "pricing summary report").
    pub name: &'static str,
    /// The SQL text, a comment line first, without a terminating `;`.
    pub sql: &'static str,
}

/// TPC-H Q1 to Q22, in order.
pub const TPCH_QUERIES: [TpchQuery; 22] = [
    TpchQuery {
        number: 1,
        name: "pricing summary report",
        sql: include_str!("../sql/q1.sql"),
    },
    TpchQuery {
        number: 2,
        name: "minimum cost supplier",
        sql: include_str!("../sql/q2.sql"),
    },
    TpchQuery {
        number: 3,
        name: "shipping priority",
        sql: include_str!("../sql/q3.sql"),
    },
    TpchQuery {
        number: 4,
        name: "order priority checking",
        sql: include_str!("../sql/q4.sql"),
    },
    TpchQuery {
        number: 5,
        name: "local supplier volume",
        sql: include_str!("../sql/q5.sql"),
    },
    TpchQuery {
        number: 6,
        name: "forecasting revenue change",
        sql: include_str!("../sql/q6.sql"),
    },
    TpchQuery {
        number: 7,
        name: "volume shipping",
        sql: include_str!("../sql/q7.sql"),
    },
    TpchQuery {
        number: 8,
        name: "national market share",
        sql: include_str!("../sql/q8.sql"),
    },
    TpchQuery {
        number: 9,
        name: "product type profit measure",
        sql: include_str!("../sql/q9.sql"),
    },
    TpchQuery {
        number: 10,
        name: "returned item reporting",
        sql: include_str!("../sql/q10.sql"),
    },
    TpchQuery {
        number: 11,
        name: "important stock identification",
        sql: include_str!("../sql/q11.sql"),
    },
    TpchQuery {
        number: 12,
        name: "shipping modes and order priority",
        sql: include_str!("../sql/q12.sql"),
    },
    TpchQuery {
        number: 13,
        name: "customer distribution",
        sql: include_str!("../sql/q13.sql"),
    },
    TpchQuery {
        number: 14,
        name: "promotion effect",
        sql: include_str!("../sql/q14.sql"),
    },
    TpchQuery {
        number: 15,
        name: "top supplier",
        sql: include_str!("../sql/q15.sql"),
    },
    TpchQuery {
        number: 16,
        name: "parts/supplier relationship",
        sql: include_str!("../sql/q16.sql"),
    },
    TpchQuery {
        number: 17,
        name: "small-quantity-order revenue",
        sql: include_str!("../sql/q17.sql"),
    },
    TpchQuery {
        number: 18,
        name: "large volume customer",
        sql: include_str!("../sql/q18.sql"),
    },
    TpchQuery {
        number: 19,
        name: "discounted revenue",
        sql: include_str!("../sql/q19.sql"),
    },
    TpchQuery {
        number: 20,
        name: "potential part promotion",
        sql: include_str!("../sql/q20.sql"),
    },
    TpchQuery {
        number: 21,
        name: "suppliers who kept orders waiting",
        sql: include_str!("../sql/q21.sql"),
    },
    TpchQuery {
        number: 22,
        name: "global sales opportunity",
        sql: include_str!("../sql/q22.sql"),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_in_order_and_named() {
        for (i, q) in TPCH_QUERIES.iter().enumerate() {
            assert_eq!(q.number as usize, i + 1);
            let header = format!("-- TPC-H Q{}, {} (", q.number, q.name);
            assert!(q.sql.starts_with(&header), "{}", q.sql);
            assert!(
                !q.sql.trim_end().ends_with(';'),
                "Q{} ends with ;",
                q.number
            );
        }
    }
}
