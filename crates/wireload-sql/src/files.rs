//! Files read without a table: `SELECT ... FROM 'f.csv'`, `read_csv(path | [paths], options)`,
//! `COPY t FROM 'f' (AUTO)` and the CLI's file arguments. The dialect and the column types are
//! inferred from samples of the file ([`wireload_sniff`]) unless given; a value the samples
//! did not show re-plans its column wider and the load runs again, so the user gets the data
//! and a notice of what changed instead of an error half way through.

use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    self as ast, Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, TableAlias,
    TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use wireload_load::{
    Encoding, FieldSource, Fields, Input, LoadControl, LoadError, LoadOptions, LoadReport,
    RowFilter, Source,
};
use wireload_sniff::{SniffOptions, Sniffed};
use wireload_storage::{Partitioning, Table, TableDef};
use wireload_types::{ColumnDef, SqlType, TableSchema};

use crate::copy::{ReadSpec, read_spec};
use crate::error::SqlError;
use crate::parse::Statement;

/// Bytes of a streamed input (compressed, a pipe) the sniffer sees.
const STREAM_SAMPLE: usize = 8 << 20;

/// How many times a load re-plans columns before giving up (each re-plan widens one
/// column, so a table of n columns needs at most a few per column).
const MAX_REPLANS: usize = 64;

/// The column `read_csv(..., filename => true)` adds: the file each row comes from.
const FILENAME: &str = "filename";

/// What a temporary table of a statement holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadSource {
    /// These paths or glob patterns, as written.
    Files(Vec<String>),
    /// The records the session's loads rejected (`wireload_rejects`).
    Rejects,
}

/// The name of the table of rejected records.
pub(crate) const REJECTS: &str = "wireload_rejects";

/// The columns of `wireload_rejects`.
pub(crate) fn rejects_schema() -> TableSchema {
    use wireload_types::SqlType;
    let col = |name: &str, ty: SqlType| ColumnDef {
        name: name.into(),
        ty,
        nullable: true,
    };
    TableSchema {
        columns: vec![
            col("load_id", SqlType::BigInt),
            col("file", SqlType::Text),
            col("line", SqlType::BigInt),
            col("byte_offset", SqlType::BigInt),
            col("column_name", SqlType::Text),
            col("raw_line", SqlType::Text),
            col("error", SqlType::Text),
        ],
    }
}

/// A file reference of a statement: what to load, and the temporary name it became.
#[derive(Debug, Clone)]
pub(crate) struct FileRead {
    /// What to load.
    pub source: ReadSource,
    /// How to read them.
    pub spec: ReadSpec,
    /// The temporary table's name in the rewritten statement.
    pub name: String,
}

/// Numbers the temporary tables of file references.
static NEXT_FILE: AtomicU64 = AtomicU64::new(1);

/// Replaces the file references of `statement` (`'f.csv'` and `read_csv(...)` in FROM, and
/// `wireload_rejects` unless `is_table` says a table has that name) with the names of
/// temporary tables; returns what each must hold.
pub(crate) fn extract(
    statement: &mut Statement,
    is_table: &dyn Fn(&str) -> bool,
) -> Result<Vec<FileRead>, SqlError> {
    let mut finder = Finder {
        found: Vec::new(),
        is_table,
    };
    let flow = match statement {
        Statement::Query(q) => visit_df(q, &mut finder),
        Statement::CreateTableAs(c) => VisitMut::visit(&mut *c.query, &mut finder),
        Statement::Write(w) => visit_df(&mut w.statement, &mut finder),
        Statement::CopyTo(c) => match &mut c.source {
            crate::copy::CopySource::Query(q) => VisitMut::visit(&mut **q, &mut finder),
            crate::copy::CopySource::Table { .. } => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    };
    match flow {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(finder.found),
    }
}

fn visit_df(statement: &mut DfStatement, v: &mut Finder<'_>) -> ControlFlow<SqlError> {
    match statement {
        DfStatement::Statement(s) => VisitMut::visit(&mut **s, v),
        DfStatement::Explain(e) => visit_df(&mut e.statement, v),
        _ => ControlFlow::Continue(()),
    }
}

/// Collects file references, renaming them as it goes.
struct Finder<'a> {
    found: Vec<FileRead>,
    is_table: &'a dyn Fn(&str) -> bool,
}

