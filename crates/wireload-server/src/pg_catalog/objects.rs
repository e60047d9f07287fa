//! The live catalog as PostgreSQL describes it: namespaces, relations (tables, views,
//! indexes) with their columns, indexes and constraints, and the built-in types, each with
//! the oid PostgreSQL (or, for relations, a stable hash) gives it.

use std::sync::{Arc, Weak};

use arrow::datatypes::{DataType, Schema};
use datafusion::catalog::CatalogProvider;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::TableType;
use futures::FutureExt;
use wireload_storage::{Catalog, IndexKind, Table};
use wireload_types::SqlType;

/// The name of the one database (`current_database()`, pg_database).
pub const DATABASE_NAME: &str = "wireload";
/// The role that owns every object (`pg_get_userbyid`, `current_user`).
pub const CATALOG_OWNER: &str = "wireload";
/// The PostgreSQL version the catalog imitates (psql picks its catalog queries by it).
pub(crate) const PG_VERSION: &str = "15.0";
/// `server_version` in pg_settings.
pub(crate) const SERVER_VERSION: &str = concat!("15.0 (wireload ", env!("CARGO_PKG_VERSION"), ")");

/// The oid of the owner role (PostgreSQL's bootstrap superuser).
pub(crate) const OWNER_OID: i64 = 10;
/// pg_catalog's namespace oid.
pub(crate) const PG_CATALOG_OID: i64 = 11;
/// public's namespace oid.
pub(crate) const PUBLIC_OID: i64 = 2200;
/// information_schema's namespace oid.
pub(crate) const INFORMATION_SCHEMA_OID: i64 = 13_000;
/// The database's oid.
pub(crate) const DATABASE_OID: i64 = 16_384;
/// The default tablespace.
pub(crate) const TABLESPACE_OID: i64 = 1663;
/// The access method of tables (column chunks in memory).
pub(crate) const TABLE_AM_OID: i64 = 2;
/// The access method of ART indexes.
pub(crate) const ART_AM_OID: i64 = 7_001;
/// The access method of hash indexes.
pub(crate) const HASH_AM_OID: i64 = 405;
/// The default collation.
pub(crate) const DEFAULT_COLLATION_OID: i64 = 100;
/// UTF8's encoding number.
pub(crate) const UTF8_ENCODING: i64 = 6;
/// Relation oids hash into `[FIRST_OBJECT_OID, i32::MAX]` (PostgreSQL's first user oid on).
const FIRST_OBJECT_OID: i64 = 16_385;

