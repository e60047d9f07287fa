//! Rewrites the PostgreSQL-only syntax of catalog queries into what DataFusion plans, on the
//! AST:
//!
//! - `a OPERATOR(pg_catalog.~) b` becomes `a ~ b` (and the other built-in operators);
//! - `x COLLATE pg_catalog.default` becomes `x`;
//! - `x = ANY (ARRAY[a, b])` becomes `x IN (a, b)`, `x <> ALL (ARRAY[...])` `x NOT IN (...)`;
//! - `pg_catalog.f(...)` becomes `f(...)`, and an unqualified catalog table (`pg_class`)
//!   becomes `pg_catalog.pg_class` (PostgreSQL searches pg_catalog first);
//! - casts to `regclass`, `regtype` and `regnamespace`: a name (`'t'::regclass`, `$1::regclass`)
//!   becomes its oid (`regclassin('t')`), an oid becomes its name (`c.oid::regclass` ->
//!   `regclassout(c.oid)`) except where it is compared (`c.oid::regclass = ...` compares
//!   oids); `::regproc` of a name is the name; casts to `oid`, `name`, `"char"` and
//!   `pg_catalog.`-qualified types become casts to DataFusion's types;
//! - a SELECT that inner-joins a catalog table that is always empty (policies,
//!   publications, inheritance, column defaults...) has no rows: it becomes a SELECT of as
//!   many NULL columns without FROM, and such a scalar subquery NULL, `ARRAY(...)` `'{}'`,
//!   EXISTS false, IN false (those selects use what DataFusion cannot plan: `array(subquery)`, `= any(...)`,
//!   correlated `generate_series`);
//! - `ARRAY(subquery)` of one column over catalog tables becomes a scalar subquery of the
//!   array's text form (`concat('{', string_agg(x::text, ','), '}')`);
//! - a scalar subquery over catalog tables that is not aggregated gets `max(...)` around its
//!   value (DataFusion plans correlated scalar subqueries only when they are aggregated).

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, GroupByExpr, Ident, JoinOperator, ObjectName,
    ObjectNamePart, Query, Select, SelectItem, SetExpr, Statement, TableFactor, TableWithJoins,
    Value, Visit, VisitMut, Visitor, VisitorMut,
};

use super::tables;

/// Aggregate functions (a select with one of them and no GROUP BY has a row even over no
/// rows).
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "string_agg",
    "array_agg",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "bit_xor",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "corr",
    "covar_pop",
    "covar_samp",
    "mode",
    "median",
    "percentile_cont",
    "percentile_disc",
    "first_value",
    "last_value",
    "approx_distinct",
    "approx_median",
];

/// Rewrites `statement` in place.
pub(crate) fn rewrite(statement: &mut Statement) {
    let mut names = CteNames::default();
    let _ = Visit::visit(&*statement, &mut names);
    let _ = VisitMut::visit(statement, &mut Rewriter { ctes: names.0 });
}

/// The names of the statement's common table expressions (they hide catalog tables).
#[derive(Default)]
struct CteNames(HashSet<String>);

impl Visitor for CteNames {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.0.insert(normalize(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }
}

struct Rewriter {
    ctes: HashSet<String>,
}

/// An identifier as PostgreSQL resolves it: unquoted ones lower-cased.
fn normalize(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => normalize(i),
            other => other.to_string(),
        })
        .collect()
}

impl Rewriter {
    /// The pg_catalog table `name` refers to, if any.
    fn catalog_table(&self, name: &ObjectName) -> Option<String> {
        match parts(name).as_slice() {
            [schema, table] if schema == tables::SCHEMA && tables::is_catalog_table(table) => {
                Some(table.clone())
            }
            [table] if tables::is_catalog_table(table) && !self.ctes.contains(table) => {
                Some(table.clone())
            }
            _ => None,
        }
    }

    fn factor_is_empty(&self, factor: &TableFactor) -> bool {
        match factor {
            TableFactor::Table {
                name, args: None, ..
            } => self
                .catalog_table(name)
                .is_some_and(|t| tables::is_always_empty(&t)),
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => self.joins_are_empty(table_with_joins),
            _ => false,
        }
    }

