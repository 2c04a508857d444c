//! Installs a pinned CUDA wheel set as one toolkit root, laid out like a system
//! install, under `<cache>/cuda/<nvcc version>/`:
//!
//! ```text
//! bin/        nvcc, ptxas, nvlink, fatbinary, cudafe++, cuobjdump, nvcc.profile
//! nvvm/       bin/cicc, libdevice/
//! include/    cuda.h, cuda_runtime.h, crt/, cccl/ (+ cublas*.h)
//! lib/        libcudart.so.13 + libcudart.so, libnvvm.so.4 + libnvvm.so (+ libcublas*),
//!             cmake/ (CCCL), stubs/libcuda.so (link-time only, SONAME libcuda.so.1)
//! lib64 -> lib
//! targets/x86_64-linux/include -> ../../include, targets/x86_64-linux/lib -> ../../lib
//! llama-forge-cuda.json   what was installed (the pins)
//! .llama-forge-tree.json  every file and link of the root (crate::unpacked), written last
//! ```
//!
//! A toolkit for a Linux aarch64 (sbsa) target, cross-built on x86-64
//! ([`install_aarch64`], `<cache>/cuda/<nvcc version>-aarch64/`), is that layout made of
//! the x86-64 programs and headers, with the aarch64 runtime and cuBLAS (their headers
//! are the x86-64 ones) in a target dir of their own, where nvcc's `-target-dir
//! sbsa-linux` and CMake's FindCUDAToolkit (cross-compiling for aarch64) look:
//!
//! ```text
//! bin/ nvvm/ include/ lib/ lib64 targets/x86_64-linux/   as above, x86-64 (lib/: libnvvm, CCCL's cmake/)
//! targets/sbsa-linux/include -> ../../include
//! targets/sbsa-linux/lib/  libcudart.so.13 + libcudart.so, libcudadevrt.a, libcudart_static.a
//!                          (+ libcublas*), stubs/libcuda.so (aarch64, SONAME libcuda.so.1)
//! ```
//!
//! On an aarch64 host ([`install`] there, from [`CudaSpec::for_aarch64_host`]) the root
//! `<cache>/cuda/<nvcc version>/` is the first layout made of the aarch64 wheels, with
//! `targets/sbsa-linux/{include,lib}` (nvcc's own target dir there) in place of
//! `targets/x86_64-linux`.
//!
//! The tree is assembled in `<cache>/cuda/.install-*` and renamed into place whole:
//! a directory there is complete, and its marker says which wheels it holds. Before a
//! root is used again its files are checked against their record: a root changed
//! since it was installed is assembled again from the sha256-checked wheels.

use crate::report::Log;
use fs_err as fs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{stub, CudaSpec, CudaWheel};
use crate::cuda::runtime::toolkit_target;
use crate::platform::Arch;
use crate::process::Processes;
use crate::provision::{fetch, unpack};
use crate::versions::Version;

/// The record inside a finished root.
const MARKER: &str = "llama-forge-cuda.json";
/// Every wheel unpacks under this directory.
const WHEEL_ROOT: &str = "nvidia/cu13";
/// The programs and headers every Linux toolkit must have after merging (x86-64
/// programs, for x86-64 and aarch64 targets alike); each layout adds its runtime.
const MUST_EXIST_TOOLS: [&str; 13] = [
    "bin/nvcc",
    "bin/nvcc.profile",
    "bin/ptxas",
    "bin/nvlink",
    "bin/fatbinary",
    "bin/cudafe++",
    "bin/cuobjdump",
    "nvvm/bin/cicc",
    "nvvm/libdevice/libdevice.10.bc",
    "include/cuda.h",
    "include/cuda_runtime.h",
    "include/crt/host_config.h",
    "include/cccl/cuda/std/version",
];
/// The files a toolkit of `layout` must have after merging: [`MUST_EXIST_TOOLS`] and the
/// runtime, in `lib` (native) or the target dir (`targets/sbsa-linux/lib`, cross).
fn must_exist(layout: Layout) -> Vec<String> {
    let runtime = target_lib(layout).join("libcudart.so.13");
    MUST_EXIST_TOOLS
        .iter()
        .map(|f| f.to_string())
        .chain([runtime.display().to_string()])
        .collect()
}