/// A stable oid for an object: FNV-1a of its kind and qualified name.
pub(crate) fn object_oid(kind: &str, schema: &str, name: &str) -> i64 {
    let mut h: u32 = 0x811c_9dc5;
    for b in kind
        .bytes()
        .chain([0])
        .chain(schema.bytes())
        .chain([0])
        .chain(name.bytes())
    {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    FIRST_OBJECT_OID + i64::from(h) % (i64::from(i32::MAX) - FIRST_OBJECT_OID + 1)
}

/// The oid of namespace `name`.
pub(crate) fn namespace_oid(name: &str) -> i64 {
    match name {
        "pg_catalog" => PG_CATALOG_OID,
        "public" => PUBLIC_OID,
        "information_schema" => INFORMATION_SCHEMA_OID,
        _ => object_oid("n", "", name),
    }
}

/// A built-in type (pg_type's row and `format_type`'s name).
#[derive(Debug, Clone)]
pub(crate) struct PgType {
    pub oid: i64,
    pub name: String,
    /// `format_type`'s name (without modifier).
    pub sql_name: &'static str,
    pub len: i16,
    pub byval: bool,
    pub category: &'static str,
    /// The array type of this type (0 for an array).
    pub array: i64,
    /// The element type of an array type (0 otherwise).
    pub elem: i64,
    /// Prefix of the input/output/receive/send functions (`int4` -> int4in, int4out...).
    pub io: &'static str,
    pub align: &'static str,
    pub storage: &'static str,
    pub collation: i64,
}

/// Base type rows: oid, typname, format_type name, len, byval, category, array oid, io
/// prefix, align, storage, collation.
type BaseType = (
    i64,
    &'static str,
    &'static str,
    i16,
    bool,
    &'static str,
    i64,
    &'static str,
    &'static str,
    &'static str,
    i64,
);

const BASE_TYPES: &[BaseType] = &[
    (
        16, "bool", "boolean", 1, true, "B", 1000, "bool", "c", "p", 0,
    ),
    (
        17, "bytea", "bytea", -1, false, "U", 1001, "bytea", "i", "x", 0,
    ),
    (
        18, "char", "\"char\"", 1, true, "Z", 1002, "char", "c", "p", 0,
    ),
    (
        19, "name", "name", 64, false, "S", 1003, "name", "c", "p", 950,
    ),
    (
        20, "int8", "bigint", 8, true, "N", 1016, "int8", "d", "p", 0,
    ),
    (
        21, "int2", "smallint", 2, true, "N", 1005, "int2", "s", "p", 0,
    ),
    (
        22,
        "int2vector",
        "int2vector",
        -1,
        false,
        "A",
        1006,
        "int2vector",
        "i",
        "p",
        0,
    ),
    (
        23, "int4", "integer", 4, true, "N", 1007, "int4", "i", "p", 0,
    ),
    (
        24, "regproc", "regproc", 4, true, "N", 1008, "regproc", "i", "p", 0,
    ),
    (
        25, "text", "text", -1, false, "S", 1009, "text", "i", "x", 100,
    ),
    (26, "oid", "oid", 4, true, "N", 1028, "oid", "i", "p", 0),
    (
        30,
        "oidvector",
        "oidvector",
        -1,
        false,
        "A",
        1013,
        "oidvector",
        "i",
        "p",
        0,
    ),
    (
        114, "json", "json", -1, false, "U", 199, "json_", "i", "x", 0,
    ),
    (
        700, "float4", "real", 4, true, "N", 1021, "float4", "i", "p", 0,
    ),
    (
        701,
        "float8",
        "double precision",
        8,
        true,
        "N",
        1022,
        "float8",
        "d",
        "p",
        0,
    ),
    (
        705, "unknown", "unknown", -2, false, "X", 0, "unknown", "c", "p", 0,
    ),
    (
        1033, "aclitem", "aclitem", 12, false, "U", 1034, "aclitem", "i", "p", 0,
    ),
    (
        1042,
        "bpchar",
        "character",
        -1,
        false,
        "S",
        1014,
        "bpchar",
        "i",
        "x",
        100,
    ),
    (
        1043,
        "varchar",
        "character varying",
        -1,
        false,
        "S",
        1015,
        "varchar",
        "i",
        "x",
        100,
    ),
    (
        1082, "date", "date", 4, true, "D", 1182, "date_", "i", "p", 0,
    ),
    (
        1083,
        "time",
        "time without time zone",
        8,
        true,
        "D",
        1183,
        "time_",
        "d",
        "p",
        0,
    ),
    (
        1114,
        "timestamp",
        "timestamp without time zone",
        8,
        true,
        "D",
        1115,
        "timestamp_",
        "d",
        "p",
        0,
    ),
    (
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        true,
        "D",
        1185,
        "timestamptz_",
        "d",
        "p",
        0,
    ),
    (
        1186,
        "interval",
        "interval",
        16,
        false,
        "T",
        1187,
        "interval_",
        "d",
        "p",
        0,
    ),
    (
        1700, "numeric", "numeric", -1, false, "N", 1231, "numeric_", "i", "m", 0,
    ),
    (
        2205, "regclass", "regclass", 4, true, "N", 2210, "regclass", "i", "p", 0,
    ),
    (
        2206, "regtype", "regtype", 4, true, "N", 2211, "regtype", "i", "p", 0,
    ),
    (
        2950, "uuid", "uuid", 16, false, "U", 2951, "uuid_", "c", "p", 0,
    ),
    (
        3802, "jsonb", "jsonb", -1, false, "U", 3807, "jsonb_", "i", "x", 0,
    ),
    (
        4089,
        "regnamespace",
        "regnamespace",
        4,
        true,
        "N",
        4090,
        "regnamespace",
        "i",
        "p",
        0,
    ),
];

/// Every built-in type: the base types, then their array types.
pub(crate) fn types() -> &'static [PgType] {
    static TYPES: std::sync::OnceLock<Vec<PgType>> = std::sync::OnceLock::new();
    TYPES.get_or_init(|| {
        let base = BASE_TYPES.iter().map(
            |&(oid, name, sql_name, len, byval, category, array, io, align, storage, collation)| {
                PgType {
                    oid,
                    name: name.to_string(),
                    sql_name,
                    len,
                    byval,
                    category,
                    array,
                    elem: 0,
                    io,
                    align,
                    storage,
                    collation,
                }
            },
        );
        let arrays = BASE_TYPES.iter().filter(|t| t.6 != 0).map(
            |&(oid, name, sql_name, len, _, _, array, _, align, _, collation)| PgType {
                oid: array,
                name: format!("_{name}"),
                sql_name,
                len: -1,
                byval: false,
                category: "A",
                array: 0,
                elem: oid,
                io: "array_",
                align: if len == 8 { align } else { "i" },
                storage: "x",
                collation,
            },
        );
        base.chain(arrays).collect()
    })
}