impl VisitorMut for Finder<'_> {
    type Break = SqlError;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<SqlError> {
        let TableFactor::Table {
            name, alias, args, ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let read = match (single_ident(name), args.as_ref()) {
            (Some(id), None) if id.quote_style == Some('\'') => Ok(Some((
                ReadSource::Files(vec![id.value.clone()]),
                ReadSpec::default(),
            ))),
            (Some(id), None)
                if id.quote_style.is_none()
                    && id.value.eq_ignore_ascii_case(REJECTS)
                    && !(self.is_table)(REJECTS) =>
            {
                Ok(Some((ReadSource::Rejects, ReadSpec::default())))
            }
            (Some(id), Some(a))
                if id.quote_style.is_none()
                    && (id.value.eq_ignore_ascii_case("read_csv")
                        || id.value.eq_ignore_ascii_case("read_csv_auto")) =>
            {
                read_csv_args(&a.args).map(|(paths, spec)| Some((ReadSource::Files(paths), spec)))
            }
            _ => Ok(None),
        };
        let (source, spec) = match read {
            Ok(Some(r)) => r,
            Ok(None) => return ControlFlow::Continue(()),
            Err(e) => return ControlFlow::Break(e),
        };
        let temp = format!("__file_{}", NEXT_FILE.fetch_add(1, Ordering::Relaxed));
        if alias.is_none() {
            // `SELECT data.x FROM 'data.csv'`: the table is named after the (first) file
            let shown = match &source {
                ReadSource::Files(paths) => table_name_of(&paths[0]),
                ReadSource::Rejects => REJECTS.to_string(),
            };
            *alias = Some(TableAlias {
                explicit: true,
                name: Ident::with_quote('"', shown),
                columns: Vec::new(),
                at: None,
            });
        }
        *name = ObjectName::from(vec![Ident::with_quote('"', temp.clone())]);
        *args = None;
        self.found.push(FileRead {
            source,
            spec,
            name: temp,
        });
        ControlFlow::Continue(())
    }
}

fn single_ident(name: &ObjectName) -> Option<&Ident> {
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(id)] => Some(id),
        _ => None,
    }
}

/// The table name a file gets: its name without directories and extensions (`data` for
/// `dir/data.csv.gz`), or `file` when nothing is left.
pub fn table_name_of(path: &str) -> String {
    let base = Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = base.split('.').next().unwrap_or_default();
    let clean: String = stem
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    if clean.is_empty() || clean.chars().all(|c| c == '_') {
        "file".into()
    } else {
        clean
    }
}

/// `read_csv`'s arguments: the path (a string or a list of strings) first, then options
/// as `name => value` (or `name = value`).
fn read_csv_args(args: &[FunctionArg]) -> Result<(Vec<String>, ReadSpec), SqlError> {
    let bad = |what: &str| SqlError::InvalidOption(format!("read_csv: {what}"));
    let mut paths = None;
    let mut named = Vec::new();
    for arg in args {
        match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) if paths.is_none() => {
                paths = Some(match e {
                    Expr::Array(a) => a
                        .elem
                        .iter()
                        .map(|e| {
                            string_of(e).ok_or_else(|| bad("the list of paths holds strings only"))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    e => vec![string_of(e).ok_or_else(|| {
                        bad("the first argument is the path: a string or a list of strings")
                    })?],
                });
            }
            FunctionArg::Named { name, arg, .. }
            | FunctionArg::ExprNamed {
                name: Expr::Identifier(name),
                arg,
                ..
            } => {
                let FunctionArgExpr::Expr(e) = arg else {
                    return Err(bad(&format!("{} needs a value", name.value)));
                };
                let value = value_text(e).ok_or_else(|| {
                    bad(&format!(
                        "the value of {} must be a constant (a string, number or boolean)",
                        name.value
                    ))
                })?;
                named.push((name.value.to_ascii_lowercase(), Some(value)));
            }
            _ => {
                return Err(bad(
                    "takes the path first, then options as name => value (delim => '|')",
                ));
            }
        }
    }
    let paths = paths.ok_or_else(|| bad("the path is missing: read_csv('file.csv')"))?;
    if paths.is_empty() {
        return Err(bad("the list of paths is empty"));
    }
    Ok((paths, read_spec(named)?))
}

