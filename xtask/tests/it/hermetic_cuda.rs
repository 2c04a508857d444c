//! A real hermetic CUDA: installs the pinned CUDA 13.0 wheels from the package index
//! (without nvidia-cublas: ~105 MB, kept in the shared download cache, so CI downloads
//! them once) and builds the `tests/fixtures/cuda-mini` CMake project for `120a-real`
//! on a machine without a GPU, then checks what came out with cuobjdump.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use xtask::binary::elf;
use xtask::provision::hermetic::{self, CudaSpec, HermeticCuda};

use crate::common;
use common::{
    archive_sha256_without, build_in_checkout, checkout, files_in, mini_source, repo,
    sccache_stats, Redis,
};

/// The shared download cache: `LLAMA_FORGE_CACHE`, or the repo's `vendor/cache`.
fn cache() -> PathBuf {
    std::env::var_os("LLAMA_FORGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("vendor/cache"))
}

fn env_or(var: &str, default: &str) -> PathBuf {
    PathBuf::from(std::env::var(var).unwrap_or_else(|_| default.to_string()))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{text}",
        out.status
    );
    text
}

fn install(release: &str, leave_out: &[&str]) -> (CudaSpec, HermeticCuda) {
    let spec = CudaSpec::load(&repo().join("toolchains"), &release.parse().unwrap())
        .unwrap()
        .without(leave_out)
        .unwrap();
    let t = Instant::now();
    let cuda = hermetic::install(
        &cache(),
        &spec,
        &env_or("CC", "cc"),
        &xtask::report::Log::stderr(),
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    eprintln!(
        "CUDA {release}: install {:.1} s, wheels {:.1} MB",
        t.elapsed().as_secs_f64(),
        spec.download_size() as f64 / 1e6
    );
    (spec, cuda)
}

/// CMake or Ninja from `toolchains/build-tools.toml`, provisioned the way the tool
/// does it (`<cache>/tools/<name>-<version>/`), so runs share them.
fn pinned_tool(name: &str) -> PathBuf {
    let pins = xtask::detect::toolchain::PinnedTools::load(
        &repo().join("toolchains/build-tools.toml"),
        xtask::platform::Os::Linux,
        xtask::platform::Arch::X86_64,
    )
    .unwrap();
    let pin = match name {
        "cmake" => &pins.cmake,
        "ninja" => &pins.ninja,
        other => panic!("no pinned {other}"),
    };
    xtask::detect::toolchain::provision(&cache(), name, pin, &xtask::report::Log::stderr())
        .unwrap_or_else(|e| panic!("{e:#}"))
        .path
}

/// Configures and builds cuda-mini with `cuda` for `arch`; returns the library.
fn build_fixture(
    cuda: &HermeticCuda,
    arch: &str,
    defines: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let (cmake, ninja) = (pinned_tool("cmake"), pinned_tool("ninja"));
    let build = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let mut configure = Command::new(&cmake);
    configure
        .arg("-S")
        .arg(repo().join("tests/fixtures/cuda-mini"))
        .arg("-B")
        .arg(build.path())
        .args(["-G", "Ninja"])
        .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
        .arg(format!(
            "-DCMAKE_CXX_COMPILER={}",
            env_or("CXX", "c++").display()
        ))
        .arg(format!(
            "-DCMAKE_CUDA_HOST_COMPILER={}",
            env_or("CXX", "c++").display()
        ))
        .arg(format!("-DCMAKE_CUDA_COMPILER={}", cuda.nvcc.display()))
        .arg(format!("-DCUDAToolkit_ROOT={}", cuda.root.display()))
        .arg(format!("-DCMAKE_CUDA_ARCHITECTURES={arch}"))
        .args(defines)
        // A system CUDA on the test machine must not be picked up instead.
        .env_remove("CUDACXX")
        .env_remove("CUDA_PATH")
        .env_remove("CUDA_HOME")
        .env_remove("CUDAToolkit_ROOT");
    let text = run(&mut configure);
    assert!(
        text.contains(&format!("Found CUDAToolkit: {}", cuda.root.display())),
        "{text}"
    );
    run(Command::new(&cmake).arg("--build").arg(build.path()));
    eprintln!(
        "cuda-mini for {arch}: configure + build {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let lib = build.path().join("libcuda_mini.so");
    assert!(lib.is_file(), "no {}", lib.display());
    (build, lib)
}

/// The SASS targets of the cubins in `lib` (`sm_120a`), from `cuobjdump --list-elf`.
fn cubin_archs(cuda: &HermeticCuda, lib: &Path) -> Vec<String> {
    let text = run(Command::new(&cuda.cuobjdump).arg("--list-elf").arg(lib));
    let mut archs: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("ELF file"))
        .map(|l| {
            l.rsplit(':')
                .next()
                .unwrap()
                .split('.')
                .find(|p| p.starts_with("sm_"))
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    archs.sort();
    archs.dedup();
    archs
}

fn ptx_files(cuda: &HermeticCuda, lib: &Path) -> Vec<String> {
    let text = run(Command::new(&cuda.cuobjdump).arg("--list-ptx").arg(lib));
    text.lines()
        .filter(|l| l.starts_with("PTX file"))
        .map(str::to_string)
        .collect()
}

/// Builds cuda-mini with `cuda` for `arch` and checks it holds SASS for `sm` only and no PTX.
fn build_sass_only(cuda: &HermeticCuda, arch: &str, sm: &str) -> (tempfile::TempDir, PathBuf) {
    let (build, lib) = build_fixture(cuda, arch, &[]);
    assert_eq!(cubin_archs(cuda, &lib), [sm]);
    assert_eq!(
        ptx_files(cuda, &lib),
        Vec::<String>::new(),
        "{arch} must carry no PTX"
    );
    (build, lib)
}

/// Builds cuda-mini with its cuBLAS call for `120a-real`: it needs libcublas.so.13, holds sm_120a.
fn build_with_cublas(cuda: &HermeticCuda) {
    let (_build, lib) = build_fixture(cuda, "120a-real", &["-DCUDA_MINI_CUBLAS=ON"]);
    assert!(elf::read(&lib)
        .unwrap()
        .needed
        .contains(&"libcublas.so.13".to_string()));
    assert_eq!(cubin_archs(cuda, &lib), ["sm_120a"]);
}

#[test]
fn cuda_13_0_from_the_index_builds_sm_120a_only() {
    let (spec, cuda) = install("13.0", &["nvidia-cublas"]);
    assert_eq!(cuda.root, cache().join("cuda/13.0.88"));
    assert_eq!(cuda.version.to_string(), "13.0.88");
    for w in &spec.wheels {
        assert!(
            cuda.wheels
                .iter()
                .any(|h| h.name == w.name && h.sha256 == w.sha256),
            "{} not recorded",
            w.name
        );
    }
    for (link, to) in [
        ("lib64", "lib"),
        ("targets/x86_64-linux/include", "../../include"),
        ("targets/x86_64-linux/lib", "../../lib"),
        ("lib/libcudart.so", "libcudart.so.13"),
    ] {
        assert_eq!(
            std::fs::read_link(cuda.root.join(link)).unwrap(),
            Path::new(to),
            "{link}"
        );
    }
    assert_eq!(
        elf::read(&cuda.driver_stub).unwrap().soname.as_deref(),
        Some("libcuda.so.1")
    );
    assert!(
        !cuda.root.join("lib/stubs/libcuda.so.1").exists(),
        "the stub must never be loadable at run time"
    );

    // Running it again is a no-op: the finished root is taken as it is.
    let stamp = std::fs::metadata(cuda.root.join("llama-forge-cuda.json"))
        .unwrap()
        .modified()
        .unwrap();
    let (_, again) = install("13.0", &["nvidia-cublas"]);
    assert_eq!(again, cuda);
    assert_eq!(
        std::fs::metadata(cuda.root.join("llama-forge-cuda.json"))
            .unwrap()
            .modified()
            .unwrap(),
        stamp
    );

    let (_build, lib) = build_sass_only(&cuda, "120a-real", "sm_120a");
    let needed = elf::read(&lib).unwrap().needed;
    assert!(
        needed.contains(&"libcuda.so.1".to_string())
            && needed.contains(&"libcudart.so.13".to_string()),
        "{needed:?}"
    );

    // The tool's own gate: passes for what was asked, fails for any other target.
    let name = "libcuda_mini.so".to_string();
    let gate = |asked: &str| {
        xtask::package::cuda_gate::gate([(&name, lib.as_path())], &asked.parse().unwrap())
    };
    let found = gate("120a-real").unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(found[&name], ["SASS sm_120a"]);
    let e = gate("120-real").unwrap_err().to_string();
    assert!(e.contains("sm_120a") && e.contains("not asked for"), "{e}");
    let e = gate("120a-real;90-real").unwrap_err().to_string();
    assert!(e.contains("sm_90") && e.contains("missing"), "{e}");
}

#[test]
fn cuda_13_1_from_the_index_builds_sm_121a() {
    let (_, cuda) = install("13.1", &["nvidia-cublas"]);
    assert_eq!(cuda.version.to_string(), "13.1.115");
    build_sass_only(&cuda, "121a-real", "sm_121a");
}

/// The newest pinned release, the one a plan takes when nothing is installed: its
/// own cuobjdump, sm_120a and sm_107a (new in 13.4); and that cuobjdump reads what the
/// pinned 13.0 builds, as the tool's gate does.
#[test]
fn cuda_13_5_from_the_index_builds_sm_120a_and_its_cuobjdump_reads_13_0() {
    let (spec, cuda) = install("13.5", &["nvidia-cublas"]);
    assert_eq!(cuda.root, cache().join("cuda/13.5.37"));
    assert_eq!(cuda.version.to_string(), "13.5.37");
    let cuobjdump = spec
        .wheels
        .iter()
        .find(|w| w.name == "nvidia-cuda-cuobjdump")
        .unwrap();
    assert_eq!(cuobjdump.version.to_string(), "13.5.37");
    let version = run(Command::new(&cuda.cuobjdump).arg("--version"));
    assert!(version.contains("V13.5.37"), "{version}");
    build_sass_only(&cuda, "120a-real", "sm_120a");
    let (_build, lib) = build_fixture(&cuda, "107a-real", &[]);
    assert_eq!(cubin_archs(&cuda, &lib), ["sm_107a"]);

    let (_, old) = install("13.0", &["nvidia-cublas"]);
    let (_build, lib) = build_fixture(&old, "120a-real", &[]);
    assert_eq!(cubin_archs(&cuda, &lib), ["sm_120a"]);
    let name = "libcuda_mini.so".to_string();
    // The tool's gate reads it with the fat binary reader, as cuobjdump 13.5 did.
    let found =
        xtask::package::cuda_gate::gate([(&name, lib.as_path())], &"120a-real".parse().unwrap())
            .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(found[&name], ["SASS sm_120a"]);
}

#[test]
#[ignore = "full tier (.ci/run --full): downloads nvidia-cublas (~420 MB)"]
fn cuda_13_0_with_cublas_links_it() {
    let (_, cuda) = install("13.0", &[]);
    assert!(cuda.wheels.iter().any(|w| w.name == "nvidia-cublas"));
    build_with_cublas(&cuda);
}

#[test]
#[ignore = "full tier (.ci/run --full): downloads nvidia-cublas 13.10 (~445 MB)"]
fn cuda_13_5_with_cublas_links_it() {
    let (_, cuda) = install("13.5", &[]);
    let cublas = cuda
        .wheels
        .iter()
        .find(|w| w.name == "nvidia-cublas")
        .unwrap();
    assert_eq!(cublas.version.to_string(), "13.10.0.20");
    build_with_cublas(&cuda);
}

/// The whole tool, CUDA: the mini llama.cpp with a libcu++ kernel, built for
/// `--arch 120` with the hermetic CUDA 13.0 from two checkouts at different
/// paths with different build dirs, gives the same archive. The gate saw exactly
/// sm_120a, and no build path is inside. Its template instances were compiled in
/// the plan's groups (`LLAMA_FORGE_CUDA_GROUPS`: the three mmq files in two groups, the
/// two mmf files in one, the four fattn-vec files, listed by name as before 0.3.36, in
/// one), and the library has every instance's kernel.
#[test]
fn cuda_archive_from_two_checkouts_is_identical() {
    let (_, cuda) = install("13.0", &["nvidia-cublas"]);
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let mut shas = Vec::new();
    for side in ["a", "checkout-b-longer-path"] {
        let root = d.path().join(side).join("repo");
        checkout(&root);
        let dist = root.join("dist");
        let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
        // The pinned 13.0, named (without --cuda the plan takes 13.5, the newest GPU-checked).
        c.args([
            "build",
            "llama.cpp",
            "--arch",
            "120",
            "--cuda",
            "13.0",
            "--version",
            "0.3.36",
            "--source",
        ])
        .arg(&src)
        .arg("--dist")
        .arg(&dist);
        c.env("LLAMA_FORGE_ROOT", &root)
            .env("LLAMA_FORGE_CACHE", cache())
            .env("LLAMA_FORGE_BUILD_DIR", d.path().join(side).join("work"));
        // Only the hermetic toolkit: no system CUDA on the test machine is picked up.
        for v in ["CUDACXX", "CUDA_PATH", "CUDA_HOME"] {
            c.env_remove(v);
        }
        let text = run(&mut c);
        let archive = std::fs::read_dir(&dist)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
            .unwrap();
        assert!(
            archive.to_string_lossy().contains("cu130.sm120a"),
            "{}",
            archive.display()
        );
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(format!("{}.manifest.json", archive.display())).unwrap(),
        )
        .unwrap();
        assert_eq!(
            manifest["cuda_code"]["libggml-cuda.so"],
            serde_json::json!(["SASS sm_120a"]),
            "{text}"
        );
        shas.push(archive_sha256_without(&archive, &d.path().join(side)));
        let objects = cuda_objects(&d.path().join(side).join("work"));
        assert_eq!(
            objects,
            [
                "fattn-vec-0.cu.o",
                "ggml-cuda.cu.o",
                "mmf-0.cu.o",
                "mmq-0.cu.o",
                "mmq-1.cu.o",
                "ops-0.cu.o"
            ],
            "the nine instance files and the two op files in the plan's groups (mmq:2, mmf:4, fattn-vec:4, ops:7), ggml-cuda.cu alone; the fattn-vec ones, listed by name, through the named-instances variant"
        );
        let lib = walkdir::WalkDir::new(d.path().join(side).join("work"))
            .into_iter()
            .flatten()
            .find(|e| e.file_name() == "libggml-cuda.so")
            .unwrap_or_else(|| panic!("no libggml-cuda.so under {side}/work"));
        let kernels = kernels(&cuda, lib.path());
        for k in [
            "_Z8mini_mmqILi2EEvPKfPf",
            "_Z8mini_mmqILi4EEvPKfPf",
            "_Z8mini_mmqILi8EEvPKfPf",
            "_Z8mini_mmfILi1EEvPKfPf",
            "_Z8mini_mmfILi2EEvPKfPf",
            "_Z14mini_fattn_vecILi1ELi1EEvPKfPf",
            "_Z14mini_fattn_vecILi3ELi3EEvPKfPf",
            "scale_f32",
            "clamp_f32",
        ] {
            // The op files' static kernels carry their unit's name and hash (`_INTERNAL_`).
            assert!(
                kernels.iter().any(|x| x.contains(k)),
                "no {k} in {kernels:?}"
            );
        }
    }
    assert_eq!(
        shas[0], shas[1],
        "same CUDA plan, different checkouts: same bytes"
    );
}

/// The file names of the CUDA objects compiled under `work` (`*.cu.o`), sorted.
fn cuda_objects(work: &Path) -> Vec<String> {
    let mut names: Vec<String> = walkdir::WalkDir::new(work)
        .into_iter()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu.o"))
        .collect();
    names.sort();
    names
}

/// The kernels (entry functions) in the cubins of `lib`, from `cuobjdump -symbols`.
fn kernels(cuda: &HermeticCuda, lib: &Path) -> Vec<String> {
    let text = run(Command::new(&cuda.cuobjdump).arg("-symbols").arg(lib));
    text.lines()
        .filter(|l| l.contains("STT_FUNC") && l.contains("STO_ENTRY"))
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect()
}

/// nvcc through the seed script and sccache (`--launcher sccache`, a shared Redis): a
/// second checkout's compiles all come from the cache (no miss; what sccache cannot cache
/// at all, such as CMake's probes, is counted apart), and the archive is the same file
/// as the first checkout's and as one built without a launcher (sccache runs nvcc's steps
/// itself and names the host source `x_0.cudafe1.cpp`, as the seed script does).
#[test]
fn cuda_objects_through_sccache_hit_and_keep_their_bytes() {
    let Some(redis) = Redis::start() else { return };
    install("13.0", &["nvidia-cublas"]);
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let (cache, endpoint) = (cache().display().to_string(), redis.endpoint());
    // Only the hermetic toolkit (an empty variable is an unset one).
    let envs = [
        ("LLAMA_FORGE_CACHE", cache.as_str()),
        ("SCCACHE_REDIS_ENDPOINT", endpoint.as_str()),
        ("CUDACXX", ""),
        ("CUDA_PATH", ""),
        ("CUDA_HOME", ""),
    ];
    let mut shas = Vec::new();
    for side in ["plain", "a", "checkout-b-longer-path"] {
        let mut extra = vec!["--arch", "120", "--cuda", "13.0"];
        if side != "plain" {
            extra.extend(["--launcher", "sccache"]);
        }
        let side = d.path().join(side);
        let (dist, _) = build_in_checkout(&side, &src, &extra, &envs);
        let archive = files_in(&dist)
            .into_iter()
            .find(|f| f.ends_with(".tar.gz"))
            .unwrap();
        shas.push(archive_sha256_without(&dist.join(archive), &side));
    }
    let stats = |side: &str| sccache_stats(&d.path().join(side).join("work"))["stats"].clone();
    let (cold, warm) = (stats("a"), stats("checkout-b-longer-path"));
    let count = |s: &serde_json::Value, what: &str, lang: &str| s[what]["counts"][lang].as_u64();
    assert!(
        count(&cold, "cache_misses", "CUDA").unwrap_or(0) >= 1,
        "{cold}"
    );
    let warm_stats =
        xtask::plan::launcher::Stats::parse(&serde_json::json!({ "stats": warm }).to_string())
            .unwrap();
    assert!(
        count(&warm, "cache_hits", "CUDA").unwrap_or(0) >= 1 && warm_stats.misses == 0,
        "second checkout: {warm_stats:?}\n{warm}"
    );
    assert_eq!(
        shas[1], shas[2],
        "two checkouts through sccache: same bytes"
    );
    assert_eq!(
        shas[0], shas[1],
        "sccache changes no byte of the CUDA build"
    );
}

/// The mini llama.cpp ([`mini_source`]) with ggml's Arm CPU variants, added as ggml's
/// CMakeLists adds them for an aarch64 target: the fixture lists only the x86-64 ones,
/// which the recipe's patch skips there (the plan names armv8.0_1 to armv8.6_2).
fn mini_aarch64_source(dir: &Path) -> PathBuf {
    let src = mini_source(dir);
    let cml = src.join("CMakeLists.txt");
    let mut t = std::fs::read_to_string(&cml).unwrap();
    t.push_str(
        r#"if (GGML_BACKEND_DL AND GGML_CPU_ALL_VARIANTS AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    foreach(variant armv8.0_1 armv8.2_1 armv8.2_2 armv8.2_3 armv8.6_1 armv8.6_2 armv9.2_1 armv9.2_2)
        ggml_add_cpu_backend_variant(${variant})
    endforeach()
endif()
"#,
    );
    std::fs::write(&cml, t).unwrap();
    src
}

/// Every ELF file under `dir`, with what the tool's reader finds in it; each one is checked
/// to be AArch64 by that reader and, independently, by the `object` crate.
fn aarch64_elf_files(dir: &Path) -> std::collections::BTreeMap<PathBuf, elf::ElfInfo> {
    use object::Object;
    let mut out = std::collections::BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if !e.file_type().is_file() {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        if !elf::is_elf(&data) {
            continue;
        }
        let info =
            elf::parse(&data).unwrap_or_else(|err| panic!("{}: {err:#}", e.path().display()));
        assert_eq!(
            info.arch,
            Some(xtask::platform::Arch::Aarch64),
            "{}: e_machine, as the tool reads it",
            e.path().display()
        );
        let file = object::File::parse(&*data).unwrap();
        assert_eq!(
            file.architecture(),
            object::Architecture::Aarch64,
            "{}: e_machine, as the object crate reads it",
            e.path().display()
        );
        out.insert(e.path().to_path_buf(), info);
    }
    out
}

/// How the NEEDED entries of `files` (unpacked under `top`) are found on an aarch64
/// machine: each one is inside `top` (through a RUNPATH), in the manylinux allow-list, the
/// driver (`libcuda.so.1`), or found through the file's RUNPATH `$ORIGIN/../../nvidia/cu13/lib`
/// in `runtime_lib` (the unpacked runtime wheel's `nvidia/cu13/lib`); anything else fails.
/// Returns those of the last kind, by name, with the file found.
fn needed_from_runtime(
    files: &std::collections::BTreeMap<PathBuf, elf::ElfInfo>,
    top: &Path,
    runtime_lib: &Path,
) -> std::collections::BTreeMap<String, PathBuf> {
    let policies = xtask::package::manylinux::Policies::builtin();
    let (top, runtime_lib) = (
        top.canonicalize().unwrap(),
        runtime_lib.canonicalize().unwrap(),
    );
    let mut from_runtime = std::collections::BTreeMap::new();
    for (path, info) in files {
        let origin = path.parent().unwrap().to_str().unwrap();
        for n in &info.needed {
            let found = info.runpath.iter().find_map(|r| {
                let p = PathBuf::from(r.replace("$ORIGIN", origin)).join(n);
                p.is_file().then(|| (r.as_str(), p.canonicalize().unwrap()))
            });
            match found {
                Some((_, real)) if real.starts_with(&top) => {}
                Some((runpath, real)) => {
                    assert!(
                        real.starts_with(&runtime_lib) && runpath == "$ORIGIN/../../nvidia/cu13/lib",
                        "{}: NEEDED {n} is found through RUNPATH {runpath} at {}, outside the artifact and the runtime wheel",
                        path.display(),
                        real.display()
                    );
                    from_runtime.insert(n.clone(), real);
                }
                None => assert!(
                    policies.allows_lib(n, xtask::platform::Arch::Aarch64) || n == "libcuda.so.1",
                    "{}: NEEDED {n} is not in the artifact, not found through RUNPATH {:?}, not in the manylinux allow-list and not the driver",
                    path.display(),
                    info.runpath
                ),
            }
        }
    }
    from_runtime
}

/// `--arch gb10` on this x86-64 machine, through the whole tool: the mini llama.cpp (with
/// ggml's Arm CPU variants) cross-built for aarch64-unknown-linux-gnu by the pinned cross GCC
/// (toolchains/linux-gcc-aarch64.toml) against the hermetic CUDA 13.0 for aarch64 (x86-64
/// nvcc, the `[[aarch64_wheel]]` runtime: `<cache>/cuda/13.0.88-aarch64`). The tool fetches
/// what the cache lacks, as for a user (in CI it starts empty): the pipeline installs the
/// release's whole aarch64 set, nvidia-cublas (~540 MB) included, though the mini library
/// links only the runtime.
///
/// Checked: the plan for `--arch gb10` is the one for `--arch gb10 --target
/// aarch64-unknown-linux-gnu` (and the build's); the build's device code gate saw sm_121a;
/// `inspect` finds SASS sm_121a in libggml-cuda.so only, no PTX; every ELF file is AArch64;
/// `verify` passes; the platform is manylinux_2_NN_aarch64 with NN <= 28; every NEEDED
/// entry is inside the archive, allowed by manylinux, the driver, or libcudart.so.13 from
/// NVIDIA's aarch64 nvidia-cuda-runtime wheel (the pinned one, from the tool's download
/// cache) through RUNPATH `$ORIGIN/../../nvidia/cu13/lib` with the archive unpacked two
/// levels below that wheel's site-packages; and a program built by Debian's
/// aarch64-linux-gnu-gcc dlopen()s libggml-cuda.so under qemu-aarch64, calls its
/// entry point, and its CUDA runtime's cudaGetDeviceCount answers
/// cudaErrorInsufficientDriver (35: no driver here), not a load failure. Unpacked alone,
/// it loads only with LD_LIBRARY_PATH naming the runtime wheel's lib dir.
#[test]
fn cuda_13_0_gb10_archive_cross_built_for_aarch64_has_sm_121a_only_and_loads_under_qemu() {
    use xtask::provision::{fetch, unpack};
    let started = Instant::now();
    let d = tempfile::tempdir().unwrap();
    let src = mini_aarch64_source(d.path());
    let src_s = src.display().to_string();
    let xtask = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
        c.args(args)
            .env("LLAMA_FORGE_CACHE", cache())
            .env("LLAMA_FORGE_BUILD_DIR", d.path().join("work"));
        // Only the hermetic toolkit and the pinned cross compiler: nothing of this machine.
        for v in ["CUDACXX", "CUDA_PATH", "CUDA_HOME", "CC", "CXX"] {
            c.env_remove(v);
        }
        c
    };

    // The plan, cheap: --arch gb10 alone and with --target aarch64-unknown-linux-gnu.
    let plan = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["plan", "llama.cpp", "--arch", "gb10", "--cuda", "13.0"];
        args.extend_from_slice(extra);
        args.extend(["--version", "0.3.36", "--source", &src_s, "--json"]);
        let o = xtask(&args).output().unwrap();
        assert!(o.status.success(), "{}", common::text(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone()
    };
    let implied = plan(&[]);
    let explicit = plan(&["--target", "aarch64-unknown-linux-gnu"]);
    assert!(
        implied == explicit,
        "--arch gb10 and --arch gb10 --target aarch64-unknown-linux-gnu plan differently:\n{implied:#}\n{explicit:#}"
    );
    assert_eq!(explicit["target"], "aarch64-unknown-linux-gnu");
    let cuda = &explicit["cuda"];
    assert_eq!(cuda["architectures"], "121a-real", "{cuda:#}");
    assert_eq!(
        cuda["nvcc"]["path"], "${CACHE}/cuda/13.0.88-aarch64/bin/nvcc",
        "{cuda:#}"
    );
    assert_eq!(
        cuda["nvcc"]["origin"]["file"], "toolchains/cuda-13.0.toml",
        "{cuda:#}"
    );
    assert_eq!(
        cuda["requires"],
        serde_json::json!(["nvidia-cuda-runtime>=13.0,<14", "nvidia-cublas>=13.0,<14"]),
        "{cuda:#}"
    );
    for tool in ["cc", "cxx"] {
        assert_eq!(
            explicit["tools"][tool]["origin"]["file"], "toolchains/linux-gcc-aarch64.toml",
            "{:#}",
            explicit["tools"]
        );
    }
    let variants: Vec<&str> = explicit["cpu_variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        variants,
        [
            "armv8.0_1",
            "armv8.2_1",
            "armv8.2_2",
            "armv8.2_3",
            "armv8.6_1",
            "armv8.6_2"
        ]
    );
    eprintln!("timing: gb10 plans: {:.1?}", started.elapsed());

    // The build, as a user runs it.
    let dist = d.path().join("dist");
    let t = Instant::now();
    let o = xtask(&[
        "build",
        "llama.cpp",
        "--arch",
        "gb10",
        "--cuda",
        "13.0",
        "--version",
        "0.3.36",
        "--source",
        &src_s,
    ])
    .arg("--dist")
    .arg(&dist)
    .output()
    .unwrap();
    let text = common::text(&o);
    eprintln!("{text}");
    assert!(o.status.success(), "{text}");
    eprintln!(
        "timing: gb10 build (with the downloads and tool and CUDA assembly the cache lacked): {:.1?}",
        t.elapsed()
    );
    assert!(
        text.contains("gate: libggml-cuda.so: SASS sm_121a\n"),
        "{text}"
    );
    let name = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".tar.gz"))
        .unwrap_or_else(|| panic!("no archive in {}: {:?}", dist.display(), files_in(&dist)));
    assert!(
        name.ends_with("-cu130.sm121a-linux-aarch64.tar.gz"),
        "{name}"
    );
    let stem = name.strip_suffix(".tar.gz").unwrap();
    let archive = dist.join(&name);
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(format!("{}.manifest.json", archive.display())).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["cuda_code"],
        serde_json::json!({ "libggml-cuda.so": ["SASS sm_121a"] }),
        "the gate's record"
    );
    assert!(
        manifest["plan"] == explicit,
        "the build ran another plan than `plan` printed"
    );
    let platform = manifest["target"]["platform"].as_str().unwrap();
    let glibc: u32 = platform
        .strip_prefix("manylinux_2_")
        .and_then(|p| p.strip_suffix("_aarch64"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a manylinux aarch64 tag: {platform}"));
    assert!(glibc <= 28, "{platform}: newer than manylinux_2_28");

    // inspect: SASS sm_121a in libggml-cuda.so, nothing else anywhere; GB10 only.
    let t = Instant::now();
    let json = run(Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["inspect", "--json"])
        .arg(&archive));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let libs = v["results"][0]["libraries"].as_array().unwrap();
    assert_eq!(libs.len(), 10, "{json}");
    for l in libs {
        let path = l["path"].as_str().unwrap();
        let (sass, cudart) = if path.ends_with("/libggml-cuda.so") {
            (
                serde_json::json!(["sm_121a"]),
                serde_json::json!(["libcudart.so.13"]),
            )
        } else {
            (serde_json::json!([]), serde_json::json!([]))
        };
        assert_eq!(l["sass"], sass, "{path}");
        assert_eq!(l["ptx"], serde_json::json!([]), "{path}: no PTX");
        assert_eq!(l["cuda_libraries"], cudart, "{path}");
        assert!(
            l["manylinux"].as_str().unwrap().ends_with("_aarch64"),
            "{path}: {}",
            l["manylinux"]
        );
    }
    for g in v["results"][0]["gpus"].as_array().unwrap() {
        let want = if g["compute_capability"] == "12.1" {
            "natively"
        } else {
            "no"
        };
        assert_eq!(g["runs"], want, "{g}");
    }
    let out = run(Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("verify")
        .arg(&archive));
    assert!(out.contains(&format!("ok: {}", archive.display())), "{out}");
    eprintln!("timing: inspect and verify: {:.1?}", t.elapsed());

    // A site-packages with NVIDIA's aarch64 runtime wheel (the pinned one, as the tool
    // downloaded it) and the archive two levels below it, where RUNPATH
    // $ORIGIN/../../nvidia/cu13/lib finds the wheel's lib dir.
    let spec = CudaSpec::load(&repo().join("toolchains"), &"13.0".parse().unwrap()).unwrap();
    let wheel = spec
        .aarch64_wheels
        .iter()
        .find(|w| w.name == "nvidia-cuda-runtime")
        .unwrap();
    assert!(
        fetch::cache_path(&cache(), &wheel.url, &wheel.sha256).is_file(),
        "the build fetched the aarch64 runtime wheel into the cache"
    );
    let whl = fetch::fetch(
        &cache(),
        &wheel.url,
        &wheel.sha256,
        &xtask::report::Log::stderr(),
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let site = d.path().join("site-packages");
    unpack::unpack_zip(&whl, &site).unwrap();
    let runtime_lib = site.join("nvidia/cu13/lib");
    std::fs::create_dir_all(site.join("llama_forge")).unwrap();
    let top = site.join("llama_forge").join(stem);
    unpack::unpack_tar_gz(&archive, stem, &top).unwrap();

    let files = aarch64_elf_files(&top);
    let names: std::collections::BTreeSet<String> = files
        .keys()
        .map(|p| p.strip_prefix(&top).unwrap().display().to_string())
        .collect();
    let listed: std::collections::BTreeSet<String> = manifest["binaries"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(names, listed, "the ELF files are the manifest's");
    let runtime_files = aarch64_elf_files(&runtime_lib);
    assert!(
        runtime_files.contains_key(&runtime_lib.join("libcudart.so.13")),
        "{runtime_files:?}"
    );
    let from_runtime = needed_from_runtime(&files, &top, &runtime_lib);
    assert_eq!(
        from_runtime,
        [(
            "libcudart.so.13".to_string(),
            runtime_lib.join("libcudart.so.13").canonicalize().unwrap()
        )]
        .into(),
        "what the archive needs from the runtime wheel"
    );
    // The runtime's own needs are the system's.
    assert_eq!(
        needed_from_runtime(&runtime_files, &runtime_lib, &runtime_lib),
        Default::default()
    );

    // Loaded under qemu-aarch64, up to the driver.
    let path = std::env::var("PATH").unwrap_or_default();
    let which = |tool: &str| xtask::detect::toolchain::which(tool, &path);
    let (Some(gcc), Some(qemu)) = (which("aarch64-linux-gnu-gcc"), which("qemu-aarch64")) else {
        return common::cannot_run_here(
            "no aarch64-linux-gnu-gcc or qemu-aarch64: apt install gcc-aarch64-linux-gnu qemu-user (.ci/run does)",
        );
    };
    // The C library the cross GCC links against, with libgcc_s (libgcc-s1-arm64-cross,
    // which gcc-aarch64-linux-gnu pulls in), as the root qemu loads the program from.
    let arm64 = Path::new("/usr/aarch64-linux-gnu");
    if let Some(f) = [
        "lib/ld-linux-aarch64.so.1",
        "lib/libc.so.6",
        "lib/libgcc_s.so.1",
    ]
    .into_iter()
    .find(|f| !arm64.join(f).is_file())
    {
        return common::cannot_run_here(&format!(
            "no {}: apt install gcc-aarch64-linux-gnu libc6-dev-arm64-cross (.ci/run does)",
            arm64.join(f).display()
        ));
    }
    let t = Instant::now();
    let probe = d.path().join("load_cuda_library");
    run(Command::new(&gcc)
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&probe)
        .arg(repo().join("tests/fixtures/cuda-dlopen/load_cuda_library.c")));
    let load = |lib: &Path, ld_library_path: Option<&Path>| {
        let mut c = Command::new(&qemu);
        c.arg("-L").arg(arm64);
        if let Some(p) = ld_library_path {
            // For the aarch64 program only, not for qemu itself.
            c.arg("-E").arg(format!("LD_LIBRARY_PATH={}", p.display()));
        }
        c.arg(&probe).arg(lib).arg("libcudart.so.13");
        c.env_remove("LD_LIBRARY_PATH");
        let o = c.output().unwrap();
        (o.status.code(), common::text(&o))
    };
    let up_to_the_driver = |(code, out): (Option<i32>, String), cudart: &Path| {
        assert_eq!(code, Some(0), "{out}");
        assert!(
            out.contains("ENTRY_POINT: ggml_cuda_name() = cuda (no device)\n"),
            "{out}"
        );
        assert!(
            out.contains("CUDA_GET_DEVICE_COUNT: 35 cudaErrorInsufficientDriver"),
            "no driver here: {out}"
        );
        let loaded = out
            .lines()
            .find_map(|l| l.strip_prefix("RUNTIME: "))
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(
            Path::new(loaded).canonicalize().unwrap(),
            cudart.canonicalize().unwrap(),
            "{out}"
        );
    };
    let cudart = runtime_lib.join("libcudart.so.13");
    up_to_the_driver(load(&top.join("libggml-cuda.so"), None), &cudart);
    // The same archive unpacked elsewhere: no runtime through its RUNPATH, so it loads only
    // with LD_LIBRARY_PATH naming the wheel's lib dir.
    let alone = d.path().join("alone").join(stem);
    std::fs::create_dir_all(alone.parent().unwrap()).unwrap();
    unpack::unpack_tar_gz(&archive, stem, &alone).unwrap();
    let (code, out) = load(&alone.join("libggml-cuda.so"), None);
    assert!(
        code == Some(2)
            && out.contains("LOAD_ERROR: libcudart.so.13: cannot open shared object file"),
        "{out}"
    );
    up_to_the_driver(
        load(&alone.join("libggml-cuda.so"), Some(&runtime_lib)),
        &cudart,
    );
    eprintln!(
        "timing: the probe, built and run under qemu: {:.1?}",
        t.elapsed()
    );
    eprintln!("timing: the whole test: {:.1?}", started.elapsed());
}

/// CUDA 13.0 for Windows assembled from the index's `win_amd64` wheels, without
/// cuBLAS (~92 MB): its spec and root.
fn windows_13_0() -> (CudaSpec, PathBuf) {
    let spec = CudaSpec::load(&repo().join("toolchains"), &"13.0".parse().unwrap())
        .unwrap()
        .for_windows()
        .unwrap()
        .without(&["nvidia-cublas"])
        .unwrap();
    let root = hermetic::install_windows(&cache(), &spec, &xtask::report::Log::stderr())
        .unwrap_or_else(|e| panic!("{e:#}"));
    (spec, root)
}

/// CUDA 13.0 for Windows from the package index's `win_amd64` wheels (without
/// cuBLAS: ~92 MB): the merged tree has nvcc.profile's layout, and `nvcc.exe` runs
/// under wine, reporting the pinned version and the RTX 50 target. Compiling needs
/// MSVC's cl.exe, which is not here.
#[test]
fn cuda_13_0_for_windows_from_the_index_has_the_layout_and_nvcc_runs_under_wine() {
    let (spec, root) = windows_13_0();
    assert!(root.ends_with("cuda/windows-13.0.88"), "{}", root.display());
    let profile = std::fs::read_to_string(root.join("bin/nvcc.profile")).unwrap();
    assert!(
        profile.contains("$(TOP)/lib/$(_WIN_PLATFORM_)") && profile.contains("$(TOP)/nvvm/bin"),
        "{profile}"
    );
    // Installed again: the same root, taken as it is.
    let again = hermetic::install_windows(&cache(), &spec, &xtask::report::Log::stderr()).unwrap();
    assert_eq!(again, root);

    let path = std::env::var("PATH").unwrap_or_default();
    if xtask::detect::toolchain::which("wine", &path).is_none() {
        return common::cannot_run_here("no wine: apt install wine");
    }
    let prefix = tempfile::tempdir().unwrap();
    let wine = |arg: &str| {
        run(Command::new("wine")
            .arg(root.join("bin/nvcc.exe"))
            .arg(arg)
            .env("WINEDEBUG", "-all")
            .env("WINEPREFIX", prefix.path())
            .stdin(std::process::Stdio::null()))
    };
    let version = wine("--version");
    assert!(version.contains("release 13.0, V13.0.88"), "{version}");
    let archs = wine("--list-gpu-arch");
    assert!(archs.contains("compute_120"), "{archs}");
}

/// Import libraries made from DLL exports (what the Windows toolkit gets for cuBLAS,
/// whose wheels ship no .lib), checked on the one CUDA DLL that comes with a library of
/// NVIDIA's own: the runtime. Ours for `cudart64_13.dll` names every `cuda*` function
/// NVIDIA's `cudart.lib` defines; a program linked against ours by mingw-w64's linker
/// starts under wine only with the DLL beside it, and calls into it (no GPU there: what
/// the calls return is not checked).
#[test]
fn import_library_from_cudart_dll_links_and_runs_under_wine() {
    let (_, root) = windows_13_0();
    let dll = root.join("bin/x86_64/cudart64_13.dll");
    let ours = hermetic::implib::import_library(&dll).unwrap_or_else(|e| panic!("{e:#}"));
    let d = tempfile::tempdir().unwrap();
    let lib = d.path().join("cudart_ours.lib");
    std::fs::write(&lib, &ours).unwrap();

    let path = std::env::var("PATH").unwrap_or_default();
    let which = |tool: &str| xtask::detect::toolchain::which(tool, &path);
    let (Some(nm), Some(gcc)) = (
        which("x86_64-w64-mingw32-nm"),
        which("x86_64-w64-mingw32-gcc-posix"),
    ) else {
        return common::cannot_run_here("no mingw-w64: apt install mingw-w64");
    };
    let symbols = |lib: &Path| -> std::collections::BTreeSet<String> {
        run(Command::new(&nm).arg(lib))
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace().rev();
                let name = f.next()?;
                let kind = f.next()?;
                Some((kind.to_string(), name.to_string()))
            })
            .filter(|(kind, name)| (kind == "T" || kind == "I") && name.starts_with("cuda"))
            .map(|(_, name)| name)
            .collect()
    };
    let nvidia = symbols(&root.join("lib/x64/cudart.lib"));
    let named = symbols(&lib);
    assert!(
        nvidia.len() > 200,
        "NVIDIA's cudart.lib defines {} cuda* functions",
        nvidia.len()
    );
    // NVIDIA's library also defines the Tegra-only cudaDeviceGetNvSciSyncAttributes,
    // which the DLL does not export (not one byte of the name is in it).
    let missing: Vec<_> = nvidia.difference(&named).collect();
    assert_eq!(
        missing,
        ["cudaDeviceGetNvSciSyncAttributes"],
        "NVIDIA's cudart.lib has, ours lacks"
    );
    assert!(
        named.len() >= nvidia.len() - 1,
        "{} vs {}",
        named.len(),
        nvidia.len()
    );

    let exe = d.path().join("cudart_version.exe");
    run(Command::new(&gcc)
        .arg(repo().join("tests/fixtures/implib/cudart_version.c"))
        .arg(&lib)
        .arg("-o")
        .arg(&exe));
    let imports = xtask::binary::pe::read(&exe).unwrap().imports;
    assert!(
        imports.iter().any(|i| i == "cudart64_13.dll"),
        "{imports:?}"
    );
    let Some(wine) = which("wine") else {
        return common::cannot_run_here("no wine: apt install wine");
    };
    let prefix = tempfile::tempdir().unwrap();
    let start = || {
        Command::new(&wine)
            .arg(&exe)
            .current_dir(d.path())
            .env("WINEDEBUG", "-all")
            .env("WINEPREFIX", prefix.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // Without the DLL beside it the program cannot start: the DLL is what it loads.
    let o = start();
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("cudart:"),
        "ran without cudart64_13.dll: {o:?}"
    );
    std::fs::copy(&dll, d.path().join("cudart64_13.dll")).unwrap();
    let o = start();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("cudart: cudaRuntimeGetVersion returned "),
        "{o:?}"
    );
}