    /// True when the joins of `twj` have no rows because an always-empty catalog table
    /// takes part in them where an empty side empties the join.
    fn joins_are_empty(&self, twj: &TableWithJoins) -> bool {
        let mut empty = self.factor_is_empty(&twj.relation);
        for join in &twj.joins {
            let right = self.factor_is_empty(&join.relation);
            empty = match &join.join_operator {
                JoinOperator::Join(_)
                | JoinOperator::Inner(_)
                | JoinOperator::CrossJoin(_)
                | JoinOperator::Semi(_)
                | JoinOperator::LeftSemi(_)
                | JoinOperator::RightSemi(_)
                | JoinOperator::CrossApply
                | JoinOperator::StraightJoin(_) => empty || right,
                JoinOperator::Left(_)
                | JoinOperator::LeftOuter(_)
                | JoinOperator::Anti(_)
                | JoinOperator::LeftAnti(_)
                | JoinOperator::OuterApply => empty,
                JoinOperator::Right(_)
                | JoinOperator::RightOuter(_)
                | JoinOperator::RightAnti(_) => right,
                JoinOperator::FullOuter(_) => empty && right,
                _ => false,
            };
        }
        empty
    }

    /// True when `select` certainly has no rows (and can be replaced by NULL columns).
    fn select_is_empty(&self, select: &Select) -> bool {
        let grouped = match &select.group_by {
            GroupByExpr::All(_) => true,
            GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
        };
        let aggregated = select.having.is_some() || has_aggregate(&select.projection);
        let wildcard = select.projection.iter().any(|i| {
            matches!(
                i,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        });
        !wildcard
            && select.into.is_none()
            && (grouped || !aggregated)
            && select.from.iter().any(|twj| self.joins_are_empty(twj))
    }

    /// Prunes the empty selects of a set expression's tree; true when `body` is itself a
    /// pruned select.
    fn prune_set_expr(&self, body: &mut SetExpr) -> bool {
        match body {
            SetExpr::Select(select) if self.select_is_empty(select) => {
                empty_select(select);
                true
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.prune_set_expr(left);
                self.prune_set_expr(right);
                false
            }
            _ => false,
        }
    }

    /// The select of a scalar subquery, when it is a plain select.
    fn plain_select<'q>(&self, query: &'q Query) -> Option<&'q Select> {
        match query.body.as_ref() {
            SetExpr::Select(select) => Some(select),
            _ => None,
        }
    }

    /// True when every table `select` reads is a catalog table.
    fn reads_only_catalog(&self, select: &Select) -> bool {
        let mut only = !select.from.is_empty();
        for twj in &select.from {
            for factor in
                std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation))
            {
                only &= matches!(factor, TableFactor::Table { name, args: None, .. }
                    if self.catalog_table(name).is_some());
            }
        }
        only
    }
}

/// The names the tables of `select` are known by in its expressions.
fn inner_names(select: &Select) -> HashSet<String> {
    let mut names = HashSet::new();
    for twj in &select.from {
        for factor in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
            if let TableFactor::Table { name, alias, .. } = factor {
                match alias {
                    Some(a) => names.insert(normalize(&a.name)),
                    None => names.insert(parts(name).pop().unwrap_or_default()),
                };
            }
        }
    }
    names
}

/// The columns `expr` names: (qualified by an outer table, qualified by an inner one or
/// not qualified).
fn column_refs(expr: &Expr, inner: &HashSet<String>) -> (usize, usize) {
    let (mut outer, mut other) = (0, 0);
    let _ = ast::visit_expressions(expr, |e| {
        match e {
            Expr::CompoundIdentifier(p) if p.len() == 2 && !inner.contains(&normalize(&p[0])) => {
                outer += 1
            }
            Expr::CompoundIdentifier(_) | Expr::Identifier(_) => other += 1,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    (outer, other)
}

fn split_conjuncts(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_conjuncts(*left, out);
            split_conjuncts(*right, out);
        }
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            split_conjuncts(*inner, out)
        }
        other => out.push(other),
    }
}

fn and_all(conjuncts: Vec<Expr>) -> Option<Expr> {
    conjuncts.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    })
}