fn string_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn value_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s)
            | Value::DoubleQuotedString(s)
            | Value::EscapedStringLiteral(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.to_string()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        Expr::Identifier(id) => Some(id.value.clone()),
        _ => None,
    }
}

/// The sources of `paths` (glob patterns expanded, in order), read with the rights of the
/// process's user.
pub fn sources_of(paths: &[String]) -> Result<Vec<Source>, SqlError> {
    crate::FileAccess::Local.sources(paths, crate::gate::Use::Read("a file in FROM"))
}

/// Infers the dialect and columns of `source`, written in `encoding` (the dialect options
/// of `opts` kept): the whole of a mapped file is sampled, the first 8 MiB of a stream.
pub fn sniff_source(
    source: &Source,
    opts: &SniffOptions,
    encoding: Encoding,
) -> Result<Sniffed, SqlError> {
    let name = source.name();
    let load_err = |error: LoadError| SqlError::Load {
        table: name.clone(),
        error,
    };
    let input = source
        .open_encoded(encoding, &Arc::default())
        .map_err(load_err)?;
    let sniffed = match input {
        Input::Whole(whole) => wireload_sniff::sniff(whole.bytes(), opts),
        Input::Stream(mut blocks) => {
            let (sample, ended) = read_sample(&mut blocks).map_err(load_err)?;
            let opts = SniffOptions {
                truncated: !ended,
                ..opts.clone()
            };
            wireload_sniff::sniff(&sample, &opts)
        }
    };
    sniffed.map_err(|e| SqlError::InvalidOption(format!("{name}: {e}")))
}

/// Infers the dialect and columns of the file at `path`.
pub fn sniff_file(path: &Path, opts: &SniffOptions) -> Result<Sniffed, SqlError> {
    sniff_source(&Source::File(PathBuf::from(path)), opts, Encoding::Utf8)
}

/// What a load of files with inferred columns did.
#[derive(Debug)]
pub struct InferredLoad {
    /// The table, filled (not attached to a catalog).
    pub table: Arc<Table>,
    /// The load's report (of the last, successful run).
    pub report: LoadReport,
    /// Columns re-planned wider because of values the samples did not show, one line each.
    pub replanned: Vec<String>,
}

/// Loads `sources` into a new table `name` whose columns are `spec.schema` or inferred
/// from the first source, with the dialect `spec` gives or detected. A value that does not
/// fit an inferred column widens that column and the load runs again (the failed run
/// published nothing). Runs on the current rayon pool or `spec.options.threads`.
pub fn load_inferred(
    name: &str,
    sources: &[Source],
    spec: &ReadSpec,
    ctl: &LoadControl,
) -> Result<InferredLoad, SqlError> {
    infer(name, sources, spec)?.load(spec.project.as_ref(), None, ctl)
}

/// Makes the row filter of a load for the table it loads into (its columns as they are
/// when the load runs: a re-plan may have widened some); None loads every row.
pub type FilterFor = Arc<dyn Fn(&TableDef) -> Option<RowFilter> + Send + Sync>;

