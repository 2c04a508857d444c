//! The pinned toolchains of Linux builds (`toolchains/linux-gcc.toml` for x86-64 code,
//! `toolchains/linux-gcc-aarch64.toml` for aarch64 code, a cross compiler, and
//! `toolchains/linux-gcc-aarch64-native.toml` for aarch64 code on aarch64 hosts): Debian's
//! GCC and binutils unpacked from their checked packages into one tree, made to run from
//! there, and a glibc 2.28 sysroot for the target made beside them from zig's glibc tree.
//!
//! Runs the toolchain's own programs, zig and patchelf on the real machine: this is
//! provisioning, called from the pipeline, which has no process seam for it (as the
//! pinned wheels' `--version`).

pub mod pins;
mod sysroot;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::process::{Command, Processes};
use crate::provision::{fetch, unpack};
use crate::report::Log;
pub use pins::{
    file_for, program, Pinned, TargetPins, FILE, FILES, FILE_AARCH64, FILE_AARCH64_NATIVE, TRIPLE,
};

/// Unpacks and prepares the pinned toolchain under [`Pinned::tree`] (once; checked against
/// its record on every use) and checks that its g++ is the pinned version.
/// `patchelf` gives the programs their RUNPATH.
pub fn provision(cache: &Path, pinned: &Pinned, patchelf: &Path, log: &Log) -> Result<PathBuf> {
    let file = pinned.file;
    // Its programs are Debian's builds for one machine: `[target] host`.
    if crate::platform::Arch::linux_host().is_none_or(|h| pinned.host_arch() != Some(h)) {
        bail!(
            "the pinned host toolchain {file} runs on {} Linux machines, and this is {} {}: plan again here (its own toolchain is the default), or name a compiler with --host-cc",
            pinned.pins.target.host,
            crate::platform::Os::host(),
            crate::platform::Arch::host()
        );
    }
    let tree = pinned.tree(cache);
    let id = tree
        .file_name()
        .expect("tree has a name")
        .to_string_lossy()
        .into_owned();
    fetch::ensure_tree(
        &cache.join("tools"),
        &id,
        crate::provision::tree::check,
        "another run is preparing the pinned host toolchain",
        "preparing the pinned toolchain again from its checked packages",
        |tmp| prepare(cache, pinned, patchelf, tmp, log),
        log,
    )?;
    let compiler = pinned.compiler(cache);
    let out = crate::process::System
        .output(
            &Command::new(&compiler.cxx)
                .arg("-dumpfullversion")
                .merge_stderr(),
        )
        .with_context(|| {
            format!(
                "the pinned g++ at {} does not start",
                compiler.cxx.display()
            )
        })?;
    let got = out.stdout.trim();
    if !out.success() || got != pinned.pins.gcc.version.to_string() {
        bail!(
            "the pinned g++ at {} answers `{got}` to -dumpfullversion, not {} as {file} says: remove {} and run again",
            compiler.cxx.display(),
            pinned.pins.gcc.version,
            tree.display()
        );
    }
    Ok(tree)
}

/// Fills `tmp` with the toolchain: the packages unpacked, their programs made to run from
/// there, the sysroot.
fn prepare(cache: &Path, pinned: &Pinned, patchelf: &Path, tmp: &Path, log: &Log) -> Result<()> {
    let file = pinned.file;
    let target = &pinned.pins.target;
    let cross = if target.cross() {
        format!(" for {} code", target.arch)
    } else {
        String::new()
    };
    log.line(format_args!(
        "preparing the pinned host toolchain{cross}: GCC {} from {} Debian packages, a glibc {} sysroot ({file})",
        pinned.pins.gcc.version,
        pinned.pins.debs.len(),
        pinned.pins.gcc.glibc
    ));
    for deb in &pinned.pins.debs {
        let got = fetch_first(cache, &pinned.urls(deb), &deb.sha256, log)
            .with_context(|| format!("cannot fetch {} {} ({file})", deb.package, deb.version))?;
        unpack::unpack_deb(&got, tmp)
            .with_context(|| format!("cannot unpack {} {}", deb.package, deb.version))?;
    }
    relocate(tmp, pinned, patchelf)?;
    sysroot::make(cache, tmp, pinned, log)
}

