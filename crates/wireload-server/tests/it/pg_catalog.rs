//! psql 15's catalog queries (captured with `psql -E` against PostgreSQL 15) for `\dt`, `\d`,
//! `\d name`, `\di`, `\dv`, `\dn` and `\l`, and what drivers ask on connect, run in process
//! the way the server runs them: `parse_script`, `pg_catalog::rewrite`, `execute_statement`.

use arrow::array::Array;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::sql::parser::Statement as DfStatement;
use wireload_load::LoadControl;
use wireload_server::pg_catalog;
use wireload_sql::{Database, DbConfig, Statement, StatementOutput, parse_script};

/// Result rows as text (`NULL` for nulls).
type Rows = Vec<Vec<String>>;

/// Runs one statement through the rewrite, as the server does.
async fn query(db: &Database, sql: &str) -> Result<Rows, String> {
    let mut parsed = parse_script(sql).map_err(|e| e.to_string())?;
    assert_eq!(parsed.len(), 1, "one statement: {sql}");
    let statement = match parsed.remove(0).statement {
        Statement::Query(mut q) => {
            if let DfStatement::Statement(s) = q.as_mut() {
                pg_catalog::rewrite(s);
            }
            Statement::Query(q)
        }
        other => other,
    };
    let out = db
        .execute_statement(statement, &LoadControl::default())
        .await
        .map_err(|e| format!("{e}\nin: {sql}"))?;
    let StatementOutput::Rows { batches, .. } = out else {
        return Err(format!("no rows from {sql}: {out:?}"));
    };
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()).unwrap())
            .collect();
        for i in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .zip(&formatters)
                    .map(|(c, f)| {
                        if c.is_null(i) {
                            "NULL".to_string()
                        } else {
                            f.value(i).to_string()
                        }
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}

async fn rows(db: &Database, sql: &str) -> Rows {
    query(db, sql).await.unwrap_or_else(|e| panic!("{e}"))
}

fn row(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn database() -> Database {
    let db = Database::new(DbConfig {
        threads: Some(2),
        ..Default::default()
    });
    db.execute(
        "CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_status CHAR(1) NOT NULL, \
         o_total DECIMAL(15,2), o_comment VARCHAR(25), o_date DATE, o_ts TIMESTAMP, o_note TEXT); \
         CREATE INDEX orders_date ON orders (o_date); \
         CREATE TABLE t2 (a BIGINT, b BOOLEAN, c REAL, d DOUBLE PRECISION, e SMALLINT, \
         f CHAR(10), g VARCHAR, CONSTRAINT t2_e_key UNIQUE (e) USING HASH); \
         CREATE UNIQUE INDEX t2_a ON t2 USING HASH (a); \
         CREATE VIEW v1 AS SELECT a, b FROM t2",
        &LoadControl::default(),
    )
    .await
    .unwrap();
    pg_catalog::install(&db).unwrap();
    db
}

// ---- psql 15's queries, as `psql -E` prints them ----

const LIST_TABLES: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

const LIST_RELATIONS: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','v','m','S','f','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

const LIST_TABLES_PLUS: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner",
  CASE c.relpersistence WHEN 'p' THEN 'permanent' WHEN 't' THEN 'temporary' WHEN 'u' THEN 'unlogged' END as "Persistence",
  am.amname as "Access method",
  pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) as "Size",
  pg_catalog.obj_description(c.oid, 'pg_class') as "Description"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

const LIST_INDEXES: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner",
  c2.relname as "Table"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
     LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
     LEFT JOIN pg_catalog.pg_class c2 ON i.indrelid = c2.oid
WHERE c.relkind IN ('i','I','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

const LIST_VIEWS: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

const LIST_DATABASES: &str = r#"SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;"#;

const LIST_SCHEMAS: &str = r#"SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;"#;

/// `\d NAME`: the relations the pattern matches (`{name}` is the pattern).
const DESCRIBE_LOOKUP: &str = r#"SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^({name})$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;"#;

/// `\d NAME`, the queries for the relation of oid `{oid}`, in psql's order.
const DESCRIBE_TABLE_INFO: &str = r#"SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '{oid}';"#;

const DESCRIBE_COLUMNS: &str = r#"SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '{oid}' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;"#;

const DESCRIBE_INDEXES: &str = r#"SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '{oid}' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;"#;

const DESCRIBE_POLICIES: &str = r#"SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = '{oid}' ORDER BY 1;"#;

const DESCRIBE_STATISTICS: &str = r#"SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
  'd' = any(stxkind) AS ndist_enabled,
  'f' = any(stxkind) AS deps_enabled,
  'm' = any(stxkind) AS mcv_enabled,
stxstattarget
FROM pg_catalog.pg_statistic_ext
WHERE stxrelid = '{oid}'
ORDER BY nsp, stxname;"#;

const DESCRIBE_PUBLICATIONS: &str = r#"SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
WHERE pc.oid ='{oid}' and pg_catalog.pg_relation_is_publishable('{oid}')
UNION
SELECT pubname
     , pg_get_expr(pr.prqual, c.oid)
     , (CASE WHEN pr.prattrs IS NOT NULL THEN
         (SELECT string_agg(attname, ', ')
           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
                pg_catalog.pg_attribute
          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
        ELSE NULL END) FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
WHERE pr.prrelid = '{oid}'
UNION
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('{oid}')
ORDER BY 1;"#;

const DESCRIBE_PARENTS: &str = r#"SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '{oid}'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;"#;

const DESCRIBE_CHILDREN: &str = r#"SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhrelid AND i.inhparent = '{oid}'
ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;"#;

/// `\d name`'s first query: the oid of the one relation called `name`.
async fn lookup(db: &Database, name: &str) -> String {
    let found = rows(db, &DESCRIBE_LOOKUP.replace("{name}", name)).await;
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    assert_eq!(found[0][1..], row(&["public", name])[..]);
    found[0][0].clone()
}

async fn describe(db: &Database, template: &str, oid: &str) -> Rows {
    rows(db, &template.replace("{oid}", oid)).await
}

#[tokio::test]
async fn dt_lists_tables() {
    let db = database().await;
    assert_eq!(
        rows(&db, LIST_TABLES).await,
        vec![
            row(&["public", "orders", "table", "wireload"]),
            row(&["public", "t2", "table", "wireload"]),
        ]
    );
}

#[tokio::test]
async fn d_lists_tables_and_views() {
    let db = database().await;
    assert_eq!(
        rows(&db, LIST_RELATIONS).await,
        vec![
            row(&["public", "orders", "table", "wireload"]),
            row(&["public", "t2", "table", "wireload"]),
            row(&["public", "v1", "view", "wireload"]),
        ]
    );
    assert_eq!(
        rows(&db, LIST_VIEWS).await,
        vec![row(&["public", "v1", "view", "wireload"])]
    );
}

#[tokio::test]
async fn tables_created_after_install_show_up() {
    let db = database().await;
    db.execute("CREATE TABLE later (x INT)", &LoadControl::default())
        .await
        .unwrap();
    let names: Vec<String> = rows(&db, LIST_TABLES)
        .await
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(names, ["later", "orders", "t2"]);
    db.execute("DROP TABLE later", &LoadControl::default())
        .await
        .unwrap();
    assert_eq!(rows(&db, LIST_TABLES).await.len(), 2);
}

#[tokio::test]
async fn dt_plus_shows_sizes() {
    let db = database().await;
    let listed = rows(&db, LIST_TABLES_PLUS).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(
        listed[0][..6],
        row(&[
            "public",
            "orders",
            "table",
            "wireload",
            "permanent",
            "columnar"
        ])[..]
    );
    assert!(listed[0][6].ends_with("bytes"), "{:?}", listed[0]);
    assert_eq!(listed[0][7], "NULL");
}

#[tokio::test]
async fn di_lists_indexes_with_their_tables() {
    let db = database().await;
    assert_eq!(
        rows(&db, LIST_INDEXES).await,
        vec![
            row(&["public", "orders_date", "index", "wireload", "orders"]),
            row(&["public", "orders_pkey", "index", "wireload", "orders"]),
            row(&["public", "t2_a", "index", "wireload", "t2"]),
            row(&["public", "t2_e_key", "index", "wireload", "t2"]),
        ]
    );
}

#[tokio::test]
async fn l_lists_one_database() {
    let db = database().await;
    assert_eq!(
        rows(&db, LIST_DATABASES).await,
        vec![row(&[
            "wireload", "wireload", "UTF8", "C", "C", "NULL", "libc", "NULL"
        ])]
    );
}

#[tokio::test]
async fn dn_lists_public() {
    let db = database().await;
    assert_eq!(
        rows(&db, LIST_SCHEMAS).await,
        vec![row(&["public", "wireload"])]
    );
}

#[tokio::test]
async fn d_table_runs_every_query_psql_sends() {
    let db = database().await;
    let oid = lookup(&db, "orders").await;
    assert!(oid.parse::<i64>().unwrap() >= 16_384, "{oid}");

    let info = describe(&db, DESCRIBE_TABLE_INFO, &oid).await;
    assert_eq!(
        info,
        vec![row(&[
            "0", "r", "true", "false", "false", "false", "false", "false", "false", "", "0", "",
            "p", "d", "columnar"
        ])]
    );

    let columns = describe(&db, DESCRIBE_COLUMNS, &oid).await;
    assert_eq!(
        columns,
        vec![
            row(&["o_orderkey", "integer", "NULL", "true", "NULL", "", ""]),
            row(&["o_status", "character(1)", "NULL", "true", "NULL", "", ""]),
            row(&["o_total", "numeric(15,2)", "NULL", "false", "NULL", "", ""]),
            row(&[
                "o_comment",
                "character varying(25)",
                "NULL",
                "false",
                "NULL",
                "",
                ""
            ]),
            row(&["o_date", "date", "NULL", "false", "NULL", "", ""]),
            row(&[
                "o_ts",
                "timestamp without time zone",
                "NULL",
                "false",
                "NULL",
                "",
                ""
            ]),
            row(&["o_note", "text", "NULL", "false", "NULL", "", ""]),
        ]
    );

    let indexes = describe(&db, DESCRIBE_INDEXES, &oid).await;
    assert_eq!(
        indexes,
        vec![
            row(&[
                "orders_pkey",
                "true",
                "true",
                "false",
                "true",
                "CREATE UNIQUE INDEX orders_pkey ON public.orders USING art (o_orderkey)",
                "PRIMARY KEY (o_orderkey)",
                "p",
                "false",
                "false",
                "false",
                "0",
            ]),
            row(&[
                "orders_date",
                "false",
                "false",
                "false",
                "true",
                "CREATE INDEX orders_date ON public.orders USING art (o_date)",
                "NULL",
                "NULL",
                "NULL",
                "NULL",
                "false",
                "0",
            ]),
        ]
    );

    for empty in [
        DESCRIBE_POLICIES,
        DESCRIBE_STATISTICS,
        DESCRIBE_PUBLICATIONS,
        DESCRIBE_PARENTS,
        DESCRIBE_CHILDREN,
    ] {
        assert_eq!(describe(&db, empty, &oid).await, Rows::new(), "{empty}");
    }
}

#[tokio::test]
async fn d_table_with_hash_indexes_and_unique_constraint() {
    let db = database().await;
    let oid = lookup(&db, "t2").await;
    let columns: Vec<(String, String, String)> = describe(&db, DESCRIBE_COLUMNS, &oid)
        .await
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[3].clone()))
        .collect();
    let expected = [
        ("a", "bigint", "false"),
        ("b", "boolean", "false"),
        ("c", "real", "false"),
        ("d", "double precision", "false"),
        ("e", "smallint", "false"),
        ("f", "character(10)", "false"),
        ("g", "character varying", "false"),
    ];
    assert_eq!(
        columns,
        expected
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect::<Vec<_>>()
    );
    let indexes: Vec<Vec<String>> = describe(&db, DESCRIBE_INDEXES, &oid)
        .await
        .into_iter()
        .map(|r| {
            vec![
                r[0].clone(),
                r[2].clone(),
                r[5].clone(),
                r[6].clone(),
                r[7].clone(),
            ]
        })
        .collect();
    assert_eq!(
        indexes,
        vec![
            row(&[
                "t2_a",
                "true",
                "CREATE UNIQUE INDEX t2_a ON public.t2 USING hash (a)",
                "NULL",
                "NULL"
            ]),
            row(&[
                "t2_e_key",
                "true",
                "CREATE UNIQUE INDEX t2_e_key ON public.t2 USING hash (e)",
                "UNIQUE (e)",
                "u"
            ]),
        ]
    );
}

#[tokio::test]
async fn d_view_and_missing_relation() {
    let db = database().await;
    let oid = lookup(&db, "v1").await;
    let info = describe(&db, DESCRIBE_TABLE_INFO, &oid).await;
    assert_eq!(info[0][1], "v");
    assert_eq!(info[0][2], "false");
    let columns: Vec<(String, String)> = describe(&db, DESCRIBE_COLUMNS, &oid)
        .await
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(
        columns,
        [
            ("a".to_string(), "bigint".to_string()),
            ("b".into(), "boolean".into())
        ]
    );
    assert_eq!(
        rows(&db, &DESCRIBE_LOOKUP.replace("{name}", "nosuch")).await,
        Rows::new()
    );
}

#[tokio::test]
async fn d_finds_the_catalog_tables_themselves() {
    let db = database().await;
    let found = rows(&db, &DESCRIBE_LOOKUP.replace("{name}", "pg_class")).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0][1..], row(&["pg_catalog", "pg_class"])[..]);
    let columns = describe(&db, DESCRIBE_COLUMNS, &found[0][0]).await;
    assert_eq!(columns[0][..2], row(&["oid", "bigint"])[..]);
    assert_eq!(columns[1][..2], row(&["relname", "text"])[..]);
}

