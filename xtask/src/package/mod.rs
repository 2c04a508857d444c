//! Turns a finished build into artifacts, each with its manifest, in a staging
//! dir; [`dist`] puts them into dist/ once verified.

pub mod archive;
pub mod ctypes;
pub mod cuda_gate;
pub mod dist;
pub mod entries;
pub mod install;
pub mod manylinux;
pub mod payload;
pub mod tar_layout;
pub mod wheel;
pub mod windows;
pub mod writer;
pub mod zip_layout;

use crate::report::Log;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::build::WorkDir;
use crate::manifest::{self, ArtifactInfo, Manifest, TargetInfo};
use crate::package::manylinux::Policies;
use crate::package::payload::Payload;
use crate::package::writer::ArtifactWriter;
use crate::plan::{Package, Plan};
use crate::recipe::{ArtifactKind, Profile};
use crate::tags::{PlatformTag, PythonTag, WheelFilename};

/// One artifact and its manifest, side by side (in the staging dir, then in dist/).
#[derive(Debug, Clone)]
pub struct Artifact {
    pub path: PathBuf,
    pub manifest_path: PathBuf,
    pub sha256: crate::digest::Sha256Hex,
    pub size: u64,
}

/// Writes the plan's artifacts and their manifests into `out` (a staging dir:
/// see [`dist::Staging`]). patchelf and cuobjdump run on this machine.
pub fn package(
    plan: &Plan,
    work: &WorkDir,
    out: &Path,
    recipe: &crate::recipe::Recipe,
    log: &Log,
) -> Result<Vec<Artifact>> {
    package_with(plan, work, out, recipe, log, &crate::process::System)
}

