//! What the tests share: the binary under test.

use std::process::Command;

/// The `wireload` binary with 2 worker threads.
pub fn wireload() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wireload"));
    cmd.arg("--threads").arg("2");
    cmd
}
