//! How deep a statement may nest before it is planned. DataFusion clones, compares and drops
//! its expression trees by recursion: a chain of thousands of ORs would overflow the stack
//! and abort the process (server included), so such a statement is refused with an error
//! instead. Measured with an OR chain: the release binary's main thread took 6,400 terms, a
//! test thread (2 MiB) of the debug build fewer than 3,000.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Expr, Query, Visit, Visitor};

use crate::copy::CopySource;
use crate::error::SqlError;
use crate::parse::Statement;

/// The deepest nesting of expressions and subqueries a statement may have.
pub const MAX_DEPTH: usize = 1_000;

/// Refuses `statement` if its expressions and subqueries nest deeper than [`MAX_DEPTH`].
pub fn check_depth(statement: &Statement) -> Result<(), SqlError> {
    let mut depth = Depth::default();
    let flow = match statement {
        Statement::Query(q) => visit_df(q, &mut depth),
        Statement::CopyTo(c) => match &c.source {
            CopySource::Query(q) => q.visit(&mut depth),
            CopySource::Table { .. } => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    };
    match flow {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(SqlError::TooComplex { limit: MAX_DEPTH }),
    }
}

fn visit_df(statement: &DfStatement, depth: &mut Depth) -> ControlFlow<()> {
    match statement {
        DfStatement::Statement(s) => s.visit(depth),
        DfStatement::Explain(e) => visit_df(&e.statement, depth),
        _ => ControlFlow::Continue(()),
    }
}

/// Counts the nesting on the way down and stops the walk past the limit, so the walk itself
/// recurses at most [`MAX_DEPTH`] levels.
#[derive(Default)]
struct Depth {
    now: usize,
}

impl Depth {
    fn enter(&mut self) -> ControlFlow<()> {
        self.now += 1;
        if self.now > MAX_DEPTH {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn leave(&mut self) -> ControlFlow<()> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
}

impl Visitor for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.enter()
    }

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.leave()
    }

    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.enter()
    }

    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.leave()
    }
}
