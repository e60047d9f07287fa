//! The PostgreSQL functions psql and drivers call, as DataFusion scalar functions, each
//! also callable as `pg_catalog.name(...)`: catalog lookups (`format_type`,
//! `pg_get_indexdef`, `pg_get_constraintdef`, `pg_table_size`, the `regclass` / `regtype` /
//! `regnamespace` conversions the rewrite uses), session information (`version()`,
//! `current_database()`, `current_schema()`, `current_user`...), and the functions about
//! what wireload does not have (comments, column defaults, privileges), which answer as
//! PostgreSQL does for an object without any: NULL, or true for privileges.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use super::objects::{
    self, CATALOG_OWNER, Context, DATABASE_NAME, OWNER_OID, Objects, PG_VERSION, UTF8_ENCODING,
};

/// What a function body sees: the catalog, read at most once per call of the function.
struct Env<'a> {
    context: &'a Context,
    objects: Option<Objects>,
}

impl Env<'_> {
    fn objects(&mut self) -> Result<&Objects> {
        if self.objects.is_none() {
            self.objects = Some(self.context.objects_now()?);
        }
        Ok(self.objects.get_or_insert_with(Objects::default))
    }
}

type Body = Arc<dyn Fn(&mut Env<'_>, &[ScalarValue]) -> Result<ScalarValue> + Send + Sync>;

/// A PostgreSQL function evaluated row by row (catalog queries have few rows).
struct PgFunction {
    name: &'static str,
    aliases: Vec<String>,
    signature: Signature,
    ret: DataType,
    body: Body,
    context: Arc<Context>,
}

impl std::fmt::Debug for PgFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgFunction")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PartialEq for PgFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.context, &other.context)
    }
}

impl Eq for PgFunction {}

impl Hash for PgFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl PgFunction {
    fn call(&self, env: &mut Env<'_>, args: &[ScalarValue]) -> Result<ScalarValue> {
        let out = (self.body)(env, args)?;
        if out.is_null() {
            return ScalarValue::try_from(&self.ret);
        }
        if out.data_type() == self.ret {
            Ok(out)
        } else {
            out.cast_to(&self.ret)
        }
    }
}

impl ScalarUDFImpl for PgFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.ret.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mut env = Env {
            context: &self.context,
            objects: None,
        };
        let scalars: Option<Vec<ScalarValue>> = args
            .args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => Some(s.clone()),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        if let Some(scalars) = scalars {
            return Ok(ColumnarValue::Scalar(self.call(&mut env, &scalars)?));
        }
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = Vec::with_capacity(args.number_rows);
        for row in 0..args.number_rows {
            let values = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, row))
                .collect::<Result<Vec<_>>>()?;
            out.push(self.call(&mut env, &values)?);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(arrow::array::new_empty_array(
                &self.ret,
            )));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

/// An argument as an integer (integers, and strings of digits as psql passes oids).
fn int(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int8(x) => x.map(i64::from),
        ScalarValue::Int16(x) => x.map(i64::from),
        ScalarValue::Int32(x) => x.map(i64::from),
        ScalarValue::Int64(x) => *x,
        ScalarValue::UInt8(x) => x.map(i64::from),
        ScalarValue::UInt16(x) => x.map(i64::from),
        ScalarValue::UInt32(x) => x.map(i64::from),
        ScalarValue::UInt64(x) => x.and_then(|x| i64::try_from(x).ok()),
        _ => text(v).and_then(|s| s.trim().parse().ok()),
    }
}

/// An argument as text.
fn text(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s.clone(),
        v if v.is_null() => None,
        v => Some(v.to_string()),
    }
}

fn utf8(s: impl Into<String>) -> ScalarValue {
    ScalarValue::Utf8(Some(s.into()))
}

/// The value of the first argument that must be there; `None` when it is NULL.
fn arg(args: &[ScalarValue], i: usize) -> &ScalarValue {
    args.get(i).unwrap_or(&ScalarValue::Null)
}