#[tokio::test]
async fn connect_time_functions() {
    let db = database().await;
    let got = rows(
        &db,
        "SELECT version(), pg_catalog.version() AS v2, current_database(), current_schema(), \
         current_user, pg_catalog.current_schemas(true)",
    )
    .await;
    assert!(
        got[0][0].starts_with("PostgreSQL 15.0 (wireload "),
        "{got:?}"
    );
    assert_eq!(got[0][0], got[0][1]);
    assert_eq!(
        got[0][2..],
        row(&["wireload", "public", "wireload", "[pg_catalog, public]"])[..]
    );
}

#[tokio::test]
async fn regclass_and_format_type() {
    let db = database().await;
    let oid = lookup(&db, "orders").await;
    let got = rows(
        &db,
        "SELECT 'orders'::regclass AS a, 'public.orders'::pg_catalog.regclass::oid AS b, \
         'orders'::regclass::text AS c, pg_catalog.to_regclass('nosuch') AS d, \
         'int4'::regtype AS e, 'int4'::regtype::text AS f",
    )
    .await;
    assert_eq!(
        got,
        vec![row(&[&oid, &oid, "orders", "NULL", "23", "integer"])]
    );
    let attributes = rows(
        &db,
        "SELECT a.attname, a.atttypid::regtype::text, a.attrelid::regclass \
         FROM pg_attribute a WHERE a.attrelid = 'orders'::regclass AND a.attnum = 3",
    )
    .await;
    assert_eq!(attributes, vec![row(&["o_total", "numeric", "orders"])]);
    let err = query(&db, "SELECT 'nosuch'::regclass").await.unwrap_err();
    assert!(err.contains("relation \"nosuch\" does not exist"), "{err}");
    let types = rows(
        &db,
        "SELECT format_type(1043, 29), format_type(1700, 983046), format_type(1042, 14), \
         format_type(25, -1), format_type(1114, -1), format_type(701, NULL)",
    )
    .await;
    assert_eq!(
        types,
        vec![row(&[
            "character varying(25)",
            "numeric(15,2)",
            "character(10)",
            "text",
            "timestamp without time zone",
            "double precision"
        ])]
    );
}