/// What a Linux toolkit root is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Programs and libraries of one arch, for builds on a host of that arch (x86-64, or
    /// aarch64: a DGX Spark): `<cache>/cuda/<nvcc version>`, with `targets/<its dir>`.
    Native(Arch),
    /// x86-64 programs, aarch64 target libraries in `targets/sbsa-linux/lib`, for an
    /// aarch64 target cross-built on x86-64: `<cache>/cuda/<nvcc version>-aarch64`.
    CrossAarch64,
}

impl Layout {
    /// The arch of the code the toolkit's libraries are for.
    fn target(self) -> Arch {
        match self {
            Layout::Native(arch) => arch,
            Layout::CrossAarch64 => Arch::Aarch64,
        }
    }
}
/// Files a Windows toolkit must have after merging: the layout nvcc.exe's
/// nvcc.profile names (`bin`, `nvvm/bin`, `include`, `include/cccl`, `lib/x64`), and
/// the runtime DLL, which the Windows wheels put in `bin/x86_64`.
const MUST_EXIST_WINDOWS: &[&str] = &[
    "bin/nvcc.exe",
    "bin/nvcc.profile",
    "bin/ptxas.exe",
    "bin/nvlink.exe",
    "bin/fatbinary.exe",
    "bin/cudafe++.exe",
    "bin/cuobjdump.exe",
    "nvvm/bin/cicc.exe",
    "nvvm/libdevice/libdevice.10.bc",
    "include/cuda.h",
    "include/cuda_runtime.h",
    "include/crt/host_config.h",
    "include/cccl/cuda/std/version",
    "lib/x64/cudart.lib",
    "lib/x64/cuda.lib",
    "bin/x86_64/cudart64_13.dll",
];
/// A half-built tree older than this is from a killed run and is swept.
const STALE: Duration = Duration::from_secs(6 * 3600);

/// A toolkit root ready for CMake: `-DCMAKE_CUDA_COMPILER=<nvcc> -DCUDAToolkit_ROOT=<root>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HermeticCuda {
    pub root: PathBuf,
    pub nvcc: PathBuf,
    pub cuobjdump: PathBuf,
    /// What `nvcc --version` reports (`13.0.88`).
    pub version: Version,
    pub release: Version,
    /// `<target_lib>/stubs/libcuda.so`: for linking only. Never ship it: the driver provides libcuda.so.1.
    pub driver_stub: PathBuf,
    /// Where the target's CUDA libraries are (libcudart, libcublas*): `<root>/lib` for
    /// x86-64, `<root>/targets/sbsa-linux/lib` in a toolkit for an aarch64 target.
    pub target_lib: PathBuf,
    /// The wheels the root was assembled from, for the manifest (a superset of those
    /// asked for when an earlier install added more, such as nvidia-cublas).
    pub wheels: Vec<CudaWheel>,
}

/// Installs `spec` under `<cache>/cuda/<nvcc version>/` (wheels fetched into the
/// download cache), or reuses the root there when it holds every wheel asked for
/// and its files match their record (else it is assembled again, with a warning).
/// A root that lacks some (installed earlier without nvidia-cublas) is rebuilt with
/// them added and swapped in: do not run that while another build uses the root.
/// `host_cc` is a C compiler, used to read `cuda.h` and build the libcuda stub.
/// It and nvcc run on this machine (this is called from pipeline.rs).
pub fn install(cache: &Path, spec: &CudaSpec, host_cc: &Path, log: &Log) -> Result<HermeticCuda> {
    install_with(cache, spec, host_cc, log, &crate::process::System)
}

/// [`install`], with the host C compiler and `nvcc --version` run through `procs`.
pub fn install_with(
    cache: &Path,
    spec: &CudaSpec,
    host_cc: &Path,
    log: &Log,
    procs: &dyn Processes,
) -> Result<HermeticCuda> {
    if crate::platform::Os::host() != crate::platform::Os::Linux {
        bail!("CUDA {} from the package index is pinned for Linux only (x86-64 and aarch64 hosts): install the CUDA toolkit on this system", spec.release);
    }
    install_native(cache, spec, host_cc, log, procs, Arch::host())
}