/// Registers the functions in `session`.
pub(crate) fn register(session: &SessionContext, context: &Arc<Context>) {
    let add = |name: &'static str, arities: &[usize], ret: DataType, body: Body| {
        let signature = Signature::one_of(
            arities
                .iter()
                .map(|&n| {
                    if n == 0 {
                        TypeSignature::Nullary
                    } else {
                        TypeSignature::Any(n)
                    }
                })
                .collect(),
            Volatility::Stable,
        );
        session.register_udf(ScalarUDF::new_from_impl(PgFunction {
            name,
            aliases: vec![format!("pg_catalog.{name}")],
            signature,
            ret,
            body,
            context: Arc::clone(context),
        }));
    };
    let text_ty = DataType::Utf8;
    let null_text: Body = Arc::new(|_, _| Ok(ScalarValue::Utf8(None)));

    // visibility and privileges: everything is visible and allowed
    for name in [
        "pg_table_is_visible",
        "pg_type_is_visible",
        "pg_function_is_visible",
    ] {
        add(
            name,
            &[1],
            DataType::Boolean,
            Arc::new(|_, a| Ok(ScalarValue::Boolean(int(arg(a, 0)).map(|_| true)))),
        );
    }
    for name in [
        "has_table_privilege",
        "has_schema_privilege",
        "has_database_privilege",
        "has_column_privilege",
        "has_any_column_privilege",
        "has_function_privilege",
        "has_sequence_privilege",
        "has_tablespace_privilege",
        "pg_has_role",
    ] {
        add(
            name,
            &[2, 3, 4],
            DataType::Boolean,
            Arc::new(|_, a| Ok(ScalarValue::Boolean(Some(a.iter().all(|v| !v.is_null()))))),
        );
    }
    add(
        "pg_relation_is_publishable",
        &[1],
        DataType::Boolean,
        Arc::new(|_, _| Ok(ScalarValue::Boolean(Some(false)))),
    );
    add(
        "pg_is_in_recovery",
        &[0],
        DataType::Boolean,
        Arc::new(|_, _| Ok(ScalarValue::Boolean(Some(false)))),
    );

    // names
    add(
        "pg_get_userbyid",
        &[1],
        text_ty.clone(),
        Arc::new(|_, a| {
            Ok(match int(arg(a, 0)) {
                Some(OWNER_OID) => utf8(CATALOG_OWNER),
                Some(oid) => utf8(format!("unknown (OID={oid})")),
                None => ScalarValue::Null,
            })
        }),
    );
    add(
        "format_type",
        &[2],
        text_ty.clone(),
        Arc::new(|_, a| {
            Ok(match int(arg(a, 0)) {
                Some(oid) => utf8(objects::format_type(oid, int(arg(a, 1)))),
                None => ScalarValue::Null,
            })
        }),
    );
    add(
        "pg_encoding_to_char",
        &[1],
        text_ty.clone(),
        Arc::new(|_, a| {
            Ok(match int(arg(a, 0)) {
                Some(0) => utf8("SQL_ASCII"),
                Some(UTF8_ENCODING) => utf8("UTF8"),
                Some(_) => utf8(""),
                None => ScalarValue::Null,
            })
        }),
    );
    add(
        "pg_get_indexdef",
        &[1, 3],
        text_ty.clone(),
        Arc::new(|env, a| {
            let Some(oid) = int(arg(a, 0)) else {
                return Ok(ScalarValue::Null);
            };
            let column = int(arg(a, 1)).unwrap_or(0);
            let objects = env.objects()?;
            Ok(match objects.relation(oid) {
                Some(r) => match (&r.index, column) {
                    (Some(ix), 0) => utf8(objects::index_definition(r, ix)),
                    (Some(_), n) => usize::try_from(n - 1)
                        .ok()
                        .and_then(|i| r.columns.get(i))
                        .map_or(ScalarValue::Null, |c| utf8(objects::quote_ident(&c.name))),
                    (None, _) => ScalarValue::Null,
                },
                None => ScalarValue::Null,
            })
        }),
    );
    add(
        "pg_get_constraintdef",
        &[1, 2],
        text_ty.clone(),
        Arc::new(|env, a| {
            let Some(oid) = int(arg(a, 0)) else {
                return Ok(ScalarValue::Null);
            };
            Ok(env
                .objects()?
                .constraint(oid)
                .map_or(ScalarValue::Null, |c| {
                    utf8(objects::constraint_definition(c))
                }))
        }),
    );
    // wireload has no column defaults, view texts, comments or extended statistics
    add(
        "pg_get_expr",
        &[2, 3],
        text_ty.clone(),
        Arc::clone(&null_text),
    );
    add(
        "pg_get_viewdef",
        &[1, 2],
        text_ty.clone(),
        Arc::clone(&null_text),
    );
    add(
        "pg_get_statisticsobjdef_columns",
        &[1],
        text_ty.clone(),
        Arc::clone(&null_text),
    );
    add(
        "obj_description",
        &[1, 2],
        text_ty.clone(),
        Arc::clone(&null_text),
    );
    add(
        "col_description",
        &[2],
        text_ty.clone(),
        Arc::clone(&null_text),
    );
    add(
        "shobj_description",
        &[2],
        text_ty.clone(),
        Arc::clone(&null_text),
    );

    // sizes
    for (name, what) in [
        ("pg_table_size", Size::Table),
        ("pg_relation_size", Size::Relation),
        ("pg_total_relation_size", Size::Total),
        ("pg_indexes_size", Size::Indexes),
    ] {
        add(
            name,
            &[1, 2],
            DataType::Int64,
            Arc::new(move |env, a| {
                let Some(oid) = int(arg(a, 0)) else {
                    return Ok(ScalarValue::Null);
                };
                Ok(ScalarValue::Int64(relation_size(env.objects()?, oid, what)))
            }),
        );
    }
    add(
        "pg_size_pretty",
        &[1],
        text_ty.clone(),
        Arc::new(|_, a| Ok(int(arg(a, 0)).map_or(ScalarValue::Null, |n| utf8(size_pretty(n))))),
    );

    // the regclass / regtype / regnamespace conversions (the rewrite's casts)
    add(
        "to_regclass",
        &[1],
        DataType::Int64,
        Arc::new(|env, a| regclass_in(env, arg(a, 0), false)),
    );
    add(
        "regclassin",
        &[1],
        DataType::Int64,
        Arc::new(|env, a| regclass_in(env, arg(a, 0), true)),
    );
    add(
        "regclassout",
        &[1],
        text_ty.clone(),
        Arc::new(|env, a| {
            let v = arg(a, 0);
            let Some(oid) = int(v) else {
                return Ok(text(v).map_or(ScalarValue::Null, utf8));
            };
            Ok(utf8(
                env.objects()?
                    .relation_display(oid)
                    .unwrap_or_else(|| oid.to_string()),
            ))
        }),
    );
    add(
        "to_regtype",
        &[1],
        DataType::Int64,
        Arc::new(|_, a| regtype_in(arg(a, 0), false)),
    );
    add(
        "regtypein",
        &[1],
        DataType::Int64,
        Arc::new(|_, a| regtype_in(arg(a, 0), true)),
    );
    add(
        "regtypeout",
        &[1],
        text_ty.clone(),
        Arc::new(|_, a| {
            let v = arg(a, 0);
            Ok(match int(v) {
                Some(oid) if objects::type_by_oid(oid).is_some() => {
                    utf8(objects::format_type(oid, None))
                }
                Some(oid) => utf8(oid.to_string()),
                None => text(v).map_or(ScalarValue::Null, utf8),
            })
        }),
    );
    add(
        "to_regnamespace",
        &[1],
        DataType::Int64,
        Arc::new(|env, a| regnamespace_in(env, arg(a, 0), false)),
    );
    add(
        "regnamespacein",
        &[1],
        DataType::Int64,
        Arc::new(|env, a| regnamespace_in(env, arg(a, 0), true)),
    );
    add(
        "regnamespaceout",
        &[1],
        text_ty.clone(),
        Arc::new(|env, a| {
            let v = arg(a, 0);
            let Some(oid) = int(v) else {
                return Ok(text(v).map_or(ScalarValue::Null, utf8));
            };
            Ok(utf8(
                env.objects()?
                    .namespace_name(oid)
                    .map_or_else(|| oid.to_string(), objects::quote_ident),
            ))
        }),
    );

    // the session
    add(
        "version",
        &[0],
        text_ty.clone(),
        Arc::new(|_, _| {
            Ok(utf8(format!(
                "PostgreSQL {PG_VERSION} (wireload {}) on {}-{}, 64-bit",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::ARCH,
                std::env::consts::OS
            )))
        }),
    );
    for name in ["current_database", "current_catalog"] {
        add(
            name,
            &[0],
            text_ty.clone(),
            Arc::new(|_, _| Ok(utf8(DATABASE_NAME))),
        );
    }
    add(
        "current_schema",
        &[0],
        text_ty.clone(),
        Arc::new(|_, _| Ok(utf8(wireload_sql::DEFAULT_SCHEMA))),
    );
    add(
        "current_schemas",
        &[1],
        DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
        Arc::new(|_, a| {
            let mut names = Vec::new();
            if matches!(arg(a, 0), ScalarValue::Boolean(Some(true))) {
                names.push(utf8("pg_catalog"));
            }
            names.push(utf8(wireload_sql::DEFAULT_SCHEMA));
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &names,
                &DataType::Utf8,
            )))
        }),
    );
    for name in ["current_user", "session_user", "current_role", "user"] {
        add(
            name,
            &[0],
            text_ty.clone(),
            Arc::new(|_, _| Ok(utf8(CATALOG_OWNER))),
        );
    }
    add(
        "pg_backend_pid",
        &[0],
        DataType::Int32,
        Arc::new(|_, _| {
            Ok(ScalarValue::Int32(Some(
                i32::try_from(std::process::id()).unwrap_or(i32::MAX),
            )))
        }),
    );

    if !session
        .state()
        .scalar_functions()
        .contains_key("array_to_string")
    {
        add(
            "array_to_string",
            &[2, 3],
            text_ty,
            Arc::new(|_, a| Ok(array_to_string(a))),
        );
    }
}

