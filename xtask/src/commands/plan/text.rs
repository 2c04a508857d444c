//! What `cargo xtask plan` prints: a summary first (the artifacts' names, the target,
//! which GPUs the code runs on, where CUDA and the compiler come from, the downloads,
//! every warning and the plan hash), the full detail with `-v` (every setting with its
//! reason, long values one per line), and the `--json` preview document.
//!
//! Pure: functions of the plan and of [`Found`], what the command looked up beside it
//! (pin files, the cache), so every line is snapshot-tested without a machine.

use serde::Serialize;

use crate::cuda::runs::{artifact_runs_on, Runs};
use crate::cuda::{describe_cc, Gpu};
use crate::cuda::{CodeKind, EmbeddedCode};
use crate::plan::{Package, Plan, Setting};
use crate::platform::host::Origin;
use crate::tags::{PlatformTag, WheelFilename};
use crate::versions::Version;

/// The `schema` of `plan --json`: `{"schema", "plan_hash", "artifacts", "warnings",
/// "downloads", "plan"}`, where `plan` is the plan exactly as hashed and recorded.
pub(crate) const SCHEMA: &str = "llama-forge.plan-preview/1";

/// The width long lines are wrapped at (a word longer than that stays whole).
const WIDTH: usize = 100;

/// What the command looked up beside the plan: none of it is in the plan's hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found {
    /// The glibc of the pinned toolchain's sysroot: the newest the libraries may need.
    pub glibc_floor: Option<Version>,
    /// What the build fetches into the cache before it starts, in that order.
    pub downloads: Vec<Download>,
    /// Where the artifacts go: `--dist`, else the checkout's `dist/`.
    pub dist: Option<std::path::PathBuf>,
    /// Each `--cache-from` asked, and what it answered.
    pub substituters: Vec<Substituted>,
}

/// What one substituter answered for this plan (its listing and signature only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Substituted {
    pub source: String,
    /// It holds this plan's artifacts, signed with its key: the build fetches them.
    pub serves: bool,
    /// What it holds (signed by, built when), or why it does not serve them.
    pub says: String,
}

/// One thing the build fetches (or finds in the cache already).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Download {
    /// `source llama_cpp_python-0.3.36.tar.gz`, `CUDA 13.5 (pinned wheels in toolchains/cuda-13.5.toml)`.
    pub what: String,
    /// Its size in bytes, where the pins record it.
    pub bytes: Option<u64>,
    /// Already in the cache: nothing is downloaded for it.
    pub cached: bool,
}

/// A file the build will write into dist/.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ArtifactName {
    /// The file name; `NN` stands for a part known only after the build.
    pub file: String,
    /// What is known only after the build, and what it will be; absent when the name is final.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_build: Option<String>,
}

/// The names of the artifacts the plan's `package` step writes: an archive's in full; a
/// Linux wheel's with its manylinux tag as `manylinux_2_NN_<arch>` (packaging picks the
/// oldest policy the built libraries' symbol versions meet: `package::manylinux`).
pub(crate) fn artifacts(plan: &Plan, glibc_floor: Option<&Version>) -> Vec<ArtifactName> {
    match &plan.package {
        Package::Archive { stem, format, .. } => vec![ArtifactName {
            file: format!("{stem}{}", format.extension()),
            after_build: None,
        }],
        Package::Wheel {
            distribution,
            local,
            pythons,
            ..
        } => {
            let arch = plan.target.arch();
            let windows = plan.target.os() == crate::platform::Os::Windows;
            let platform = match windows {
                true => PlatformTag::WinAmd64,
                false => PlatformTag::Linux { arch },
            };
            let pending = (!windows).then(|| match glibc_floor {
                Some(g) => format!(
                    "NN is set after the build: the oldest manylinux policy the libraries' symbol versions meet, at most {} (the pinned toolchain's glibc {g} sysroot); linux_{arch} if they meet none",
                    g.parts().get(1).copied().unwrap_or(0)
                ),
                None => format!(
                    "NN is set after the build: the oldest manylinux policy the libraries' symbol versions meet (they follow the compiler's glibc); linux_{arch} if they meet none"
                ),
            });
            pythons
                .tags()
                .into_iter()
                .map(|python| {
                    let name = WheelFilename {
                        distribution: distribution.clone(),
                        version: plan.version.clone(),
                        local: Some(local.clone()),
                        python,
                        platform: platform.clone(),
                    }
                    .to_string();
                    let file = match &pending {
                        None => name,
                        Some(_) => {
                            let tail = format!("linux_{arch}.whl");
                            let head = name.strip_suffix(&tail).expect("a linux tag");
                            format!("{head}manylinux_2_NN_{arch}.whl")
                        }
                    };
                    ArtifactName {
                        file,
                        after_build: pending.clone(),
                    }
                })
                .collect()
        }
    }
}