/// Reshapes the WHERE clause of a correlated scalar subquery so that DataFusion can
/// decorrelate it: in a predicate that is not `inner = outer`, an outer column equal to an
/// inner expression (by such an equality) is replaced by that expression (`a.x <> t.y`
/// with `c.oid = a.x` becomes `c.oid <> t.y`), and predicates on outer columns only are
/// taken out; returns them (the subquery is NULL where they do not hold). Inner columns
/// of the same name from two tables (`c.oid = a.x AND t.oid = a.y`) that both meet outer
/// ones are told apart by reading the second table through a derived table that names
/// the column anew (DataFusion 55 takes one for the other otherwise).
fn decorrelate(query: &mut Query) -> Option<Expr> {
    let template = query.clone();
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let inner = inner_names(select);
    let mut conjuncts = Vec::new();
    split_conjuncts(select.selection.take()?, &mut conjuncts);
    // outer column (as written) -> the inner expression it equals
    let mut equal: Vec<(Expr, Expr)> = Vec::new();
    for c in &conjuncts {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = c
        {
            for (a, b) in [(left, right), (right, left)] {
                let a_outer = matches!(a.as_ref(), Expr::CompoundIdentifier(_))
                    && column_refs(a, &inner) == (1, 0);
                let (b_outer, b_other) = column_refs(b, &inner);
                if a_outer && b_outer == 0 && b_other > 0 {
                    equal.push((a.as_ref().clone(), b.as_ref().clone()));
                }
            }
        }
    }
    let is_defining = |c: &Expr| {
        equal.iter().any(|(o, i)| {
            matches!(c, Expr::BinaryOp { left, op: BinaryOperator::Eq, right }
                if (left.as_ref() == o && right.as_ref() == i)
                    || (left.as_ref() == i && right.as_ref() == o))
        })
    };
    let mut kept = Vec::new();
    let mut hoisted = Vec::new();
    for mut c in conjuncts {
        if is_defining(&c) {
            kept.push(c);
            continue;
        }
        let _ = ast::visit_expressions_mut(&mut c, |e| {
            if let Some((_, i)) = equal.iter().find(|(o, _)| o == e) {
                *e = i.clone();
            }
            ControlFlow::<()>::Continue(())
        });
        let (outer, other) = column_refs(&c, &inner);
        if outer > 0 && other == 0 {
            hoisted.push(c);
        } else {
            kept.push(c);
        }
    }
    // inner key columns of one name from two tables: the second one renamed
    let mut first: Vec<(String, String)> = Vec::new();
    let mut renamed: Vec<(String, String)> = Vec::new();
    for (_, i) in &equal {
        if let Expr::CompoundIdentifier(p) = i
            && let [q, col] = p.as_slice()
        {
            let (q, col) = (normalize(q), normalize(col));
            match first.iter().find(|(_, c)| *c == col) {
                Some((q0, _)) if *q0 != q => {
                    if !renamed.contains(&(q.clone(), col.clone())) {
                        renamed.push((q, col));
                    }
                }
                Some(_) => {}
                None => first.push((q, col)),
            }
        }
    }
    for (q, col) in &renamed {
        let new_col = format!("__{q}_{col}");
        if !read_with_extra_column(&template, select, q, col, &new_col) {
            continue;
        }
        for c in kept.iter_mut().filter(|c| is_defining(c)) {
            let _ = ast::visit_expressions_mut(c, |e| {
                if let Expr::CompoundIdentifier(p) = e
                    && let [pq, pc] = p.as_slice()
                    && normalize(pq) == *q
                    && normalize(pc) == *col
                {
                    p[1] = Ident::with_quote('"', new_col.clone());
                }
                ControlFlow::<()>::Continue(())
            });
        }
    }
    select.selection = and_all(kept);
    and_all(hoisted)
}

