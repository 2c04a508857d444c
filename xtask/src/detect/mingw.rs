//! The mingw-w64 cross compilers of `--target x86_64-pc-windows-gnu`: on PATH
//! (`x86_64-w64-mingw32-g++-posix`) or `--host-cc`, with their sysroot and windres.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::env::Env;
use crate::platform::host::{Compiler, CompilerKind, Origin};
use crate::platform::mingw::{self, Mingw};
use crate::process::{Command, Processes};
use crate::versions::Version;

/// The machine a mingw-w64 compiler builds for (`-dumpmachine`).
const MACHINE: &str = "x86_64-w64-mingw32";

/// The cross compilers: `--host-cc` (a mingw-w64 g++) when given, else Debian's
/// POSIX-threads ones on PATH. `CC`/`CXX` are the Linux build's and are not looked at.
pub fn detect_mingw(env: &Env, host_cc: Option<&Path>, procs: &dyn Processes) -> Result<Compiler> {
    let missing = || {
        format!(
            "--target x86_64-pc-windows-gnu needs the mingw-w64 cross compilers ({} and {} on PATH): install Debian's {} package (`apt install {}`), or give --host-cc PATH of a mingw-w64 g++",
            mingw::CXX,
            mingw::CC,
            mingw::DEBIAN_PACKAGE,
            mingw::DEBIAN_PACKAGE
        )
    };
    let which = |name: &str| crate::detect::toolchain::which(name, &env.path);
    let (cxx, cc, origin) = match host_cc {
        Some(cxx) => {
            let cxx = match cxx.components().count() {
                1 if !cxx.is_file() => which(&cxx.to_string_lossy()),
                _ => Some(cxx.to_path_buf()).filter(|p| p.is_file()),
            }
            .with_context(|| format!("--host-cc {}: no such file", cxx.display()))?;
            let name = cxx
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let cc = crate::detect::compiler::c_compiler_name(&name)
                .map(|n| cxx.with_file_name(n))
                .filter(|p| p.is_file())
                .with_context(|| {
                    format!("--host-cc {}: no mingw-w64 gcc beside it", cxx.display())
                })?;
            let by = Origin::Explicit {
                by: "--host-cc".into(),
            };
            (cxx, cc, by)
        }
        None => match (which(mingw::CXX), which(mingw::CC)) {
            (Some(cxx), Some(cc)) => (cxx, cc, Origin::System),
            _ => bail!(missing()),
        },
    };
    let run = |args: &[&str]| -> Result<String> {
        let out = procs
            .output(&Command::new(&cxx).args(args))
            .with_context(|| format!("{} does not run", cxx.display()))?;
        if !out.success() {
            bail!("`{} {}` failed", cxx.display(), args.join(" "));
        }
        Ok(out.stdout)
    };
    let machine = run(&["-dumpmachine"])?;
    if machine.trim() != MACHINE {
        bail!(
            "{}{} builds for `{}`, not {MACHINE}: --target x86_64-pc-windows-gnu takes a mingw-w64 g++ ({})",
            cxx.display(),
            origin.named_by(),
            machine.trim(),
            mingw::CXX
        );
    }
    let version =
        gnuc_version(&run(&["-dM", "-E", "-x", "c++", "/dev/null"])?).with_context(|| {
            format!(
                "{}: no __GNUC__ version in its predefined macros",
                cxx.display()
            )
        })?;
    // The sysroot is where the compiler finds Windows' import libraries.
    let kernel32 = PathBuf::from(run(&["-print-file-name=libkernel32.a"])?.trim());
    let sysroot = kernel32
        .canonicalize()
        .ok()
        .and_then(|p| p.parent()?.parent().map(Path::to_path_buf))
        .with_context(|| {
            format!(
                "{} finds no libkernel32.a (`-print-file-name=libkernel32.a` printed {}): its mingw-w64 sysroot is missing; {}",
                cxx.display(),
                kernel32.display(),
                missing()
            )
        })?;
    let windres = which(mingw::WINDRES)
        .or_else(|| Some(cxx.with_file_name(mingw::WINDRES)).filter(|p| p.is_file()))
        .with_context(missing)?;
    let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
    Ok(Compiler {
        kind: CompilerKind::Gcc,
        cc: canon(cc),
        cxx: canon(cxx),
        version,
        origin,
        msvc: None,
        mingw: Some(Mingw { sysroot, windres }),
        pinned: None,
    })
}

/// `__GNUC__.__GNUC_MINOR__.__GNUC_PATCHLEVEL__` from `-dM -E` output: Debian's
/// mingw-w64 GCC says only `12-posix` in `--version`.
fn gnuc_version(macros: &str) -> Option<Version> {
    let get = |name: &str| {
        macros.lines().find_map(|l| {
            let rest = l.strip_prefix("#define ")?.strip_prefix(name)?;
            rest.strip_prefix(' ')?.trim().parse::<u64>().ok()
        })
    };
    format!(
        "{}.{}.{}",
        get("__GNUC__")?,
        get("__GNUC_MINOR__")?,
        get("__GNUC_PATCHLEVEL__")?
    )
    .parse()
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_comes_from_the_predefined_macros() {
        let m = "#define __GNUC_PATCHLEVEL__ 0\n#define __GNUC__ 12\n#define __GNUC_MINOR__ 2\n#define __GNUC_STDC_INLINE__ 1\n";
        assert_eq!(gnuc_version(m), "12.2.0".parse().ok());
        assert_eq!(gnuc_version("#define __GNUC__ 12\n"), None);
    }
}
