//! The GPU engine's loads against the CPU loader's: the same rows (floats bit for bit) or
//! the same error message, for random inputs cut into partitions of many sizes. The
//! passes are the plain-Rust reference here (fast) and the emulated kernels on smaller
//! inputs; every other step is the engine's own.

use std::sync::Arc;

use crate::common::{
    Case, Gen, case, column, columns_text, cpu_load, not_null, rows, source, table,
};
use wireload_gpu::testing::{Emulator, load_into_on, load_into_reference};
use wireload_gpu::{GpuOptions, PassMode};
use wireload_load::LoadControl;
use wireload_types::SqlType::{Date, Integer, Text, Varchar};

/// Loads `c` through the engine with the reference passes.
fn reference_load(c: &Case, opts: &GpuOptions) -> Result<Vec<Vec<Option<String>>>, String> {
    let t = table(&c.columns);
    load_into_reference(&t, &source(c), &c.dialect, opts, &LoadControl::default())
        .map_err(|e| e.to_string())?;
    Ok(rows(&t))
}

/// Loads `c` through the engine with the kernels on the emulator.
fn emulated_load(c: &Case, opts: &GpuOptions) -> Result<Vec<Vec<Option<String>>>, String> {
    let t = table(&c.columns);
    let dev = Arc::new(Emulator::new(64));
    load_into_on(
        &dev,
        &t,
        &source(c),
        &c.dialect,
        opts,
        &LoadControl::default(),
    )
    .map_err(|e| e.to_string())?;
    Ok(rows(&t))
}

type Loaded = Result<Vec<Vec<Option<String>>>, String>;

/// The first row (or the errors) where two loads differ.
fn first_difference(a: &Loaded, b: &Loaded) -> String {
    match (a, b) {
        (Ok(a), Ok(b)) => match a.iter().zip(b).position(|(x, y)| x != y) {
            Some(i) => format!("row {i}: {:?} vs {:?}", a[i], b[i]),
            None => format!("{} rows vs {}", a.len(), b.len()),
        },
        _ => format!("{a:?} vs {b:?}"),
    }
}

#[test]
fn reference_loads_equal_cpu_loads() {
    let (mut ok, mut failed) = (0, 0);
    for seed in 0..400u64 {
        let g = Gen {
            rows: 1 + (seed as usize * 13) % 150,
            errors: seed % 3 == 2,
            quotes: seed % 4 != 0,
            odd: seed % 2 == 0,
        };
        let c = case(seed, g);
        let cpu = cpu_load(&c);
        let opts = GpuOptions {
            // tiny partitions put boundaries everywhere
            partition: [37, 256, 1000, 1 << 20][seed as usize % 4],
            chunk: [128, 256][seed as usize % 2],
            mode: if seed % 5 == 0 {
                PassMode::Quoted
            } else {
                PassMode::Auto
            },
            streams: 1 + seed as usize % 3,
            fallbacks: if seed % 7 == 0 { 2 } else { 1 << 12 },
        };
        let gpu = reference_load(&c, &opts);
        if gpu != cpu {
            panic!(
                "seed {seed}: {}\nschema {:?}, dialect {:?}, {opts:?}\ninput {:?}",
                first_difference(&gpu, &cpu),
                columns_text(&c.columns),
                c.dialect,
                String::from_utf8_lossy(&c.data)
            );
        }
        if cpu.is_ok() {
            ok += 1;
        } else {
            failed += 1;
        }
    }
    assert!(ok > 150 && failed > 40, "{ok} loads, {failed} errors");
}

#[test]
fn emulated_loads_equal_cpu_loads() {
    for seed in 1000..1080u64 {
        let g = Gen {
            rows: 1 + (seed as usize * 7) % 80,
            errors: seed % 3 == 2,
            quotes: seed % 4 != 0,
            odd: seed % 2 == 0,
        };
        let c = case(seed, g);
        let opts = GpuOptions {
            partition: [64, 700, 1 << 20][seed as usize % 3],
            chunk: 128,
            mode: if seed % 4 == 0 {
                PassMode::Quoted
            } else {
                PassMode::Auto
            },
            streams: 2,
            ..GpuOptions::default()
        };
        assert_eq!(
            emulated_load(&c, &opts),
            cpu_load(&c),
            "seed {seed}: schema {:?}, dialect {:?}\ninput {:?}",
            columns_text(&c.columns),
            c.dialect,
            String::from_utf8_lossy(&c.data)
        );
    }
}

#[test]
fn headers_boms_and_empty_inputs() {
    let mut c = Case {
        columns: vec![column("a", Integer), column("b", Text)],
        dialect: wireload_load::Dialect {
            header: true,
            ..Default::default()
        },
        data: b"\xEF\xBB\xBFa,b\n1,x\n2,\"y\nz\"".to_vec(),
    };
    let opts = GpuOptions {
        partition: 5,
        ..GpuOptions::default()
    };
    assert_eq!(reference_load(&c, &opts), cpu_load(&c));
    assert_eq!(emulated_load(&c, &opts), cpu_load(&c));
    assert_eq!(cpu_load(&c).unwrap().len(), 2);
    for data in [&b""[..], b"a,b\n", b"\n\n", b"a,b"] {
        c.data = data.to_vec();
        assert_eq!(reference_load(&c, &opts), cpu_load(&c), "{data:?}");
    }
    c.dialect.header = false;
    // a partition may start with the bytes of a BOM: they are data there
    c.columns = vec![column("a", Text)];
    c.data = b"x\n\xEF\xBB\xBFy\n".to_vec();
    let opts = GpuOptions {
        partition: 2,
        fallbacks: 0,
        ..GpuOptions::default()
    };
    assert_eq!(reference_load(&c, &opts), cpu_load(&c));
}

