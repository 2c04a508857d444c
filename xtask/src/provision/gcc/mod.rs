//! The pinned host toolchain of Linux builds (`toolchains/linux-gcc.toml`): Debian's GCC
//! and binutils unpacked from their checked packages into one tree, made to run from there,
//! and a glibc 2.28 sysroot made beside them from zig's glibc tree.
//!
//! Runs the toolchain's own programs, zig and patchelf on the real machine: this is
//! provisioning, called from the pipeline, which has no process seam for it (as the
//! pinned wheels' `--version`).

pub mod pins;
mod sysroot;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::process::{Command, Processes};
use crate::provision::fetch;
use crate::report::Log;
pub use pins::{program, Pinned, FILE, TRIPLE};

/// Unpacks and prepares the pinned toolchain under [`Pinned::tree`] (once; checked against
/// its record on every use) and checks that its g++ is the pinned version.
/// `patchelf` gives the programs their RUNPATH.
pub fn provision(cache: &Path, pinned: &Pinned, patchelf: &Path, log: &Log) -> Result<PathBuf> {
    if !crate::detect::toolchain::pinned_wheels_run_here() {
        bail!("the pinned host toolchain ({FILE}) runs on Linux x86-64 only: name a compiler with --host-cc");
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
            "the pinned g++ at {} answers `{got}` to -dumpfullversion, not {} as {FILE} says: remove {} and run again",
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
    log.line(format_args!(
        "preparing the pinned host toolchain: GCC {} from {} Debian packages, a glibc {} sysroot ({FILE})",
        pinned.pins.gcc.version,
        pinned.pins.debs.len(),
        pinned.pins.gcc.glibc
    ));
    for deb in &pinned.pins.debs {
        let file = fetch_first(cache, &pinned.urls(deb), &deb.sha256, log)
            .with_context(|| format!("cannot fetch {} {} ({FILE})", deb.package, deb.version))?;
        fetch::unpack_deb(&file, tmp)
            .with_context(|| format!("cannot unpack {} {}", deb.package, deb.version))?;
    }
    relocate(tmp, &pinned.major(), patchelf)?;
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
/// get a RUNPATH to the libraries unpacked beside them (libisl, libmpfr, libbfd, ...),
/// as DT_RPATH so it also serves those libraries' own needs; and GCC finds `as` and `ld`
/// in its tool dir (`usr/x86_64-linux-gnu/bin`), never on PATH.
fn relocate(root: &Path, major: &str, patchelf: &Path) -> Result<()> {
    let libexec = root.join(format!("usr/lib/gcc/{TRIPLE}/{major}"));
    let mut programs: Vec<(PathBuf, &str)> = ["cc1", "cc1plus", "lto1", "collect2", "lto-wrapper"]
        .iter()
        .map(|p| {
            (
                libexec.join(p),
                "$ORIGIN/../../../x86_64-linux-gnu:$ORIGIN/../../../../../lib/x86_64-linux-gnu",
            )
        })
        .collect();
    for p in [
        "as", "ld.bfd", "ar", "ranlib", "nm", "objcopy", "objdump", "strip",
    ] {
        programs.push((
            program(root, p),
            "$ORIGIN/../lib/x86_64-linux-gnu:$ORIGIN/../../lib/x86_64-linux-gnu",
        ));
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
    let tooldir = root.join(format!("usr/{TRIPLE}/bin"));
    fs_err::create_dir_all(&tooldir)?;
    for (name, target) in [("as", "as"), ("ld", "ld.bfd")] {
        symlink(&format!("../../bin/{TRIPLE}-{target}"), &tooldir.join(name))?;
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
