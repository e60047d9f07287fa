//! What a statement needs of its session's role before it runs: privileges on the tables
//! and views it reads and writes, ownership of what DDL changes, CREATE on the database.
//! Read from the statement's AST once; a local session needs nothing.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    self, FromTable, ObjectName, ObjectType, TableFactor, TableObject, TableWithJoins,
};

use crate::copy::CopySource;
use crate::parse::Statement;
use crate::roles::{Privilege, RoleStatement};
use crate::{Database, SqlError};

/// A table or view a statement makes (with what a view reads), or those it drops.
#[derive(Debug)]
pub(crate) enum OwnershipChange {
    Made(String, Vec<String>),
    Dropped(Vec<String>),
}

/// One thing a statement needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// A privilege on a table or view.
    On(String, Privilege),
    /// Ownership of a table or view.
    Owner(String),
    /// Ownership of the table an index belongs to.
    IndexOwner(String),
    /// CREATE on the database.
    Create,
    /// A privilege on every table (EXPORT DATABASE reads them all).
    Every(Privilege),
}

/// The table or view an object name refers to by the naming rules (`t`, `public.t`,
/// `wireload.public.t`; unquoted names fold to lower case), whether or not it exists.
pub(crate) fn relation_name(name: &ObjectName) -> Option<String> {
    let parts = name
        .0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => Some(wireload_types::sql::ident_name(i)),
            ast::ObjectNamePart::Function(_) => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let (catalog, schema) = (
        wireload_query::DEFAULT_CATALOG,
        wireload_query::DEFAULT_SCHEMA,
    );
    match parts.as_slice() {
        [t] => Some(t.clone()),
        [s, t] if s == schema => Some(t.clone()),
        [c, s, t] if c == catalog && s == schema => Some(t.clone()),
        _ => None,
    }
}

impl Database {
    /// Checks that this session's role may run `statement` (a local session may run
    /// anything).
    pub(crate) fn authorize(&self, statement: &Statement) -> Result<(), SqlError> {
        if self.acts_as_superuser() {
            return Ok(());
        }
        let needs = needs(statement, &|name| self.relation_of(name));
        self.check_needs(&needs)
    }

    /// Checks that this session's role holds `privilege` on the table or view `relation`.
    pub fn check_privilege(&self, relation: &str, privilege: Privilege) -> Result<(), SqlError> {
        self.require(&[Need::On(relation.to_string(), privilege)])
    }

    /// True when this session has every right (a local session, or a superuser's).
    pub(crate) fn acts_as_superuser(&self) -> bool {
        let actor = self.actor.lock().unwrap_or_else(|e| e.into_inner());
        self.roles.is_superuser(&actor)
    }

    /// Checks `needs` against this session's role. A relation that does not exist is
    /// skipped: the statement fails on it with its own error.
    pub(crate) fn require(&self, needs: &[Need]) -> Result<(), SqlError> {
        if needs.is_empty() || self.acts_as_superuser() {
            return Ok(());
        }
        self.check_needs(needs)
    }

