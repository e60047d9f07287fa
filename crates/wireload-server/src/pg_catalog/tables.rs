//! The `pg_catalog` schema: each table is computed from the live catalog when a query
//! scans it, so tables created after the schema was installed show up. Tables for what
//! wireload does not have (inheritance, policies, publications, triggers, rules, column
//! defaults, comments...) are always empty, which the rewrite relies on
//! ([`is_always_empty`]).

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;

use super::objects::{
    self, Context, DATABASE_NAME, DATABASE_OID, DEFAULT_COLLATION_OID, OWNER_OID, Objects,
    PG_CATALOG_OID, TABLESPACE_OID, UTF8_ENCODING,
};

/// The schema's name.
pub(crate) const SCHEMA: &str = "pg_catalog";

/// A column type of the catalog tables.
#[derive(Debug, Clone, Copy)]
enum Ty {
    /// oid, regproc... (Int64)
    Oid,
    /// name, text, "char", and arrays in their text form (Utf8)
    Text,
    Bool,
    I16,
    I32,
    I64,
    F32,
}

impl Ty {
    fn data_type(self) -> DataType {
        match self {
            Ty::Oid | Ty::I64 => DataType::Int64,
            Ty::Text => DataType::Utf8,
            Ty::Bool => DataType::Boolean,
            Ty::I16 => DataType::Int16,
            Ty::I32 => DataType::Int32,
            Ty::F32 => DataType::Float32,
        }
    }
}

type Rows = Vec<Vec<ScalarValue>>;

/// One table of pg_catalog.
struct Spec {
    name: &'static str,
    columns: &'static [(&'static str, Ty)],
    /// A view in PostgreSQL (pg_class.relkind 'v').
    view: bool,
    /// Its rows; `None`: always empty.
    rows: Option<fn(&Objects) -> Rows>,
}

use Ty::{Bool, F32, I16, I32, I64, Oid, Text};

