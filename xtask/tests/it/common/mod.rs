//! Helpers shared by the integration tests: run the real `xtask` binary.
// Each test binary includes this module and uses part of it; `pub` is how its tests reach
// it (a test binary exports nothing); helpers say on stderr why a test skips.
#![allow(dead_code, unreachable_pub, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The shared download/tool cache: tests reuse what earlier runs fetched.
pub fn cache() -> PathBuf {
    repo().join("vendor/cache")
}

pub fn xtask(args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(args);
    c.env("LLAMA_FORGE_CACHE", cache());
    // No defaults of this machine's user (llama-forge.toml, LLAMA_FORGE_ARCH, ...).
    c.env("XDG_CONFIG_HOME", "/nonexistent/llama-forge-tests/config");
    for k in [
        "ARCH",
        "TARGET",
        "CUDA",
        "CPU_BASELINE",
        "PY",
        "DIST",
        "LAUNCHER",
        "JOBS",
        "SUBSTITUTERS",
        "SIGNING_KEY",
        "SIGNING_KEY_PASSWORD",
    ] {
        c.env_remove(format!("LLAMA_FORGE_{k}"));
    }
    // Colour only where a test asks for it.
    c.env_remove("FORCE_COLOR").env_remove("NO_COLOR");
    // Straight to the tests' servers on 127.0.0.1, behind a proxy too.
    for k in ["ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"] {
        c.env_remove(k).env_remove(k.to_lowercase());
    }
    // No GPU, on a machine with one too: `--arch auto` (the default) builds for the CPU,
    // as the tests that leave --arch out expect. A test that wants a GPU seen names its
    // own nvidia-smi; one that wants this machine's removes the variable.
    c.env(
        "LLAMA_FORGE_NVIDIA_SMI",
        "/nonexistent/llama-forge-tests/nvidia-smi",
    );
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

pub fn run(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let out = xtask(args, envs).output().expect("xtask runs");
    eprintln!(
        "$ xtask {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A test that cannot run on this machine says why and stops; under `CI=true` that is a
/// failure, never a pass (CI installs everything the tests need).
pub fn cannot_run_here(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true, and this test cannot run: {why}"
    );
    eprintln!("skipped: {why}");
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A second checkout at `root`: the repo's recipes/ and toolchains/ copied
/// (what the tool reads from its root); point `LLAMA_FORGE_ROOT` at it.
pub fn checkout(root: &Path) {
    for sub in ["recipes", "toolchains"] {
        copy_tree(&repo().join(sub), &root.join(sub));
    }
}

/// Copies the files under `from` (recipes/patches/ too) to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// `build llama.cpp --source src` (and `extra`, with `envs`) from a checkout at
/// `side/repo` with its build dir at `side/work`; returns its dist dir and the
/// tool's output.
pub fn build_in_checkout(
    side: &Path,
    src: &Path,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (PathBuf, String) {
    let root = side.join("repo");
    checkout(&root);
    let dist = root.join("dist");
    let (src_s, dist_s) = (src.display().to_string(), dist.display().to_string());
    let mut args = vec!["build", "llama.cpp"];
    args.extend_from_slice(extra);
    args.extend(["--version", "0.3.36", "--source", &src_s, "--dist", &dist_s]);
    let mut c = xtask(&args, envs);
    c.env("LLAMA_FORGE_ROOT", &root)
        .env("LLAMA_FORGE_BUILD_DIR", side.join("work"));
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    (dist, text(&o))
}

/// The sha256 of a .tar.gz archive, after checking that `path_not_inside`
/// (a build-machine path) appears nowhere in its uncompressed bytes.
pub fn archive_sha256_without(archive: &Path, path_not_inside: &Path) -> String {
    let data = std::fs::read(archive).unwrap();
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&data[..]), &mut tar).unwrap();
    let needle = path_not_inside.display().to_string();
    assert!(
        !tar.windows(needle.len()).any(|w| w == needle.as_bytes()),
        "{needle} is inside {}",
        archive.display()
    );
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(&data))
}

/// Copies the mini-llama fixture so a test can change it.
pub fn mini_source(dir: &Path) -> PathBuf {
    let src = repo().join("tests/fixtures/mini-llama");
    let dst = dir.join("mini-llama");
    for e in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let to = dst.join(e.path().strip_prefix(&src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
    dst
}

/// The host `python3`'s version, `311`.
pub fn host_python() -> String {
    let o = Command::new("python3")
        .args([
            "-c",
            "import sys; print(f'{sys.version_info[0]}{sys.version_info[1]}')",
        ])
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// Runs a command, shows its output, and fails the test if it fails.
pub fn sh(cmd: &mut Command) -> String {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let t = text(&o);
    eprintln!("$ {cmd:?}\n{t}");
    assert!(o.status.success(), "{cmd:?} failed:\n{t}");
    t
}

/// `TOKENS: 1 2 3` from a smoke script's output.
pub fn tokens(out: &str) -> Vec<u32> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("TOKENS:"))
        .unwrap_or_else(|| panic!("no TOKENS line in:\n{out}"));
    line.split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect()
}

/// A fresh venv at `dir` (replacing one there); returns its python.
/// The build dir of the real llama.cpp builds (`LLAMA_FORGE_BUILD_DIR`), kept under
/// target/ so reruns resume. e2e.rs and release.rs share it: work dirs are keyed by
/// the source, so a release of the wheel e2e built recompiles nothing.
pub fn real_build_dir() -> PathBuf {
    let d = repo().join("target/e2e/build");
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn venv(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    sh(Command::new("python3").args(["-m", "venv"]).arg(dir));
    dir.join("bin/python")
}

/// The gguf-py package of the recipe's pinned llama-cpp-python sdist (0.3.36), and beside it
/// that tree's `include` and `ggml/include`: unpacked once from the tests' cache (where a
/// build or, before any, the release's plan downloads it), under target/e2e/. Not from a stable build path: every release of
/// the project, from every checkout, builds at one path, so what is unpacked there is
/// whichever build ran last.
pub fn gguf_py() -> PathBuf {
    let recipe: toml::Value = toml::from_str(
        &std::fs::read_to_string(repo().join("recipes/llama-cpp-python.toml")).unwrap(),
    )
    .unwrap();
    let pin = &recipe["release"][0];
    let source = &pin["source"][0];
    let (url, sha, strip) = (
        source["url"].as_str().unwrap(),
        source["sha256"].as_str().unwrap(),
        source["strip"].as_str().unwrap(),
    );
    let sdist = cache()
        .join("downloads")
        .join(sha)
        .join(url.rsplit('/').next().unwrap());
    if !sdist.is_file() {
        // No build of the pinned release ran yet: its plan downloads the sdist (and checks
        // it) into the tests' cache, as a build would.
        let version = pin["version"].as_str().unwrap();
        let out = xtask(
            &[
                "plan",
                "llama-cpp-python",
                "--version",
                version,
                "--arch",
                "cpu",
            ],
            &[],
        )
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "plan --version {version}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(sdist.is_file(), "{} after its plan", sdist.display());
    let dir = repo().join(format!("target/e2e/{strip}-{}", &sha[..16]));
    let tree = dir.join(strip).join("vendor/llama.cpp");
    if !tree.join("gguf-py").is_dir() {
        let tmp = repo().join(format!("target/e2e/.unpacking-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let inside = |p: &str| format!("{strip}/vendor/llama.cpp/{p}");
        sh(Command::new("tar")
            .arg("xzf")
            .arg(&sdist)
            .arg("-C")
            .arg(&tmp)
            .args([inside("gguf-py"), inside("include"), inside("ggml/include")]));
        // Another lane may have made it meanwhile: then its copy is kept.
        if std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }
    let p = tree.join("gguf-py");
    assert!(p.is_dir(), "{}", p.display());
    p
}

/// Writes a tiny GGUF model (fixed seed) to `model` with the pinned release's gguf-py.
pub fn tiny_model(python: &Path, model: &Path) -> PathBuf {
    sh(Command::new(python)
        .arg(repo().join("tests/e2e/make_tiny_gguf.py"))
        .arg(model)
        .args(["--seed", "0", "--gguf-py"])
        .arg(gguf_py()));
    model.to_path_buf()
}

/// The features ggml's CPU score checks, as this machine's CPU has them (`/proc/cpuinfo`).
pub fn host_cpu_features() -> Vec<xtask::cpu::Feature> {
    use xtask::cpu::Feature::*;
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let flags: Vec<&str> = info
        .lines()
        .find_map(|l| l.strip_prefix("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f.split_whitespace().collect())
        .unwrap_or_default();
    let has = |f: &str| flags.contains(&f);
    let mut out = Vec::new();
    for (feature, needs) in [
        (Sse42, &["sse4_2"][..]),
        (Avx, &["avx"]),
        (F16c, &["f16c"]),
        (Fma, &["fma"]),
        (Avx2, &["avx2"]),
        (Bmi2, &["bmi2"]),
        (AvxVnni, &["avx_vnni"]),
        (
            Avx512,
            &["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"],
        ),
        (Avx512Vbmi, &["avx512vbmi"]),
        (Avx512Vnni, &["avx512_vnni"]),
        (Avx512Bf16, &["avx512_bf16"]),
        (AmxTile, &["amx_tile"]),
        (AmxInt8, &["amx_int8"]),
    ] {
        if needs.iter().all(|n| has(n)) {
            out.push(feature);
        }
    }
    out
}

/// The CPU variant file a manifest says `model` (a `qemu-x86_64 -cpu` name) loads.
pub fn variant_for_model(manifest: &serde_json::Value, model: &str) -> String {
    manifest["plan"]["cpu_variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| {
            v["loaded_on"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m == model)
        })
        .unwrap_or_else(|| panic!("the manifest names no variant for {model}"))["file"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The CPU variant file ggml loads on this machine, from the manifest's variants.
pub fn variant_for_host(manifest: &serde_json::Value) -> String {
    let recorded = manifest["plan"]["cpu_variants"].as_array().unwrap();
    let shipped: Vec<&xtask::cpu::Variant> = recorded
        .iter()
        .map(|v| xtask::cpu::variants::find(v["name"].as_str().unwrap()).unwrap())
        .collect();
    let chosen = xtask::cpu::selected(&shipped, &host_cpu_features())
        .expect("this CPU runs one of the shipped variants");
    recorded.iter().find(|v| v["name"] == chosen.name).unwrap()["file"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `qemu-x86_64`, which runs x86-64 programs as an older CPU (`-cpu Nehalem`): `None`
/// (after [`cannot_run_here`]) where it is not installed.
pub fn qemu() -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = xtask::detect::toolchain::which("qemu-x86_64", &path);
    if found.is_none() {
        cannot_run_here("qemu-x86_64 is not installed (Debian: qemu-user)");
    }
    found
}

/// `program`, run natively, or under `qemu-x86_64 -cpu CPU` when `as_cpu` is `(qemu, CPU)`.
///
/// Under qemu, OpenBLAS (in numpy's wheels, which the llama_cpp wheel requires) is
/// told the CPU: its own detection picks AVX kernels under qemu's Nehalem (numpy
/// 2.3.5 and 2.4.6 both die with SIGILL in `import numpy` there, at a `vxorps`;
/// OPENBLAS_CORETYPE=Nehalem mends it). ggml's choice of variant is not affected: it
/// reads CPUID, as the tests check.
pub fn on_cpu(as_cpu: Option<(&Path, &str)>, program: &Path) -> Command {
    match as_cpu {
        Some((qemu, cpu)) => {
            let mut c = Command::new(qemu);
            c.args(["-cpu", cpu]).arg(program);
            c.env("OPENBLAS_CORETYPE", cpu);
            c
        }
        None => Command::new(program),
    }
}

/// The `GGML_MODULES:` line's files.
pub fn ggml_modules(out: &str) -> Vec<String> {
    out.lines()
        .find_map(|l| l.strip_prefix("GGML_MODULES:"))
        .unwrap_or_else(|| panic!("no GGML_MODULES line in:\n{out}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The mini project as mingw-w64 builds it for Windows: ggml's targets without the
/// `lib` prefix (as ggml's CMakeLists does on Windows), and the two files the 0.3.36
/// mingw patches change.
pub fn mini_windows_source(dir: &Path) -> std::path::PathBuf {
    let src = mini_source(dir);
    let cml = src.join("CMakeLists.txt");
    let mut t = std::fs::read_to_string(&cml).unwrap();
    t.push_str(
        "if (WIN32)\n    set_target_properties(ggml-base ggml PROPERTIES PREFIX \"\")\n    foreach(v x64 sse42 sandybridge ivybridge piledriver haswell skylakex cannonlake cascadelake icelake cooperlake zen4 alderlake sapphirerapids)\n        if (TARGET ggml-cpu-${v})\n            set_target_properties(ggml-cpu-${v} PROPERTIES PREFIX \"\")\n        endif()\n    endforeach()\nendif()\n",
    );
    std::fs::write(&cml, t).unwrap();
    let cpu = src.join("ggml/src/ggml-cpu");
    std::fs::create_dir_all(cpu.join("amx")).unwrap();
    std::fs::write(
        cpu.join("ggml-cpu.c"),
        "// stand-in: the line the mingw patch replaces\n        THREAD_POWER_THROTTLING_STATE t;\n",
    )
    .unwrap();
    std::fs::write(
        cpu.join("amx/common.h"),
        "// stand-in: the line the mingw patch follows\n#include <type_traits>\n",
    )
    .unwrap();
    src
}

/// A `redis-server` of the test's own, on 127.0.0.1 at a free port, with its files in
/// a temp dir; killed when dropped, so also when the test fails.
pub struct Redis {
    child: std::process::Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    /// Starts one and waits until it answers PING. `REDIS_SERVER` names the program,
    /// else `redis-server` on PATH; `None` (after [`cannot_run_here`]) where there is none.
    pub fn start() -> Option<Redis> {
        let path = std::env::var("PATH").unwrap_or_default();
        let Some(bin) = std::env::var_os("REDIS_SERVER")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| xtask::detect::toolchain::which("redis-server", &path))
        else {
            cannot_run_here(
                "redis-server is not installed: apt install redis-server (.ci/run installs it), or set REDIS_SERVER",
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&bin)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(std::fs::File::create(dir.path().join("redis.log")).unwrap())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let redis = Redis {
            child,
            port,
            _dir: dir,
        };
        let start = std::time::Instant::now();
        while redis.command("PING").as_deref() != Some("+PONG") {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(20),
                "{} did not answer on 127.0.0.1:{port}",
                bin.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(redis)
    }

    /// `redis://127.0.0.1:<port>`, for `SCCACHE_REDIS_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Sends one inline command and returns the first line of the reply (`+PONG`, `:12`).
    pub fn command(&self, cmd: &str) -> Option<String> {
        use std::io::{BufRead, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.write_all(format!("{cmd}\r\n").as_bytes()).ok()?;
        let mut line = String::new();
        std::io::BufReader::new(s).read_line(&mut line).ok()?;
        Some(line.trim_end().to_string())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The statistics sccache's server of the build under `work` (an `LLAMA_FORGE_BUILD_DIR`)
/// left, as JSON.
pub fn sccache_stats(work: &Path) -> serde_json::Value {
    let found: Vec<PathBuf> = std::fs::read_dir(work)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("logs/sccache-stats.json"))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(found.len(), 1, "one build under {}", work.display());
    serde_json::from_slice(&std::fs::read(&found[0]).unwrap()).unwrap()
}

/// Debian 12's packages of an arm64 CPython 3.11 that runs `-m venv` and pip: the
/// interpreter and its standard library, the libraries the interpreter and the standard
/// library's extension modules link (their DT_NEEDED, closed over: `_ssl`, `_hashlib`,
/// `_sqlite3`, `_ctypes`, `_lzma`, `_bz2`, `zlib`, `pyexpat`, `readline`, `_curses`,
/// `_uuid`, `_dbm`, `nis` (libnsl, libtirpc and with it Kerberos), `_crypt`), glibc with
/// its loader, libgcc_s (glibc loads it for `pthread_exit` and thread cancellation), and
/// pip's wheel, unpacked into `usr/lib/python3/dist-packages`. Left out of
/// `apt-cache depends --recurse python3.11:arm64`: what only `dpkg`, `tar`, `perl` and
/// `install-info` need, `media-types` and `readline-common` (data files), and
/// python3.11-venv/python3-setuptools-whl (ensurepip: see [`Arm64Python::venv`]).
pub const ARM64_PYTHON_PACKAGES: &[&str] = &[
    "python3.11:arm64",
    "python3.11-minimal:arm64",
    "libpython3.11-minimal:arm64",
    "libpython3.11-stdlib:arm64",
    "libc6:arm64",
    "libgcc-s1:arm64",
    "zlib1g:arm64",
    "libexpat1:arm64",
    "libssl3:arm64",
    "libffi8:arm64",
    "libbz2-1.0:arm64",
    "liblzma5:arm64",
    "libsqlite3-0:arm64",
    "libncursesw6:arm64",
    "libtinfo6:arm64",
    "libreadline8:arm64",
    "libuuid1:arm64",
    "libdb5.3:arm64",
    "libcrypt1:arm64",
    "libnsl2:arm64",
    "libtirpc3:arm64",
    "libgssapi-krb5-2:arm64",
    "libkrb5-3:arm64",
    "libk5crypto3:arm64",
    "libkrb5support0:arm64",
    "libcom-err2:arm64",
    "libkeyutils1:arm64",
    "python3-pip-whl",
];

/// Debian 12's arm64 CPython 3.11 ([`ARM64_PYTHON_PACKAGES`] unpacked into `root`), run
/// under qemu-user: [`arm64_python`].
///
/// Programs: `root/usr/bin/python3.11` is the aarch64 interpreter; `root/usr/bin/python3.11-qemu`
/// ([`Arm64Python::python`]) is a shell script that runs it with
/// `qemu-aarch64 -L root -0 "$0" root/usr/bin/python3.11 "$@"`. Under `-L root` qemu looks
/// for every absolute path the program opens under `root` first (the loader
/// `/lib/ld-linux-aarch64.so.1`, glibc, `/usr/lib/python3.11`), else on the host (the
/// test's files). `-0 "$0"` hands the script's own path to Python as `argv[0]`, from which
/// it finds its prefix, or a venv's `pyvenv.cfg`, and which becomes `sys.executable`.
///
/// Why a script: without binfmt_misc (none is registered on the 2-core Debian 12 machine
/// this was written on, the kind CI runs on: its `/proc/sys/fs/binfmt_misc` is an empty
/// dir, not even mounted), a program under qemu-user that
/// starts another program asks the host kernel, which runs x86-64 programs natively and
/// refuses aarch64 ones ("Exec format error": so `python3.11 -m venv` with pip fails at
/// ensurepip's `subprocess.run([sys.executable, ...])`). With `sys.executable` a script,
/// the kernel runs `/bin/sh`, and that runs qemu again: a subprocess of Python is aarch64
/// too, and so are host programs given the script or a venv's `bin/python` (a symlink to
/// it), such as `xtask doctor --python`.
#[derive(Debug, Clone)]
pub struct Arm64Python {
    /// The packages unpacked (`usr/bin/python3.11`, `lib/ld-linux-aarch64.so.1`, ...), and
    /// `PACKAGES`: the `.deb` files, with their versions.
    pub root: PathBuf,
    /// `qemu-aarch64`, as found on PATH; the scripts name it.
    pub qemu: PathBuf,
}

impl Arm64Python {
    /// The script that runs the interpreter under qemu (see [`Arm64Python`]).
    pub fn python(&self) -> PathBuf {
        self.root.join("usr/bin/python3.11-qemu")
    }

    /// A command running the arm64 `python3.11`; add its arguments.
    pub fn command(&self) -> Command {
        Command::new(self.python())
    }

    /// A fresh venv at `dir` (replacing one there); returns its `bin/python`, which host
    /// programs run as any Python (a symlink to [`Arm64Python::python`]). Its pip is the
    /// one in the base's `dist-packages` (`--system-site-packages`, which holds nothing
    /// else): `bin/python -m pip install --no-index ...` installs into the venv. Not
    /// ensurepip's own copy: it takes 40 s or more per venv under qemu, byte-compiling pip
    /// and setuptools each time, where this takes about 1 s.
    pub fn venv(&self, dir: &Path) -> PathBuf {
        let _ = std::fs::remove_dir_all(dir);
        sh(self
            .command()
            .args(["-m", "venv", "--without-pip", "--system-site-packages"])
            .arg(dir));
        dir.join("bin/python")
    }
}

/// `'text'` for /bin/sh.
fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Debian 12's arm64 CPython 3.11 under qemu-user ([`Arm64Python`]), made once per machine
/// under `target/arm64-python/<key>` (the key: a hash of [`ARM64_PYTHON_PACKAGES`]):
/// `apt-get download` of the packages (the arm64 architecture added to dpkg and its lists
/// updated: `.ci/run` does), `dpkg-deb -x` of each into one root, pip's wheel unpacked
/// into its `dist-packages`, and the standard library and pip byte-compiled by the arm64
/// Python itself (Debian ships no `.pyc` files: its postinst makes them. Without them every
/// start compiles what it imports, under emulation: `pip install` of one small wheel took
/// 20 s instead of 5 s). Made in a temporary dir and renamed into place, so a dir at the
/// key is complete; two processes making it at once both succeed, one rename wins.
/// `None` (after [`cannot_run_here`]) without qemu-aarch64, apt-get or dpkg's arm64
/// architecture.
pub fn arm64_python() -> Option<Arm64Python> {
    static MADE: std::sync::OnceLock<Option<Arm64Python>> = std::sync::OnceLock::new();
    MADE.get_or_init(make_arm64_python).clone()
}

fn make_arm64_python() -> Option<Arm64Python> {
    use sha2::Digest;
    use std::time::Instant;
    let path = std::env::var("PATH").unwrap_or_default();
    let mut tools = Vec::new();
    for (program, install) in [
        ("qemu-aarch64", "apt install qemu-user"),
        ("apt-get", "a Debian or Ubuntu machine"),
        ("dpkg-deb", "a Debian or Ubuntu machine"),
    ] {
        match xtask::detect::toolchain::which(program, &path) {
            Some(p) => tools.push(p),
            None => {
                cannot_run_here(&format!("no {program}: {install} (.ci/run installs it)"));
                return None;
            }
        }
    }
    let qemu = tools[0].clone();
    let key = hex::encode(&sha2::Sha256::digest(ARM64_PYTHON_PACKAGES.join("\n"))[..8]);
    let parent = repo().join("target/arm64-python");
    let root = parent.join(&key);
    let python = Arm64Python {
        root: root.clone(),
        qemu: qemu.clone(),
    };
    if python.python().is_file() {
        return Some(python);
    }
    let foreign = sh(Command::new("dpkg").arg("--print-foreign-architectures"));
    if !foreign.lines().any(|l| l.trim() == "arm64") {
        cannot_run_here(
            "dpkg has no arm64 architecture, so apt-get cannot download arm64 packages: \
             dpkg --add-architecture arm64 && apt-get update (.ci/run does)",
        );
        return None;
    }
    let t = Instant::now();
    let (_tmp, made) = unpack_arm64_debs(&parent, ARM64_PYTHON_PACKAGES);
    eprintln!(
        "arm64 python: apt-get download, dpkg-deb -x: {:.1?}",
        t.elapsed()
    );
    // Run from the temporary root; the scripts name the final one.
    let run = |args: &[&str]| {
        sh(Command::new(&qemu)
            .arg("-L")
            .arg(&made)
            .arg(made.join("usr/bin/python3.11"))
            .args(args))
    };
    let t = Instant::now();
    let wheels = made.join("usr/share/python-wheels");
    let pip = files_in(&wheels)
        .into_iter()
        .find(|f| f.starts_with("pip-") && f.ends_with(".whl"))
        .unwrap_or_else(|| panic!("no pip wheel in {}", wheels.display()));
    let site = made.join("usr/lib/python3/dist-packages");
    run(&[
        "-m",
        "zipfile",
        "-e",
        wheels.join(&pip).to_str().unwrap(),
        site.to_str().unwrap(),
    ]);
    eprintln!("arm64 python: {pip} unpacked: {:.1?}", t.elapsed());
    let t = Instant::now();
    // -s/-p: the file names in the .pyc files are those of the final root.
    run(&[
        "-m",
        "compileall",
        "-q",
        "-j0",
        "-s",
        made.to_str().unwrap(),
        "-p",
        root.to_str().unwrap(),
        made.join("usr/lib/python3.11").to_str().unwrap(),
        site.to_str().unwrap(),
    ]);
    eprintln!("arm64 python: compileall: {:.1?}", t.elapsed());
    let script = made.join("usr/bin/python3.11-qemu");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             # Debian 12's arm64 python3.11 under qemu-user, made by xtask/tests/it/common (arm64_python):\n\
             # -0 \"$0\" makes this script's path (or a venv's bin/python) Python's argv[0] and\n\
             # sys.executable, so its subprocesses run under qemu too.\n\
             exec {} -L {} -0 \"$0\" {} \"$@\"\n",
            sh_quote(&qemu),
            sh_quote(&root),
            sh_quote(&root.join("usr/bin/python3.11")),
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    rename_into_place(&made, &root, &python.python());
    Some(python)
}

/// `packages` (arm64), `apt-get download`ed into a temporary dir under `parent` and
/// unpacked (`dpkg-deb -x`) into its `root/`, with `root/PACKAGES` listing the `.deb` files
/// (name_version_arch.deb: which versions this is). The dir lives as long as the handle.
fn unpack_arm64_debs(parent: &Path, packages: &[&str]) -> (tempfile::TempDir, PathBuf) {
    std::fs::create_dir_all(parent).unwrap();
    let tmp = tempfile::Builder::new()
        .prefix(".making-")
        .tempdir_in(parent)
        .unwrap();
    let (debs, made) = (tmp.path().join("debs"), tmp.path().join("root"));
    std::fs::create_dir_all(&debs).unwrap();
    sh(Command::new("apt-get")
        .arg("download")
        .args(packages)
        .current_dir(&debs));
    let unpacked = files_in(&debs);
    for deb in &unpacked {
        sh(Command::new("dpkg-deb")
            .arg("-x")
            .arg(debs.join(deb))
            .arg(&made));
    }
    std::fs::write(made.join("PACKAGES"), unpacked.join("\n") + "\n").unwrap();
    (tmp, made)
}

/// Renames a root made in a temporary dir into place; another process that made it first
/// (`done` exists: its root is complete, as this one is) is fine.
fn rename_into_place(made: &Path, root: &Path, done: &Path) {
    match std::fs::rename(made, root) {
        Ok(()) => {}
        Err(_) if done.is_file() => {}
        Err(e) => panic!(
            "cannot rename {} to {}: {e}",
            made.display(),
            root.display()
        ),
    }
}

impl Arm64Python {
    /// An aarch64 program (an unpacked archive's tool) under
    /// `qemu-aarch64 -L <root> -cpu CPU`: its loader, glibc 2.36 and libgcc_s come from this
    /// root (Debian's libc6-arm64-cross in /usr/aarch64-linux-gnu has no libgcc_s.so.1).
    pub fn on_cpu(&self, cpu: &str, program: &Path) -> Command {
        let mut c = Command::new(&self.qemu);
        c.arg("-L").arg(&self.root).args(["-cpu", cpu]).arg(program);
        c
    }

    /// The same as one line for /bin/sh or Python's `shlex.split`:
    /// `'qemu-aarch64' -L 'root' -cpu CPU` (smoke_llama_cli.py's `--run-with`).
    pub fn on_cpu_prefix(&self, cpu: &str) -> String {
        format!(
            "{} -L {} -cpu {}",
            sh_quote(&self.qemu),
            sh_quote(&self.root),
            sh_quote(Path::new(cpu))
        )
    }

    /// A Python of this root (the base's [`Arm64Python::python`] or a venv's `bin/python`)
    /// run as CPU: `QEMU_CPU`, which qemu-user reads where its command line names no
    /// `-cpu` (the script's does not), so the subprocesses it starts run as CPU too.
    pub fn python_on_cpu(&self, python: &Path, cpu: &str) -> Command {
        let mut c = Command::new(python);
        c.env("QEMU_CPU", cpu);
        c
    }
}

/// Every ELF file under `dir`, by path relative to it, with its `e_machine` as the
/// `object` crate reads it (independently of the tool's own ELF reader).
pub fn elf_machines(dir: &Path) -> Vec<(String, object::Architecture)> {
    use object::Object;
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if !e.file_type().is_file() {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        if !data.starts_with(b"\x7fELF") {
            continue;
        }
        let file = object::File::parse(&*data)
            .unwrap_or_else(|err| panic!("{}: not a readable ELF file: {err}", e.path().display()));
        let rel = e.path().strip_prefix(dir).unwrap();
        out.push((rel.to_string_lossy().into_owned(), file.architecture()));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The `NAME: value` line of a smoke script's output (`CLI_TEXT`), after the first `: `.
pub fn smoke_value<'a>(out: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}: ");
    out.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
}

/// Debian 12 arm64 packages beyond [`ARM64_PYTHON_PACKAGES`] that a test's aarch64 programs
/// need, `apt-get download`ed and unpacked (`dpkg-deb -x`) into their own root,
/// `target/arm64-python/extra-<key>` (the key: a hash of `packages`), once per machine
/// (made in a temporary dir and renamed into place); returns that root. Call it after
/// [`arm64_python`] returned a Python: apt-get, dpkg-deb and dpkg's arm64 architecture are
/// then here. Its libraries (`usr/lib/aarch64-linux-gnu`) reach the programs through
/// [`Arm64Python::guest_library_path`].
///
/// Why: the Python root holds what the interpreter and its standard library link, and a
/// wheel may link more of the system: numpy's aarch64 wheels link `libstdc++.so.6`
/// (manylinux lets a wheel take it from the system), which a Debian machine has from
/// `libstdc++6` (numpy in the arm64 venv failed with "libstdc++.so.6: cannot open shared
/// object file" without it).
pub fn arm64_packages(packages: &[&str]) -> PathBuf {
    use sha2::Digest;
    let key = hex::encode(&sha2::Sha256::digest(packages.join("\n"))[..8]);
    let parent = repo().join("target/arm64-python");
    let root = parent.join(format!("extra-{key}"));
    if root.join("PACKAGES").is_file() {
        return root;
    }
    let (_tmp, made) = unpack_arm64_debs(&parent, packages);
    rename_into_place(&made, &root, &root.join("PACKAGES"));
    root
}

impl Arm64Python {
    /// Puts the libraries of an [`arm64_packages`] root on the aarch64 programs'
    /// `LD_LIBRARY_PATH`, through qemu-user's `QEMU_SET_ENV` (only the guest gets it: the
    /// host's qemu-aarch64 keeps its own libraries), for `cmd` and the programs it starts
    /// under qemu. The loader opens the dir's absolute path, which is not under the
    /// Python root, so qemu's `-L` falls back to the host's path.
    pub fn guest_library_path(&self, cmd: &mut Command, packages_root: &Path) {
        let dir = packages_root.join("usr/lib/aarch64-linux-gnu");
        let dir = dir.to_str().unwrap();
        assert!(!dir.contains(','), "QEMU_SET_ENV splits at commas: {dir}");
        cmd.env("QEMU_SET_ENV", format!("LD_LIBRARY_PATH={dir}"));
    }
}

/// The crates the tool's own work runs in (hashing, unpacking, compressing: Cargo.toml's
/// `[profile.dev.package]` entries kept at opt-level 3) in a cross build of the tool.
pub enum HotCrates {
    /// At opt-level 3, as in the workspace's builds: the aarch64 tool provisions a whole
    /// toolchain under qemu (about 200 MB to hash, unzip and un-xz).
    Optimised,
    /// At 0, as everything else: what runs under wine hashes a few kB.
    Unoptimised,
}

/// Builds the tool for the Rust target `triple`, unoptimised and without debug info but
/// for `hot` (a second build of every crate at opt-level 3 took about 10 min of CI's time),
/// and returns the dir of its binary. It builds in the test build's own target dir, so what
/// runs on the build machine (build scripts, proc macros, at Cargo.toml's
/// `build-override`, which these options leave alone) is reused from the test build, not
/// compiled again (BENCHMARKS.md, "Proc macros at cargo's default").
pub fn cross_build_tool(triple: &str, hot: HotCrates) -> PathBuf {
    // This test binary is <target dir>/debug/deps/it-<hash>.
    let exe = std::env::current_exe().unwrap();
    let target_dir = exe.ancestors().nth(3).unwrap().to_path_buf();
    let mut c = Command::new(env!("CARGO"));
    c.args([
        "build",
        "-q",
        "-p",
        "xtask",
        "--bin",
        "xtask",
        "--target",
        triple,
        "--config",
        "profile.dev.opt-level=0",
        "--config",
        "profile.dev.debug=0",
    ]);
    if let HotCrates::Unoptimised = hot {
        // A named package's override outranks the profile's: each one at 0 too.
        let manifest: toml::Value =
            toml::from_str(&std::fs::read_to_string(repo().join("Cargo.toml")).unwrap()).unwrap();
        let packages = manifest["profile"]["dev"]["package"].as_table().unwrap();
        for name in packages.keys() {
            c.arg("--config")
                .arg(format!("profile.dev.package.{name}.opt-level=0"));
        }
    }
    sh(c.env("CARGO_TARGET_DIR", &target_dir).current_dir(repo()));
    target_dir.join(triple).join("debug")
}

/// The most a hostile run may hold resident, in KiB.
pub const MAX_RSS_KIB: u64 = 256 * 1024;

const MEASURE: &str = r#"
import resource, subprocess, sys
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
try:
    code = subprocess.run(sys.argv[2:], preexec_fn=limit, timeout=float(sys.argv[1])).returncode
except subprocess.TimeoutExpired:
    code = 124
print("\nPEAK_RSS_KIB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(code if code >= 0 else 128 - code)
"#;

/// `xtask args`, measured: its output and its peak resident set in KiB. A fresh `python3`
/// parent reports only its own children's peak (`RUSAGE_CHILDREN`), under an
/// address-space limit of 4 GiB and a 120 s limit, so code that would grow without end
/// fails the test instead of the machine. (The hostile-input tests: tests/it/hostile/.)
pub fn measured(args: &[&str], envs: &[(&str, &str)]) -> (Output, u64) {
    let mut c = Command::new("python3");
    c.args(["-c", MEASURE, "120", env!("CARGO_BIN_EXE_xtask")])
        .args(args)
        .env("LLAMA_FORGE_CACHE", cache());
    for (k, v) in envs {
        c.env(k, v);
    }
    let o = c.output().expect("python3 runs");
    let t = text(&o);
    eprintln!("$ xtask {}\n{t}", args.join(" "));
    let peak = t
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("PEAK_RSS_KIB "))
        .unwrap_or_else(|| panic!("no peak reported:\n{t}"))
        .trim()
        .parse()
        .unwrap();
    assert_ne!(
        o.status.code(),
        Some(124),
        "xtask {} did not end within 120 s",
        args.join(" ")
    );
    (o, peak)
}

/// The run stayed under [`MAX_RSS_KIB`].
pub fn bounded(what: &str, peak: u64) {
    eprintln!("{what}: peak {} MiB", peak / 1024);
    assert!(
        peak < MAX_RSS_KIB,
        "{what}: {} MiB resident, over {} MiB",
        peak / 1024,
        MAX_RSS_KIB / 1024
    );
}

/// A static HTTP server of the test's own on 127.0.0.1 (a free port): each GET of a path
/// it holds answers that file, any other 404. It serves until the test process ends.
pub struct FileServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

/// A served answer: status line (`200 OK`), extra header lines, body.
pub type Answer = (&'static str, Vec<String>, Vec<u8>);

impl FileServer {
    pub fn start(files: std::collections::BTreeMap<String, Vec<u8>>) -> FileServer {
        FileServer::answering(move |path| match files.get(path) {
            Some(b) => ("200 OK", vec![], b.clone()),
            None => ("404 Not Found", vec![], b"not here".to_vec()),
        })
    }

    /// A server whose answer to each GET is `answer` of its path (with the query).
    pub fn answering(answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> FileServer {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let answer = std::sync::Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let answer = answer.clone();
                std::thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
                    let mut line = String::new();
                    let _ = reader.read_line(&mut line);
                    // The rest of the request's head.
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) <= 2 {
                            break;
                        }
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let (status, headers, body) = answer(&path);
                    // A Content-Length of the answer's own (one that lies) replaces the body's.
                    let length = if headers
                        .iter()
                        .any(|h| h.to_ascii_lowercase().starts_with("content-length:"))
                    {
                        String::new()
                    } else {
                        format!("Content-Length: {}\r\n", body.len())
                    };
                    let headers: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
                    let _ = s.write_all(
                        format!("HTTP/1.1 {status}\r\n{headers}{length}Connection: close\r\n\r\n")
                            .as_bytes(),
                    );
                    let _ = s.write_all(&body);
                });
            }
        });
        FileServer { base }
    }
}

/// A `.tar.gz` of `dir`'s files under the one leading dir `top`, with `edit` applied to
/// each file's text first (path relative to `dir`, text): a source archive for a test.
pub fn tar_gz_of(dir: &Path, top: &str, edit: &dyn Fn(&str, Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    git_archive_of(dir, top, None, edit)
}

/// [`tar_gz_of`], with the global pax header `git archive` writes first, whose `comment`
/// is the commit (as GitHub's tag tarballs have it), where `commit` is given.
pub fn git_archive_of(
    dir: &Path,
    top: &str,
    commit: Option<&str>,
    edit: &dyn Fn(&str, Vec<u8>) -> Vec<u8>,
) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    if let Some(c) = commit {
        let body = format!("comment={c}\n");
        // A pax record is "<length> <key>=<value>\n", the length counting itself.
        let mut len = body.len() + 2;
        while format!("{len} {body}").len() != len {
            len += 1;
        }
        let record = format!("{len} {body}");
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::XGlobalHeader);
        h.set_path("pax_global_header").unwrap();
        h.set_size(record.len() as u64);
        h.set_mode(0o666);
        h.set_mtime(1_667_997_441);
        h.set_cksum();
        b.append(&h, record.as_bytes()).unwrap();
    }
    let mut entries: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .collect();
    entries.sort_by(|a, b| a.path().cmp(b.path()));
    for e in entries {
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let data = edit(&rel, std::fs::read(e.path()).unwrap());
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_667_997_441);
        h.set_cksum();
        b.append_data(&mut h, format!("{top}/{rel}"), &data[..])
            .unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

/// A small file system mounted for one test (tmpfs, mode 0700: the cache must be
/// private), unmounted when dropped. Needs root, as CI runs.
pub struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    pub fn mount(at: &std::path::Path, bytes: u64) -> Option<Tmpfs> {
        if !nix::unistd::Uid::effective().is_root() {
            cannot_run_here("needs root to mount a small tmpfs (CI runs as root)");
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let o = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={bytes},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "mount: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Some(Tmpfs(at.to_path_buf()))
    }

    pub fn grow(&self, bytes: u64) {
        let o = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={bytes}")])
            .arg(&self.0)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "remount: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