/// Replaces the table known as `q` in `select`'s FROM by `(SELECT *, col AS new_col FROM
/// table) q`; false when there is no such plain table.
fn read_with_extra_column(
    template: &Query,
    select: &mut Select,
    q: &str,
    col: &str,
    new_col: &str,
) -> bool {
    let Some(factor) = select
        .from
        .iter_mut()
        .flat_map(|twj| {
            std::iter::once(&mut twj.relation).chain(twj.joins.iter_mut().map(|j| &mut j.relation))
        })
        .find(|f| match f {
            TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => match alias {
                Some(a) => normalize(&a.name) == q,
                None => parts(name).last().is_some_and(|n| n == q),
            },
            _ => false,
        })
    else {
        return false;
    };
    let TableFactor::Table { name, alias, .. } = factor else {
        return false;
    };
    let alias = alias.clone().unwrap_or(ast::TableAlias {
        explicit: true,
        name: Ident::new(q),
        columns: Vec::new(),
        at: None,
    });
    let mut inner = match template.body.as_ref() {
        SetExpr::Select(s) => s.as_ref().clone(),
        _ => return false,
    };
    inner.projection = vec![
        SelectItem::Wildcard(ast::WildcardAdditionalOptions::default()),
        SelectItem::ExprWithAlias {
            expr: Expr::Identifier(Ident::with_quote('"', col)),
            alias: Ident::with_quote('"', new_col),
        },
    ];
    inner.from = vec![TableWithJoins {
        relation: TableFactor::Table {
            name: name.clone(),
            alias: None,
            args: None,
            with_hints: Vec::new(),
            version: None,
            with_ordinality: false,
            partitions: Vec::new(),
            json_path: None,
            sample: None,
            index_hints: Vec::new(),
        },
        joins: Vec::new(),
    }];
    inner.selection = None;
    inner.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
    inner.having = None;
    inner.distinct = None;
    inner.named_window.clear();
    inner.qualify = None;
    inner.sort_by.clear();
    inner.lateral_views.clear();
    inner.prewhere = None;
    let mut subquery = template.clone();
    subquery.body = Box::new(SetExpr::Select(Box::new(inner)));
    subquery.with = None;
    subquery.order_by = None;
    subquery.limit_clause = None;
    subquery.fetch = None;
    subquery.locks.clear();
    *factor = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(subquery),
        alias: Some(alias),
        sample: None,
    };
    true
}

/// True when a projection calls an aggregate function (or a window function) itself (not
/// in a subquery).
fn has_aggregate(items: &[SelectItem]) -> bool {
    struct Finder {
        depth: usize,
    }
    impl Visitor for Finder {
        type Break = ();

        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }

        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }

        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if self.depth == 0
                && let Expr::Function(f) = e
            {
                let name = f
                    .name
                    .0
                    .last()
                    .and_then(ObjectNamePart::as_ident)
                    .map(normalize)
                    .unwrap_or_default();
                if f.over.is_some() || AGGREGATES.contains(&name.as_str()) {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    items
        .iter()
        .any(|item| Visit::visit(item, &mut Finder { depth: 0 }).is_break())
}

fn null_text() -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(Expr::Value(Value::Null.into())),
        data_type: DataType::Text,
        array: false,
        format: None,
    }
}

/// The column name PostgreSQL gives an unnamed select item.
fn output_name(expr: &Expr) -> String {
    match expr {
        Expr::Identifier(i) => normalize(i),
        Expr::CompoundIdentifier(parts) => parts.last().map(normalize).unwrap_or_default(),
        Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(ObjectNamePart::as_ident)
            .map(normalize)
            .unwrap_or_else(|| "?column?".into()),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => output_name(expr),
        _ => "?column?".into(),
    }
}

/// Makes `select` a select of as many NULL text columns, of the same names, and no rows.
fn empty_select(select: &mut Select) {
    let mut used: HashSet<String> = HashSet::new();
    let projection = select
        .projection
        .iter()
        .map(|item| {
            let base = match item {
                SelectItem::ExprWithAlias { alias, .. } => normalize(alias),
                SelectItem::UnnamedExpr(e) => output_name(e),
                _ => "?column?".into(),
            };
            let mut name = base.clone();
            let mut n = 1;
            while !used.insert(name.clone()) {
                n += 1;
                name = format!("{base}_{n}");
            }
            SelectItem::ExprWithAlias {
                expr: null_text(),
                alias: Ident::with_quote('"', name),
            }
        })
        .collect();
    select.projection = projection;
    select.from.clear();
    select.lateral_views.clear();
    select.prewhere = None;
    select.selection = Some(Expr::Value(Value::Boolean(false).into()));
    select.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
    select.having = None;
    select.distinct = None;
    select.named_window.clear();
    select.qualify = None;
    select.sort_by.clear();
    select.cluster_by.clear();
    select.distribute_by.clear();
}