/// The built-in type with oid `oid`.
pub(crate) fn type_by_oid(oid: i64) -> Option<&'static PgType> {
    types().iter().find(|t| t.oid == oid)
}

/// The type `name` names (`int4`, `integer`, `pg_catalog.varchar`, `character varying`,
/// `text[]`...), for `'name'::regtype`.
pub(crate) fn type_by_name(name: &str) -> Option<&'static PgType> {
    let name = name.trim().to_ascii_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
    let (base, array) = match name.strip_suffix("[]") {
        Some(b) => (b.trim(), true),
        None => (name, false),
    };
    let alias = match base {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "decimal" => "numeric",
        "character varying" => "varchar",
        "character" | "char" => "bpchar",
        "\"char\"" => "char",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        "time without time zone" => "time",
        other => other,
    };
    let t = types().iter().find(|t| t.name == alias)?;
    if array { type_by_oid(t.array) } else { Some(t) }
}

/// `format_type(oid, typmod)`: `integer`, `numeric(15,2)`, `character varying(25)`...
pub(crate) fn format_type(oid: i64, typmod: Option<i64>) -> String {
    let Some(t) = type_by_oid(oid) else {
        return if oid == 0 { "-".into() } else { "???".into() };
    };
    if t.elem != 0 {
        return format!("{}[]", format_type(t.elem, typmod));
    }
    let typmod = typmod.unwrap_or(-1);
    match (t.oid, typmod) {
        (1700, m) if m >= 4 => {
            let m = m - 4;
            format!("numeric({},{})", (m >> 16) & 0xffff, m & 0xffff)
        }
        (1042, m) if m >= 4 => format!("character({})", m - 4),
        (1042, _) => "bpchar".into(),
        (1043, m) if m >= 4 => format!("character varying({})", m - 4),
        (1114, m) if m >= 0 => format!("timestamp({m}) without time zone"),
        (1184, m) if m >= 0 => format!("timestamp({m}) with time zone"),
        _ => t.sql_name.to_string(),
    }
}

/// The type oid and type modifier of a wireload column type.
pub(crate) fn sql_type_oid(ty: &SqlType) -> (i64, i32) {
    match *ty {
        SqlType::Boolean => (16, -1),
        SqlType::SmallInt => (21, -1),
        SqlType::Integer => (23, -1),
        SqlType::BigInt => (20, -1),
        SqlType::Real => (700, -1),
        SqlType::Double => (701, -1),
        SqlType::Decimal { precision, scale } => {
            (1700, ((i32::from(precision) << 16) | i32::from(scale)) + 4)
        }
        SqlType::Date => (1082, -1),
        SqlType::Timestamp => (1114, -1),
        SqlType::Char(n) => (1042, typmod_of_length(n)),
        SqlType::Varchar(Some(n)) => (1043, typmod_of_length(n)),
        SqlType::Varchar(None) => (1043, -1),
        SqlType::Text => (25, -1),
    }
}

fn typmod_of_length(n: u32) -> i32 {
    i32::try_from(n).map_or(-1, |n| n.saturating_add(4))
}