/// The first of `urls` that gives the file with `sha256` (each tried in order).
fn fetch_first(
    cache: &Path,
    urls: &[String],
    sha256: &crate::digest::Sha256Hex,
    log: &Log,
) -> Result<PathBuf> {
    let mut failed = Vec::new();
    for url in urls {
        match fetch::fetch(cache, url, sha256, log) {
            Ok(p) => return Ok(p),
            Err(e) => failed.push(format!("{url}: {e:#}")),
        }
    }
    bail!("no source gave it:\n  {}", failed.join("\n  "))
}

/// Makes the unpacked programs run from the tree: the compiler's programs and binutils
/// get a RUNPATH to the libraries unpacked beside them (libisl, libmpfr, libbfd, ...; in
/// the multiarch dirs of the machine they run on, `[target] host`), as DT_RPATH so it also
/// serves those libraries' own needs; and GCC finds `as` and `ld` in its tool dir
/// (`usr/<triple>/bin`, which cross binutils' package has), never on PATH.
fn relocate(root: &Path, pinned: &Pinned, patchelf: &Path) -> Result<()> {
    let host = &pinned.pins.target.host;
    let triple = &pinned.pins.target.triple;
    // usr/lib/gcc/<triple>/<major> and usr/lib/gcc-cross/<triple>/<major> alike.
    let libexec_rpath = format!("$ORIGIN/../../../{host}:$ORIGIN/../../../../../lib/{host}");
    let bin_rpath = format!("$ORIGIN/../lib/{host}:$ORIGIN/../../lib/{host}");
    let libexec = pinned.libexec(root);
    let mut programs: Vec<(PathBuf, &str)> = ["cc1", "cc1plus", "lto1", "collect2", "lto-wrapper"]
        .iter()
        .map(|p| (libexec.join(p), libexec_rpath.as_str()))
        .collect();
    for p in [
        "as", "ld.bfd", "ar", "ranlib", "nm", "objcopy", "objdump", "strip",
    ] {
        programs.push((pinned.program(root, p), bin_rpath.as_str()));
    }
    let mut steps = Vec::new();
    for (program, rpath) in programs {
        let meta = fs_err::symlink_metadata(&program)
            .with_context(|| format!("the pinned packages have no {}", program.display()))?;
        if !meta.is_file() {
            bail!(
                "{} is not a plain file in the unpacked packages",
                program.display()
            );
        }
        steps.push(vec![
            patchelf.display().to_string(),
            "--force-rpath".into(),
            "--set-rpath".into(),
            rpath.into(),
            program.display().to_string(),
        ]);
    }
    run(steps, root, &[])?;
    let tooldir = root.join(format!("usr/{triple}/bin"));
    fs_err::create_dir_all(&tooldir)?;
    for (name, target) in [("as", "as"), ("ld", "ld.bfd")] {
        let link = tooldir.join(name);
        match fs_err::symlink_metadata(&link) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                symlink(&format!("../../bin/{triple}-{target}"), &link)?
            }
            Err(e) => return Err(e.into()),
            // A cross binutils package has its tool dir: links to usr/bin's programs.
            Ok(m)
                if m.is_symlink()
                    && fs_err::read_link(&link)?
                        == Path::new(&format!("../../bin/{triple}-{name}")) => {}
            Ok(_) => bail!(
                "{} in the unpacked packages is not a link to ../../bin/{triple}-{name}",
                link.display()
            ),
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) -> Result<()> {
    Ok(fs_err::os::unix::fs::symlink(target, link)?)
}
#[cfg(not(unix))]
fn symlink(_: &str, link: &Path) -> Result<()> {
    bail!(
        "{}: the pinned toolchain is made on Linux only",
        link.display()
    )
}

/// Runs each of `steps` (argv) in `cwd` with PATH of the system dirs, the C locale and
/// `env`, stopping at the first that fails (its output in the error).
fn run(steps: Vec<Vec<String>>, cwd: &Path, env: &[(&str, String)]) -> Result<()> {
    let mut vars = std::collections::BTreeMap::from([
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("LC_ALL".to_string(), "C".to_string()),
    ]);
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    for argv in steps {
        let got = crate::process::System
            .output(&Command::step(&argv, &vars, Some(cwd)).merge_stderr())
            .with_context(|| format!("{} does not start", argv[0]))?;
        if !got.success() {
            bail!(
                "`{}` failed preparing the pinned toolchain: {}",
                argv.join(" "),
                got.stdout.trim()
            );
        }
    }
    Ok(())
}
