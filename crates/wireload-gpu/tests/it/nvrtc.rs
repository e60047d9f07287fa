//! The CUDA kernels (`kernels/layout.h` + `kernels/csv.cu`) compile with NVRTC, so a
//! broken kernel fails CI even though CI has no GPU.
//!
//! NVRTC needs neither a GPU nor the CUDA driver, only its two shared libraries. A machine
//! with the CUDA toolkit has them on the loader's path; elsewhere (CI, this project's
//! development machine) the test takes them from NVIDIA's `nvidia-cuda-nvrtc` wheel on
//! PyPI, pinned to CUDA 13.0 (the NVRTC of the GPU machines the project measures on),
//! downloads it once into the target directory and keeps the two libraries there.
//!
//! The kernels are compiled to a CUBIN for the GPUs the project runs on (sm_90: H100 and
//! H200; sm_80: A100; sm_75: T4, the oldest CUDA 13 still targets) and to PTX, and every
//! kernel the host launches (`Kernel::ALL`) must be in the image. A deliberately broken
//! kernel shows that a compile error fails the check, with NVRTC's log.

#![cfg(feature = "cuda")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use wireload_gpu::GpuError;
use wireload_gpu::testing::cuda;
use wireload_gpu::testing::layout::{Kernel, kernel_source};

/// The pinned wheel, as pip spells it: NVRTC of CUDA 13.0.
const WHEEL: &str = "nvidia-cuda-nvrtc==13.0.88";

/// The wheel's two files NVRTC needs (under `nvidia/cu13/lib/`): NVRTC itself and the
/// builtins library it opens by name when it compiles.
const LIBS: [&str; 2] = ["libnvrtc.so.13", "libnvrtc-builtins.so.13.0"];

/// Where the libraries are kept between runs: a folder named after the pinned version in
/// the target directory's scratch space (kept by cargo, shared by every test run).
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "nvrtc-{}",
        WHEEL.rsplit('=').next().expect("a pinned version")
    ))
}

/// Makes NVRTC loadable, once per test process (the tests run on parallel threads), and
/// says where it came from; panics with the reason when it cannot.
fn nvrtc() -> &'static str {
    static READY: OnceLock<Result<String, String>> = OnceLock::new();
    match READY.get_or_init(provide_nvrtc) {
        Ok(from) => from,
        Err(why) => panic!("NVRTC is needed for the kernel compile check: {why}"),
    }
}

/// Finds NVRTC on the loader's path or else in the cached (or freshly downloaded) wheel,
/// and preloads the latter; returns where it came from.
fn provide_nvrtc() -> Result<String, String> {
    if cuda::nvrtc_present() {
        return Ok("the loader's path".into());
    }
    let dir = cache_dir();
    if !LIBS.iter().all(|l| dir.join(l).is_file()) {
        // an incomplete folder (a library deleted by hand) would block the rename
        let _ = std::fs::remove_dir_all(&dir);
        download_into(&dir)?;
    }
    // NVRTC opens its builtins library by name (`libnvrtc-builtins.so.13.0`) and cudarc
    // opens NVRTC by name (`libnvrtc.so.13`); neither is on the loader's path, so both are
    // loaded globally first and the later loads by name find them by their sonames.
    cuda::preload_nvrtc(&dir).map_err(|e| format!("preloading {}: {e}", dir.display()))?;
    if !cuda::nvrtc_present() {
        return Err(format!(
            "NVRTC preloaded from {} but still not found by name",
            dir.display()
        ));
    }
    Ok(format!("{WHEEL} in {}", dir.display()))
}

