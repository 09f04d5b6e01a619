//! Gives the shared library its SONAME on ELF platforms.
//!
//! The name follows the ABI promise of the README ("before 1.0, a minor
//! release may change the C ABI"), the same rule as cargo-c: version 0.M.x
//! is `libdsh_persist.so.0.M`, version N.x.y (N >= 1) is
//! `libdsh_persist.so.N`. A host linked against 0.1 therefore never loads
//! a 0.2 library by accident. `scripts/package.sh` installs the library
//! under that name with the `libdsh_persist.so` link for `-ldsh_persist`.
//!
//! The name is also given to the crate's own targets as the environment
//! variable `DSH_PERSIST_SONAME` (empty where there is none), so tests that
//! link C programs against the build tree know which file the loader will
//! look for.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the version");
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").expect("cargo sets the version");
    let abi = if major == "0" {
        format!("0.{minor}")
    } else {
        major
    };
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = matches!(
        os.as_str(),
        "linux" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" | "illumos" | "solaris" | "hurd"
    );
    let soname = if elf {
        let soname = format!("libdsh_persist.so.{abi}");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
        soname
    } else {
        // macOS (install_name) and Windows (DLL name) are not built or
        // tested here; they keep the linker's default.
        String::new()
    };
    println!("cargo:rustc-env=DSH_PERSIST_SONAME={soname}");
}