/// Files whose dialect and columns are known (given or inferred) and not loaded yet.
pub struct InferredRead {
    name: String,
    sources: Vec<Source>,
    options: LoadOptions,
    /// every column of the input, as given or inferred
    columns: Vec<ColumnDef>,
    /// the columns were inferred (and may be re-planned, and projected)
    inferred: bool,
    /// every source is a regular file (a load can run again)
    rerunnable: bool,
    /// a last column names each row's file
    filename: bool,
}

/// Finds the dialect and columns of `sources` for a table `name` (see [`load_inferred`]):
/// given by `spec`, or inferred from the first source. A stream is sampled and replayed.
pub fn infer(name: &str, sources: &[Source], spec: &ReadSpec) -> Result<InferredRead, SqlError> {
    if sources.is_empty() {
        return Err(SqlError::InvalidOption("no file to read".into()));
    }
    let rerunnable = sources.iter().all(is_regular_file);
    let mut sources = sources.to_vec();
    let encoding = spec.options.encoding;
    let sniffed = if is_regular_file(&sources[0]) {
        sniff_source(&sources[0], &spec.detect, encoding)?
    } else if encoding != Encoding::Utf8 {
        return Err(SqlError::NotSupported(format!(
            "{}: a stream in ENCODING {encoding} is read once, so its columns cannot be \
             inferred: give them (schema => '...')",
            sources[0].name()
        )));
    } else {
        // a stream is read once: the sample is replayed in front of the rest
        let (sample, ended, replay) = sample_stream(&sources[0])?;
        sources[0] = replay;
        let detect = SniffOptions {
            truncated: !ended,
            ..spec.detect.clone()
        };
        wireload_sniff::sniff(&sample, &detect)
            .map_err(|e| SqlError::InvalidOption(format!("{}: {e}", sources[0].name())))?
    };
    let mut options = crate::copy::with_default_budget(spec.options.clone());
    options.dialect = sniffed.dialect.clone();
    // the formats given were the only ones the sniffer tried
    options.formats = sniffed.formats;
    let (columns, inferred) = match &spec.schema {
        Some(s) => (s.columns.clone(), false),
        None => (sniffed.columns.clone(), true),
    };
    if spec.filename
        && columns
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(FILENAME))
    {
        return Err(SqlError::InvalidOption(format!(
            "{}: filename => true adds a column \"{FILENAME}\", and the file has one",
            sources[0].name()
        )));
    }
    Ok(InferredRead {
        name: name.to_string(),
        sources,
        options,
        columns,
        inferred,
        rerunnable,
        filename: spec.filename,
    })
}

impl InferredRead {
    /// The name of the table the files load into.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table of every column a statement may read from these files (the input's, and
    /// `filename` when asked for), empty.
    pub fn def(&self) -> Result<TableDef, SqlError> {
        let mut columns = self.columns.clone();
        if self.filename {
            columns.push(filename_column());
        }
        Ok(TableDef::new(
            self.name.clone(),
            TableSchema { columns },
            Partitioning::Single,
        )?)
    }