/// Downloads the pinned wheel with pip and extracts the two libraries into `dir`: into a
/// staging folder first, renamed into place at the end, so that a run stopped halfway (or
/// another test process at the same time) never leaves a partial `dir` behind.
fn download_into(dir: &Path) -> Result<(), String> {
    let mut staging = dir.as_os_str().to_owned();
    staging.push(format!(".partial-{}", std::process::id()));
    let staging = PathBuf::from(staging);
    let _ = std::fs::remove_dir_all(&staging);
    let started = std::time::Instant::now();
    let fetched = fetch(&staging);
    if fetched.is_err() || std::fs::rename(&staging, dir).is_err() {
        // a failed download, or another process put its copy in place first
        let _ = std::fs::remove_dir_all(&staging);
    }
    fetched?;
    if !LIBS.iter().all(|l| dir.join(l).is_file()) {
        return Err(format!(
            "{LIBS:?} are not in {} after the download",
            dir.display()
        ));
    }
    eprintln!(
        "downloaded {WHEEL} into {} in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Downloads the wheel into `staging` and extracts the two libraries there, deleting the
/// wheel.
fn fetch(staging: &Path) -> Result<(), String> {
    std::fs::create_dir_all(staging)
        .map_err(|e| format!("cannot create {}: {e}", staging.display()))?;
    run(Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--disable-pip-version-check", "--progress-bar", "off", "-d"])
        .arg(staging)
        .arg(WHEEL))?;
    let wheel = std::fs::read_dir(staging)
        .map_err(|e| format!("cannot read {}: {e}", staging.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip downloaded no wheel into {}", staging.display()))?;
    // A wheel is a zip file; python3's zipfile takes out just the two libraries (114 MB
    // of its 228 MB unpacked; the rest is a second, `.alt`, build and the header), flat
    // into the staging folder, and the wheel is deleted.
    const EXTRACT: &str = r#"
import os, shutil, sys, zipfile
wheel, out, wanted = sys.argv[1], sys.argv[2], set(sys.argv[3:])
with zipfile.ZipFile(wheel) as z:
    found = {os.path.basename(n): n for n in z.namelist() if os.path.basename(n) in wanted}
    missing = wanted - set(found)
    if missing:
        libs = [n for n in z.namelist() if ".so" in n]
        sys.exit(f"{sorted(missing)} not in the wheel, which has {libs}")
    for base, name in found.items():
        with z.open(name) as src, open(os.path.join(out, base), "wb") as dst:
            shutil.copyfileobj(src, dst)
"#;
    run(Command::new("python3")
        .args(["-c", EXTRACT])
        .arg(&wheel)
        .arg(staging)
        .args(LIBS))?;
    std::fs::remove_file(&wheel).map_err(|e| format!("cannot delete {}: {e}", wheel.display()))
}

/// Runs `cmd`; an error names the command and holds its exit status and stderr.
fn run(cmd: &mut Command) -> Result<Output, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("`{cmd:?}` did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{cmd:?}` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out)
}

/// Whether `name` is a whole symbol name in `image`: in the ELF string tables a symbol is
/// NUL-terminated and follows a NUL (a symbol) or a dot (a section such as `.text.NAME`).
fn has_symbol(image: &[u8], name: &str) -> bool {
    let name = name.as_bytes();
    image
        .windows(name.len() + 2)
        .any(|w| matches!(w[0], 0 | b'.') && &w[1..=name.len()] == name && w[name.len() + 1] == 0)
}

/// Compiles the kernels to a CUBIN for `arch` and checks it is a CUDA ELF holding every
/// kernel.
fn check_cubin(arch: &str) {
    nvrtc();
    let started = std::time::Instant::now();
    let image = cuda::compile(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
    eprintln!(
        "{arch}: {} bytes of CUBIN in {:.1} s",
        image.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        &image[..4],
        b"\x7fELF",
        "{arch}: the CUBIN is not an ELF file"
    );
    // e_machine (offset 18, little-endian): 190 is EM_CUDA
    assert_eq!(
        u16::from_le_bytes([image[18], image[19]]),
        190,
        "{arch}: the ELF file is not for a CUDA GPU"
    );
    let missing: Vec<_> = Kernel::ALL
        .iter()
        .map(|k| k.name())
        .filter(|n| !has_symbol(&image, n))
        .collect();
    assert!(
        missing.is_empty(),
        "{arch}: kernels missing from the CUBIN: {missing:?}"
    );
}

/// The kernels compile for the H100 and H200 (sm_90), the GPUs the project measures on.
#[test]
fn kernels_compile_to_a_cubin_for_sm_90() {
    check_cubin("sm_90");
}

/// The kernels compile for the A100 (sm_80).
#[test]
fn kernels_compile_to_a_cubin_for_sm_80() {
    check_cubin("sm_80");
}

/// The kernels compile for the T4 (sm_75), the oldest architecture CUDA 13 compiles for.
#[test]
fn kernels_compile_to_a_cubin_for_sm_75() {
    check_cubin("sm_75");
}

/// The kernels compile to PTX for compute_90 (what the device loads when its NVRTC does
/// not know the GPU yet), with an entry point for every kernel.
#[test]
fn kernels_compile_to_ptx_with_every_entry() {
    nvrtc();
    let image = cuda::compile("compute_90").unwrap_or_else(|e| panic!("compute_90: {e}"));
    let ptx = std::str::from_utf8(image.strip_suffix(&[0]).unwrap_or(&image)).expect("PTX is text");
    assert!(
        ptx.contains(".target sm_90"),
        "PTX for another target:\n{ptx:.400}"
    );
    let missing: Vec<_> = Kernel::ALL
        .iter()
        .map(|k| k.name())
        .filter(|n| !ptx.contains(&format!(".entry {n}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "kernels without a .entry in the PTX: {missing:?}"
    );
}

/// Where NVRTC places the line starting at byte `at` of `source` in its log: `csv.cu(N)`,
/// the program's name and line, or the file and line a `#line` directive set.
fn location(source: &str, at: usize) -> String {
    let (mut file, mut line) = ("csv.cu".to_string(), 1);
    for l in source[..at].lines() {
        match l
            .strip_prefix("#line ")
            .map(|d| d.trim().split_once(' ').unwrap_or((d, "")))
        {
            // `#line N "name"`: the next line is line N (of `name`)
            Some((n, name)) => {
                line = n.trim().parse().expect("a #line number");
                if !name.is_empty() {
                    file = name.trim().trim_matches('"').to_string();
                }
            }
            None => line += 1,
        }
    }
    format!("{file}({line})")
}

/// A type error in one kernel's body (the real source, `wl_count` assigning its argument
/// struct to an integer) fails the compile with `GpuError::Compile`, whose log points at
/// the line and names the types: the check catches a broken kernel.
#[test]
fn a_broken_kernel_fails_with_the_compiler_log() {
    nvrtc();
    let source = kernel_source();
    let head = "wl_count(const CountArgs a) {\n";
    let at = source.find(head).expect("wl_count is in the source") + head.len();
    let broken = format!("{}    u32 wl_broken = a;\n{}", &source[..at], &source[at..]);
    let place = location(&broken, at);
    match cuda::compile_source(&broken, "sm_90") {
        Err(GpuError::Compile { log }) => {
            eprintln!("NVRTC's log:\n{log}");
            assert!(
                log.contains(&format!("{place}: error")),
                "not at {place}:\n{log}"
            );
            assert!(log.contains("CountArgs"), "{log}");
            assert!(log.contains("u32 wl_broken = a;"), "{log}");
        }
        Ok(_) => panic!("a kernel with a type error compiled"),
        Err(e) => panic!("expected a compile error, got: {e}"),
    }
}

/// Reports the NVRTC version and where it came from; CUDA 12 or newer is required (the
/// kernels' C++17 and the architectures above).
#[test]
fn nvrtc_version_is_12_or_newer() {
    let from = nvrtc();
    let (major, minor) = cuda::nvrtc_version().expect("nvrtcVersion");
    eprintln!("NVRTC {major}.{minor}, from {from}");
    assert!(major >= 12, "NVRTC {major}.{minor} is older than 12");
}