const SPECS: &[Spec] = &[
    Spec {
        name: "pg_namespace",
        columns: &[
            ("oid", Oid),
            ("nspname", Text),
            ("nspowner", Oid),
            ("nspacl", Text),
        ],
        view: false,
        rows: Some(namespace_rows),
    },
    Spec {
        name: "pg_class",
        columns: &[
            ("oid", Oid),
            ("relname", Text),
            ("relnamespace", Oid),
            ("reltype", Oid),
            ("reloftype", Oid),
            ("relowner", Oid),
            ("relam", Oid),
            ("relfilenode", Oid),
            ("reltablespace", Oid),
            ("relpages", I32),
            ("reltuples", F32),
            ("relallvisible", I32),
            ("reltoastrelid", Oid),
            ("relhasindex", Bool),
            ("relisshared", Bool),
            ("relpersistence", Text),
            ("relkind", Text),
            ("relnatts", I16),
            ("relchecks", I16),
            ("relhasrules", Bool),
            ("relhastriggers", Bool),
            ("relhassubclass", Bool),
            ("relrowsecurity", Bool),
            ("relforcerowsecurity", Bool),
            ("relispopulated", Bool),
            ("relreplident", Text),
            ("relispartition", Bool),
            ("relrewrite", Oid),
            ("relfrozenxid", I64),
            ("relminmxid", I64),
            ("relacl", Text),
            ("reloptions", Text),
            ("relpartbound", Text),
        ],
        view: false,
        rows: Some(class_rows),
    },
    Spec {
        name: "pg_attribute",
        columns: &[
            ("attrelid", Oid),
            ("attname", Text),
            ("atttypid", Oid),
            ("attstattarget", I32),
            ("attlen", I16),
            ("attnum", I16),
            ("attndims", I32),
            ("attcacheoff", I32),
            ("atttypmod", I32),
            ("attbyval", Bool),
            ("attalign", Text),
            ("attstorage", Text),
            ("attcompression", Text),
            ("attnotnull", Bool),
            ("atthasdef", Bool),
            ("atthasmissing", Bool),
            ("attidentity", Text),
            ("attgenerated", Text),
            ("attisdropped", Bool),
            ("attislocal", Bool),
            ("attinhcount", I32),
            ("attcollation", Oid),
            ("attacl", Text),
            ("attoptions", Text),
            ("attfdwoptions", Text),
            ("attmissingval", Text),
        ],
        view: false,
        rows: Some(attribute_rows),
    },
    Spec {
        name: "pg_type",
        columns: &[
            ("oid", Oid),
            ("typname", Text),
            ("typnamespace", Oid),
            ("typowner", Oid),
            ("typlen", I16),
            ("typbyval", Bool),
            ("typtype", Text),
            ("typcategory", Text),
            ("typispreferred", Bool),
            ("typisdefined", Bool),
            ("typdelim", Text),
            ("typrelid", Oid),
            ("typsubscript", Text),
            ("typelem", Oid),
            ("typarray", Oid),
            ("typinput", Text),
            ("typoutput", Text),
            ("typreceive", Text),
            ("typsend", Text),
            ("typmodin", Text),
            ("typmodout", Text),
            ("typanalyze", Text),
            ("typalign", Text),
            ("typstorage", Text),
            ("typnotnull", Bool),
            ("typbasetype", Oid),
            ("typtypmod", I32),
            ("typndims", I32),
            ("typcollation", Oid),
            ("typdefaultbin", Text),
            ("typdefault", Text),
            ("typacl", Text),
        ],
        view: false,
        rows: Some(type_rows),
    },
    Spec {
        name: "pg_index",
        columns: &[
            ("indexrelid", Oid),
            ("indrelid", Oid),
            ("indnatts", I16),
            ("indnkeyatts", I16),
            ("indisunique", Bool),
            ("indnullsnotdistinct", Bool),
            ("indisprimary", Bool),
            ("indisexclusion", Bool),
            ("indimmediate", Bool),
            ("indisclustered", Bool),
            ("indisvalid", Bool),
            ("indcheckxmin", Bool),
            ("indisready", Bool),
            ("indislive", Bool),
            ("indisreplident", Bool),
            ("indkey", Text),
            ("indcollation", Text),
            ("indclass", Text),
            ("indoption", Text),
            ("indexprs", Text),
            ("indpred", Text),
        ],
        view: false,
        rows: Some(index_rows),
    },
    Spec {
        name: "pg_am",
        columns: &[
            ("oid", Oid),
            ("amname", Text),
            ("amhandler", Text),
            ("amtype", Text),
        ],
        view: false,
        rows: Some(am_rows),
    },
    Spec {
        name: "pg_constraint",
        columns: &[
            ("oid", Oid),
            ("conname", Text),
            ("connamespace", Oid),
            ("contype", Text),
            ("condeferrable", Bool),
            ("condeferred", Bool),
            ("convalidated", Bool),
            ("conrelid", Oid),
            ("contypid", Oid),
            ("conindid", Oid),
            ("conparentid", Oid),
            ("confrelid", Oid),
            ("confupdtype", Text),
            ("confdeltype", Text),
            ("confmatchtype", Text),
            ("conislocal", Bool),
            ("coninhcount", I32),
            ("connoinherit", Bool),
            ("conkey", Text),
            ("confkey", Text),
            ("conpfeqop", Text),
            ("conppeqop", Text),
            ("conffeqop", Text),
            ("confdelsetcols", Text),
            ("conexclop", Text),
            ("conbin", Text),
        ],
        view: false,
        rows: Some(constraint_rows),
    },
    Spec {
        name: "pg_database",
        columns: &[
            ("oid", Oid),
            ("datname", Text),
            ("datdba", Oid),
            ("encoding", I32),
            ("datlocprovider", Text),
            ("datistemplate", Bool),
            ("datallowconn", Bool),
            ("datconnlimit", I32),
            ("datfrozenxid", I64),
            ("datminmxid", I64),
            ("dattablespace", Oid),
            ("datcollate", Text),
            ("datctype", Text),
            ("daticulocale", Text),
            ("datcollversion", Text),
            ("datacl", Text),
        ],
        view: false,
        rows: Some(database_rows),
    },
    Spec {
        name: "pg_roles",
        columns: &[
            ("rolname", Text),
            ("rolsuper", Bool),
            ("rolinherit", Bool),
            ("rolcreaterole", Bool),
            ("rolcreatedb", Bool),
            ("rolcanlogin", Bool),
            ("rolreplication", Bool),
            ("rolconnlimit", I32),
            ("rolpassword", Text),
            ("rolvaliduntil", Text),
            ("rolbypassrls", Bool),
            ("rolconfig", Text),
            ("oid", Oid),
        ],
        view: true,
        rows: Some(role_rows),
    },
    Spec {
        name: "pg_user",
        columns: &[
            ("usename", Text),
            ("usesysid", Oid),
            ("usecreatedb", Bool),
            ("usesuper", Bool),
            ("userepl", Bool),
            ("usebypassrls", Bool),
            ("passwd", Text),
            ("valuntil", Text),
            ("useconfig", Text),
        ],
        view: true,
        rows: Some(user_rows),
    },
    Spec {
        name: "pg_settings",
        columns: &[
            ("name", Text),
            ("setting", Text),
            ("unit", Text),
            ("category", Text),
            ("short_desc", Text),
            ("extra_desc", Text),
            ("context", Text),
            ("vartype", Text),
            ("source", Text),
            ("min_val", Text),
            ("max_val", Text),
            ("enumvals", Text),
            ("boot_val", Text),
            ("reset_val", Text),
            ("sourcefile", Text),
            ("sourceline", I32),
            ("pending_restart", Bool),
        ],
        view: true,
        rows: Some(setting_rows),
    },
    Spec {
        name: "pg_collation",
        columns: &[
            ("oid", Oid),
            ("collname", Text),
            ("collnamespace", Oid),
            ("collowner", Oid),
            ("collprovider", Text),
            ("collisdeterministic", Bool),
            ("collencoding", I32),
            ("collcollate", Text),
            ("collctype", Text),
            ("colliculocale", Text),
            ("collversion", Text),
        ],
        view: false,
        rows: Some(collation_rows),
    },
    Spec {
        name: "pg_tablespace",
        columns: &[
            ("oid", Oid),
            ("spcname", Text),
            ("spcowner", Oid),
            ("spcacl", Text),
            ("spcoptions", Text),
        ],
        view: false,
        rows: Some(tablespace_rows),
    },
    Spec {
        name: "pg_tables",
        columns: &[
            ("schemaname", Text),
            ("tablename", Text),
            ("tableowner", Text),
            ("tablespace", Text),
            ("hasindexes", Bool),
            ("hasrules", Bool),
            ("hastriggers", Bool),
            ("rowsecurity", Bool),
        ],
        view: true,
        rows: Some(tables_view_rows),
    },
    Spec {
        name: "pg_views",
        columns: &[
            ("schemaname", Text),
            ("viewname", Text),
            ("viewowner", Text),
            ("definition", Text),
        ],
        view: true,
        rows: Some(views_view_rows),
    },
    Spec {
        name: "pg_indexes",
        columns: &[
            ("schemaname", Text),
            ("tablename", Text),
            ("indexname", Text),
            ("tablespace", Text),
            ("indexdef", Text),
        ],
        view: true,
        rows: Some(indexes_view_rows),
    },
    Spec {
        name: "pg_description",
        columns: &[
            ("objoid", Oid),
            ("classoid", Oid),
            ("objsubid", I32),
            ("description", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_shdescription",
        columns: &[("objoid", Oid), ("classoid", Oid), ("description", Text)],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_auth_members",
        columns: &[
            ("oid", Oid),
            ("roleid", Oid),
            ("member", Oid),
            ("grantor", Oid),
            ("admin_option", Bool),
        ],
        view: false,
        rows: Some(auth_member_rows),
    },
    Spec {
        name: "pg_inherits",
        columns: &[
            ("inhrelid", Oid),
            ("inhparent", Oid),
            ("inhseqno", I32),
            ("inhdetachpending", Bool),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_attrdef",
        columns: &[
            ("oid", Oid),
            ("adrelid", Oid),
            ("adnum", I16),
            ("adbin", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_policy",
        columns: &[
            ("oid", Oid),
            ("polname", Text),
            ("polrelid", Oid),
            ("polcmd", Text),
            ("polpermissive", Bool),
            ("polroles", Text),
            ("polqual", Text),
            ("polwithcheck", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_statistic_ext",
        columns: &[
            ("oid", Oid),
            ("stxrelid", Oid),
            ("stxname", Text),
            ("stxnamespace", Oid),
            ("stxowner", Oid),
            ("stxstattarget", I32),
            ("stxkeys", Text),
            ("stxkind", Text),
            ("stxexprs", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_publication",
        columns: &[
            ("oid", Oid),
            ("pubname", Text),
            ("pubowner", Oid),
            ("puballtables", Bool),
            ("pubinsert", Bool),
            ("pubupdate", Bool),
            ("pubdelete", Bool),
            ("pubtruncate", Bool),
            ("pubviaroot", Bool),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_publication_rel",
        columns: &[
            ("oid", Oid),
            ("prpubid", Oid),
            ("prrelid", Oid),
            ("prqual", Text),
            ("prattrs", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_publication_namespace",
        columns: &[("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_trigger",
        columns: &[
            ("oid", Oid),
            ("tgrelid", Oid),
            ("tgparentid", Oid),
            ("tgname", Text),
            ("tgfoid", Oid),
            ("tgtype", I16),
            ("tgenabled", Text),
            ("tgisinternal", Bool),
            ("tgconstrrelid", Oid),
            ("tgconstrindid", Oid),
            ("tgconstraint", Oid),
            ("tgdeferrable", Bool),
            ("tginitdeferred", Bool),
            ("tgnargs", I16),
            ("tgattr", Text),
            ("tgargs", Text),
            ("tgqual", Text),
            ("tgoldtable", Text),
            ("tgnewtable", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_rewrite",
        columns: &[
            ("oid", Oid),
            ("rulename", Text),
            ("ev_class", Oid),
            ("ev_type", Text),
            ("ev_enabled", Text),
            ("is_instead", Bool),
            ("ev_qual", Text),
            ("ev_action", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_extension",
        columns: &[
            ("oid", Oid),
            ("extname", Text),
            ("extowner", Oid),
            ("extnamespace", Oid),
            ("extrelocatable", Bool),
            ("extversion", Text),
            ("extconfig", Text),
            ("extcondition", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_enum",
        columns: &[
            ("oid", Oid),
            ("enumtypid", Oid),
            ("enumsortorder", F32),
            ("enumlabel", Text),
        ],
        view: false,
        rows: None,
    },
    Spec {
        name: "pg_sequence",
        columns: &[
            ("seqrelid", Oid),
            ("seqtypid", Oid),
            ("seqstart", I64),
            ("seqincrement", I64),
            ("seqmax", I64),
            ("seqmin", I64),
            ("seqcache", I64),
            ("seqcycle", Bool),
        ],
        view: false,
        rows: None,
    },
];

/// The names of the pg_catalog tables.
pub(crate) fn table_names() -> impl Iterator<Item = &'static str> {
    SPECS.iter().map(|s| s.name)
}

/// True when `name` is a pg_catalog table.
pub(crate) fn is_catalog_table(name: &str) -> bool {
    SPECS.iter().any(|s| s.name == name)
}

/// True when pg_catalog table `name` never has rows (wireload has no such objects).
pub(crate) fn is_always_empty(name: &str) -> bool {
    SPECS.iter().any(|s| s.name == name && s.rows.is_none())
}

fn t(s: impl Into<String>) -> ScalarValue {
    ScalarValue::Utf8(Some(s.into()))
}

fn o(v: i64) -> ScalarValue {
    ScalarValue::Int64(Some(v))
}

fn b(v: bool) -> ScalarValue {
    ScalarValue::Boolean(Some(v))
}

fn i16v(v: i16) -> ScalarValue {
    ScalarValue::Int16(Some(v))
}

fn i32v(v: i32) -> ScalarValue {
    ScalarValue::Int32(Some(v))
}

const NULL: ScalarValue = ScalarValue::Null;

/// `{a,b}`: an array's text form.
fn array_text<T: ToString>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("{{{}}}", items.join(","))
}

fn namespace_rows(objects: &Objects) -> Rows {
    objects
        .namespaces
        .iter()
        .map(|(oid, name)| vec![o(*oid), t(name), o(OWNER_OID), NULL])
        .collect()
}

fn class_rows(objects: &Objects) -> Rows {
    objects
        .relations
        .iter()
        .map(|r| {
            let table = r.kind == "r";
            vec![
                o(r.oid),
                t(&r.name),
                o(r.namespace_oid),
                o(0),
                o(0),
                o(r.owner),
                o(r.am()),
                o(if r.kind == "v" { 0 } else { r.oid }),
                o(0),
                i32v(0),
                ScalarValue::Float32(Some(r.rows as f32)),
                i32v(0),
                o(0),
                b(r.has_index),
                b(false),
                t("p"),
                t(r.kind),
                i16v(i16::try_from(r.columns.len()).unwrap_or(i16::MAX)),
                i16v(0),
                b(false),
                b(false),
                b(false),
                b(false),
                b(false),
                b(true),
                t(if table { "d" } else { "n" }),
                b(false),
                o(0),
                ScalarValue::Int64(Some(0)),
                ScalarValue::Int64(Some(0)),
                r.acl.as_ref().map_or(NULL, t),
                NULL,
                NULL,
            ]
        })
        .collect()
}

fn attribute_rows(objects: &Objects) -> Rows {
    let mut rows = Vec::new();
    for r in &objects.relations {
        for (i, c) in r.columns.iter().enumerate() {
            let ty = objects::type_by_oid(c.type_oid);
            rows.push(vec![
                o(r.oid),
                t(&c.name),
                o(c.type_oid),
                i32v(-1),
                i16v(ty.map_or(-1, |t| t.len)),
                i16v(i16::try_from(i + 1).unwrap_or(i16::MAX)),
                i32v(i32::from(ty.is_some_and(|t| t.elem != 0))),
                i32v(-1),
                i32v(c.typmod),
                b(ty.is_some_and(|t| t.byval)),
                t(ty.map_or("i", |t| t.align)),
                t(ty.map_or("x", |t| t.storage)),
                t(""),
                b(c.not_null),
                b(false),
                b(false),
                t(""),
                t(""),
                b(false),
                b(true),
                i32v(0),
                o(ty.map_or(0, |t| t.collation)),
                NULL,
                NULL,
                NULL,
                NULL,
            ]);
        }
    }
    rows
}

fn type_rows(_: &Objects) -> Rows {
    objects::types()
        .iter()
        .map(|ty| {
            let modin = match ty.name.as_str() {
                "numeric" | "varchar" | "bpchar" | "timestamp" | "timestamptz" | "time" => {
                    format!("{}typmodin", ty.name)
                }
                _ => "-".into(),
            };
            let modout = modin.replace("typmodin", "typmodout");
            let array = ty.elem != 0;
            vec![
                o(ty.oid),
                t(&ty.name),
                o(PG_CATALOG_OID),
                o(OWNER_OID),
                i16v(ty.len),
                b(ty.byval),
                t(if ty.oid == 705 { "p" } else { "b" }),
                t(ty.category),
                b(matches!(ty.oid, 16 | 25 | 701 | 1184)),
                b(true),
                t(","),
                o(0),
                t(if array {
                    "array_subscript_handler"
                } else {
                    "-"
                }),
                o(ty.elem),
                o(ty.array),
                t(format!("{}in", ty.io)),
                t(format!("{}out", ty.io)),
                t(format!("{}recv", ty.io)),
                t(format!("{}send", ty.io)),
                t(modin),
                t(modout),
                t(if array { "array_typanalyze" } else { "-" }),
                t(ty.align),
                t(ty.storage),
                b(false),
                o(0),
                i32v(-1),
                i32v(0),
                o(ty.collation),
                NULL,
                NULL,
                NULL,
            ]
        })
        .collect()
}

fn index_rows(objects: &Objects) -> Rows {
    objects
        .relations
        .iter()
        .filter_map(|r| r.index.as_ref().map(|ix| (r, ix)))
        .map(|(r, ix)| {
            let n = i16::try_from(ix.keys.len()).unwrap_or(i16::MAX);
            let keys: Vec<String> = ix.keys.iter().map(ToString::to_string).collect();
            let zeros = vec!["0"; ix.keys.len()].join(" ");
            vec![
                o(r.oid),
                o(ix.table_oid),
                i16v(n),
                i16v(n),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                t(keys.join(" ")),
                t(zeros.clone()),
                t(zeros.clone()),
                t(zeros),
                NULL,
                NULL,
            ]
        })
        .collect()
}

fn am_rows(_: &Objects) -> Rows {
    vec![
        vec![o(objects::TABLE_AM_OID), t("columnar"), t("-"), t("t")],
        vec![o(objects::ART_AM_OID), t("art"), t("-"), t("i")],
        vec![o(objects::HASH_AM_OID), t("hash"), t("-"), t("i")],
    ]
}

fn constraint_rows(objects: &Objects) -> Rows {
    objects
        .constraints
        .iter()
        .map(|c| {
            vec![
                o(c.oid),
                t(&c.name),
                o(c.namespace_oid),
                t(c.kind),
                b(false),
                b(false),
                b(true),
                o(c.table_oid),
                o(0),
                o(c.index_oid),
                o(0),
                o(0),
                t(" "),
                t(" "),
                t(" "),
                b(true),
                i32v(0),
                b(true),
                t(array_text(&c.keys)),
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
            ]
        })
        .collect()
}

fn database_rows(_: &Objects) -> Rows {
    vec![vec![
        o(DATABASE_OID),
        t(DATABASE_NAME),
        o(OWNER_OID),
        i32v(UTF8_ENCODING as i32),
        t("c"),
        b(false),
        b(true),
        i32v(-1),
        ScalarValue::Int64(Some(0)),
        ScalarValue::Int64(Some(0)),
        o(TABLESPACE_OID),
        t("C"),
        t("C"),
        NULL,
        NULL,
        NULL,
    ]]
}

fn role_rows(objects: &Objects) -> Rows {
    let owner = vec![
        t(objects::CATALOG_OWNER),
        b(true),
        b(true),
        b(true),
        b(true),
        b(true),
        b(false),
        i32v(-1),
        t("********"),
        NULL,
        b(true),
        NULL,
        o(OWNER_OID),
    ];
    let roles = objects.roles.iter().map(|(oid, r)| {
        vec![
            t(&r.name),
            b(r.superuser),
            b(true),
            b(r.create_role || r.superuser),
            b(r.create || r.superuser),
            b(r.login),
            b(false),
            i32v(
                r.connection_limit
                    .map_or(-1, |n| i32::try_from(n).unwrap_or(i32::MAX)),
            ),
            r.verifier.as_ref().map_or(NULL, |_| t("********")),
            NULL,
            b(r.superuser),
            NULL,
            o(*oid),
        ]
    });
    std::iter::once(owner).chain(roles).collect()
}

fn user_rows(objects: &Objects) -> Rows {
    role_rows(objects)
        .into_iter()
        .filter(|row| row[5] == b(true))
        .map(|row| {
            vec![
                row[0].clone(),
                row[12].clone(),
                row[4].clone(),
                row[1].clone(),
                b(false),
                row[10].clone(),
                row[8].clone(),
                NULL,
                NULL,
            ]
        })
        .collect()
}

fn auth_member_rows(objects: &Objects) -> Rows {
    let mut rows = Vec::new();
    for (member, role) in &objects.roles {
        for of in &role.member_of {
            let role_oid = objects.role_oid(of);
            rows.push(vec![
                o(role_oid * 100_000 + member),
                o(role_oid),
                o(*member),
                o(OWNER_OID),
                b(false),
            ]);
        }
    }
    rows
}

/// (name, setting, vartype, short description)
const SETTINGS: &[(&str, &str, &str, &str)] = &[
    (
        "server_version",
        objects::SERVER_VERSION,
        "string",
        "Shows the server version.",
    ),
    (
        "server_version_num",
        "150000",
        "integer",
        "Shows the server version as an integer.",
    ),
    (
        "server_encoding",
        "UTF8",
        "string",
        "Shows the server (database) character set encoding.",
    ),
    (
        "client_encoding",
        "UTF8",
        "string",
        "Sets the client's character set encoding.",
    ),
    (
        "DateStyle",
        "ISO, MDY",
        "string",
        "Sets the display format for date and time values.",
    ),
    (
        "TimeZone",
        "UTC",
        "string",
        "Sets the time zone for displaying and interpreting time stamps.",
    ),
    (
        "integer_datetimes",
        "on",
        "bool",
        "Shows whether datetimes are integer based.",
    ),
    (
        "standard_conforming_strings",
        "on",
        "bool",
        "Causes '...' strings to treat backslashes literally.",
    ),
    (
        "max_identifier_length",
        "63",
        "integer",
        "Shows the maximum identifier length.",
    ),
    (
        "search_path",
        "\"$user\", public",
        "string",
        "Sets the schema search order for names that are not schema-qualified.",
    ),
    (
        "default_transaction_isolation",
        "repeatable read",
        "enum",
        "Sets the transaction isolation level of each new transaction.",
    ),
    (
        "transaction_isolation",
        "repeatable read",
        "enum",
        "Sets the current transaction's isolation level.",
    ),
];

fn setting_rows(_: &Objects) -> Rows {
    SETTINGS
        .iter()
        .map(|&(name, setting, vartype, desc)| {
            vec![
                t(name),
                t(setting),
                NULL,
                t("Preset Options"),
                t(desc),
                NULL,
                t("internal"),
                t(vartype),
                t("default"),
                NULL,
                NULL,
                NULL,
                t(setting),
                t(setting),
                NULL,
                NULL,
                b(false),
            ]
        })
        .collect()
}

fn collation_rows(_: &Objects) -> Rows {
    [
        (DEFAULT_COLLATION_OID, "default", "d", -1, NULL),
        (950, "C", "c", -1, t("C")),
        (951, "POSIX", "c", -1, t("POSIX")),
    ]
    .into_iter()
    .map(|(oid, name, provider, encoding, locale)| {
        vec![
            o(oid),
            t(name),
            o(PG_CATALOG_OID),
            o(OWNER_OID),
            t(provider),
            b(true),
            i32v(encoding),
            locale.clone(),
            locale,
            NULL,
            NULL,
        ]
    })
    .collect()
}

fn tablespace_rows(_: &Objects) -> Rows {
    vec![
        vec![o(TABLESPACE_OID), t("pg_default"), o(OWNER_OID), NULL, NULL],
        vec![o(1664), t("pg_global"), o(OWNER_OID), NULL, NULL],
    ]
}

fn tables_view_rows(objects: &Objects) -> Rows {
    objects
        .relations
        .iter()
        .filter(|r| r.kind == "r")
        .map(|r| {
            vec![
                t(&r.namespace),
                t(&r.name),
                t(objects::CATALOG_OWNER),
                NULL,
                b(r.has_index),
                b(false),
                b(false),
                b(false),
            ]
        })
        .collect()
}

fn views_view_rows(objects: &Objects) -> Rows {
    objects
        .relations
        .iter()
        .filter(|r| r.kind == "v")
        .map(|r| vec![t(&r.namespace), t(&r.name), t(objects::CATALOG_OWNER), NULL])
        .collect()
}

fn indexes_view_rows(objects: &Objects) -> Rows {
    objects
        .relations
        .iter()
        .filter_map(|r| r.index.as_ref().map(|ix| (r, ix)))
        .map(|(r, ix)| {
            vec![
                t(&r.namespace),
                t(&ix.table),
                t(&r.name),
                NULL,
                t(objects::index_definition(r, ix)),
            ]
        })
        .collect()
}

/// The schema of pg_catalog table `spec`.
fn spec_schema(spec: &Spec) -> SchemaRef {
    Arc::new(Schema::new(
        spec.columns
            .iter()
            .map(|(name, ty)| Field::new(*name, ty.data_type(), true))
            .collect::<Vec<_>>(),
    ))
}

/// `rows` as a batch of `schema` (NULL markers become nulls of the column's type).
fn batch(schema: &SchemaRef, rows: Rows) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let null = ScalarValue::try_from(field.data_type())?;
        let values = rows.iter().map(|row| match row.get(i) {
            Some(ScalarValue::Null) | None => null.clone(),
            Some(v) => v.clone(),
        });
        columns.push(if rows.is_empty() {
            arrow::array::new_empty_array(field.data_type())
        } else {
            ScalarValue::iter_to_array(values)?
        });
    }
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// One pg_catalog table.
#[derive(Debug)]
struct CatalogTable {
    spec: usize,
    schema: SchemaRef,
    context: Arc<Context>,
}

impl CatalogTable {
    fn spec(&self) -> &'static Spec {
        &SPECS[self.spec]
    }
}

#[async_trait]
impl TableProvider for CatalogTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        if self.spec().view {
            TableType::View
        } else {
            TableType::Base
        }
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rows = match self.spec().rows {
            Some(rows) => rows(&self.context.objects().await?),
            None => Vec::new(),
        };
        let batch = batch(&self.schema, rows).map_err(|e| {
            DataFusionError::Internal(format!("pg_catalog.{}: {e}", self.spec().name))
        })?;
        let exec: Arc<dyn ExecutionPlan> = MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            Arc::clone(&self.schema),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}

/// The `pg_catalog` schema.
#[derive(Debug)]
pub(crate) struct PgCatalogSchema {
    context: Arc<Context>,
}

impl PgCatalogSchema {
    /// The schema over `context`.
    pub fn new(context: Arc<Context>) -> Self {
        PgCatalogSchema { context }
    }
}

#[async_trait]
impl SchemaProvider for PgCatalogSchema {
    fn table_names(&self) -> Vec<String> {
        table_names().map(str::to_string).collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(SPECS.iter().position(|s| s.name == name).map(|spec| {
            Arc::new(CatalogTable {
                spec,
                schema: spec_schema(&SPECS[spec]),
                context: Arc::clone(&self.context),
            }) as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        is_catalog_table(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_builds_its_rows() {
        let objects = Objects {
            namespaces: vec![(PG_CATALOG_OID, "pg_catalog".into())],
            ..Objects::default()
        };
        for spec in SPECS {
            let schema = spec_schema(spec);
            let rows = spec.rows.map(|r| r(&objects)).unwrap_or_default();
            for row in &rows {
                assert_eq!(row.len(), spec.columns.len(), "{}", spec.name);
            }
            let batch = batch(&schema, rows).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert_eq!(batch.num_columns(), spec.columns.len());
        }
    }
}