    /// Loads the files into a new table of the columns named in `project` (lower case;
    /// None: all of them) and the rows `filter` keeps, re-planning inferred columns as
    /// [`load_inferred`] says.
    pub fn load(
        self,
        project: Option<&std::collections::HashSet<String>>,
        filter: Option<&FilterFor>,
        ctl: &LoadControl,
    ) -> Result<InferredLoad, SqlError> {
        let InferredRead {
            name,
            sources,
            mut options,
            mut columns,
            inferred,
            rerunnable,
            filename,
        } = self;
        let count = columns.len();
        let mut keep: Vec<usize> = (0..count).collect();
        if inferred && let Some(names) = project {
            // only the columns the statement names are deserialized and kept
            keep.retain(|&c| names.contains(&columns[c].name.to_lowercase()));
            if keep.is_empty() {
                keep.push(0);
            }
        }
        let mut fields: Vec<FieldSource> = keep.iter().map(|&c| FieldSource::Input(c)).collect();
        columns = keep.iter().map(|&c| columns[c].clone()).collect();
        if filename && project.is_none_or(|names| names.contains(FILENAME)) {
            columns.push(filename_column());
            fields.push(FieldSource::FileName);
        }
        if keep.len() < count || fields.len() > keep.len() {
            options.fields = Some(Fields {
                count,
                columns: fields,
            });
        }
        let mut replanned = Vec::new();
        loop {
            // a re-run counts its progress from the start again
            ctl.bytes_done.store(0, Ordering::Relaxed);
            let def = TableDef::new(
                name.clone(),
                TableSchema {
                    columns: columns.clone(),
                },
                Partitioning::Single,
            )?;
            options.filter = filter.and_then(|f| f(&def));
            let table = Arc::new(Table::new(def));
            let error = match wireload_load::load_files(&table, &sources, &options, ctl) {
                Ok(report) => {
                    return Ok(InferredLoad {
                        table,
                        report,
                        replanned,
                    });
                }
                Err(e) => e,
            };
            let widened = match &error {
                LoadError::Value { pos, text, .. }
                    if inferred && rerunnable && replanned.len() < MAX_REPLANS =>
                {
                    // the error names the input's column: the table's is where it is read
                    pos.column
                        .checked_sub(1)
                        .and_then(|field| match &options.fields {
                            Some(f) => f
                                .columns
                                .iter()
                                .position(|&c| c == FieldSource::Input(field)),
                            None => Some(field),
                        })
                        .filter(|&c| c < columns.len())
                        .and_then(|c| {
                            wireload_sniff::widen(&columns[c].ty, text.as_bytes(), &options.formats)
                                .map(|ty| (c, ty))
                        })
                        .map(|(c, ty)| (c, ty, pos.clone()))
                }
                _ => None,
            };
            let Some((c, ty, pos)) = widened else {
                return Err(SqlError::Load { table: name, error });
            };
            let col: &mut ColumnDef = &mut columns[c];
            replanned.push(format!(
                "column \"{}\" re-planned from {} to {}: {} line {} holds {:?}",
                col.name,
                col.ty,
                ty,
                pos.file,
                pos.line,
                text_of(&error)
            ));
            col.ty = ty;
        }
    }
}

/// The column `filename => true` (and Python's `read_csv(filename=True)`) adds: each row's
/// file.
pub fn filename_column() -> ColumnDef {
    ColumnDef {
        name: FILENAME.into(),
        ty: SqlType::Text,
        nullable: true,
    }
}

/// True for a regular file (which a load can read again); false for a pipe or a stream.
fn is_regular_file(source: &Source) -> bool {
    match source {
        Source::File(p) => std::fs::metadata(p).is_ok_and(|m| m.is_file()),
        Source::Opened { file, .. } => file.metadata().is_ok_and(|m| m.is_file()),
        _ => false,
    }
}

/// The first bytes of the stream `source` (up to 8 MiB), whether they are all of it, and a
/// source that streams them again, followed by the rest.
fn sample_stream(source: &Source) -> Result<(Vec<u8>, bool, Source), SqlError> {
    let name = source.name();
    let load_err = |error: LoadError| SqlError::Load {
        table: name.clone(),
        error,
    };
    let mut blocks = match source.open().map_err(load_err)? {
        Input::Stream(blocks) => blocks,
        Input::Whole(whole) => {
            let bytes = whole.bytes().to_vec();
            let replay = Source::Bytes {
                name: name.clone(),
                data: bytes.clone().into(),
            };
            return Ok((bytes, true, replay));
        }
    };
    let (sample, ended) = read_sample(&mut blocks).map_err(load_err)?;
    let rest = BlockReader {
        blocks: (!ended).then_some(blocks),
        block: None,
        at: 0,
    };
    let replay = Source::reader(
        name.clone(),
        std::io::Cursor::new(sample.clone()).chain(rest),
    );
    Ok((sample, ended, replay))
}

