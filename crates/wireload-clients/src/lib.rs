//! The real clients the server tests drive, found or installed on first use: `psql`
//! (Debian's `postgresql-client`, installed with apt-get when missing and running as root)
//! and a Python virtual environment with psycopg 3, pyarrow and ADBC's Flight SQL driver
//! (pinned in `requirements.txt`, installed with pip into the target directory once and
//! kept there between runs).
//!
//! Also a self-signed certificate for the TLS tests.
//!
//! Only for tests (a dev-dependency): nothing here is in the product.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The pinned Python packages.
const REQUIREMENTS: &str = include_str!("requirements.txt");

/// The `psql` program; panics with the reason when it is missing and cannot be installed.
pub fn psql() -> &'static Path {
    static PSQL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PSQL.get_or_init(find_or_install_psql) {
        Ok(p) => p,
        Err(why) => panic!("psql is needed by this test: {why}"),
    }
}

/// The Python interpreter of the clients' virtual environment; panics with the reason when
/// it cannot be made.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(provide_venv) {
        Ok(p) => p,
        Err(why) => panic!("the Python clients are needed by this test: {why}"),
    }
}

/// The port of `key=127.0.0.1:PORT` in a log line of `wireload serve` (its ready line names
/// the addresses it listens on, so a test can give it port 0 rather than a port picked free
/// beforehand, which another process can take meanwhile).
pub fn logged_port(line: &str, key: &str) -> Option<u16> {
    let plain = strip_ansi(line);
    let prefix = format!("{key}=127.0.0.1:");
    let at = plain.find(&prefix)? + prefix.len();
    let digits: String = plain[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `line` without its ANSI escape sequences (`ESC [ ... letter`, as tracing colours its
/// fields).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A self-signed certificate for 127.0.0.1 and localhost made with openssl in `dir`:
/// the paths of the certificate and of its private key (PEM).
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    make_self_signed(dir, &[])
}

/// Like [`self_signed`], but marked as no CA (`basicConstraints=CA:FALSE`): clients that
/// verify with webpki (rustls) refuse a CA certificate presented by a server.
pub fn self_signed_end_entity(dir: &Path) -> (PathBuf, PathBuf) {
    make_self_signed(dir, &["-addext", "basicConstraints=critical,CA:FALSE"])
}

fn make_self_signed(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    let cert = dir.join("server.crt");
    let key = dir.join("server.key");
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .args(extra)
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cert, key)
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

fn find_or_install_psql() -> Result<PathBuf, String> {
    if let Some(p) = on_path("psql") {
        return Ok(p);
    }
    // Debian's package, as the project's machines are Debian
    let status = Command::new("sh")
        .arg("-c")
        .arg(
            "(apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
             apt-get install -y -qq postgresql-client) >/dev/null 2>&1",
        )
        .status()
        .map_err(|e| format!("psql is not on PATH and apt-get could not run: {e}"))?;
    if !status.success() {
        return Err(format!(
            "psql is not on PATH and `apt-get install postgresql-client` failed ({status})"
        ));
    }
    on_path("psql").ok_or_else(|| "postgresql-client installed but psql is not on PATH".into())
}

/// A hash of the requirements (FNV-1a), naming the venv folder so that a change of pins
/// makes a new one.
fn requirements_hash() -> u64 {
    REQUIREMENTS.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The target directory's scratch space (kept by cargo between runs).
fn scratch() -> PathBuf {
    // CARGO_TARGET_TMPDIR is set for integration tests only; this crate is compiled as a
    // library, so the target directory is found from the running test binary instead
    // (target/<profile>/deps/<test>).
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "deps"))
        .and_then(|deps| deps.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join("tmp"))
        .unwrap_or_else(std::env::temp_dir)
}

fn provide_venv() -> Result<PathBuf, String> {
    let dir = scratch().join(format!("clients-venv-{:016x}", requirements_hash()));
    let python = dir.join("bin/python");
    if dir.join(".complete").is_file() {
        return Ok(python);
    }
    // built in a staging folder, renamed into place at the end: a run stopped halfway (or
    // another test process at the same time) never leaves a partial venv behind
    let staging = dir.with_extension(format!("staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(staging.parent().unwrap_or(Path::new(".")))
        .map_err(|e| format!("creating {}: {e}", staging.display()))?;
    run(Command::new("python3").args(["-m", "venv"]).arg(&staging))?;
    // the venv's scripts name their folder: the venv is used under its final name only
    // through `bin/python`, which works from any folder
    let req = staging.join("requirements.txt");
    std::fs::write(&req, REQUIREMENTS).map_err(|e| format!("writing {}: {e}", req.display()))?;
    run(Command::new(staging.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&req))?;
    std::fs::write(staging.join(".complete"), "")
        .map_err(|e| format!("marking {}: {e}", staging.display()))?;
    match std::fs::rename(&staging, &dir) {
        Ok(()) => {}
        // another process finished first: use its venv
        Err(_) if dir.join(".complete").is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
        }
        Err(e) => return Err(format!("renaming {} into place: {e}", staging.display())),
    }
    Ok(python)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