/// The type oid and type modifier PostgreSQL would give a column of Arrow type `ty`.
pub(crate) fn arrow_type_oid(ty: &DataType) -> (i64, i32) {
    match ty {
        DataType::Boolean => (16, -1),
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => (21, -1),
        DataType::Int32 | DataType::UInt16 => (23, -1),
        DataType::Int64 | DataType::UInt32 => (20, -1),
        DataType::UInt64 => (1700, -1),
        DataType::Float16 | DataType::Float32 => (700, -1),
        DataType::Float64 => (701, -1),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => (
            1700,
            ((i32::from(*p) << 16) | i32::from(u8::try_from(*s).unwrap_or(0))) + 4,
        ),
        DataType::Date32 | DataType::Date64 => (1082, -1),
        DataType::Time32(_) | DataType::Time64(_) => (1083, -1),
        DataType::Timestamp(_, None) => (1114, -1),
        DataType::Timestamp(_, Some(_)) => (1184, -1),
        DataType::Interval(_) | DataType::Duration(_) => (1186, -1),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => (17, -1),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            let (elem, _) = arrow_type_oid(f.data_type());
            (type_by_oid(elem).map_or(1009, |t| t.array), -1)
        }
        DataType::Dictionary(_, v) => arrow_type_oid(v),
        _ => (25, -1),
    }
}

/// One column of a relation.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub name: String,
    pub type_oid: i64,
    pub typmod: i32,
    pub not_null: bool,
}

/// What an index relation indexes.
#[derive(Debug, Clone)]
pub(crate) struct IndexInfo {
    /// The indexed table's oid.
    pub table_oid: i64,
    /// The indexed table's name.
    pub table: String,
    /// Key columns as attribute numbers (1-based).
    pub keys: Vec<i16>,
    pub unique: bool,
    pub primary: bool,
    pub kind: IndexKind,
    /// Bytes of the index structure.
    pub bytes: usize,
}

/// A relation: a table ('r'), view ('v') or index ('i').
#[derive(Debug, Clone)]
pub(crate) struct Relation {
    pub oid: i64,
    pub name: String,
    pub namespace_oid: i64,
    pub namespace: String,
    /// pg_class.relkind
    pub kind: &'static str,
    pub columns: Vec<Column>,
    /// Live rows (tables), -1 when unknown.
    pub rows: f64,
    /// Bytes of the table's chunks (tables of the catalog).
    pub bytes: Option<usize>,
    pub index: Option<IndexInfo>,
    /// A table with indexes.
    pub has_index: bool,
    /// The owner's oid.
    pub owner: i64,
    /// The access list (`{grantee=privileges/owner,...}`), when anything was granted.
    pub acl: Option<String>,
}

impl Relation {
    /// pg_class.relam
    pub fn am(&self) -> i64 {
        match (&self.index, self.kind) {
            (Some(ix), _) if ix.kind == IndexKind::Hash => HASH_AM_OID,
            (Some(_), _) => ART_AM_OID,
            (None, "r") => TABLE_AM_OID,
            _ => 0,
        }
    }
}

/// A PRIMARY KEY or UNIQUE constraint.
#[derive(Debug, Clone)]
pub(crate) struct Constraint {
    pub oid: i64,
    pub name: String,
    pub namespace_oid: i64,
    /// 'p' or 'u'
    pub kind: &'static str,
    pub table_oid: i64,
    pub index_oid: i64,
    pub keys: Vec<i16>,
    /// Key column names.
    pub key_names: Vec<String>,
}

/// The catalog at one moment.
#[derive(Debug, Default)]
pub(crate) struct Objects {
    /// (oid, name)
    pub namespaces: Vec<(i64, String)>,
    pub relations: Vec<Relation>,
    pub constraints: Vec<Constraint>,
    /// The roles, with their oids (the catalog's owner first).
    pub roles: Vec<(i64, wireload_sql::Role)>,
}

impl Objects {
    /// The oid of role `name` (the catalog owner's for a name that is no role).
    pub fn role_oid(&self, name: &str) -> i64 {
        self.roles
            .iter()
            .find(|(_, r)| r.name == name)
            .map_or(OWNER_OID, |(oid, _)| *oid)
    }
}

/// The oid of each role: PostgreSQL's for the built-in roles, one after another from
/// 16384 for the others in name order.
fn role_oids(roles: Vec<wireload_sql::Role>) -> Vec<(i64, wireload_sql::Role)> {
    let mut next = 16384;
    roles
        .into_iter()
        .map(|r| {
            let oid = match r.name.as_str() {
                "pg_read_all_data" => 6181,
                "pg_write_all_data" => 6182,
                "pg_read_server_files" => 4569,
                "pg_write_server_files" => 4570,
                _ => {
                    next += 1;
                    next - 1
                }
            };
            (oid, r)
        })
        .collect()
}