/// `regclassin` (`strict`: an error for a relation that does not exist) and `to_regclass`.
fn regclass_in(env: &mut Env<'_>, v: &ScalarValue, strict: bool) -> Result<ScalarValue> {
    let Some(name) = text(v) else {
        return Ok(ScalarValue::Null);
    };
    if let Ok(oid) = name.trim().parse::<i64>() {
        return Ok(ScalarValue::Int64(Some(oid)));
    }
    match env.objects()?.relation_by_name(&name) {
        Some(r) => Ok(ScalarValue::Int64(Some(r.oid))),
        None if strict => Err(DataFusionError::Plan(format!(
            "relation \"{name}\" does not exist"
        ))),
        None => Ok(ScalarValue::Null),
    }
}

/// `regtypein` and `to_regtype`.
fn regtype_in(v: &ScalarValue, strict: bool) -> Result<ScalarValue> {
    let Some(name) = text(v) else {
        return Ok(ScalarValue::Null);
    };
    if let Ok(oid) = name.trim().parse::<i64>() {
        return Ok(ScalarValue::Int64(Some(oid)));
    }
    match objects::type_by_name(&name) {
        Some(t) => Ok(ScalarValue::Int64(Some(t.oid))),
        None if strict => Err(DataFusionError::Plan(format!(
            "type \"{name}\" does not exist"
        ))),
        None => Ok(ScalarValue::Null),
    }
}