/// `name(args)`.
fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// The object-identifier types a cast can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reg {
    Class,
    Type,
    Namespace,
    Proc,
}

impl Reg {
    /// The functions from a name to an oid and back.
    fn functions(self) -> Option<(&'static str, &'static str)> {
        match self {
            Reg::Class => Some(("regclassin", "regclassout")),
            Reg::Type => Some(("regtypein", "regtypeout")),
            Reg::Namespace => Some(("regnamespacein", "regnamespaceout")),
            Reg::Proc => None,
        }
    }
}

/// The type a cast names, by its unqualified, lower-cased name (`None` for a type that is
/// not named by an identifier), with whether it was qualified with `pg_catalog`.
fn type_name(data_type: &DataType) -> Option<(String, bool)> {
    match data_type {
        DataType::Regclass => Some(("regclass".into(), false)),
        DataType::Custom(name, modifiers) if modifiers.is_empty() => match parts(name).as_slice() {
            [t] => Some((t.clone(), false)),
            [schema, t] if schema == tables::SCHEMA => Some((t.clone(), true)),
            _ => None,
        },
        _ => None,
    }
}

fn reg_kind(data_type: &DataType) -> Option<Reg> {
    match type_name(data_type)?.0.as_str() {
        "regclass" => Some(Reg::Class),
        "regtype" => Some(Reg::Type),
        "regnamespace" => Some(Reg::Namespace),
        "regproc" | "regprocedure" => Some(Reg::Proc),
        _ => None,
    }
}

/// DataFusion's type for a PostgreSQL type name a cast uses.
fn datafusion_type(data_type: &DataType) -> Option<DataType> {
    if let DataType::Array(ast::ArrayElemTypeDef::SquareBracket(inner, size)) = data_type {
        let inner = datafusion_type(inner)?;
        return Some(DataType::Array(ast::ArrayElemTypeDef::SquareBracket(
            Box::new(inner),
            *size,
        )));
    }
    let (name, qualified) = type_name(data_type)?;
    Some(match name.as_str() {
        "oid" | "xid" | "xid8" | "cid" | "regrole" | "regoper" | "regconfig" => {
            DataType::BigInt(None)
        }
        "name" | "char" | "text" | "bpchar" | "varchar" | "unknown" | "cstring" | "aclitem"
        | "int2vector" | "oidvector" | "pg_node_tree" => DataType::Text,
        "int2" | "smallint" if qualified => DataType::SmallInt(None),
        "int4" | "integer" | "int" if qualified => DataType::Integer(None),
        "int8" | "bigint" if qualified => DataType::BigInt(None),
        "float4" | "real" if qualified => DataType::Real,
        "float8" if qualified => DataType::DoublePrecision,
        "bool" | "boolean" if qualified => DataType::Boolean,
        "numeric" if qualified => DataType::Numeric(ast::ExactNumberInfo::None),
        "date" if qualified => DataType::Date,
        "timestamp" if qualified => DataType::Timestamp(None, ast::TimezoneInfo::None),
        "timestamptz" if qualified => DataType::Timestamp(None, ast::TimezoneInfo::Tz),
        _ => return None,
    })
}

/// True for a string literal or a parameter: what a cast to an oid type reads as a name.
fn is_name_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Value(v) => matches!(
            v.value,
            Value::SingleQuotedString(_)
                | Value::EscapedStringLiteral(_)
                | Value::DollarQuotedString(_)
                | Value::Placeholder(_)
        ),
        Expr::Nested(e) => is_name_literal(e),
        _ => false,
    }
}

/// The elements of an array literal (`ARRAY['r', 'v']`, possibly cast).
fn array_literal(expr: &mut Expr) -> Option<Vec<Expr>> {
    match expr {
        Expr::Array(array) if !array.elem.is_empty() => Some(std::mem::take(&mut array.elem)),
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => array_literal(inner),
        _ => None,
    }
}