#[tokio::test]
async fn catalog_views_for_tools() {
    let db = database().await;
    assert_eq!(
        rows(
            &db,
            "SELECT tablename, hasindexes FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        )
        .await,
        vec![row(&["orders", "true"]), row(&["t2", "true"])]
    );
    assert_eq!(
        rows(
            &db,
            "SELECT indexdef FROM pg_catalog.pg_indexes WHERE indexname = 'orders_date'"
        )
        .await,
        vec![row(&[
            "CREATE INDEX orders_date ON public.orders USING art (o_date)"
        ])]
    );
    assert_eq!(
        rows(
            &db,
            "SELECT conname, contype, conkey FROM pg_constraint ORDER BY 1"
        )
        .await,
        vec![
            row(&["orders_pkey", "p", "{1}"]),
            row(&["t2_e_key", "u", "{5}"]),
        ]
    );
    assert_eq!(
        rows(&db, "SELECT typname FROM pg_type WHERE oid = 1043").await,
        vec![row(&["varchar"])]
    );
}

/// `\d+ NAME`'s column query (psql 15).
const DESCRIBE_COLUMNS_PLUS: &str = r#"SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated,
  a.attstorage,
  a.attcompression AS attcompression,
  CASE WHEN a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,
  pg_catalog.col_description(a.attrelid, a.attnum)
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '{oid}' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;"#;

#[tokio::test]
async fn d_plus_columns() {
    let db = database().await;
    let oid = lookup(&db, "orders").await;
    let columns: Vec<Vec<String>> = describe(&db, DESCRIBE_COLUMNS_PLUS, &oid)
        .await
        .into_iter()
        .map(|r| {
            vec![
                r[0].clone(),
                r[1].clone(),
                r[7].clone(),
                r[9].clone(),
                r[10].clone(),
            ]
        })
        .collect();
    assert_eq!(columns.len(), 7);
    assert_eq!(
        columns[0],
        row(&["o_orderkey", "integer", "p", "NULL", "NULL"])
    );
    assert_eq!(
        columns[2],
        row(&["o_total", "numeric(15,2)", "m", "NULL", "NULL"])
    );
    assert_eq!(
        columns[3],
        row(&["o_comment", "character varying(25)", "x", "NULL", "NULL"])
    );
}

#[tokio::test]
async fn correlated_catalog_subqueries() {
    let db = database().await;
    // an outer-only predicate, and one on an outer column that an equality ties to an
    // inner one: both decorrelated
    let got = rows(
        &db,
        "SELECT a.attname, \
           (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t \
            WHERE c.oid = a.attcollation AND t.oid = a.atttypid \
              AND a.attcollation = t.typcollation) AS coll, \
           (SELECT t.typname FROM pg_type t WHERE t.oid = a.atttypid AND a.attnum = 1) AS first \
         FROM pg_attribute a WHERE a.attrelid = 'orders'::regclass ORDER BY a.attnum",
    )
    .await;
    assert_eq!(
        got,
        vec![
            row(&["o_orderkey", "NULL", "int4"]),
            row(&["o_status", "default", "NULL"]),
            row(&["o_total", "NULL", "NULL"]),
            row(&["o_comment", "default", "NULL"]),
            row(&["o_date", "NULL", "NULL"]),
            row(&["o_ts", "NULL", "NULL"]),
            row(&["o_note", "default", "NULL"]),
        ]
    );
}

#[tokio::test]
async fn driver_introspection_queries() {
    let db = database().await;
    // SQLAlchemy's has_table
    assert_eq!(
        rows(
            &db,
            "SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class \
             JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace \
             WHERE pg_catalog.pg_class.relname = 'orders' \
             AND pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) \
             AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) \
             AND pg_catalog.pg_namespace.nspname != 'pg_catalog'"
        )
        .await,
        vec![row(&["orders"])]
    );
    // psycopg2's hstore lookup: no such type
    assert_eq!(
        rows(
            &db,
            "SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid \
             WHERE typname = 'hstore'"
        )
        .await,
        Rows::new()
    );
    // pgJDBC's getColumns
    let columns = rows(
        &db,
        "SELECT n.nspname, c.relname, a.attname, a.atttypid, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull, \
         a.atttypmod, a.attnum, pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc, dsc.description \
         FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid) \
         JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) \
         LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum) \
         LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) \
         WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped \
         AND c.relname LIKE 'orders' ORDER BY nspname,c.relname,attnum",
    )
    .await;
    assert_eq!(columns.len(), 7);
    assert_eq!(
        columns[2],
        row(&[
            "public", "orders", "o_total", "1700", "false", "983046", "3", "NULL", "NULL"
        ])
    );
    assert_eq!(
        rows(&db, "SELECT relname FROM pg_class WHERE relkind <> ALL (ARRAY['r', 'i']) AND relnamespace = 2200").await,
        vec![row(&["v1"])]
    );
}

const LIST_ROLES: &str = r#"SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1;"#;

const LIST_EXTENSIONS: &str = r#"SELECT e.extname AS "Name", e.extversion AS "Version", n.nspname AS "Schema", c.description AS "Description"
FROM pg_catalog.pg_extension e LEFT JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace LEFT JOIN pg_catalog.pg_description c ON c.objoid = e.oid AND c.classoid = 'pg_catalog.pg_extension'::pg_catalog.regclass
ORDER BY 1;"#;

#[tokio::test]
async fn du_and_dx() {
    let db = database().await;
    assert_eq!(
        rows(&db, LIST_ROLES).await,
        vec![row(&[
            "wireload", "true", "true", "true", "true", "true", "-1", "NULL", "{}", "false", "true"
        ])]
    );
    assert_eq!(rows(&db, LIST_EXTENSIONS).await, Rows::new());
    // roles and their memberships come from the role registry
    db.execute(
        "CREATE ROLE readers; CREATE USER ann PASSWORD 'pw' CONNECTION LIMIT 2 IN ROLE readers",
        &Default::default(),
    )
    .await
    .unwrap();
    db.execute("GRANT pg_read_server_files TO ann", &Default::default())
        .await
        .unwrap();
    let roles = rows(&db, LIST_ROLES).await;
    assert_eq!(
        roles[0],
        row(&[
            "ann",
            "false",
            "true",
            "false",
            "false",
            "true",
            "2",
            "NULL",
            "{pg_read_server_files,readers}",
            "false",
            "false"
        ]),
        "{roles:?}"
    );
    assert_eq!(roles.len(), 3, "{roles:?}");
}