/// [`install_with`] on a Linux host of arch `host`: the toolkit made of `host`'s wheels
/// ([`CudaSpec::for_host`]), whose programs run there. (Tests assemble the aarch64 one
/// on x86-64 and run its programs under qemu-user.)
pub(crate) fn install_native(
    cache: &Path,
    spec: &CudaSpec,
    host_cc: &Path,
    log: &Log,
    procs: &dyn Processes,
    host: Arch,
) -> Result<HermeticCuda> {
    // The other arch's pins are not part of this toolkit (nor of its record).
    let spec = &spec.for_host(host)?;
    install_linux(cache, spec, host_cc, &[], log, procs, Layout::Native(host))
}

/// Installs the toolkit for a Linux aarch64 (sbsa) target of `spec`, which must be
/// [`CudaSpec::for_aarch64`]'s (optionally [`CudaSpec::without`] nvidia-cublas), under
/// `<cache>/cuda/<nvcc version>-aarch64/`: the x86-64 nvcc and its programs, and the
/// aarch64 runtime and cuBLAS in `targets/sbsa-linux/lib` (the module docs show the
/// layout), or reuses the root there as [`install`] does. `target_cc` is a C compiler
/// for aarch64 Linux (such as Debian's `aarch64-linux-gnu-gcc`): it reads `cuda.h` and
/// builds the aarch64 libcuda link stub. nvcc runs on this machine (`nvcc --version`).
pub fn install_aarch64(
    cache: &Path,
    spec: &CudaSpec,
    target_cc: &Path,
    log: &Log,
) -> Result<HermeticCuda> {
    install_aarch64_with(cache, spec, target_cc, log, &crate::process::System)
}

/// [`install_aarch64`], with `cc_flags` given to the target's C compiler (`--sysroot=...`).
pub fn install_aarch64_flags(
    cache: &Path,
    spec: &CudaSpec,
    target_cc: &Path,
    cc_flags: &[String],
    log: &Log,
) -> Result<HermeticCuda> {
    install_aarch64_checked(
        cache,
        spec,
        target_cc,
        cc_flags,
        log,
        &crate::process::System,
    )
}

/// [`install_aarch64`], with the target's C compiler and `nvcc --version` run through `procs`.
pub fn install_aarch64_with(
    cache: &Path,
    spec: &CudaSpec,
    target_cc: &Path,
    log: &Log,
    procs: &dyn Processes,
) -> Result<HermeticCuda> {
    install_aarch64_checked(cache, spec, target_cc, &[], log, procs)
}

fn install_aarch64_checked(
    cache: &Path,
    spec: &CudaSpec,
    target_cc: &Path,
    cc_flags: &[String],
    log: &Log,
    procs: &dyn Processes,
) -> Result<HermeticCuda> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!("CUDA {} for an aarch64 target from the package index is cross-built on Linux x86-64 only: install the CUDA toolkit on this system", spec.release);
    }
    for required in super::AARCH64_REQUIRED {
        if !spec
            .wheels
            .iter()
            .any(|w| w.name == *required && w.is_aarch64())
        {
            bail!(
                "CUDA {}'s pins hold no aarch64 {required} wheel, which a cross build for aarch64 needs: add its `[[aarch64_wheel]]` to toolchains/cuda-{}.toml (docs/cuda.md says how a release gets pinned)",
                spec.release,
                spec.release
            );
        }
    }
    install_linux(
        cache,
        spec,
        target_cc,
        cc_flags,
        log,
        procs,
        Layout::CrossAarch64,
    )
}

/// Where a Linux toolkit of `layout` is installed: `<cache>/cuda/<nvcc version>`
/// (native, x86-64 or aarch64 host), `<cache>/cuda/<nvcc version>-aarch64` (cross).
pub(crate) fn root_dir(cache: &Path, nvcc_version: &Version, layout: Layout) -> PathBuf {
    let name = match layout {
        Layout::Native(_) => nvcc_version.to_string(),
        Layout::CrossAarch64 => format!("{nvcc_version}-aarch64"),
    };
    cache.join("cuda").join(name)
}

/// The target's library dir of a Linux toolkit root, relative to the root.
fn target_lib(layout: Layout) -> PathBuf {
    match layout {
        Layout::Native(_) => PathBuf::from("lib"),
        Layout::CrossAarch64 => Path::new("targets")
            .join(toolkit_target(Arch::Aarch64))
            .join("lib"),
    }
}