    /// Checks `needs` against the role of a session that is no superuser's.
    fn check_needs(&self, needs: &[Need]) -> Result<(), SqlError> {
        let actor = self.actor();
        // a relation that does not exist is looked for only when a check fails
        let unless_missing = |r: &str, checked: Result<(), SqlError>| match checked {
            Err(e) if self.relation_exists(r) => Err(e),
            _ => Ok(()),
        };
        for need in needs {
            match need {
                Need::On(r, p) => unless_missing(r, self.roles.check(&actor, r, *p))?,
                Need::Owner(r) => unless_missing(r, self.roles.check_owner(&actor, r))?,
                Need::IndexOwner(index) => {
                    if let Some(table) = self.index_owner(index) {
                        self.roles.check_owner(&actor, table.name())?;
                    }
                }
                Need::Create => self.roles.check_create(&actor)?,
                Need::Every(p) => {
                    let mut all = self.catalog.table_names();
                    all.extend(self.schema.other_names());
                    for r in all {
                        self.roles.check(&actor, &r, *p)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The table or view of this database `name` refers to.
    pub(crate) fn relation_of(&self, name: &ObjectName) -> Option<String> {
        relation_name(name).filter(|r| self.relation_exists(r))
    }

    fn relation_exists(&self, name: &str) -> bool {
        self.table(name).is_ok() || self.schema.has_other(name)
    }

    /// What `statement` will make or drop, to record once it ran.
    pub(crate) fn ownership_change(&self, statement: &Statement) -> Option<OwnershipChange> {
        match statement {
            Statement::CreateTableAs(c) => Some(OwnershipChange::Made(c.name.clone(), Vec::new())),
            Statement::DropTable(d) => Some(OwnershipChange::Dropped(d.names.clone())),
            Statement::Query(_) => {
                if let Some((view, reads)) = view_created(statement, &|n| self.relation_of(n)) {
                    return Some(OwnershipChange::Made(view, reads));
                }
                let dropped = views_dropped(statement);
                (!dropped.is_empty()).then_some(OwnershipChange::Dropped(dropped))
            }
            _ => None,
        }
    }

    /// Records a change a statement made: the owner of what it made (and what a view
    /// reads), the end of the grants on what it dropped.
    pub(crate) fn record_ownership(&self, change: OwnershipChange) {
        match change {
            OwnershipChange::Made(name, reads) => self.roles.created(&self.actor(), &name, reads),
            OwnershipChange::Dropped(names) => names.iter().for_each(|n| self.roles.dropped(n)),
        }
    }

    /// Runs a role statement: a grant on all tables names the tables and views there are.
    pub(crate) fn role_statement(&self, statement: RoleStatement) -> Result<String, SqlError> {
        let statement = match statement {
            RoleStatement::Tables {
                grant,
                privileges,
                relations: None,
                grantees,
            } => {
                let mut all = self.catalog.table_names();
                all.extend(self.schema.other_names());
                all.sort();
                RoleStatement::Tables {
                    grant,
                    privileges,
                    relations: Some(all),
                    grantees,
                }
            }
            RoleStatement::Tables {
                relations: Some(relations),
                grant,
                privileges,
                grantees,
            } => {
                for r in &relations {
                    if !self.relation_exists(r) {
                        return Err(SqlError::UndefinedTable(r.clone()));
                    }
                }
                RoleStatement::Tables {
                    grant,
                    privileges,
                    relations: Some(relations),
                    grantees,
                }
            }
            other => other,
        };
        self.roles.execute(&self.actor(), statement)
    }
}

/// What `statement` needs; `relation` names the table or view an object name refers to
/// (None: not one of the database's, such as a system table or a CTE).
pub(crate) fn needs(
    statement: &Statement,
    relation: &dyn Fn(&ObjectName) -> Option<String>,
) -> Vec<Need> {
    let mut out = Vec::new();
    match statement {
        Statement::Query(df) => df_needs(df, relation, &mut out),
        Statement::CreateTable(_) | Statement::Import(_) => out.push(Need::Create),
        Statement::CreateTableAs(c) => {
            out.push(Need::Create);
            reads(c.query.as_ref(), relation, &mut out);
        }
        Statement::Write(w) => {
            if let DfStatement::Statement(s) = w.statement.as_ref() {
                write_needs(s, relation, &mut out);
                if let Some(target) = write_target(s).and_then(relation) {
                    if w.returning.is_some() {
                        out.push(Need::On(target.clone(), Privilege::Select));
                    }
                    if let Some(crate::dml::OnConflict::Update(_)) = &w.on_conflict {
                        out.push(Need::On(target, Privilege::Update));
                    }
                }
            }
        }
        Statement::Truncate(t) => out.extend(
            t.names
                .iter()
                .map(|n| Need::On(n.clone(), Privilege::Truncate)),
        ),
        Statement::DropTable(d) => out.extend(d.names.iter().cloned().map(Need::Owner)),
        Statement::CreateIndex(c) => out.push(Need::Owner(c.table.clone())),
        Statement::DropIndex(d) => out.extend(d.names.iter().cloned().map(Need::IndexOwner)),
        Statement::CopyFrom(c) => out.push(Need::On(c.table.clone(), Privilege::Insert)),
        Statement::CopyTo(c) => match &c.source {
            CopySource::Table { table, .. } => {
                out.push(Need::On(table.clone(), Privilege::Select));
            }
            CopySource::Query(q) => reads(q.as_ref(), relation, &mut out),
        },
        Statement::Export(_) => out.push(Need::Every(Privilege::Select)),
        Statement::Setting(_) | Statement::Transaction(_) | Statement::Role(_) => {}
    }
    out
}

/// The relations a `CREATE VIEW` at `statement` reads (its owner's rights are checked on
/// them when the view is read), with the view's name; None for any other statement.
pub(crate) fn view_created(
    statement: &Statement,
    relation: &dyn Fn(&ObjectName) -> Option<String>,
) -> Option<(String, Vec<String>)> {
    let Statement::Query(df) = statement else {
        return None;
    };
    let DfStatement::Statement(s) = df.as_ref() else {
        return None;
    };
    let ast::Statement::CreateView(v) = s.as_ref() else {
        return None;
    };
    let name = crate::ddl::table_name(&v.name).ok()?;
    let mut out = Vec::new();
    reads(v.query.as_ref(), relation, &mut out);
    let reads = out
        .into_iter()
        .filter_map(|n| match n {
            Need::On(r, _) => Some(r),
            _ => None,
        })
        .collect();
    Some((name, reads))
}

/// The views and tables a DROP VIEW at `statement` drops.
pub(crate) fn views_dropped(statement: &Statement) -> Vec<String> {
    match statement {
        Statement::Query(df) => match df.as_ref() {
            DfStatement::Statement(s) => match s.as_ref() {
                ast::Statement::Drop {
                    object_type: ObjectType::View,
                    names,
                    ..
                } => names
                    .iter()
                    .filter_map(|n| crate::ddl::table_name(n).ok())
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn df_needs(
    statement: &DfStatement,
    relation: &dyn Fn(&ObjectName) -> Option<String>,
    out: &mut Vec<Need>,
) {
    match statement {
        DfStatement::Statement(s) => ast_needs(s, relation, out),
        DfStatement::Explain(e) => df_needs(&e.statement, relation, out),
        // COPY is wireload's, CREATE EXTERNAL TABLE refused; the rest names no relation
        _ => {}
    }
}

fn ast_needs(
    statement: &ast::Statement,
    relation: &dyn Fn(&ObjectName) -> Option<String>,
    out: &mut Vec<Need>,
) {
    match statement {
        ast::Statement::Explain { statement, .. } => ast_needs(statement, relation, out),
        ast::Statement::CreateView(v) => {
            out.push(Need::Create);
            reads(v.query.as_ref(), relation, out);
        }
        ast::Statement::Drop {
            object_type: ObjectType::View,
            names,
            ..
        } => out.extend(names.iter().filter_map(relation).map(Need::Owner)),
        ast::Statement::AlterTable(a) => out.extend(relation(&a.name).map(Need::Owner)),
        s @ (ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_)) => {
            write_needs(s, relation, out)
        }
        // a query, or anything else that names a relation: it reads it
        other => reads(other, relation, out),
    }
}

/// SELECT on every relation `node` names.
fn reads<V: ast::Visit>(
    node: &V,
    relation: &dyn Fn(&ObjectName) -> Option<String>,
    out: &mut Vec<Need>,
) {
    let _ = ast::visit_relations(node, |name| {
        if let Some(r) = relation(name) {
            let need = Need::On(r, Privilege::Select);
            if !out.contains(&need) {
                out.push(need);
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// An INSERT, UPDATE or DELETE: its privilege on the target; SELECT on the target when it
/// reads its rows (a WHERE, FROM or USING clause, RETURNING), and on every other relation.
fn write_needs(
    statement: &ast::Statement,
    relation: &dyn Fn(&ObjectName) -> Option<String>,
    out: &mut Vec<Need>,
) {
    let Some(target) = write_target(statement).and_then(relation) else {
        return reads(statement, relation, out);
    };
    let (privilege, reads_target) = match statement {
        ast::Statement::Insert(_) => (Privilege::Insert, false),
        ast::Statement::Update(u) => (
            Privilege::Update,
            u.selection.is_some() || u.from.is_some() || u.returning.is_some(),
        ),
        ast::Statement::Delete(d) => (
            Privilege::Delete,
            d.selection.is_some() || d.using.is_some() || d.returning.is_some(),
        ),
        _ => return reads(statement, relation, out),
    };
    out.push(Need::On(target.clone(), privilege));
    if reads_target {
        out.push(Need::On(target.clone(), Privilege::Select));
    }
    // every other relation is read (the target too when it is named again)
    let mut named = Vec::new();
    reads(statement, relation, &mut named);
    let mut seen_target = 0;
    let _ = ast::visit_relations(statement, |name| {
        if relation(name).as_deref() == Some(target.as_str()) {
            seen_target += 1;
        }
        ControlFlow::<()>::Continue(())
    });
    for need in named {
        let is_target = matches!(&need, Need::On(r, _) if *r == target);
        if (!is_target || seen_target > 1) && !out.contains(&need) {
            out.push(need);
        }
    }
}

/// The table an INSERT, UPDATE or DELETE writes.
fn write_target(statement: &ast::Statement) -> Option<&ObjectName> {
    match statement {
        ast::Statement::Insert(i) => match &i.table {
            TableObject::TableName(name) => Some(name),
            _ => None,
        },
        ast::Statement::Update(u) => match &u.table.relation {
            TableFactor::Table { name, .. } => Some(name),
            _ => None,
        },
        ast::Statement::Delete(d) => match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => first_table(t),
        },
        _ => None,
    }
}

/// The first table of a FROM list.
fn first_table(tables: &[TableWithJoins]) -> Option<&ObjectName> {
    match tables.first().map(|t| &t.relation) {
        Some(TableFactor::Table { name, .. }) => Some(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_script;

    fn of(sql: &str) -> Vec<Need> {
        let statement = parse_script(sql).unwrap().remove(0).statement;
        needs(&statement, &|name| {
            relation_name(name).filter(|n| ["t", "u", "v"].contains(&n.as_str()))
        })
    }

    fn on(r: &str, p: Privilege) -> Need {
        Need::On(r.into(), p)
    }

    #[test]
    fn statements_need_what_they_read_and_write() {
        use Privilege::*;
        assert_eq!(
            of(
                "SELECT * FROM t JOIN (SELECT * FROM public.u) x ON true WHERE EXISTS (SELECT 1 FROM v)"
            ),
            [on("t", Select), on("u", Select), on("v", Select)]
        );
        assert_eq!(of("SELECT * FROM pg_catalog.pg_class, other"), []);
        assert_eq!(
            of("EXPLAIN ANALYZE SELECT * FROM wireload.public.t"),
            [on("t", Select)]
        );
        assert_eq!(of("INSERT INTO t VALUES (1)"), [on("t", Insert)]);
        assert_eq!(
            of("INSERT INTO t SELECT * FROM u RETURNING *"),
            [on("t", Insert), on("u", Select), on("t", Select)]
        );
        assert_eq!(of("UPDATE t SET a = 1"), [on("t", Update)]);
        assert_eq!(
            of("UPDATE t SET a = u.a FROM u WHERE t.k = u.k"),
            [on("t", Update), on("t", Select), on("u", Select)]
        );
        assert_eq!(
            of("DELETE FROM t WHERE k IN (SELECT k FROM t)"),
            [on("t", Delete), on("t", Select)]
        );
        assert_eq!(of("TRUNCATE t"), [on("t", Truncate)]);
        assert_eq!(of("COPY t FROM STDIN"), [on("t", Insert)]);
        assert_eq!(of("COPY t TO STDOUT"), [on("t", Select)]);
        assert_eq!(of("COPY (SELECT * FROM u) TO STDOUT"), [on("u", Select)]);
        assert_eq!(
            of("CREATE VIEW w AS SELECT * FROM t"),
            [Need::Create, on("t", Select)]
        );
        assert_eq!(
            of("CREATE TABLE w AS SELECT * FROM t"),
            [Need::Create, on("t", Select)]
        );
        assert_eq!(of("DROP TABLE t"), [Need::Owner("t".into())]);
        assert_eq!(of("DROP VIEW v"), [Need::Owner("v".into())]);
        assert_eq!(of("CREATE INDEX i ON t (a)"), [Need::Owner("t".into())]);
        assert_eq!(of("EXPORT DATABASE 'x'"), [Need::Every(Select)]);
        assert_eq!(of("BEGIN"), []);
        assert_eq!(of("GRANT SELECT ON t TO r"), []);
    }
}