/// `regnamespacein` and `to_regnamespace`.
fn regnamespace_in(env: &mut Env<'_>, v: &ScalarValue, strict: bool) -> Result<ScalarValue> {
    let Some(name) = text(v) else {
        return Ok(ScalarValue::Null);
    };
    if let Ok(oid) = name.trim().parse::<i64>() {
        return Ok(ScalarValue::Int64(Some(oid)));
    }
    match env.objects()?.namespace_by_name(&name) {
        Some(oid) => Ok(ScalarValue::Int64(Some(oid))),
        None if strict => Err(DataFusionError::Plan(format!(
            "schema \"{name}\" does not exist"
        ))),
        None => Ok(ScalarValue::Null),
    }
}

/// Which size a size function reports.
#[derive(Debug, Clone, Copy)]
enum Size {
    /// The relation itself.
    Relation,
    /// The table (no indexes).
    Table,
    /// The table's indexes.
    Indexes,
    /// The table with its indexes.
    Total,
}

fn relation_size(objects: &Objects, oid: i64, what: Size) -> Option<i64> {
    let r = objects.relation(oid)?;
    let own = r.bytes.unwrap_or(0);
    let indexes: usize = objects
        .relations
        .iter()
        .filter(|i| i.index.as_ref().is_some_and(|ix| ix.table_oid == oid))
        .map(|i| i.index.as_ref().map_or(0, |ix| ix.bytes))
        .sum();
    let bytes = match what {
        Size::Relation | Size::Table => own,
        Size::Indexes => indexes,
        Size::Total => own + indexes,
    };
    i64::try_from(bytes).ok()
}