/// Where a file of wheel `w`'s `nvidia/cu13/` tree (at `rel` there) goes in a Linux
/// toolkit root of `layout`: in a cross one, an aarch64 wheel's `lib/` into the target's
/// lib dir; else where it is in the wheel.
fn place(w: &CudaWheel, rel: &Path, layout: Layout) -> PathBuf {
    match rel.strip_prefix("lib") {
        Ok(rest) if layout == Layout::CrossAarch64 && w.is_aarch64() => {
            target_lib(layout).join(rest)
        }
        _ => rel.to_path_buf(),
    }
}

/// [`install_native`] and [`install_aarch64_with`]: `cc` builds the libcuda stub for
/// the layout's target.
fn install_linux(
    cache: &Path,
    spec: &CudaSpec,
    cc: &Path,
    cc_flags: &[String],
    log: &Log,
    procs: &dyn Processes,
    layout: Layout,
) -> Result<HermeticCuda> {
    let cuda_dir = cache.join("cuda");
    let dest = root_dir(cache, &spec.nvcc_version, layout);
    crate::provision::cache::mark_used(cache, &dest);
    let mut want = spec.clone();
    if let Some(have) = installed(&dest, Some(log)) {
        if covers(&have, spec) {
            return finish(&dest, have, procs, layout);
        }
        // Keep what the root already had beyond this request (a later request
        // without nvidia-cublas must not lose it).
        let extra: Vec<CudaWheel> = have
            .wheels
            .into_iter()
            .filter(|w| !want.wheels.iter().any(|x| x.name == w.name))
            .collect();
        want.wheels.extend(extra);
    }
    fs::create_dir_all(&cuda_dir)
        .with_context(|| format!("cannot create {}", cuda_dir.display()))?;
    sweep_stale(&cuda_dir);
    let work = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&cuda_dir)
        .with_context(|| format!("cannot create a work dir in {}", cuda_dir.display()))?;
    let root = work.path().join("root");
    assemble(
        cache,
        &want,
        work.path(),
        &root,
        &must_exist(layout),
        &|w, rel| place(w, rel, layout),
        log,
    )?;
    match layout {
        Layout::Native(arch) => lay_out(&root, arch)?,
        Layout::CrossAarch64 => lay_out_aarch64(&root)?,
    }
    stub_for(&root, layout, cc, cc_flags, work.path(), procs)?;
    let version = nvcc_version(&root.join("bin/nvcc"), procs)?;
    if version != want.nvcc_version {
        bail!(
            "the nvcc assembled from {} reports version {version}, but the pins say nvcc_version = {}: fix toolchains/cuda-{}.toml",
            want.wheels.iter().find(|w| w.name == "nvidia-cuda-nvcc").map_or("?", |w| w.url.as_str()),
            want.nvcc_version,
            want.release
        );
    }
    let marker = serde_json::to_string_pretty(&want).expect("spec serialises");
    fs::write(root.join(MARKER), marker)
        .with_context(|| format!("cannot write {}", root.join(MARKER).display()))?;
    crate::provision::tree::write(&root)?;
    publish(&root, &dest, work.path(), &want)?;
    finish(
        &dest,
        read_marker(&dest).with_context(|| {
            format!(
                "{} vanished right after install",
                dest.join(MARKER).display()
            )
        })?,
        procs,
        layout,
    )
}

/// Builds the `libcuda.so` link stub into `<target lib>/stubs` of `root` with [`stub::build`]
/// (from `cuda.h`, with the C compiler `cc` for the layout's target), and checks that it
/// is a library of that arch.
fn stub_for(
    root: &Path,
    layout: Layout,
    cc: &Path,
    cc_flags: &[String],
    work: &Path,
    procs: &dyn Processes,
) -> Result<()> {
    // stub::build writes <its root>/lib/stubs/libcuda.so, from <its root>/include/cuda.h:
    // a root of its own in the work dir, seeing this root's headers.
    let staging = work.join("stub");
    fs::create_dir_all(&staging)?;
    symlink(
        &root.join("include").display().to_string(),
        &staging.join("include"),
    )?;
    stub::build_with_flags(&staging, cc, cc_flags, work, procs)?;
    let built = staging.join("lib/stubs/libcuda.so");
    let data = fs::read(&built)?;
    let arch = object::File::parse(&*data).map(|f| object::Object::architecture(&f));
    let (want, example) = match layout.target() {
        Arch::X86_64 => (object::Architecture::X86_64, "gcc"),
        Arch::Aarch64 => (object::Architecture::Aarch64, "aarch64-linux-gnu-gcc"),
    };
    if arch.ok() != Some(want) {
        bail!(
            "the libcuda stub built by {} is not an {} library ({}): give a C compiler for {} Linux, such as {example}",
            cc.display(),
            layout.target(),
            match arch {
                Ok(a) => format!("{a:?}"),
                Err(e) => e.to_string(),
            },
            layout.target()
        );
    }
    let stubs = root.join(target_lib(layout)).join("stubs");
    fs::create_dir_all(&stubs)?;
    fs::rename(&built, stubs.join("libcuda.so"))?;
    Ok(())
}

