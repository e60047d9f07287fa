//! Runs the Python package's pytest suite (`python/tests/*.py`) against the extension module
//! this build made: the package's Python files and the module are staged as `wireload` in a
//! temporary folder, and the clients' virtual environment (pyarrow, polars, pandas, pytest)
//! runs the suite.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The extension module cargo built for this test (a cdylib beside the test binary).
fn extension() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's folder");
    let lib = deps.join("lib_native.so");
    assert!(
        lib.is_file(),
        "the extension module {} is missing: cargo builds it with this test",
        lib.display()
    );
    lib
}

#[test]
fn pytest_suite() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let stage = tempfile::tempdir().expect("a temporary folder");
    let package = stage.path().join("wireload");
    std::fs::create_dir_all(&package).expect("the package folder");
    for entry in std::fs::read_dir(here.join("wireload")).expect("python/wireload") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().expect("a file name").to_owned();
        if path.is_file() {
            std::fs::copy(&path, package.join(name)).expect("copying a package file");
        }
    }
    std::fs::copy(extension(), package.join("_native.abi3.so")).expect("copying the module");
    let python = wireload_clients::python();
    let status = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"])
        .arg(here.join("tests"))
        .env("PYTHONPATH", stage.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // not python/: `python -m` puts the working folder first on sys.path, where the
        // package's sources without the module would shadow the staged package
        .current_dir(stage.path())
        .status()
        .expect("pytest runs");
    assert!(status.success(), "the pytest suite failed: {status}");
}
