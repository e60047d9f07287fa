//! The scan, NEON backend included, compiles for AArch64 (`cargo check --target
//! aarch64-unknown-linux-gnu`; the target comes with the toolchain, see
//! `rust-toolchain.toml`). This machine cannot run NEON code; the check keeps it building.

use std::path::Path;
use std::process::Command;

#[test]
fn wireload_csv_checks_for_aarch64() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target_dir = root.join("target/aarch64-check");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args([
            "check",
            "--quiet",
            "-p",
            "wireload-csv",
            "--lib",
            "--target",
            "aarch64-unknown-linux-gnu",
            "--target-dir",
        ])
        .arg(&target_dir)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo check --target aarch64-unknown-linux-gnu failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
