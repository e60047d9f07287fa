//! Compiles the CPU emulator: the CUDA kernel source (kernels/csv.cu) built as host C++
//! with kernels/simt.h, plus the fiber scheduler (kernels/emulate.cpp). Only with the
//! `testing` feature: a production build compiles no C++ and holds no emulator.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // (the build-dependency `cc` is there only with the feature, hence the cfg as well)
    if std::env::var_os("CARGO_FEATURE_TESTING").is_some() {
        #[cfg(feature = "testing")]
        emulator();
    }
}

#[cfg(feature = "testing")]
fn emulator() {
    for f in ["layout.h", "csv.cu", "simt.h", "emulate.cpp"] {
        println!("cargo:rerun-if-changed=kernels/{f}");
    }
    cc::Build::new()
        .cpp(true)
        .file("kernels/emulate.cpp")
        .std("c++17")
        .opt_level(2)
        .flag("-fno-strict-aliasing")
        .flag_if_supported("-Wno-unknown-pragmas")
        .flag_if_supported("-Wno-unused-parameter")
        .compile("wireload_gpu_emulator");
}