/// The pins of the finished root at `root`, when its files are those installed;
/// None when there is no complete root, or (with a warning to `say`, when given)
/// when it changed since it was installed.
fn installed(root: &Path, say: Option<&Log>) -> Option<CudaSpec> {
    let have = read_marker(root)?;
    match crate::provision::tree::check(root) {
        Ok(()) => Some(have),
        Err(why) => {
            if let Some(log) = say {
                log.warning(format_args!(
                    "{why:#}: assembling CUDA {} again from the checked wheels",
                    have.release
                ));
            }
            None
        }
    }
}

/// The pins a finished root records; None when there is no complete root.
fn read_marker(root: &Path) -> Option<CudaSpec> {
    let text = fs::read_to_string(root.join(MARKER)).ok()?;
    let mut v: serde_json::Value = serde_json::from_str(&text).ok()?;
    // Roots made before the driver floors moved to the support table record one too.
    v.as_object_mut()?.remove("min_driver_linux");
    serde_json::from_value(v).ok()
}

/// Whether an installed set holds every wheel asked for, with the same hashes.
fn covers(have: &CudaSpec, want: &CudaSpec) -> bool {
    have.nvcc_version == want.nvcc_version
        && want.wheels.iter().all(|w| {
            have.wheels
                .iter()
                .any(|h| h.name == w.name && h.sha256 == w.sha256)
        })
}

fn finish(
    root: &Path,
    record: CudaSpec,
    procs: &dyn Processes,
    layout: Layout,
) -> Result<HermeticCuda> {
    let nvcc = root.join("bin/nvcc");
    let target_lib = root.join(target_lib(layout));
    let version = nvcc_version(&nvcc, procs).with_context(|| {
        format!(
            "the CUDA root {} is broken: delete it and run again to reinstall",
            root.display()
        )
    })?;
    Ok(HermeticCuda {
        root: root.to_path_buf(),
        cuobjdump: root.join("bin/cuobjdump"),
        driver_stub: target_lib.join("stubs/libcuda.so"),
        target_lib,
        nvcc,
        version,
        release: record.release,
        wheels: record.wheels,
    })
}

/// Reads `V13.0.88` from `nvcc --version`.
fn nvcc_version(nvcc: &Path, procs: &dyn Processes) -> Result<Version> {
    use crate::process::Command;
    let out = procs.output(&Command::new(nvcc).arg("--version").merge_stderr());
    let text = match out {
        Ok(o) if o.success() => o.stdout,
        _ => bail!(
            "{} does not run (`{} --version` failed)",
            nvcc.display(),
            nvcc.display()
        ),
    };
    text.split(", V")
        .nth(1)
        .and_then(Version::find_in)
        .with_context(|| {
            format!(
                "no `, V<version>` in the output of `{} --version`: {text}",
                nvcc.display()
            )
        })
}