/// The warnings a user must see: the plan's own (`pipeline::plan_warnings`).
pub(crate) fn warnings(plan: &Plan) -> Vec<String> {
    crate::pipeline::plan_warnings(plan)
}

/// `plan --json`: the plan as hashed, with its hash, the artifacts' names and the warnings.
pub(crate) fn json(plan: &Plan, found: &Found) -> serde_json::Value {
    serde_json::json!({
        "schema": SCHEMA,
        "plan_hash": plan.hash().as_str(),
        "artifacts": artifacts(plan, found.glibc_floor.as_ref()),
        "warnings": warnings(plan),
        "downloads": found.downloads,
        "substituters": found.substituters,
        "patch_check": plan.patch_check,
        "plan": Plan {
            patch_check: None,
            ..plan.clone()
        },
    })
}

/// The summary `plan` prints first: about 20 lines, warnings near the top.
pub(crate) fn summary(plan: &Plan, found: &Found) -> String {
    let mut out = Vec::new();
    let kind = match plan.package {
        Package::Wheel { .. } => "wheel",
        Package::Archive { .. } => "archive",
    };
    out.push(format!(
        "plan {}: {} {}, {kind} for {}, --arch {}",
        &plan.hash().as_str()[..16],
        plan.recipe,
        plan.version,
        plan.target,
        plan.accelerator
    ));
    for w in warnings(plan) {
        out.extend(wrap(&format!("warning: {w}"), "", "  "));
    }
    let names = artifacts(plan, found.glibc_floor.as_ref());
    out.push(format!(
        "{} (in {}):",
        if names.len() == 1 {
            "artifact"
        } else {
            "artifacts"
        },
        found
            .dist
            .as_ref()
            .map_or("dist/".to_string(), |d| d.display().to_string())
    ));
    for a in &names {
        out.push(format!("  {}", a.file));
    }
    if let Some(note) = names.first().and_then(|a| a.after_build.as_ref()) {
        out.extend(wrap(note, "    ", "    "));
    }
    out.extend(field("source", &source_line(plan)));
    if let Some(h) = &plan.source.hash_from {
        out.extend(field(
            "pinned",
            &format!("not pinned in the recipe: sha256 from {h}"),
        ));
    }
    if let Some(v) = &plan.source.version_from {
        let how = match v.as_str() {
            "given" => "given with --version: the source names no release".to_string(),
            file => format!("read from the source's {file}"),
        };
        out.extend(field("release", &format!("{} ({how})", plan.version)));
    }
    out.extend(field("patches", &patches_line(plan)));
    for s in &plan.source.skipped_patches {
        let cost = s
            .cost
            .as_ref()
            .map(|c| format!(": {c}"))
            .unwrap_or_default();
        out.extend(wrap(
            &format!("skipped {} ({}){cost}", s.name, s.why),
            "  ",
            "    ",
        ));
    }
    if let Some(u) = &plan.upstream {
        out.extend(field("upstream", &u.to_string()));
    }
    if let Some(c) = &plan.cuda {
        out.extend(field("GPU code", &gpu_code(&c.architectures)));
        for line in runs_where(&c.architectures) {
            out.extend(wrap(&line, "  ", "    "));
        }
        out.extend(field(
            "CUDA",
            &format!(
                "{} (nvcc {}), {}",
                c.release,
                c.nvcc.version,
                cuda_origin(&c.nvcc.origin, &c.root)
            ),
        ));
        out.extend(wrap(&format!("runtime: {}", runtime(c)), "  ", "    "));
        out.push(match (&c.min_driver, plan.target.os()) {
            (Some(d), _) => format!("  needs an NVIDIA driver {d} or newer (Linux)"),
            (None, crate::platform::Os::Linux) => format!(
                "  minimum driver: not known (the support table has none for CUDA {})",
                c.release
            ),
            (None, crate::platform::Os::Windows) => {
                "  minimum driver: not known (the support table records Linux drivers only)".into()
            }
        });
    }
    out.extend(field("compiler", &compiler_line(plan, found)));
    out.extend(field(
        "build",
        &format!(
            "CMake {} ({}), Ninja {} ({})",
            plan.tools.cmake.version,
            short_origin(&plan.tools.cmake.origin),
            plan.tools.ninja.version,
            short_origin(&plan.tools.ninja.origin)
        ),
    ));
    if !plan.cpu_variants.is_empty() {
        let names: Vec<&str> = plan.cpu_variants.iter().map(|v| v.name.as_str()).collect();
        let from = match plan.target.arch() {
            crate::platform::Arch::X86_64 => format!("from the {} floor up", plan.cpu_baseline),
            crate::platform::Arch::Aarch64 => "ggml's Arm variants".to_string(),
        };
        out.extend(field(
            "CPU code",
            &format!(
                "{from}: {} (ggml loads the best one the CPU runs)",
                names.join(", ")
            ),
        ));
    }
    if !found.downloads.is_empty() {
        out.push("downloads (into the cache, before the build):".into());
        for d in &found.downloads {
            let state = match (d.cached, d.bytes) {
                (true, _) => "cached".to_string(),
                (false, Some(b)) => megabytes(b),
                (false, None) => "download".to_string(),
            };
            out.extend(wrap(&d.what, &format!("  {state:<9} "), &" ".repeat(12)));
        }
    }
    if !found.substituters.is_empty() {
        out.push("substituters (asked in order; the first that serves the plan is used):".into());
        for s in &found.substituters {
            let state = if s.serves { "serves" } else { "no" };
            out.extend(wrap(
                &format!("{}: {}", s.source, s.says),
                &format!("  {state:<9} "),
                &" ".repeat(12),
            ));
        }
        if found.substituters.iter().any(|s| s.serves) {
            out.push("  (the downloads above are then not needed, but the source: the plan is checked against it)".into());
        }
    }
    out.push(
        "every setting with its reason: the same command with -v; all of it as JSON: --json".into(),
    );
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// The full detail `plan -v` prints after the summary: the environment, every define
/// with its reason, the tools, the commands and the package, long values one per line.
pub(crate) fn detail(plan: &Plan) -> String {
    let mut out: Vec<String> = Vec::new();
    out.push(format!("plan {}", plan.hash()));
    out.push(format!("source ({}):", plan.source.kind));
    out.push(format!("  {}", plan.source.location));
    match (&plan.source.sha256, &plan.source.tree_sha256) {
        (Some(s), _) => out.push(format!("  sha256 {s}")),
        (None, Some(t)) => out.push(format!("  tree sha256 {t}")),
        (None, None) => out.push("  unpinned".into()),
    }
    for p in &plan.source.patches {
        out.extend(wrap(
            &format!("patch {}: {}", p.file, p.reason),
            "  ",
            "    ",
        ));
    }
    out.push("tools:".into());
    let t = &plan.tools;
    let mut tools = vec![
        ("cmake", &t.cmake),
        ("ninja", &t.ninja),
        ("cc", &t.cc),
        ("cxx", &t.cxx),
    ];
    if let Some(p) = &t.patchelf {
        tools.push(("patchelf", p));
    }
    for (name, tool) in tools {
        out.push(format!(
            "  {name} {}, {}:",
            tool.version,
            short_origin(&tool.origin)
        ));
        out.push(format!("    {}", tool.path));
        out.extend(wrap(&tool.origin.to_string(), "    ", "    "));
    }
    if let Some(m) = &t.msvc {
        out.extend(wrap(
            &format!(
                "msvc: toolset {}, environment from {}, {} {} at {}",
                m.toolset,
                m.source,
                m.instance.display_name,
                m.instance.version,
                m.instance.path.display()
            ),
            "  ",
            "    ",
        ));
    }
    if let Some(c) = &plan.cuda {
        out.push(format!(
            "CUDA {}: CMAKE_CUDA_ARCHITECTURES={}",
            c.release, c.architectures
        ));
        out.push(format!(
            "  nvcc {}, {}:",
            c.nvcc.version,
            short_origin(&c.nvcc.origin)
        ));
        out.push(format!("    {}", c.nvcc.path));
        for r in &c.arch_reasons {
            out.extend(wrap(r, "  ", "    "));
        }
        out.extend(wrap(
            &format!("host compiler: {}", c.host_policy),
            "  ",
            "    ",
        ));
        out.extend(wrap(&format!("runtime: {}", runtime(c)), "  ", "    "));
        if !c.runpath.is_empty() {
            out.push(format!("  RUNPATH {}", c.runpath.join(":")));
        }
        if let Some(d) = &c.min_driver {
            out.push(format!("  needs an NVIDIA driver {d} or newer (Linux)"));
        }
    }
    out.push("environment (nothing else is inherited):".into());
    for e in &plan.env {
        setting(&mut out, &e.name, &e.value, &e.reason, None);
    }
    out.push("CMake defines:".into());
    for d in &plan.defines {
        let reason = define_reason(plan, d);
        setting(
            &mut out,
            &format!("-D{}", d.name),
            &d.value,
            &reason,
            Some(&d.origin.to_string()),
        );
    }
    if let Some(l) = &plan.launcher {
        out.push(format!(
            "launcher: {} {} {} ({}; not part of the plan hash: it does not change the bytes)",
            l.kind,
            l.tool.version,
            l.tool.path,
            short_origin(&l.tool.origin)
        ));
        for d in &l.defines {
            setting(
                &mut out,
                &format!("-D{}", d.name),
                &d.value,
                &d.reason,
                None,
            );
        }
        for e in &l.env {
            setting(&mut out, &e.name, &e.value, &e.reason, None);
        }
    }
    if let Some(j) = &plan.jobs {
        out.push(format!(
            "jobs: {} (not part of the plan hash: it does not change the bytes)",
            j.n
        ));
        setting(&mut out, "--parallel", &j.n.to_string(), &j.reason, None);
    }
    out.push("commands:".into());
    out.extend(configure(plan));
    let indent = " ".repeat(13);
    out.extend(wrap(
        &plan.build_command().join(" "),
        "  build:     ",
        &indent,
    ));
    if let Some(i) = &plan.commands.install {
        out.extend(wrap(&i.join(" "), "  install:   ", &indent));
    }
    out.push("package:".into());
    out.extend(package(&plan.package));
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// `name:` padded to the summary's column, then the value, wrapped under itself.
fn field(name: &str, value: &str) -> Vec<String> {
    wrap(
        value,
        &format!("{:<11}", format!("{name}:")),
        &" ".repeat(11),
    )
}

/// The source in one line: its kind, file name and short hash (the URL is in `-v`).
/// How many patches apply, and whether they were checked against the source.
fn patches_line(plan: &Plan) -> String {
    let n = plan.source.patches.len();
    let skipped = plan.source.skipped_patches.len();
    match &plan.patch_check {
        Some(_) if skipped == 0 => format!("{n} apply, each checked against the source"),
        Some(_) => format!("{n} apply, {skipped} left out, each checked against the source"),
        None => format!(
            "{n}, not checked yet: the source is not downloaded (--check-patches downloads it); the build checks each first"
        ),
    }
}

fn source_line(plan: &Plan) -> String {
    let s = &plan.source;
    let file = s.location.rsplit(['/', '\\']).next().unwrap_or(&s.location);
    match (&s.sha256, &s.tree_sha256) {
        (Some(h), _) => format!("{} {file} (sha256 {})", s.kind, &h.as_str()[..12]),
        (None, Some(t)) => format!(
            "{} {} (tree sha256 {})",
            s.kind,
            s.location,
            &t.as_str()[..12]
        ),
        (None, None) => format!("{} {} (unpinned)", s.kind, s.location),
    }
}

/// `sm_120a code (SASS), no PTX (--ptx adds it)`.
fn gpu_code(archs: &crate::cuda::ArchList) -> String {
    let sass: Vec<String> = archs.sass().map(|a| a.sm_name()).collect();
    let ptx: Vec<String> = archs
        .ptx()
        .map(|a| a.sm_name().replace("sm_", "compute_"))
        .collect();
    let sass = match sass.is_empty() {
        true => "no SASS".to_string(),
        false => format!("SASS for {}", sass.join(", ")),
    };
    match ptx.is_empty() {
        true => format!("{sass}; no PTX (--ptx adds it)"),
        false => format!("{sass}; PTX {}", ptx.join(", ")),
    }
}

/// Which GPUs the device code runs on natively, only through PTX JIT, or not at all.
fn runs_where(archs: &crate::cuda::ArchList) -> Vec<String> {
    let codes: std::collections::BTreeSet<EmbeddedCode> = archs
        .targets()
        .iter()
        .flat_map(|t| {
            let sass = t.kind.has_sass().then_some(EmbeddedCode {
                kind: CodeKind::Sass,
                arch: t.arch,
            });
            let ptx = t.kind.has_ptx().then_some(EmbeddedCode {
                kind: CodeKind::Ptx,
                arch: t.arch,
            });
            sass.into_iter().chain(ptx)
        })
        .collect();
    // As `inspect` judges artifacts.
    let ccs = Gpu::judged_capabilities();
    let named = |runs: Runs| -> Vec<String> {
        ccs.iter()
            .filter(|cc| artifact_runs_on([&codes], **cc) == runs)
            .map(|cc| {
                let n = format!("{}.{}", cc.major(), cc.minor());
                match describe_cc(*cc) {
                    Some(d) => format!("{n} ({d})"),
                    None => n,
                }
            })
            .collect()
    };
    let short = |runs: Runs| -> Vec<String> {
        ccs.iter()
            .filter(|cc| artifact_runs_on([&codes], **cc) == runs)
            .map(|cc| format!("{}.{}", cc.major(), cc.minor()))
            .collect()
    };
    let mut out = Vec::new();
    let native = named(Runs::Natively);
    out.push(match native.is_empty() {
        true => "runs natively on no GPU".to_string(),
        false => format!("runs natively on {}", native.join(", ")),
    });
    let jit = named(Runs::PtxJit);
    if !jit.is_empty() {
        out.push(format!(
            "runs only through PTX JIT (slow first load) on {}",
            jit.join(", ")
        ));
    }
    let no = short(Runs::No);
    if !no.is_empty() {
        out.push(format!(
            "cannot run (\"no kernel image\") on {}",
            no.join(", ")
        ));
    }
    out
}

/// Where the CUDA toolkit comes from, in words.
fn cuda_origin(origin: &Origin, root: &str) -> String {
    match origin {
        Origin::System => format!("this system's toolkit at {root}"),
        Origin::PinnedSet { file, .. } => {
            format!("NVIDIA's wheels from the package index ({file})")
        }
        Origin::Explicit { by } => format!("the toolkit at {root}, set by {by}"),
        Origin::PackageIndex { .. } => format!("{origin}"),
    }
}

/// How the artifact finds the CUDA runtime.
fn runtime(c: &crate::plan::cuda::PlannedCuda) -> String {
    use crate::plan::cuda::RuntimeMode;
    match c.runtime {
        RuntimeMode::Bundled => match c.bundle.is_empty() {
            true => "copied into the artifact (--bundle-cuda-runtime)".to_string(),
            false => format!(
                "copied into the artifact (--bundle-cuda-runtime): {}",
                c.bundle.join(", ")
            ),
        },
        RuntimeMode::IndexWheels if c.requires.is_empty() => {
            "not in the artifact: the machine's CUDA runtime (or NVIDIA's wheels) must provide it"
                .to_string()
        }
        RuntimeMode::IndexWheels => format!(
            "NVIDIA's runtime wheels, installed by pip with the wheel (Requires-Dist: {})",
            c.requires.join("; ")
        ),
    }
}

/// The host compiler and where it comes from.
fn compiler_line(plan: &Plan, found: &Found) -> String {
    let cxx = &plan.tools.cxx;
    let kind = cxx
        .kind
        .map(|k| k.to_string())
        .unwrap_or_else(|| "compiler".into());
    let what = format!("{kind} {}", cxx.version);
    match &cxx.origin {
        Origin::PinnedSet { file, .. } => {
            let glibc = match &found.glibc_floor {
                Some(g) => format!("; glibc {g} sysroot"),
                None => String::new(),
            };
            format!("{what} from Debian's archive, pinned in {file}{glibc}")
        }
        Origin::System => format!("{what}, this system's: {}", cxx.path),
        Origin::Explicit { by } => format!("{what}, {} (set by {by})", cxx.path),
        Origin::PackageIndex { .. } => format!("{what}, {}", cxx.origin),
    }
}

/// A tool's origin in a word or two.
fn short_origin(o: &Origin) -> String {
    match o {
        Origin::System => "system".into(),
        Origin::PackageIndex { .. } => "pinned wheel".into(),
        Origin::Explicit { by } => format!("set by {by}"),
        Origin::PinnedSet { file, .. } => format!("pinned in {file}"),
    }
}

/// `2,180 MB`.
fn megabytes(bytes: u64) -> String {
    let mb = (bytes + 500_000) / 1_000_000;
    let digits = mb.to_string();
    let mut s = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    format!("{s} MB")
}

/// A define's reason for people: `CMAKE_CUDA_COMPILER`'s recorded reason names the
/// toolkit's origin as the plan hashed it (a Rust debug form, kept so the hash of every
/// CUDA plan holds); shown here in words.
fn define_reason(plan: &Plan, d: &Setting) -> String {
    match (&plan.cuda, d.name.as_str()) {
        (Some(c), "CMAKE_CUDA_COMPILER") if d.reason.starts_with("nvcc ") => {
            format!("nvcc {} ({})", c.nvcc.version, c.nvcc.origin)
        }
        _ => d.reason.clone(),
    }
}

/// One setting: `NAME=VALUE  [origin]` on a line when it fits, else the value's words one
/// per line; then its reason, wrapped.
fn setting(out: &mut Vec<String>, name: &str, value: &str, reason: &str, origin: Option<&str>) {
    let line = format!("  {name}={value}");
    if line.len() <= WIDTH || !value.contains(' ') {
        out.push(line);
    } else {
        out.push(format!("  {name}="));
        for w in value.split(' ').filter(|w| !w.is_empty()) {
            out.push(format!("      {w}"));
        }
    }
    let reason = match origin {
        Some(o) => format!("[{o}] {reason}"),
        None => reason.to_string(),
    };
    out.extend(wrap(&reason, "      ", "      "));
}

/// The configure command: its head, then its defines in short (they are listed above)
/// when they are exactly the plan's defines in order, else every argument on a line.
fn configure(plan: &Plan) -> Vec<String> {
    let c = &plan.commands.configure;
    let defines: Vec<String> = plan
        .defines
        .iter()
        .map(|d| format!("-D{}={}", d.name, d.value))
        .collect();
    let head = c.len().saturating_sub(defines.len());
    if c[head..] == defines[..] {
        vec![
            format!("  configure: {}", c[..head].join(" ")),
            format!(
                "             and the {} defines above, in order",
                defines.len()
            ),
        ]
    } else {
        let mut out = vec!["  configure:".to_string()];
        out.extend(c.iter().map(|a| format!("      {a}")));
        out
    }
}

/// The package step's fields, one per line, lists wrapped.
fn package(p: &Package) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(p) else {
        return out;
    };
    for (k, v) in fields {
        let text = match v {
            serde_json::Value::String(s) => s,
            serde_json::Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        let text = if text.is_empty() { "none".into() } else { text };
        out.extend(wrap(
            &format!("{}: {text}", k.replace('_', " ")),
            "  ",
            "    ",
        ));
    }
    out
}

/// `text` in lines of at most [`WIDTH`] characters at spaces (a longer word stays whole),
/// the first after `first`, the rest after `rest`.
pub(crate) fn wrap(text: &str, first: &str, rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty || out.is_empty() {
        out.push(line);
    }
    out
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