/// `pg_size_pretty`: PostgreSQL 15's rounding and units.
pub(crate) fn size_pretty(size: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if size.abs() < LIMIT {
        return format!("{size} bytes");
    }
    // keep one extra bit for rounding
    let mut size = size >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

/// `array_to_string(array, separator [, null_string])` over lists and over the text form
/// (`{a,b}`) the catalog tables keep arrays in.
fn array_to_string(a: &[ScalarValue]) -> ScalarValue {
    let Some(sep) = text(arg(a, 1)) else {
        return ScalarValue::Utf8(None);
    };
    let null_string = text(arg(a, 2));
    let items: Vec<Option<String>> = match arg(a, 0) {
        ScalarValue::List(list) => list
            .iter()
            .flatten()
            .flat_map(|values| {
                (0..values.len())
                    .map(|i| {
                        ScalarValue::try_from_array(&values, i)
                            .ok()
                            .and_then(|v| text(&v))
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        v => match text(v) {
            None => return ScalarValue::Utf8(None),
            Some(s) => match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some("") => Vec::new(),
                Some(inner) => inner.split(',').map(|x| Some(x.to_string())).collect(),
                None => vec![Some(s)],
            },
        },
    };
    let parts: Vec<String> = items
        .into_iter()
        .filter_map(|i| i.or_else(|| null_string.clone()))
        .collect();
    utf8(parts.join(&sep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_postgresql_does() {
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10 * 1024), "10 kB");
        assert_eq!(size_pretty(1_000_000), "977 kB");
        assert_eq!(size_pretty(123_456_789), "118 MB");
        assert_eq!(size_pretty(-123_456_789), "-118 MB");
    }

    #[test]
    fn arrays_join() {
        assert_eq!(array_to_string(&[utf8("{a,b}"), utf8(", ")]), utf8("a, b"));
        assert_eq!(
            array_to_string(&[ScalarValue::Utf8(None), utf8(",")]),
            ScalarValue::Utf8(None)
        );
        let list = ScalarValue::List(ScalarValue::new_list_nullable(
            &[utf8("x"), ScalarValue::Utf8(None), utf8("y")],
            &DataType::Utf8,
        ));
        assert_eq!(array_to_string(&[list.clone(), utf8("-")]), utf8("x-y"));
        assert_eq!(
            array_to_string(&[list, utf8("-"), utf8("?")]),
            utf8("x-?-y")
        );
    }
}