/// The Windows x86-64 toolkit of `spec` (see [`CudaSpec::for_windows`]), assembled
/// from its `win_amd64` wheels under `<cache>/cuda/windows-<nvcc version>/`, or the
/// one there when it holds every wheel asked for and its files match their record.
/// Returns its root: `bin/nvcc.exe`, with the layout its nvcc.profile expects, and an
/// import library in `lib/x64` for each CUDA DLL the wheels ship without one (cuBLAS:
/// [`super::implib`]). Nothing in it runs here (they are Windows programs; the tests run nvcc.exe under wine).
pub fn install_windows(cache: &Path, spec: &CudaSpec, log: &Log) -> Result<PathBuf> {
    let cuda_dir = cache.join("cuda");
    let dest = cuda_dir.join(format!("windows-{}", spec.nvcc_version));
    crate::provision::cache::mark_used(cache, &dest);
    if installed(&dest, Some(log)).is_some_and(|have| covers(&have, spec)) {
        return Ok(dest);
    }
    fs::create_dir_all(&cuda_dir)
        .with_context(|| format!("cannot create {}", cuda_dir.display()))?;
    sweep_stale(&cuda_dir);
    let work = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&cuda_dir)
        .with_context(|| format!("cannot create a work dir in {}", cuda_dir.display()))?;
    let root = work.path().join("root");
    assemble(
        cache,
        spec,
        work.path(),
        &root,
        MUST_EXIST_WINDOWS,
        &|_, rel| rel.to_path_buf(),
        log,
    )?;
    for lib in super::implib::complete(&root)? {
        log.line(format_args!(
            "made {} from its DLL's exports (the wheels ship the DLL only)",
            lib.display()
        ));
    }
    let marker = serde_json::to_string_pretty(spec).expect("spec serialises");
    fs::write(root.join(MARKER), marker)
        .with_context(|| format!("cannot write {}", root.join(MARKER).display()))?;
    crate::provision::tree::write(&root)?;
    publish(&root, &dest, work.path(), spec)?;
    Ok(dest)
}

/// Fetches every wheel and merges their `nvidia/cu13/` trees into `root` (each file at
/// `place(wheel, its path in the tree)`), which must then hold each of `must_exist`.
fn assemble(
    cache: &Path,
    spec: &CudaSpec,
    work: &Path,
    root: &Path,
    must_exist: &[impl AsRef<str>],
    place: &dyn Fn(&CudaWheel, &Path) -> PathBuf,
    log: &Log,
) -> Result<()> {
    let mut owner: BTreeMap<PathBuf, &str> = BTreeMap::new();
    for w in &spec.wheels {
        let wheel = fetch::fetch(cache, &w.url, &w.sha256, log)?;
        let unpacked = work.join(&w.name);
        unpack::unpack_zip(&wheel, &unpacked)
            .with_context(|| format!("cannot unpack {}", wheel.display()))?;
        let tree = unpacked.join(WHEEL_ROOT);
        if !tree.is_dir() {
            bail!(
                "wheel {} {} ({}) has no {WHEEL_ROOT}/ tree: this layout is what CUDA 13 wheels use; pin a CUDA 13 wheel of {}",
                w.name,
                w.version,
                wheel.display(),
                w.name
            );
        }
        for entry in walkdir::WalkDir::new(&tree).sort_by_file_name() {
            let entry = entry?;
            if entry.file_type().is_dir() {
                continue;
            }
            let rel = place(
                w,
                entry
                    .path()
                    .strip_prefix(&tree)
                    .expect("walk stays under its root"),
            );
            let to = root.join(&rel);
            if let Some(first) = owner.insert(rel.clone(), &w.name) {
                bail!(
                    "{} is in both wheel {first} and wheel {}: the pins do not belong together",
                    rel.display(),
                    w.name
                );
            }
            fs::create_dir_all(to.parent().expect("has parent"))?;
            fs::rename(entry.path(), &to).with_context(|| {
                format!("cannot move {} to {}", entry.path().display(), to.display())
            })?;
        }
        fs::remove_dir_all(&unpacked)
            .with_context(|| format!("cannot remove {}", unpacked.display()))?;
    }
    let names: Vec<&str> = spec.wheels.iter().map(|w| w.name.as_str()).collect();
    if let Some(missing) = must_exist
        .iter()
        .map(|f| f.as_ref())
        .find(|f| !root.join(f).is_file())
    {
        bail!(
            "{missing} is missing from the toolkit assembled from {}: the pins in toolchains/cuda-{}.toml do not make a complete toolkit",
            names.join(", "),
            spec.release
        );
    }
    Ok(())
}

/// The standard layout that nvcc.profile (`targets/<dir>/{include,lib}`: `x86_64-linux`,
/// or `sbsa-linux` for the aarch64 programs) and CMake's FindCUDAToolkit (`lib64`,
/// unversioned `lib*.so`) expect, and runnable tools; `arch` is the programs'.
fn lay_out(root: &Path, arch: Arch) -> Result<()> {
    make_runnable(root)?;
    let target = root.join("targets").join(toolkit_target(arch));
    fs::create_dir_all(&target)?;
    symlink("../../include", &target.join("include"))?;
    symlink("../../lib", &target.join("lib"))?;
    symlink("lib", &root.join("lib64"))?;
    link_unversioned(&root.join("lib"))
}