/// What the pg_catalog tables and functions read: wireload's catalog and the session's
/// DataFusion catalog (for views and the other schemas).
#[derive(Debug)]
pub(crate) struct Context {
    storage: Arc<Catalog>,
    catalog: Weak<dyn CatalogProvider>,
    roles: Arc<wireload_sql::Roles>,
}

impl Context {
    /// The context over `storage`, the session's catalog `catalog` and the database's
    /// `roles`.
    pub fn new(
        storage: Arc<Catalog>,
        catalog: Weak<dyn CatalogProvider>,
        roles: Arc<wireload_sql::Roles>,
    ) -> Self {
        Context {
            storage,
            catalog,
            roles,
        }
    }

    /// The owner's oid and the access list of relation `name`.
    pub fn access(&self, objects: &Objects, name: &str) -> (i64, Option<String>) {
        let owner = self
            .roles
            .owner(name)
            .map_or(OWNER_OID, |o| objects.role_oid(&o));
        (owner, self.roles.access_list(name, CATALOG_OWNER))
    }

    /// The catalog as it is now.
    pub async fn objects(&self) -> Result<Objects> {
        let catalog = self
            .catalog
            .upgrade()
            .ok_or_else(|| DataFusionError::Execution("the session is closed".into()))?;
        let mut out = Objects {
            namespaces: vec![
                (PG_CATALOG_OID, "pg_catalog".into()),
                (PUBLIC_OID, "public".into()),
                (INFORMATION_SCHEMA_OID, "information_schema".into()),
            ],
            roles: role_oids(self.roles.all()),
            ..Objects::default()
        };
        let mut schemas = catalog.schema_names();
        schemas.sort();
        for schema_name in schemas {
            let Some(schema) = catalog.schema(&schema_name) else {
                continue;
            };
            let nsp = namespace_oid(&schema_name);
            if !out.namespaces.iter().any(|(o, _)| *o == nsp) {
                out.namespaces.push((nsp, schema_name.clone()));
            }
            for name in schema.table_names() {
                let table = match schema_name.as_str() {
                    wireload_sql::DEFAULT_SCHEMA => self.storage.table(&name),
                    _ => None,
                };
                if let Some(table) = table {
                    add_table(&mut out, &schema_name, nsp, &table);
                    continue;
                }
                let Some(provider) = schema.table(&name).await? else {
                    continue;
                };
                let kind = match provider.table_type() {
                    TableType::View => "v",
                    _ => "r",
                };
                out.relations.push(Relation {
                    oid: object_oid(kind, &schema_name, &name),
                    name,
                    namespace_oid: nsp,
                    namespace: schema_name.clone(),
                    kind,
                    columns: arrow_columns(&provider.schema()),
                    rows: -1.0,
                    bytes: None,
                    index: None,
                    has_index: false,
                    owner: OWNER_OID,
                    acl: None,
                });
            }
        }
        let access: Vec<_> = out
            .relations
            .iter()
            .map(|r| {
                (r.namespace == wireload_sql::DEFAULT_SCHEMA).then(|| self.access(&out, &r.name))
            })
            .collect();
        for (r, access) in out.relations.iter_mut().zip(access) {
            if let Some((owner, acl)) = access {
                (r.owner, r.acl) = (owner, acl);
            }
        }
        Ok(out)
    }

    /// The catalog as it is now, without waiting (for functions, which cannot await): an
    /// error when a schema would have to wait.
    pub fn objects_now(&self) -> Result<Objects> {
        self.objects().now_or_never().unwrap_or_else(|| {
            Err(DataFusionError::Execution(
                "the catalog is not available without waiting".into(),
            ))
        })
    }
}

fn arrow_columns(schema: &Schema) -> Vec<Column> {
    schema
        .fields()
        .iter()
        .map(|f| {
            let (type_oid, typmod) = arrow_type_oid(f.data_type());
            Column {
                name: f.name().clone(),
                type_oid,
                typmod,
                not_null: !f.is_nullable(),
            }
        })
        .collect()
}