/// The fat binary reader (`cuda::fatbin`, through `binary::elf::device_code`) on
/// libraries nvcc 13.5 from the index builds with plain, `a` and `f` cubins and PTX,
/// zstd- and LZ4-compressed: it finds what was asked for, with the suffixes kept, and
/// agrees with cuobjdump 13.5 (whose `--list-elf` drops the `f` of a cubin; its full
/// `-elf` dump keeps it); every payload decompresses to an ELF file or PTX text.
#[test]
fn fatbin_reader_agrees_with_cuobjdump_on_a_and_f_variants() {
    use xtask::cuda::fatbin::Compression;
    use xtask::cuda::{CodeKind, EmbeddedCode};
    let (_, cuda) = install("13.5", &["nvidia-cublas"]);
    let cuobjdump = cuda.root.join("bin/cuobjdump");
    let d = tempfile::tempdir().unwrap();
    let code = |kind, arch: &str| EmbeddedCode {
        kind,
        arch: arch.parse().unwrap(),
    };
    let want: std::collections::BTreeSet<EmbeddedCode> = [
        code(CodeKind::Sass, "120a"),
        code(CodeKind::Sass, "100f"),
        code(CodeKind::Sass, "90"),
        code(CodeKind::Ptx, "120"),
        code(CodeKind::Ptx, "100f"),
    ]
    .into();
    for (mode, compression) in [("size", Compression::Zstd), ("speed", Compression::Lz4)] {
        let lib = d.path().join(format!("libscale-{mode}.so"));
        run(Command::new(&cuda.nvcc)
            .arg("-ccbin")
            .arg(env_or("CXX", "c++"))
            .args(["-shared", "-Xcompiler", "-fPIC", "-Xfatbin=-compress-all"])
            .arg(format!("--compress-mode={mode}"))
            .args([
                "-gencode=arch=compute_120a,code=sm_120a",
                "-gencode=arch=compute_100f,code=sm_100f",
                "-gencode=arch=compute_90,code=sm_90",
                "-gencode=arch=compute_120,code=compute_120",
                "-gencode=arch=compute_100f,code=compute_100f",
            ])
            .arg(repo().join("tests/fixtures/fatbin/scale.cu"))
            .arg("-o")
            .arg(&lib));
        let data = std::fs::read(&lib).unwrap();
        let dc = elf::device_code(&data).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(dc.relfatbin.is_empty());
        assert_eq!(xtask::cuda::fatbin::codes(&dc.entries), want, "{mode}");
        for e in &dc.entries {
            let bytes = xtask::cuda::fatbin::payload(&dc.fatbin, e)
                .unwrap_or_else(|x| panic!("{}: {x}", e.name()));
            match e.code.kind {
                CodeKind::Sass => {
                    assert!(bytes.starts_with(b"\x7fELF"), "{}", e.name());
                    assert_eq!(e.compression, compression, "{mode}: {}", e.name());
                }
                CodeKind::Ptx => {
                    let text = String::from_utf8_lossy(&bytes);
                    let target = format!(".target sm_{}", e.code.arch);
                    assert!(text.contains(&target), "{}: {text}", e.name());
                }
            }
        }
        // The same fat binary in a Windows DLL, where nvcc with MSVC puts it (`.nv_fatb`,
        // a PE section name has 8 bytes), linked by mingw-w64: the gate's reader and
        // inspect find the same code in it.
        if mode == "size" {
            let dll = fatbin_dll(d.path(), &dc.fatbin);
            let got = xtask::package::cuda_gate::embedded(&dll)
                .unwrap_or_else(|e| panic!("{e:#}"))
                .expect("a .nv_fatb section");
            assert_eq!(got, want, "the DLL's device code");
            let json = run(Command::new(env!("CARGO_BIN_EXE_xtask"))
                .args(["inspect", "--json"])
                .arg(&dll));
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(
                v["results"][0]["libraries"][0]["sass"],
                serde_json::json!(["sm_120a", "sm_100f", "sm_90"]),
                "{json}"
            );
        }
        // cuobjdump: the list (cubins' `f` dropped) and the full dump (kept).
        let list = xtask::cuda::parse_list(&format!(
            "{}{}",
            run(Command::new(&cuobjdump).arg("--list-elf").arg(&lib)),
            run(Command::new(&cuobjdump).arg("--list-ptx").arg(&lib))
        ))
        .unwrap();
        let listed: std::collections::BTreeSet<String> =
            list.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            listed,
            [
                "PTX compute_100f",
                "PTX compute_120",
                "SASS sm_100",
                "SASS sm_120a",
                "SASS sm_90"
            ]
            .map(String::from)
            .into(),
            "cuobjdump --list-elf / --list-ptx"
        );
        let dumped =
            xtask::cuda::parse_dump(&run(Command::new(&cuobjdump).arg("-elf").arg(&lib))).unwrap();
        assert_eq!(
            dumped, want,
            "cuobjdump -elf (its entry headers name the PTX too)"
        );

        // `inspect` on the same library, as JSON: the suffixes kept, and per GPU.
        let json = run(Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["inspect", "--json"])
            .arg(&lib));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let l = &v["results"][0]["libraries"][0];
        assert_eq!(
            l["sass"],
            serde_json::json!(["sm_120a", "sm_100f", "sm_90"]),
            "{json}"
        );
        assert_eq!(
            l["ptx"],
            serde_json::json!(["compute_120", "compute_100f"]),
            "{json}"
        );
        let runs = |cc: &str| {
            v["results"][0]["gpus"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["compute_capability"] == cc)
                .map(|g| g["runs"].as_str().unwrap().to_string())
                .unwrap()
        };
        assert_eq!(runs("12.0"), "natively", "sm_120a");
        assert_eq!(runs("10.3"), "natively", "sm_100f runs on its family");
        // Only compute_120 covers a GB10, but no GB10 machine loads an x86-64 library.
        assert_eq!(runs("12.1"), "no", "an x86-64 library on a DGX Spark");
        let gb10 = v["results"][0]["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["compute_capability"] == "12.1")
            .unwrap();
        assert_eq!(gb10["code_runs"], "ptx_jit", "{gb10}");
        assert_eq!(gb10["only_in"], "aarch64", "{gb10}");
        assert_eq!(runs("8.9"), "no");
    }
}