#[test]
fn errors_name_the_same_place_as_the_cpu_loader() {
    let c = |columns: [wireload_types::ColumnDef; 2], data: &[u8]| Case {
        columns: columns.to_vec(),
        dialect: Default::default(),
        data: data.to_vec(),
    };
    let opts = GpuOptions {
        partition: 16,
        ..GpuOptions::default()
    };
    for case in [
        c(
            [column("a", Integer), column("b", Integer)],
            b"1,2\n3,4\n5,x\n7,8\n",
        ),
        c(
            [column("a", Integer), column("b", Integer)],
            b"1,2\n3,4\n5\n7,8\n",
        ),
        c(
            [column("a", Integer), column("b", Text)],
            b"1,2\n3,\"4\n5,x\n",
        ),
        c(
            [column("a", Integer), column("b", Text)],
            b"1,2\n3,a\"4\n5,x\n",
        ),
        c([not_null("a", Integer), column("b", Text)], b"1,2\n,4\n"),
        c(
            [column("a", Integer), column("b", Varchar(Some(2)))],
            b"1,ab\n2,abc\n",
        ),
        c([column("a", Integer), column("b", Text)], b"1,\xc3\n"),
        c([column("a", Date), column("b", Text)], b"2020-02-30,x\n"),
    ] {
        let cpu = cpu_load(&case);
        assert!(cpu.is_err(), "{:?}", case.data);
        assert_eq!(reference_load(&case, &opts), cpu);
        assert_eq!(emulated_load(&case, &opts), cpu);
    }
}

#[test]
fn pooled_workspaces_serve_tables_of_other_shapes() {
    use wireload_gpu::testing::{WorkspacePool, load_into_pooled};
    let pool = WorkspacePool::new(Arc::new(Emulator::new(32)));
    let opts = GpuOptions {
        partition: 300,
        streams: 2,
        ..GpuOptions::default()
    };
    // wide, narrow, wide again, with errors between: the same two workspaces serve them all
    for seed in [5u64, 9, 14, 23, 31, 44] {
        let c = case(
            seed,
            Gen {
                rows: 40,
                errors: seed % 2 == 1,
                quotes: true,
                odd: true,
            },
        );
        let t = table(&c.columns);
        let got = load_into_pooled(
            &pool,
            &t,
            &source(&c),
            &c.dialect,
            &opts,
            &LoadControl::default(),
        )
        .map(|_| rows(&t))
        .map_err(|e| e.to_string());
        assert_eq!(got, cpu_load(&c), "seed {seed}");
    }
}

#[test]
fn key_errors_name_lines_as_the_cpu_loader_does() {
    use wireload_index::IndexKind;
    use wireload_load::{LoadOptions, load_into};
    use wireload_storage::{Catalog, IndexDef, Partitioning, TableDef};
    use wireload_types::TableSchema;
    let keyed = || {
        let schema = TableSchema {
            columns: vec![not_null("k", Integer), column("v", Text)],
        };
        let def = TableDef::new("t", schema, Partitioning::Single)
            .unwrap()
            .with_indexes(vec![IndexDef {
                name: "t_pkey".into(),
                columns: vec![0],
                unique: true,
                primary: true,
                kind: IndexKind::Art,
            }])
            .unwrap();
        Catalog::default().create_table(def, false).unwrap()
    };
    let data = b"k,v\n1,a\n\n2,\"b\nc\"\r\n3,d\n2,e\n4,f\n".to_vec();
    let d = wireload_load::Dialect {
        header: true,
        ..Default::default()
    };
    let src = wireload_load::Source::Bytes {
        name: "keys.csv".into(),
        data: Arc::from(data),
    };
    let cpu = keyed();
    let want = load_into(
        &cpu,
        &src,
        &LoadOptions {
            dialect: d.clone(),
            ..LoadOptions::default()
        },
        &LoadControl::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        want.contains("line 7, byte 22") && want.contains("line 4, byte 9"),
        "{want}"
    );
    for partition in [8, 1 << 20] {
        let t = keyed();
        let opts = GpuOptions {
            partition,
            ..GpuOptions::default()
        };
        let got = load_into_reference(&t, &src, &d, &opts, &LoadControl::default()).unwrap_err();
        assert_eq!(got.to_string(), want);
        assert_eq!(t.snapshot().num_rows(), 0, "the table is unchanged");
    }
}

#[test]
fn a_worker_that_cannot_start_fails_the_load() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use wireload_gpu::GpuError;
    use wireload_gpu::testing::{ReferenceRunner, load_with};
    // many partitions, two workers, the second of which cannot get its buffers
    let c = case(
        3,
        Gen {
            rows: 300,
            errors: false,
            quotes: true,
            odd: false,
        },
    );
    let opts = GpuOptions {
        partition: 64,
        streams: 2,
        ..GpuOptions::default()
    };
    let made = AtomicUsize::new(0);
    let t = table(&c.columns);
    let r = load_with(
        &t,
        &source(&c),
        &c.dialect,
        &opts,
        &LoadControl::default(),
        "test",
        &|plan| {
            if made.fetch_add(1, Ordering::SeqCst) == 1 {
                Err(GpuError::Unsupported("no buffers for this worker".into()))
            } else {
                Ok(ReferenceRunner::new(plan, &opts))
            }
        },
    );
    let e = r.expect_err("a load with a failed worker fails");
    assert!(e.to_string().contains("no buffers for this worker"), "{e}");
    assert_eq!(t.snapshot().num_rows(), 0, "the table is unchanged");
}