/// Adds a table of the catalog with its indexes and constraints.
fn add_table(out: &mut Objects, schema: &str, nsp: i64, table: &Arc<Table>) {
    let def = table.def();
    let version = table.snapshot();
    let oid = object_oid("r", schema, &def.name);
    let columns: Vec<Column> = def
        .schema
        .columns
        .iter()
        .map(|c| {
            let (type_oid, typmod) = sql_type_oid(&c.ty);
            Column {
                name: c.name.clone(),
                type_oid,
                typmod,
                not_null: !c.nullable,
            }
        })
        .collect();
    // the version's indexes (constraint indexes first), then declared ones it lacks
    let mut indexes: Vec<(wireload_storage::IndexDef, usize)> = version
        .indexes
        .iter()
        .map(|ix| ((*ix.def).clone(), ix.index.heap_bytes()))
        .collect();
    for ix in &def.indexes {
        if !indexes.iter().any(|(o, _)| o.name == ix.name) {
            indexes.push((ix.clone(), 0));
        }
    }
    let bytes = version
        .partitions
        .iter()
        .flat_map(|p| p.chunks.iter())
        .map(|c| c.get_array_memory_size())
        .sum();
    out.relations.push(Relation {
        oid,
        name: def.name.clone(),
        namespace_oid: nsp,
        namespace: schema.to_string(),
        kind: "r",
        columns: columns.clone(),
        rows: version.num_rows().saturating_sub(version.deleted_rows()) as f64,
        bytes: Some(bytes),
        index: None,
        has_index: !indexes.is_empty(),
        owner: OWNER_OID,
        acl: None,
    });
    for (ix, bytes) in indexes {
        let index_oid = object_oid("i", schema, &ix.name);
        let keys: Vec<i16> = ix
            .columns
            .iter()
            .map(|&c| i16::try_from(c + 1).unwrap_or(i16::MAX))
            .collect();
        let key_names: Vec<String> = ix
            .columns
            .iter()
            .filter_map(|&c| columns.get(c).map(|col| col.name.clone()))
            .collect();
        let constraint = def
            .indexes
            .iter()
            .find(|d| d.name == ix.name)
            .map(|d| if d.primary { "p" } else { "u" });
        if let Some(kind) = constraint {
            out.constraints.push(Constraint {
                oid: object_oid("c", schema, &ix.name),
                name: ix.name.clone(),
                namespace_oid: nsp,
                kind,
                table_oid: oid,
                index_oid,
                keys: keys.clone(),
                key_names,
            });
        }
        out.relations.push(Relation {
            oid: index_oid,
            name: ix.name.clone(),
            namespace_oid: nsp,
            namespace: schema.to_string(),
            kind: "i",
            columns: ix
                .columns
                .iter()
                .filter_map(|&c| columns.get(c).cloned())
                .collect(),
            rows: -1.0,
            bytes: Some(bytes),
            index: Some(IndexInfo {
                table_oid: oid,
                table: def.name.clone(),
                keys,
                unique: ix.unique,
                primary: ix.primary,
                kind: ix.kind,
                bytes,
            }),
            has_index: false,
            owner: OWNER_OID,
            acl: None,
        });
    }
}

impl Objects {
    /// The relation with oid `oid`.
    pub fn relation(&self, oid: i64) -> Option<&Relation> {
        self.relations.iter().find(|r| r.oid == oid)
    }

    /// The relation `name` (`t`, `public.t`, `"My Table"`) on the search path (pg_catalog,
    /// then public) or in the schema it names.
    pub fn relation_by_name(&self, name: &str) -> Option<&Relation> {
        let parts = split_qualified(name);
        match parts.as_slice() {
            [table] => ["pg_catalog", wireload_sql::DEFAULT_SCHEMA]
                .iter()
                .find_map(|s| {
                    self.relations
                        .iter()
                        .find(|r| r.namespace == *s && r.name == *table)
                }),
            [schema, table] => self
                .relations
                .iter()
                .find(|r| r.namespace == *schema && r.name == *table),
            _ => None,
        }
    }

    /// The name of relation `oid` as `regclass` prints it (qualified when its schema is not
    /// on the search path).
    pub fn relation_display(&self, oid: i64) -> Option<String> {
        let r = self.relation(oid)?;
        Some(
            if r.namespace_oid == PG_CATALOG_OID || r.namespace_oid == PUBLIC_OID {
                quote_ident(&r.name)
            } else {
                format!("{}.{}", quote_ident(&r.namespace), quote_ident(&r.name))
            },
        )
    }