/// A Windows DLL (x86-64, linked by mingw-w64's GCC) whose `.nv_fatb` section holds
/// `fatbin`, as nvcc with MSVC lays out a CUDA DLL.
fn fatbin_dll(dir: &Path, fatbin: &[u8]) -> PathBuf {
    let blob = dir.join("device.fatbin");
    std::fs::write(&blob, fatbin).unwrap();
    let c = dir.join("fatbin_dll.c");
    std::fs::write(
        &c,
        format!(
            "__asm__(\".section .nv_fatb,\\\"dr\\\"\\n.balign 8\\n.incbin \\\"{}\\\"\\n.text\");\n\
             __declspec(dllexport) int forge_probe(void) {{ return 1; }}\n",
            blob.display()
        ),
    )
    .unwrap();
    let dll = dir.join("scale.dll");
    run(Command::new("x86_64-w64-mingw32-gcc-posix")
        .args(["-shared", "-o"])
        .arg(&dll)
        .arg(&c));
    dll
}

/// bitsandbytes 0.50.2 from the package index, its Linux and its Windows wheel (pinned
/// by sha256; built by its CI with nvcc, on Windows with MSVC, so the DLLs carry their
/// device code in `.nv_fatb` as real MSVC builds do): `inspect` finds in every CUDA
/// library the cubins cuobjdump lists, cuobjdump 13.5 on the `.so` files and 13.2's
/// `cuobjdump.exe` under wine on the DLLs. Both cuobjdumps stop at the first cubin of
/// `libbitsandbytes_cuda121` (.so and .dll: "Invalid ELF"); the reader reads all seven.
#[test]
fn inspect_agrees_with_cuobjdump_on_the_bitsandbytes_wheels_for_linux_and_windows() {
    const WHEELS: [(&str, &str); 2] = [
        (
            "https://files.pythonhosted.org/packages/a5/6e/e4e8b75716dbe5e50964f070266e06f4e6806ce051bfb97f52ee162b9310/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
            "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283",
        ),
        (
            "https://files.pythonhosted.org/packages/72/82/742dc27a1feab90c8f87f2ed14e6d72d05f9e1cf764b4d2ba30aa9b4a2cb/bitsandbytes-0.50.2-py3-none-win_amd64.whl",
            "c697963c8fda3dcd0d7ebd9b5211ae4067feef7cd06e0350d4e816a434fe683d",
        ),
    ];
    let (_, cuda) = install("13.5", &["nvidia-cublas"]);
    let (_, win) = windows_13_0();
    let d = tempfile::tempdir().unwrap();
    let log = xtask::report::Log::stderr();
    let mut compared = Vec::new();
    for (url, sha) in WHEELS {
        let whl = xtask::provision::fetch::fetch(&cache(), url, &sha.parse().unwrap(), &log)
            .unwrap_or_else(|e| panic!("{e:#}"));
        let json = run(Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["inspect", "--json"])
            .arg(&whl));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        // Its CUDA libraries are alternatives, one loaded per CUDA runtime: judged by the
        // best of them, 12.0 (RTX 50) runs natively with the cuda128/130/132 ones, and
        // 7.5 (T4) with all of them. (It said "cannot run on 12.0" when all were judged
        // as loaded together.)
        let verdict = |cc: &str| {
            v["results"][0]["gpus"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["compute_capability"] == cc)
                .unwrap_or_else(|| panic!("{cc} not judged: {}", v["results"][0]["gpus"]))
                .clone()
        };
        let ext = if url.ends_with("win_amd64.whl") {
            "dll"
        } else {
            "so"
        };
        let g = verdict("12.0");
        assert_eq!(g["runs"], "natively", "{g}");
        let with: Vec<&str> = g["with"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(
            with,
            ["128", "130", "132"].map(|c| format!("libbitsandbytes_cuda{c}.{ext}")),
            "{g}"
        );
        assert_eq!(verdict("7.5")["runs"], "natively");
        let unpacked = d.path().join(whl.file_name().unwrap());
        xtask::provision::unpack::unpack_zip(&whl, &unpacked).unwrap();
        for lib in v["results"][0]["libraries"].as_array().unwrap() {
            let name = lib["path"].as_str().unwrap();
            if !name.contains("_cuda1") {
                continue;
            }
            // Ours, with the `f` dropped as cuobjdump --list-elf drops it.
            let ours: std::collections::BTreeSet<String> = lib["sass"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().trim_end_matches('f').to_string())
                .collect();
            assert!(ours.len() >= 7, "{name}: {ours:?}");
            let path = unpacked.join(name);
            let out = if name.ends_with(".dll") {
                Command::new("wine")
                    .arg(win.join("bin/cuobjdump.exe"))
                    .arg("--list-elf")
                    .arg(&path)
                    .env("WINEDEBUG", "-all")
                    .env("WINEPREFIX", d.path().join("wine"))
                    .output()
                    .unwrap()
            } else {
                Command::new(cuda.root.join("bin/cuobjdump"))
                    .arg("--list-elf")
                    .arg(&path)
                    .output()
                    .unwrap()
            };
            let stdout = String::from_utf8_lossy(&out.stdout);
            let listed: std::collections::BTreeSet<String> = stdout
                .lines()
                .map(str::trim_end)
                .filter(|l| l.starts_with("ELF file"))
                .map(|l| {
                    let c = xtask::cuda::parse_list(l).unwrap_or_else(|e| panic!("{e}: {l}"));
                    let code = c.into_iter().next().unwrap();
                    format!("sm_{}", code.arch)
                })
                .collect();
            if name.contains("libbitsandbytes_cuda121.") {
                // cuobjdump.exe under wine writes its error to stdout.
                let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
                assert!(
                    !out.status.success() && all.contains("Invalid ELF"),
                    "cuobjdump used to refuse {name}: {all}"
                );
                assert!(listed.is_subset(&ours) && listed.len() < ours.len());
                continue;
            }
            assert!(
                out.status.success(),
                "{name}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(listed, ours, "{name}: cuobjdump vs inspect");
            compared.push(name.to_string());
        }
    }
    // Six .so files and six DLLs compared (cuda121 refused by both cuobjdumps).
    assert_eq!(compared.len(), 12, "{compared:?}");
}