/// [`package`], with patchelf and cuobjdump run through `procs`.
pub fn package_with(
    plan: &Plan,
    work: &WorkDir,
    out: &Path,
    recipe: &crate::recipe::Recipe,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<Vec<Artifact>> {
    let cache_txt =
        fs_err::read_to_string(work.cmake_build().join("CMakeCache.txt")).unwrap_or_default();
    let unresolve = |s: &str| work.unresolve(s);
    let flags = manifest::flags_from_cache(&cache_txt, &unresolve);
    match &plan.package {
        Package::Wheel { .. } => wheels(plan, work, out, flags, recipe, log, procs),
        Package::Archive { .. } => {
            archive(plan, work, out, flags, recipe.profile.as_ref(), log, procs).map(|a| vec![a])
        }
    }
}

/// The platform tag; `provided` are libraries that the driver or dependency
/// wheels supply (CUDA runtime), allowed like bundled ones. Fails when a library
/// is needed that nothing supplies (see [`check_supplied`]); symbol versions newer
/// than every manylinux policy give `linux_x86_64`, with the reasons.
fn platform_for(
    plan: &Plan,
    payload: &Payload,
    infos: &BTreeMap<String, crate::binary::elf::ElfInfo>,
    provided: &[String],
    profile: Option<&Profile>,
) -> Result<(PlatformTag, Vec<String>)> {
    let mut bundled: BTreeSet<String> = payload
        .files
        .keys()
        .filter_map(|p| p.rsplit('/').next())
        .map(str::to_string)
        .collect();
    let declared: BTreeSet<String> = provided.iter().cloned().collect();
    check_machine(plan.target, infos)?;
    let policies = Policies::builtin();
    check_supplied(
        plan,
        profile,
        &policies.unsupplied(infos, &bundled, &declared),
    )?;
    bundled.extend(declared);
    let libs: Vec<_> = infos.values().cloned().collect();
    match policies.tag_for(&libs, &bundled) {
        Ok(tag) => Ok((tag, vec![])),
        Err(e) => Ok((
            PlatformTag::Linux {
                arch: plan.target.arch(),
            },
            e.0,
        )),
    }
}

/// Every ELF file of the artifact is code for the target's CPU: an x86-64 library in an
/// aarch64 wheel (a compiler for the wrong arch, a prebuilt file picked up) would fail to
/// load on every machine the wheel installs on.
pub fn check_machine(
    target: crate::platform::Target,
    infos: &BTreeMap<String, crate::binary::elf::ElfInfo>,
) -> Result<()> {
    let wrong: Vec<String> = infos
        .iter()
        .filter(|(_, i)| i.arch != Some(target.arch()))
        .map(|(p, i)| format!("{p} ({})", crate::binary::elf::machine_name(i.arch)))
        .collect();
    if !wrong.is_empty() {
        anyhow::bail!(
            "the artifact is for {target} ({} code), but {} {} not: {}; build with a compiler for {} (the pinned toolchain of --target {target}, or --host-cc naming a {}-g++)",
            target.arch(),
            wrong.len(),
            if wrong.len() == 1 { "file is" } else { "files are" },
            wrong.join(", "),
            target.arch(),
            target.arch().gnu_triple()
        );
    }
    Ok(())
}

/// The packaging gate: every library the artifact's binaries need must be inside
/// it, declared (the CUDA runtime wheels, the driver) or in the manylinux allow-list.
/// Anything else would load only where the build machine's copy happens to be
/// installed, and the artifact's bytes would depend on what that machine has: the
/// build fails, naming the library, what needs it and what to do.
pub fn check_supplied(
    plan: &Plan,
    profile: Option<&Profile>,
    unsupplied: &[crate::package::manylinux::Unsupplied],
) -> Result<()> {
    if unsupplied.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = unsupplied
        .iter()
        .map(|u| {
            let todo = match profile.and_then(|p| p.deciding_define(&u.library)) {
                Some(d) => match plan.defines.iter().find(|s| s.name == d.name) {
                    Some(s) if s.value == d.value => {
                        format!("the plan sets {}={} ({}), yet the build linked it: report a recipe bug", s.name, s.value, s.origin)
                    }
                    Some(s) => format!(
                        "the plan sets {}={} ({}): declare where {} comes from (a Requires-Dist wheel the plan provides it from) or set {} back to {}",
                        s.name, s.value, s.origin, u.library, s.name, d.value
                    ),
                    None => format!("the plan does not decide {}: report a recipe bug", d.name),
                },
                None => "decide the CMake option that links it in the plan: off, or on with a declared source (see docs/optional-dependencies.md)".to_string(),
            };
            format!(
                "{} needed by {}: not in the artifact, not declared, not in the manylinux allow-list (toolchains/manylinux.toml); {todo}",
                u.library,
                u.needed_by.join(", ")
            )
        })
        .collect();
    bail!(
        "the artifact would need libraries that nothing supplies (it would load only where the build machine's copy is installed); nothing was written to dist/:\n  {}",
        lines.join("\n  ")
    )
}

fn wheels(
    plan: &Plan,
    work: &WorkDir,
    out: &Path,
    flags: BTreeMap<String, String>,
    recipe: &crate::recipe::Recipe,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<Vec<Artifact>> {
    let ctypes = recipe.wheel.as_ref().and_then(|w| w.ctypes.as_ref());
    let profile = recipe.profile.as_ref();
    let Package::Wheel {
        distribution,
        local,
        pythons,
        packages,
        lib_dir,
        requires,
        ..
    } = &plan.package
    else {
        unreachable!()
    };
    let mut payload = Payload::default();
    let (platform, binaries, cuda_code) = match plan.target.os() {
        crate::platform::Os::Windows => {
            let (tag, cuda_code) = windows::wheel_libraries(plan, work, &mut payload)?;
            (tag, BTreeMap::new(), cuda_code)
        }
        crate::platform::Os::Linux => {
            linux_wheel_libraries(plan, work, &mut payload, profile, log, procs)?
        }
    };
    let src = work.src();
    for pkg in packages {
        let root = src.join(pkg);
        if !root.is_dir() {
            bail!(
                "the source has no package dir {}: check the recipe's `wheel.packages`",
                root.display()
            );
        }
        for e in walkdir::WalkDir::new(&root).sort_by_file_name() {
            let e = e?;
            if !e.file_type().is_file() {
                continue;
            }
            let rel = e
                .path()
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let skip = rel.starts_with(&format!("{lib_dir}/"))
                || rel.contains("__pycache__/")
                || rel.ends_with(".pyc");
            if !skip {
                payload.add(rel, fs_err::read(e.path())?, false)?;
            }
        }
    }

    if let Some(spec) = ctypes {
        check_bindings(plan, &payload, packages, lib_dir, spec, work, log)?;
    }

    let pkg_info = fs_err::read_to_string(src.join("PKG-INFO"))
        .context("the source has no PKG-INFO: is it an sdist?")?;
    let version = format!("{}+{}", plan.version, local);
    let metadata = crate::package::wheel::metadata_from_pkg_info(&pkg_info, &version, requires)?;
    let entry_points = match fs_err::read_to_string(src.join("pyproject.toml")) {
        Ok(py) => crate::package::wheel::entry_points_from_pyproject(&py)?,
        Err(_) => None,
    };
    let mut common: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    common.insert("METADATA".into(), metadata.into_bytes());
    if let Some(ep) = entry_points {
        common.insert("entry_points.txt".into(), ep.into_bytes());
    }
    for lic in ["LICENSE", "LICENSE.md", "LICENSE.txt"] {
        if let Ok(data) = fs_err::read(src.join(lic)) {
            common.insert(format!("licenses/{lic}"), data);
        }
    }

    // One `py3` wheel, or one wheel per CPython asked for from the same payload: written
    // side by side, since compressing the libraries is most of the time and each wheel
    // is independent.
    let one = |python: PythonTag| -> Result<Artifact> {
        let name = WheelFilename {
            distribution: distribution.clone(),
            version: plan.version.clone(),
            local: Some(local.clone()),
            python,
            platform: platform.clone(),
        };
        let mut dist_info = common.clone();
        dist_info.insert(
            "WHEEL".into(),
            crate::package::wheel::wheel_file(&name).into_bytes(),
        );
        let tag = name.tag();
        let wheel = writer::Wheel { name, dist_info };
        let mut m = Manifest::from_plan(
            plan,
            ArtifactInfo {
                kind: ArtifactKind::Wheel,
                filename: wheel.filename(),
                sha256: None,
                size: None,
            },
            TargetInfo {
                platform: platform.clone(),
                wheel_tag: Some(tag),
            },
            flags.clone(),
        );
        m.binaries = binaries.clone();
        m.cuda_code = cuda_code.clone();
        writer::emit(&wheel, out, &payload, m, plan.source_date_epoch)
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = pythons
            .tags()
            .into_iter()
            .map(|py| s.spawn(move || one(py)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("wheel writer panicked"))
            .collect()
    })
}

/// Every function the package binds with ctypes is exported by the wheel's libraries, or
/// the wheel is refused, naming each missing one (see [`ctypes`]).
fn check_bindings(
    plan: &Plan,
    payload: &Payload,
    packages: &[String],
    lib_dir: &str,
    spec: &crate::recipe::CtypesSpec,
    work: &WorkDir,
    log: &Log,
) -> Result<()> {
    let mut headers = BTreeMap::new();
    for h in &spec.headers {
        if let Ok(text) = fs_err::read_to_string(work.src().join(h)) {
            headers.extend(ctypes::c_structs(&text));
        }
    }
    let c = ctypes::check_payload(payload, packages, lib_dir, spec, &headers)?;
    // Which tree disagrees with the bindings, for either refusal.
    let tree = match &plan.source.overlay {
        Some(o) => format!(
            "the llama.cpp tree given with --llama-cpp ({}) is not one these bindings ({} {}) were written for",
            o.location, plan.recipe, plan.version
        ),
        None => format!(
            "{} {}'s bindings and its own llama.cpp tree disagree",
            plan.recipe, plan.version
        ),
    };
    let (known, layouts): (Vec<_>, Vec<_>) = c
        .layouts
        .iter()
        .partition(|(name, _)| spec.known_layouts.contains_key(name));
    if !layouts.is_empty() {
        bail!(
            "the package lays out {} of its ctypes structs with other members than {}'s headers ({}), so llama_cpp would read and write the wrong bytes (as a wheel of 0.3.35's bindings with 0.3.36's llama.cpp did: `Memory is not initialized`): {tree}; refusing:\n  {}",
            layouts.len(),
            plan.upstream.as_ref().map_or_else(|| "the llama.cpp tree".to_string(), |u| u.to_string()),
            spec.headers.join(", "),
            layouts.iter().map(|(_, w)| w.as_str()).collect::<Vec<_>>().join("\n  ")
        );
    }
    for (name, w) in &known {
        log.line(format_args!(
            "bindings: {w}: known ({})",
            spec.known_layouts[name]
        ));
    }
    if !c.missing.is_empty() {
        bail!(
            "{} of the {} functions the package binds with ctypes are exported by none of its libraries, so `import {}` would fail: {tree}; missing:\n  {}",
            c.missing.len(),
            c.checked,
            packages.join(", "),
            c.missing
                .iter()
                .map(|(m, line, names)| format!("{} ({m}:{line})", names.join(" or ")))
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    log.line(format_args!(
        "bindings: all {} functions bound with ctypes are exported, {} structs laid out as the headers{}",
        c.checked,
        c.structs - known.len(),
        if c.left_out.is_empty() {
            String::new()
        } else {
            format!(" (not checked: {})", c.left_out.join("; "))
        }
    ));
    Ok(())
}

/// A Linux wheel's libraries, added under the lib dir: the install step's, the CPU
/// backend modules and the bundled CUDA runtime; RUNPATHs and GPU code checked.
/// Returns the manylinux tag they allow (a warning for each reason when none),
/// their ELF facts and the GPU code found.
#[allow(clippy::type_complexity)]
fn linux_wheel_libraries(
    plan: &Plan,
    work: &WorkDir,
    payload: &mut Payload,
    profile: Option<&Profile>,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<(
    PlatformTag,
    BTreeMap<String, crate::binary::elf::ElfInfo>,
    BTreeMap<String, Vec<String>>,
)> {
    let Package::Wheel {
        lib_dir,
        collect_from,
        libraries,
        modules_from,
        modules,
        ..
    } = &plan.package
    else {
        unreachable!()
    };
    let lib_src = PathBuf::from(work.resolve(collect_from));
    let mut libs = payload::collect_libraries(&lib_src)?;
    let module_src = PathBuf::from(work.resolve(modules_from));
    payload::collect_modules(&module_src, modules, &mut libs)?;
    let names: BTreeSet<String> = libs.keys().cloned().collect();
    let missing = payload::missing(libraries, &names);
    if !missing.is_empty() {
        bail!(
            "the build did not produce {} in {}: see {}",
            missing.join(", "),
            lib_src.display(),
            work.logs().display()
        );
    }
    let cuda_code = cuda_steps(plan, work, &mut libs, log, procs)?;
    payload::check_runpaths(libs.iter().map(|(n, (_, i))| (n, i)))?;
    // A wheel's libraries load beside numpy's libstdc++.so.6: none may export the runtime.
    payload::check_cxx_runtime(libs.iter().map(|(n, (_, i))| (n, i)), &cxx_hint(plan), None)?;
    for (name, (path, _)) in &libs {
        payload.add(format!("{lib_dir}/{name}"), fs_err::read(path)?, true)?;
    }
    for (name, path) in bundle(plan, work)? {
        payload.add(format!("{lib_dir}/{name}"), fs_err::read(&path)?, true)?;
    }
    let provided = provided(plan);
    let binaries = payload.elf_infos()?;
    let (platform, problems) = platform_for(plan, payload, &binaries, &provided, profile)?;
    for p in &problems {
        log.warning(format_args!("not manylinux, tagged {platform}: {p}"));
    }
    Ok((platform, binaries, cuda_code))
}

/// Writes the external manifest (with the artifact's hash) beside the artifact.
pub(crate) fn finish(path: PathBuf, mut m: Manifest) -> Result<Artifact> {
    let sha256 = crate::digest::sha256_file(&path)?;
    let size = fs_err::metadata(&path)?.len();
    m.artifact.sha256 = Some(sha256.clone());
    m.artifact.size = Some(size);
    let dir = path.parent().expect("the artifact is in a dir");
    let manifest_path = dir.join(format!("{}.manifest.json", m.artifact.filename));
    let mut t = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut t, &m.to_json())?;
    crate::provision::unpack::set_mode(t.path(), 0o644)?;
    t.persist(&manifest_path)
        .with_context(|| format!("cannot write {}", manifest_path.display()))?;
    Ok(Artifact {
        path,
        manifest_path,
        sha256,
        size,
    })
}

fn archive(
    plan: &Plan,
    work: &WorkDir,
    out: &Path,
    flags: BTreeMap<String, String>,
    profile: Option<&Profile>,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<Artifact> {
    if plan.target.os() == crate::platform::Os::Windows {
        return windows::archive(plan, work, out, flags);
    }
    let Package::Archive {
        stem,
        format,
        collect_from,
        binaries,
        optional_binaries,
        libraries,
        docs,
    } = &plan.package
    else {
        unreachable!()
    };
    let dir = PathBuf::from(work.resolve(collect_from));
    // Every ELF file shipped: the binaries and, transitively, the libraries they need that the build made.
    let mut libs: payload::Libs = BTreeMap::new();
    let mut queue: Vec<String> = Vec::new();
    for b in binaries.iter().chain(optional_binaries) {
        let p = dir.join(b);
        if !p.is_file() {
            if binaries.contains(b) {
                bail!(
                    "the build did not produce {}: see {}",
                    p.display(),
                    work.logs().join("build.log").display()
                );
            }
            continue;
        }
        queue.push(b.clone());
    }
    queue.extend(libraries.iter().map(|l| payload::lib_file(l)));
    while let Some(f) = queue.pop() {
        let p = dir.join(&f);
        if libs.contains_key(&f) || !p.is_file() {
            continue;
        }
        if !binaries.contains(&f)
            && !optional_binaries.contains(&f)
            && fs_err::symlink_metadata(&p)?.file_type().is_symlink()
        {
            bail!("{} is a symlink: libraries must be single files (CMAKE_PLATFORM_NO_VERSIONED_SONAME)", p.display());
        }
        let info = crate::binary::elf::read(&p)?;
        queue.extend(
            info.needed
                .iter()
                .filter(|n| dir.join(n).is_file())
                .cloned(),
        );
        libs.insert(f, (p, info));
    }
    let have: BTreeSet<String> = libs.keys().cloned().collect();
    let missing = payload::missing(libraries, &have);
    if !missing.is_empty() {
        bail!(
            "the build did not produce {} in {}",
            missing.join(", "),
            dir.display()
        );
    }
    let cuda_code = cuda_steps(plan, work, &mut libs, log, procs)?;
    let mut payload = Payload::default();
    for (name, (path, _)) in &libs {
        payload.add(name.clone(), fs_err::read(path)?, true)?;
    }
    for (name, path) in bundle(plan, work)? {
        payload.add(name, fs_err::read(&path)?, true)?;
    }
    let infos = payload.elf_infos()?;
    payload::check_runpaths(infos.iter())?;
    // The tools' shared C++ runtime, where the plan builds one, exports it by design.
    let shared = plan.shared_cxx_runtime();
    payload::check_cxx_runtime(infos.iter(), &cxx_hint(plan), shared.as_deref())?;
    for d in docs {
        let p = work.project().join(d);
        payload.add(
            d.clone(),
            fs_err::read(&p).with_context(|| format!("the source has no {}", p.display()))?,
            false,
        )?;
    }
    let provided = provided(plan);
    let (platform, _) = platform_for(plan, &payload, &infos, &provided, profile)?;
    let archive = writer::Archive {
        stem: stem.clone(),
        format: *format,
    };
    let mut m = Manifest::from_plan(
        plan,
        ArtifactInfo {
            kind: ArtifactKind::Archive,
            filename: archive.filename(),
            sha256: None,
            size: None,
        },
        TargetInfo {
            platform,
            wheel_tag: None,
        },
        flags,
    );
    m.binaries = infos;
    m.cuda_code = cuda_code;
    writer::emit(&archive, out, &payload, m, plan.source_date_epoch)
}

/// The plan's C++ compiler and where it came from, for error messages: `/opt/gcc/bin/g++ (from CXX)`.
fn cxx_hint(plan: &Plan) -> String {
    let t = &plan.tools.cxx;
    format!("{}{}", t.path, t.origin.named_by())
}

/// GPU builds: rewrite RUNPATHs (patchelf) and run the device code gate.
fn cuda_steps(
    plan: &Plan,
    work: &WorkDir,
    libs: &mut payload::Libs,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<BTreeMap<String, Vec<String>>> {
    let Some(c) = &plan.cuda else {
        return Ok(BTreeMap::new());
    };
    let patchelf = plan
        .tools
        .patchelf
        .as_ref()
        .context("the plan has no patchelf for a CUDA build")?;
    crate::package::cuda_gate::fix_runpaths(
        libs,
        c,
        Path::new(&work.resolve(&patchelf.path)),
        &work.root.join("patched"),
        procs,
    )?;
    let expected = &c.architectures;
    let found =
        crate::package::cuda_gate::gate(libs.iter().map(|(n, (p, _))| (n, p.as_path())), expected)?;
    for (lib, codes) in &found {
        log.line(format_args!("gate: {lib}: {}", codes.join(", ")));
    }
    Ok(found)
}

/// The libraries a GPU build may need without shipping them: the CUDA runtime's (from
/// the runtime wheels it requires, or bundled) and the driver's.
pub(crate) fn provided(plan: &Plan) -> Vec<String> {
    plan.cuda
        .as_ref()
        .map(|c| c.provided.clone())
        .unwrap_or_default()
}

/// Runtime libraries copied from the toolkit (`--bundle-cuda-runtime`).
pub(crate) fn bundle(plan: &Plan, work: &WorkDir) -> Result<Vec<(String, PathBuf)>> {
    match &plan.cuda {
        Some(c) if !c.bundle.is_empty() => {
            crate::package::cuda_gate::bundled(c, Path::new(&work.resolve(&c.root)))
        }
        _ => Ok(vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Builds `lib<name>.so` with gcc, SONAME `soname`, linked against `links` in `dir`.
    fn gcc_lib(dir: &Path, name: &str, soname: &str, body: &str, links: &[&str]) -> Vec<u8> {
        let c = dir.join(format!("{name}.c"));
        std::fs::write(&c, body).unwrap();
        let out = dir.join(format!("lib{name}.so"));
        let mut cmd = Command::new("gcc");
        cmd.args(["-shared", "-fPIC", &format!("-Wl,-soname,{soname}"), "-o"])
            .arg(&out)
            .arg(&c)
            .arg("-L")
            .arg(dir);
        for l in links {
            cmd.arg(format!("-l{l}"));
        }
        let st = cmd
            .status()
            .expect("gcc runs: this test builds shared libraries");
        assert!(st.success(), "gcc built {}", out.display());
        std::fs::read(&out).unwrap()
    }

    fn plan() -> Plan {
        crate::plan::tests::fixture_plan("llama.cpp", &[])
    }

    /// Real ELF files: libggml-cuda.so needs libnccl.so.2 and libfoo.so, which are
    /// built beside it but packaged without it. The gate refuses, naming each library,
    /// what needs it and what to do; declared or bundled, they pass.
    #[test]
    fn a_library_that_nothing_supplies_fails_packaging() {
        let d = tempfile::tempdir().unwrap();
        gcc_lib(
            d.path(),
            "nccl",
            "libnccl.so.2",
            "int nccl_v(void) { return 2; }\n",
            &[],
        );
        let foo = gcc_lib(
            d.path(),
            "foo",
            "libfoo.so",
            "int foo_v(void) { return 1; }\n",
            &[],
        );
        let top = gcc_lib(
            d.path(),
            "ggml-cuda",
            "libggml-cuda.so",
            "int nccl_v(void); int foo_v(void);\nint top(void) { return nccl_v() + foo_v(); }\n",
            &["nccl", "foo"],
        );
        let mut payload = Payload::default();
        payload
            .add("lib/libggml-cuda.so".into(), top, true)
            .unwrap();
        let infos = payload.elf_infos().unwrap();
        assert!(
            infos["lib/libggml-cuda.so"]
                .needed
                .contains(&"libnccl.so.2".to_string()),
            "{infos:?}"
        );
        let plan = plan();
        let recipe = crate::recipe::fixture("llama-cpp-python");
        let profile = recipe.profile.as_ref();

        let e = format!(
            "{:#}",
            platform_for(&plan, &payload, &infos, &[], profile).unwrap_err()
        );
        for needle in [
            "libnccl.so.2 needed by lib/libggml-cuda.so: not in the artifact, not declared, not in the manylinux allow-list (toolchains/manylinux.toml); \
             the plan sets GGML_CUDA_NCCL=OFF (policy), yet the build linked it: report a recipe bug",
            "libfoo.so needed by lib/libggml-cuda.so: not in the artifact, not declared, not in the manylinux allow-list (toolchains/manylinux.toml); \
             decide the CMake option that links it in the plan",
            "nothing was written to dist/",
        ] {
            assert!(e.contains(needle), "`{needle}` not in:\n{e}");
        }

        // A recipe that turns NCCL on without declaring it is told to declare it.
        let mut on = plan.clone();
        on.defines
            .iter_mut()
            .find(|s| s.name == "GGML_CUDA_NCCL")
            .unwrap()
            .value = "ON".into();
        let e = format!(
            "{:#}",
            platform_for(&on, &payload, &infos, &["libfoo.so".into()], profile).unwrap_err()
        );
        assert!(
            e.contains(
                "the plan sets GGML_CUDA_NCCL=ON (policy): declare where libnccl.so.2 comes from"
            ),
            "{e}"
        );
        assert!(
            !e.contains("libfoo.so needed"),
            "libfoo.so is declared: {e}"
        );

        // Declared (as the CUDA runtime wheels are) and bundled: supplied, and manylinux.
        payload.add("lib/libfoo.so".into(), foo, true).unwrap();
        let infos = payload.elf_infos().unwrap();
        let (tag, problems) =
            platform_for(&plan, &payload, &infos, &["libnccl.so.2".into()], profile).unwrap();
        assert!(tag.to_string().starts_with("manylinux_2_"), "{tag}");
        assert!(problems.is_empty(), "{problems:?}");
    }

    /// Real C++ libraries from g++: one links libstdc++.so.6, two carry their own
    /// static copy of it (as a compiler without libstdc++.so makes them). Packaging
    /// refuses, naming both and the compiler.
    #[test]
    fn libraries_with_their_own_libstdcxx_fail_packaging() {
        let d = tempfile::tempdir().unwrap();
        let mut payload = Payload::default();
        for (name, static_runtime) in [("llama", true), ("ggml", true), ("mtmd", false)] {
            payload
                .add(
                    format!("lib/lib{name}.so"),
                    crate::binary::elf::test_libs::cxx_library(d.path(), name, static_runtime),
                    true,
                )
                .unwrap();
        }
        let infos = payload.elf_infos().unwrap();
        let e = format!(
            "{:#}",
            payload::check_cxx_runtime(infos.iter(), "/opt/gcc/bin/g++ (from CXX)", None)
                .unwrap_err()
        );
        insta::assert_snapshot!(e);
        // The one runtime an archive's plan builds for its tools is let through, by its
        // name only: the other library with its own copy is still refused.
        let e = format!(
            "{:#}",
            payload::check_cxx_runtime(infos.iter(), "g++", Some("lib/libllama.so")).unwrap_err()
        );
        assert!(
            e.contains("lib/libggml.so") && !e.contains("lib/libllama.so"),
            "{e}"
        );
        let one: Vec<_> = infos
            .iter()
            .filter(|(n, _)| *n != "lib/libggml.so")
            .collect();
        payload::check_cxx_runtime(
            one.iter().map(|(n, i)| (*n, *i)),
            "g++",
            Some("lib/libllama.so"),
        )
        .unwrap();
    }
}