    /// The namespace `name` names.
    pub fn namespace_by_name(&self, name: &str) -> Option<i64> {
        let parts = split_qualified(name);
        let [n] = parts.as_slice() else {
            return None;
        };
        self.namespaces
            .iter()
            .find(|(_, s)| s == n)
            .map(|(o, _)| *o)
    }

    /// The name of namespace `oid`.
    pub fn namespace_name(&self, oid: i64) -> Option<&str> {
        self.namespaces
            .iter()
            .find(|(o, _)| *o == oid)
            .map(|(_, n)| n.as_str())
    }

    /// The constraint with oid `oid`.
    pub fn constraint(&self, oid: i64) -> Option<&Constraint> {
        self.constraints.iter().find(|c| c.oid == oid)
    }
}

/// The parts of a possibly qualified, possibly quoted name: unquoted parts lower-cased,
/// quoted ones as written.
pub(crate) fn split_qualified(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut chars = name.trim().chars().peekable();
    let mut cur = String::new();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            c if quoted => cur.push(c),
            c => cur.extend(c.to_lowercase()),
        }
    }
    parts.push(cur);
    parts
}

pub(crate) use wireload_sql::quote_ident;

/// `pg_get_indexdef`: `CREATE UNIQUE INDEX t_pkey ON public.t USING art (a, b)`.
pub(crate) fn index_definition(rel: &Relation, ix: &IndexInfo) -> String {
    let columns: Vec<String> = rel.columns.iter().map(|c| quote_ident(&c.name)).collect();
    format!(
        "CREATE {}INDEX {} ON {}.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        quote_ident(&rel.name),
        quote_ident(&rel.namespace),
        quote_ident(&ix.table),
        am_name(ix.kind),
        columns.join(", ")
    )
}

/// The access method name of an index kind.
pub(crate) fn am_name(kind: IndexKind) -> &'static str {
    match kind {
        IndexKind::Art => "art",
        IndexKind::Hash => "hash",
    }
}

/// `pg_get_constraintdef`: `PRIMARY KEY (a, b)` or `UNIQUE (a)`.
pub(crate) fn constraint_definition(c: &Constraint) -> String {
    let columns: Vec<String> = c.key_names.iter().map(|n| quote_ident(n)).collect();
    let what = if c.kind == "p" {
        "PRIMARY KEY"
    } else {
        "UNIQUE"
    };
    format!("{what} ({})", columns.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_type_names_modifiers() {
        assert_eq!(format_type(1700, Some((15 << 16 | 2) + 4)), "numeric(15,2)");
        assert_eq!(format_type(1700, Some(-1)), "numeric");
        assert_eq!(format_type(1043, Some(29)), "character varying(25)");
        assert_eq!(format_type(1043, None), "character varying");
        assert_eq!(format_type(1042, Some(14)), "character(10)");
        assert_eq!(format_type(1009, Some(-1)), "text[]");
        assert_eq!(format_type(1114, Some(-1)), "timestamp without time zone");
        assert_eq!(format_type(0, None), "-");
        assert_eq!(format_type(123_456, None), "???");
    }

    #[test]
    fn types_by_name() {
        assert_eq!(type_by_name("integer").map(|t| t.oid), Some(23));
        assert_eq!(type_by_name("pg_catalog.int4").map(|t| t.oid), Some(23));
        assert_eq!(type_by_name("character varying").map(|t| t.oid), Some(1043));
        assert_eq!(type_by_name("text[]").map(|t| t.oid), Some(1009));
        assert_eq!(type_by_name("_int8").map(|t| t.oid), Some(1016));
        assert!(type_by_name("nosuchtype").is_none());
    }

    #[test]
    fn oids_are_stable_and_in_range() {
        let a = object_oid("r", "public", "orders");
        assert_eq!(a, object_oid("r", "public", "orders"));
        assert_ne!(a, object_oid("i", "public", "orders"));
        assert!((FIRST_OBJECT_OID..=i64::from(i32::MAX)).contains(&a));
    }

    #[test]
    fn qualified_names_split() {
        assert_eq!(split_qualified("public.Orders"), vec!["public", "orders"]);
        assert_eq!(split_qualified("\"My \"\"T\"\"\""), vec!["My \"T\""]);
        assert_eq!(quote_ident("orders"), "orders");
        assert_eq!(quote_ident("My T"), "\"My T\"");
    }
}
