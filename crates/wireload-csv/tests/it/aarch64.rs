//! The scan, NEON backend included, compiles for AArch64 (`cargo check --target
//! aarch64-unknown-linux-gnu`). The target is listed in `rust-toolchain.toml`; rustup adds
//! it with a fresh toolchain but not to one already installed, so the test adds it first.
//! This machine cannot run NEON code; the check keeps it building.

use std::path::Path;
use std::process::Command;

#[test]
fn wireload_csv_checks_for_aarch64() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target_dir = root.join("target/aarch64-check");
    // Idempotent, and quick once the target is there; without rustup the check below says
    // what is missing.
    let _ = Command::new("rustup")
        .current_dir(&root)
        .args(["target", "add", "aarch64-unknown-linux-gnu"])
        .output();
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