/// The first blocks of a stream, up to 8 MiB, and whether they are all of it.
fn read_sample(blocks: &mut wireload_load::Blocks) -> Result<(Vec<u8>, bool), LoadError> {
    let mut sample = Vec::new();
    while sample.len() < STREAM_SAMPLE {
        match blocks.next_block()? {
            Some(b) => {
                sample.extend_from_slice(b.bytes());
                blocks.recycle(b);
            }
            None => return Ok((sample, true)),
        }
    }
    Ok((sample, false))
}

/// The rest of a stream's blocks as a reader.
struct BlockReader {
    blocks: Option<wireload_load::Blocks>,
    block: Option<wireload_load::Block>,
    at: usize,
}

impl std::io::Read for BlockReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(b) = &self.block {
                let rest = &b.bytes()[self.at..];
                if !rest.is_empty() {
                    let n = rest.len().min(buf.len());
                    buf[..n].copy_from_slice(&rest[..n]);
                    self.at += n;
                    return Ok(n);
                }
            }
            let Some(blocks) = &mut self.blocks else {
                return Ok(0);
            };
            if let Some(used) = self.block.take() {
                blocks.recycle(used);
            }
            match blocks.next_block() {
                Ok(Some(b)) => {
                    self.block = Some(b);
                    self.at = 0;
                }
                Ok(None) => {
                    self.blocks = None;
                    return Ok(0);
                }
                Err(e) => return Err(std::io::Error::other(e.to_string())),
            }
        }
    }
}

fn text_of(error: &LoadError) -> &str {
    match error {
        LoadError::Value { text, .. } => text,
        _ => "",
    }
}

