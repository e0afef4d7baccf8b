//! Link settings of the `hermes` binary.
//!
//! On Linux with glibc the relative relocations are packed (`-z pack-relative-relocs`,
//! DT_RELR; GNU ld ≥ 2.38, glibc ≥ 2.36 — an older ld warns and ignores it, and ld leaves
//! it out when the C library cannot load it). Without it the dynamic loader reads ~1.7 MB
//! of `.rela.dyn` at every start, a fifth of the peak RSS of `hermes --version` (issue 6
//! target ≤ 8 MB; measured by `bench/run`, see docs/benchmarks.md). `HERMES_NO_RELR=1`
//! turns it off.

fn main() {
    println!("cargo:rerun-if-env-changed=HERMES_NO_RELR");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("HERMES_NO_RELR").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