/// The operator `OPERATOR(pg_catalog.op)` names.
fn builtin_operator(op: &str) -> Option<BinaryOperator> {
    Some(match op {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => BinaryOperator::PGLikeMatch,
        "~~*" => BinaryOperator::PGILikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        "!~~*" => BinaryOperator::PGNotILikeMatch,
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "+" => BinaryOperator::Plus,
        "-" => BinaryOperator::Minus,
        "*" => BinaryOperator::Multiply,
        "/" => BinaryOperator::Divide,
        "%" => BinaryOperator::Modulo,
        "||" => BinaryOperator::StringConcat,
        _ => return None,
    })
}

fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// A comparison operand `x::regclass` (x not a name) compares as the oid `x`.
fn strip_oid_cast(operand: &mut Expr) {
    if let Expr::Cast {
        expr, data_type, ..
    } = operand
        && reg_kind(data_type).is_some()
        && !is_name_literal(expr)
    {
        let inner = std::mem::replace(expr.as_mut(), Expr::Value(Value::Null.into()));
        *operand = inner;
    }
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if self.prune_set_expr(&mut query.body) {
            // no rows: nothing to order (and the order may name the dropped tables)
            query.order_by = None;
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &mut ObjectName) -> ControlFlow<()> {
        let p = parts(name);
        match p.as_slice() {
            [table] if tables::is_catalog_table(table) && !self.ctes.contains(table) => {
                name.0
                    .insert(0, ObjectNamePart::Identifier(Ident::new(tables::SCHEMA)));
            }
            // a table function (generate_series, unnest...) called as pg_catalog.f
            [schema, f] if schema == tables::SCHEMA && !tables::is_catalog_table(f) => {
                name.0.remove(0);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Subquery(query) => {
                if let Some(select) = self.plain_select(query) {
                    if self.select_is_empty(select) {
                        *expr = null_text();
                    } else if self.reads_only_catalog(select)
                        && select.projection.len() == 1
                        && !has_aggregate(&select.projection)
                        && select.having.is_none()
                        && matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
                        && let SetExpr::Select(select) = query.body.as_mut()
                    {
                        match &mut select.projection[0] {
                            SelectItem::UnnamedExpr(e)
                            | SelectItem::ExprWithAlias { expr: e, .. } => {
                                let value = std::mem::replace(e, Expr::Value(Value::Null.into()));
                                *e = call("max", vec![value]);
                            }
                            _ => {}
                        }
                        if let Some(condition) = decorrelate(query) {
                            let subquery = std::mem::replace(expr, Expr::Value(Value::Null.into()));
                            *expr = Expr::Case {
                                case_token: ast::helpers::attached_token::AttachedToken::empty(),
                                end_token: ast::helpers::attached_token::AttachedToken::empty(),
                                operand: None,
                                conditions: vec![ast::CaseWhen {
                                    condition,
                                    result: subquery,
                                }],
                                else_result: None,
                            };
                        }
                    }
                }
            }
            // ARRAY(subquery) of no rows: the empty array (in the text form the catalog
            // tables keep arrays in)
            Expr::Function(Function {
                name,
                args: FunctionArguments::Subquery(subquery),
                ..
            }) if parts(name) == ["array"]
                && self
                    .plain_select(subquery)
                    .is_some_and(|s| self.select_is_empty(s)) =>
            {
                *expr = Expr::Value(Value::SingleQuotedString("{}".into()).into());
            }
            // ARRAY(subquery) of one column over catalog tables: the array's text form,
            // aggregated (`'{a,b}'`, `'{}'` of no rows) by a scalar subquery DataFusion plans
            Expr::Function(Function {
                name,
                args: FunctionArguments::Subquery(subquery),
                ..
            }) if parts(name) == ["array"]
                && self.plain_select(subquery).is_some_and(|s| {
                    self.reads_only_catalog(s)
                        && s.projection.len() == 1
                        && !has_aggregate(&s.projection)
                }) =>
            {
                let mut query = subquery.as_ref().clone();
                query.order_by = None;
                if let SetExpr::Select(select) = query.body.as_mut()
                    && let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } =
                        &mut select.projection[0]
                {
                    let value = std::mem::replace(e, Expr::Value(Value::Null.into()));
                    let text = Expr::Cast {
                        kind: CastKind::Cast,
                        expr: Box::new(value),
                        data_type: DataType::Text,
                        array: false,
                        format: None,
                    };
                    let quote = |s: &str| Expr::Value(Value::SingleQuotedString(s.into()).into());
                    let items = call("string_agg", vec![text, quote(",")]);
                    *e = call("concat", vec![quote("{"), items, quote("}")]);
                }
                *expr = Expr::Subquery(Box::new(query));
            }
            Expr::Exists { subquery, negated }
            | Expr::InSubquery {
                subquery, negated, ..
            } if self
                .plain_select(subquery)
                .is_some_and(|s| self.select_is_empty(s)) =>
            {
                *expr = Expr::Value(Value::Boolean(*negated).into());
            }
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                strip_oid_cast(left);
                strip_oid_cast(right);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } => {
                if let Some(list) = array_literal(right) {
                    let left = std::mem::replace(left.as_mut(), Expr::Value(Value::Null.into()));
                    *expr = Expr::InList {
                        expr: Box::new(left),
                        list,
                        negated: false,
                    };
                }
            }
            Expr::AllOp {
                left,
                compare_op: BinaryOperator::NotEq,
                right,
            } => {
                if let Some(list) = array_literal(right) {
                    let left = std::mem::replace(left.as_mut(), Expr::Value(Value::Null.into()));
                    *expr = Expr::InList {
                        expr: Box::new(left),
                        list,
                        negated: true,
                    };
                }
            }
            Expr::Collate { expr: inner, .. } => {
                let inner = std::mem::replace(inner.as_mut(), Expr::Value(Value::Null.into()));
                *expr = inner;
            }
            Expr::BinaryOp { op, .. } => {
                if let BinaryOperator::PGCustomBinaryOperator(path) = op {
                    let builtin = match path.as_slice() {
                        [op] => builtin_operator(op),
                        [schema, op] if schema.eq_ignore_ascii_case(tables::SCHEMA) => {
                            builtin_operator(op)
                        }
                        _ => None,
                    };
                    if let Some(builtin) = builtin {
                        *op = builtin;
                    }
                }
            }
            Expr::Function(f)
                if f.name.0.len() == 2
                    && f.name.0[0]
                        .as_ident()
                        .is_some_and(|i| normalize(i) == tables::SCHEMA) =>
            {
                f.name.0.remove(0);
            }
            Expr::Cast {
                expr: inner,
                data_type,
                ..
            } => {
                if let Some(reg) = reg_kind(data_type) {
                    let value = std::mem::replace(inner.as_mut(), Expr::Value(Value::Null.into()));
                    *expr = match (reg.functions(), is_name_literal(&value)) {
                        (Some((name_to_oid, _)), true) => call(name_to_oid, vec![value]),
                        (Some((_, oid_to_name)), false) => call(oid_to_name, vec![value]),
                        // a function's name stands for itself (`typinput = 'array_in'::regproc`)
                        (None, _) => match value {
                            Expr::Value(v) => match &v.value {
                                Value::SingleQuotedString(s) => Expr::Value(
                                    Value::SingleQuotedString(
                                        s.strip_prefix("pg_catalog.").unwrap_or(s).to_string(),
                                    )
                                    .into(),
                                ),
                                _ => Expr::Value(v),
                            },
                            other => other,
                        },
                    };
                    return ControlFlow::Continue(());
                }
                let mapped = datafusion_type(data_type);
                if matches!(data_type, DataType::Text | DataType::Varchar(_))
                    || mapped == Some(DataType::Text)
                {
                    // a name read as an oid, printed: the name again ('t'::regclass::text)
                    if let Expr::Function(f) = inner.as_ref()
                        && let Some(out) = [
                            ("regclassin", "regclassout"),
                            ("regtypein", "regtypeout"),
                            ("regnamespacein", "regnamespaceout"),
                        ]
                        .iter()
                        .find(|(i, _)| f.name.to_string() == *i)
                        .map(|(_, o)| *o)
                    {
                        let value =
                            std::mem::replace(inner.as_mut(), Expr::Value(Value::Null.into()));
                        *expr = call(out, vec![value]);
                        return ControlFlow::Continue(());
                    }
                }
                if let Some(mapped) = mapped {
                    *data_type = mapped;
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        rewrite(&mut statements[0]);
        statements[0].to_string()
    }

    #[test]
    fn operators_collations_and_prefixes() {
        assert_eq!(
            rewritten(
                "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)"
            ),
            "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname ~ '^(t)$' AND pg_table_is_visible(c.oid)"
        );
        assert_eq!(
            rewritten("SELECT relname FROM pg_class"),
            "SELECT relname FROM pg_catalog.pg_class"
        );
        assert_eq!(
            rewritten("WITH pg_class AS (SELECT 1 AS relname) SELECT relname FROM pg_class"),
            "WITH pg_class AS (SELECT 1 AS relname) SELECT relname FROM pg_class"
        );
    }

    #[test]
    fn oid_casts() {
        assert_eq!(
            rewritten("SELECT 't'::regclass, c.oid::pg_catalog.regclass::pg_catalog.text FROM x c"),
            "SELECT regclassin('t'), regclassout(c.oid)::TEXT FROM x c"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM x WHERE x.a::regclass = 't'::regclass"),
            "SELECT 1 FROM x WHERE x.a = regclassin('t')"
        );
        assert_eq!(
            rewritten("SELECT 'int4'::regtype::text, x.t::oid, 'pg_catalog.array_in'::regproc"),
            "SELECT regtypeout(regtypein('int4')), x.t::BIGINT, 'array_in'"
        );
    }

    #[test]
    fn selects_over_always_empty_tables_are_pruned() {
        assert_eq!(
            rewritten(
                "SELECT pubname, NULL, NULL FROM pg_catalog.pg_publication p JOIN pg_catalog.pg_class c ON c.oid = 1 ORDER BY c.relname"
            ),
            "SELECT CAST(NULL AS TEXT) AS \"pubname\", CAST(NULL AS TEXT) AS \"?column?\", CAST(NULL AS TEXT) AS \"?column?_2\" WHERE false"
        );
        // a LEFT JOIN keeps the left side's rows
        let kept = "SELECT c.relname FROM pg_catalog.pg_class AS c LEFT JOIN pg_catalog.pg_inherits AS i ON i.inhrelid = c.oid";
        assert_eq!(rewritten(kept), kept);
        // an aggregate over no rows still has a row
        let counted = "SELECT count(*) FROM pg_catalog.pg_trigger";
        assert_eq!(rewritten(counted), counted);
        assert_eq!(
            rewritten(
                "SELECT a.attname, (SELECT d.adbin FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid) FROM pg_catalog.pg_attribute a"
            ),
            "SELECT a.attname, CAST(NULL AS TEXT) FROM pg_catalog.pg_attribute a"
        );
    }

    #[test]
    fn correlated_catalog_subqueries_are_aggregated() {
        assert_eq!(
            rewritten(
                "SELECT (SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid) FROM pg_catalog.pg_attribute a"
            ),
            "SELECT (SELECT max(t.typname) FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid) FROM pg_catalog.pg_attribute a"
        );
        // user tables keep PostgreSQL's semantics
        let user = "SELECT (SELECT b.x FROM b WHERE b.id = a.id) FROM a";
        assert_eq!(rewritten(user), user);
    }

    #[test]
    fn any_of_an_array_becomes_in() {
        assert_eq!(
            rewritten("SELECT 1 FROM t WHERE k = ANY (ARRAY['r', 'v']) AND j <> ALL (ARRAY[1])"),
            "SELECT 1 FROM t WHERE k IN ('r', 'v') AND j NOT IN (1)"
        );
    }

    #[test]
    fn correlated_predicates_are_reshaped() {
        assert_eq!(
            rewritten(
                "SELECT (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t \
                 WHERE c.oid = a.attcollation AND t.oid = a.atttypid \
                 AND a.attcollation <> t.typcollation AND a.atthasdef) FROM pg_catalog.pg_attribute a"
            ),
            "SELECT CASE WHEN a.atthasdef THEN (SELECT max(c.collname) \
             FROM pg_catalog.pg_collation c, \
             (SELECT *, \"oid\" AS \"__t_oid\" FROM pg_catalog.pg_type) t \
             WHERE c.oid = a.attcollation AND t.\"__t_oid\" = a.atttypid \
             AND c.oid <> t.typcollation) END FROM pg_catalog.pg_attribute a"
        );
    }
}