/// The names (lower case) a statement may use as columns: every identifier in its
/// expressions and `USING` lists; None when it may read every column (`*`, `t.*`, a
/// `NATURAL` join). A file read for it needs only the columns these name.
pub(crate) fn names_used(statement: &Statement) -> Option<std::collections::HashSet<String>> {
    let mut v = NamesUsed {
        names: std::collections::HashSet::new(),
        all: false,
    };
    let _ = match statement {
        Statement::Query(q) => names_df(q, &mut v),
        Statement::CreateTableAs(c) => Visit::visit(&*c.query, &mut v),
        Statement::Write(w) => names_df(&w.statement, &mut v),
        Statement::CopyTo(c) => match &c.source {
            crate::copy::CopySource::Query(q) => Visit::visit(&**q, &mut v),
            crate::copy::CopySource::Table { .. } => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    };
    (!v.all).then_some(v.names)
}

fn names_df(statement: &DfStatement, v: &mut NamesUsed) -> ControlFlow<()> {
    match statement {
        DfStatement::Statement(s) => Visit::visit(&**s, v),
        DfStatement::Explain(e) => names_df(&e.statement, v),
        _ => {
            v.all = true;
            ControlFlow::Continue(())
        }
    }
}

struct NamesUsed {
    names: std::collections::HashSet<String>,
    all: bool,
}

impl Visitor for NamesUsed {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(id) => {
                self.names.insert(id.value.to_lowercase());
            }
            Expr::CompoundIdentifier(parts) => {
                self.names
                    .extend(parts.iter().map(|p| p.value.to_lowercase()));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &ast::Select) -> ControlFlow<()> {
        use ast::{JoinConstraint, JoinOperator as J, SelectItem};
        if select.projection.iter().any(|item| {
            matches!(
                item,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        }) {
            self.all = true;
        }
        for join in select.from.iter().flat_map(|t| &t.joins) {
            let constraint = match &join.join_operator {
                J::Join(c)
                | J::Inner(c)
                | J::Left(c)
                | J::LeftOuter(c)
                | J::Right(c)
                | J::RightOuter(c)
                | J::FullOuter(c)
                | J::CrossJoin(c)
                | J::Semi(c)
                | J::LeftSemi(c)
                | J::RightSemi(c)
                | J::Anti(c)
                | J::LeftAnti(c)
                | J::RightAnti(c) => Some(c),
                _ => None,
            };
            match constraint {
                Some(JoinConstraint::Natural) => self.all = true,
                Some(JoinConstraint::Using(names)) => {
                    for name in names {
                        self.names.extend(
                            name.0
                                .iter()
                                .filter_map(|p| p.as_ident().map(|i| i.value.to_lowercase())),
                        );
                    }
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }
}

/// Column names that differ from their lower case, by lower case: an unquoted identifier
/// that matches one case-insensitively (and matches no column exactly) means it.
#[derive(Debug, Default)]
pub(crate) struct MixedCase {
    names: std::collections::HashMap<String, Option<String>>,
    lower: std::collections::HashSet<String>,
}

impl MixedCase {
    /// Adds the columns of `schema`.
    pub(crate) fn add(&mut self, schema: &TableSchema) {
        for c in &schema.columns {
            let low = c.name.to_lowercase();
            if low == c.name {
                self.lower.insert(low);
                continue;
            }
            let entry = self
                .names
                .entry(low)
                .or_insert_with(|| Some(c.name.clone()));
            if entry.as_deref() != Some(c.name.as_str()) {
                // two spellings: ambiguous, leave identifiers as they are
                *entry = None;
            }
        }
    }

    fn resolve(&self, ident: &Ident) -> Option<String> {
        if ident.quote_style.is_some() {
            return None;
        }
        let low = ident.value.to_lowercase();
        if self.lower.contains(&low) {
            return None;
        }
        self.names.get(&low).cloned().flatten()
    }

    fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Rewrites the unquoted identifiers of `statement` that name a mixed-case column
    /// into quoted ones of its spelling (`Person` and `person` for a column "Person").
    pub(crate) fn apply(&self, statement: &mut Statement) {
        if self.is_empty() {
            return;
        }
        let mut v = CaseFolder { names: self };
        let _ = match statement {
            Statement::Query(q) => fold_df(q, &mut v),
            Statement::CreateTableAs(c) => VisitMut::visit(&mut *c.query, &mut v),
            Statement::Write(w) => fold_df(&mut w.statement, &mut v),
            Statement::CopyTo(c) => match &mut c.source {
                crate::copy::CopySource::Query(q) => VisitMut::visit(&mut **q, &mut v),
                crate::copy::CopySource::Table { .. } => ControlFlow::Continue(()),
            },
            _ => ControlFlow::Continue(()),
        };
    }
}

fn fold_df(statement: &mut DfStatement, v: &mut CaseFolder<'_>) -> ControlFlow<()> {
    match statement {
        DfStatement::Statement(s) => VisitMut::visit(&mut **s, v),
        DfStatement::Explain(e) => fold_df(&mut e.statement, v),
        _ => ControlFlow::Continue(()),
    }
}

struct CaseFolder<'a> {
    names: &'a MixedCase,
}

impl VisitorMut for CaseFolder<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(id) => {
                if let Some(name) = self.names.resolve(id) {
                    *id = Ident::with_quote('"', name);
                }
            }
            Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last_mut()
                    && let Some(name) = self.names.resolve(last)
                {
                    *last = Ident::with_quote('"', name);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_of_files() {
        assert_eq!(table_name_of("dir/data.csv"), "data");
        assert_eq!(table_name_of("dir/sales-2024.csv.gz"), "sales_2024");
        assert_eq!(table_name_of("/x/.csv"), "file");
        assert_eq!(table_name_of("Person.CSV"), "Person");
    }

    fn rewrite(sql: &str, columns: &[&str]) -> String {
        let mut m = MixedCase::default();
        m.add(&TableSchema {
            columns: columns
                .iter()
                .map(|n| ColumnDef {
                    name: n.to_string(),
                    ty: wireload_types::SqlType::Text,
                    nullable: true,
                })
                .collect(),
        });
        let mut s = crate::parse::parse_script(sql).unwrap().remove(0).statement;
        m.apply(&mut s);
        match s {
            Statement::Query(q) => q.to_string(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn mixed_case_columns_resolve_case_insensitively() {
        assert_eq!(
            rewrite(
                "SELECT Person, PERSON, t.person, age FROM t",
                &["Person", "age"]
            ),
            "SELECT \"Person\", \"Person\", t.\"Person\", age FROM t"
        );
        // quoted identifiers stay exact; a lower-case column wins over a mixed-case one
        assert_eq!(
            rewrite(
                "SELECT \"person\", Name FROM t",
                &["Person", "name", "Name"]
            ),
            "SELECT \"person\", Name FROM t"
        );
        // two spellings: ambiguous, left to DataFusion
        assert_eq!(
            rewrite("SELECT city FROM t", &["City", "CITY"]),
            "SELECT city FROM t"
        );
    }

    #[test]
    fn file_references_become_temporary_tables() {
        let mut s = crate::parse::parse_script(
            "SELECT * FROM 'dir/data.csv' JOIN read_csv(['a.csv', 'b.csv'], delim => '|', header => true) r ON true",
        )
        .unwrap()
        .remove(0)
        .statement;
        let found = extract(&mut s, &|_| false).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0].source,
            ReadSource::Files(vec!["dir/data.csv".into()])
        );
        assert_eq!(
            found[1].source,
            ReadSource::Files(vec!["a.csv".into(), "b.csv".into()])
        );
        assert_eq!(found[1].spec.detect.delimiter, Some(b'|'));
        assert_eq!(found[1].spec.detect.header, Some(true));
        assert_eq!(found[0].spec.detect.delimiter, None);
        let Statement::Query(q) = s else { panic!() };
        assert_eq!(
            q.to_string(),
            format!(
                "SELECT * FROM \"{}\" AS \"data\" JOIN \"{}\" r ON true",
                found[0].name, found[1].name
            )
        );
    }

    fn used(sql: &str) -> Option<Vec<String>> {
        let s = crate::parse::parse_script(sql).unwrap().remove(0).statement;
        names_used(&s).map(|n| {
            let mut v: Vec<String> = n.into_iter().collect();
            v.sort();
            v
        })
    }

    #[test]
    fn names_a_statement_uses() {
        assert_eq!(
            used("SELECT A, f.b + 1 FROM 'x.csv' f WHERE c > 2 ORDER BY d"),
            Some(vec![
                "a".into(),
                "b".into(),
                "c".into(),
                "d".into(),
                "f".into()
            ])
        );
        assert_eq!(used("SELECT count(*) FROM 'x.csv'"), Some(Vec::new()));
        assert_eq!(used("SELECT * FROM 'x.csv'"), None);
        assert_eq!(used("SELECT t.* FROM 'x.csv' t"), None);
        assert_eq!(used("SELECT a FROM 'x.csv' NATURAL JOIN y"), None);
        assert_eq!(
            used("SELECT a FROM 'x.csv' JOIN y USING (k)"),
            Some(vec!["a".into(), "k".into()])
        );
        assert_eq!(used("SELECT a FROM (SELECT * FROM 'x.csv') s"), None);
    }

    #[test]
    fn read_csv_argument_errors() {
        let err = |sql: &str| {
            let mut s = crate::parse::parse_script(sql).unwrap().remove(0).statement;
            extract(&mut s, &|_| false).unwrap_err().to_string()
        };
        assert!(err("SELECT * FROM read_csv()").contains("the path is missing"));
        assert!(err("SELECT * FROM read_csv(42)").contains("the first argument is the path"));
        assert!(
            err("SELECT * FROM read_csv('a', bogus => 1)").contains("unknown COPY option BOGUS")
        );
        assert!(err("SELECT * FROM read_csv('a', format => 'csv')").contains("takes no FORMAT"));
    }
}