/// The layout of a toolkit for an aarch64 target: the x86-64 one for the programs
/// (nvcc's default target dir, `lib64`), and the target dir `targets/sbsa-linux`, whose
/// `lib/` the aarch64 wheels filled, with their headers (the x86-64 ones) and
/// unversioned `lib*.so` links. nvcc picks `targets/sbsa-linux` itself when its host
/// compiler is an aarch64 one; `targets/x86_64-linux/include` must stay: CMake's
/// FindCUDAToolkit, run before `enable_language(CUDA)` (as ggml does), asks nvcc without
/// the host compiler and puts that dir in `CUDA::cudart`'s include dirs (measured with
/// CMake 4.4: without it, configure fails on a non-existent include path).
fn lay_out_aarch64(root: &Path) -> Result<()> {
    lay_out(root, Arch::X86_64)?;
    let target = root.join("targets").join(toolkit_target(Arch::Aarch64));
    symlink("../../include", &target.join("include"))?;
    link_unversioned(&root.join(target_lib(Layout::CrossAarch64)))
}

/// Programs in `bin/` and `nvvm/bin/` executable (the wheels' zip entries may not say so).
fn make_runnable(root: &Path) -> Result<()> {
    for dir in ["bin", "nvvm/bin"] {
        for e in fs::read_dir(root.join(dir))
            .with_context(|| format!("cannot list {}", root.join(dir).display()))?
        {
            let e = e?;
            if e.file_type()?.is_file() && e.file_name() != "nvcc.profile" {
                unpack::set_mode(&e.path(), 0o755)?;
            }
        }
    }
    Ok(())
}

/// `libfoo.so -> libfoo.so.13` in `lib`: what the linker looks for with -lfoo.
fn link_unversioned(lib: &Path) -> Result<()> {
    for e in fs::read_dir(lib).with_context(|| format!("cannot list {}", lib.display()))? {
        let name = e?.file_name().to_string_lossy().into_owned();
        if let Some((base, ver)) = name.split_once(".so.") {
            let link = lib.join(format!("{base}.so"));
            if !ver.is_empty() && ver.bytes().all(|b| b.is_ascii_digit()) && !link.exists() {
                symlink(&name, &link)?;
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("cannot link {} -> {target}", link.display()))
}
/// The toolkit layout is made of links; the pinned wheels are Linux ones anyway.
#[cfg(not(unix))]
fn symlink(target: &str, link: &Path) -> Result<()> {
    anyhow::bail!(
        "cannot link {} -> {target}: CUDA is assembled from the package index on Linux only",
        link.display()
    )
}

/// Renames the finished `root` to `dest`. A root already there that lacks wheels
/// asked for, or was changed, is moved aside first (into `work`, deleted with it).
/// Losing a race to another install of a root that has what is asked for is fine.
fn publish(root: &Path, dest: &Path, work: &Path, want: &CudaSpec) -> Result<()> {
    if installed(dest, None).is_some_and(|have| covers(&have, want)) {
        return Ok(()); // another install finished first
    }
    if dest.exists() {
        fs::rename(dest, work.join("replaced"))
            .with_context(|| format!("cannot move the incomplete {} aside", dest.display()))?;
    }
    crate::durable::sync_tree(root)?;
    match fs::rename(root, dest) {
        // The new name on the disk too, as fetch::ensure_tree does for a tool tree.
        Ok(()) => dest.parent().map_or(Ok(()), crate::durable::sync_dir),
        Err(_) if installed(dest, None).is_some_and(|have| covers(&have, want)) => Ok(()),
        Err(e) => Err(e)
            .with_context(|| format!("cannot move the finished toolkit into {}", dest.display())),
    }
}

/// Removes work dirs of installs that were killed long ago.
fn sweep_stale(cuda_dir: &Path) {
    let Ok(entries) = fs::read_dir(cuda_dir) else {
        return;
    };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok());
        if e.file_name().to_string_lossy().starts_with(".install-")
            && old.is_some_and(|age| age > STALE)
        {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;
