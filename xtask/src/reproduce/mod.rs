//! `reproduce`: what differs between a recorded build and one made here.
//!
//! The rebuild itself is [`rebuild`]; here the pure parts: the build request a
//! recorded plan implies, the drift between the recorded plan and the plan made
//! on this machine (toolchains, source, CMake defines, environment, CUDA policy,
//! anything else as a JSON path), and the per-file difference between a
//! recorded artifact and its rebuild.

pub mod rebuild;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use anyhow::{bail, Result};
use serde_json::Value;

use crate::manifest::FileEntry;
use crate::plan::{Package, Plan, Setting, ToolRecord};
use crate::request::Accelerator;
use crate::request::BuildRequest;

/// The build options that make the recorded plan again (on a machine with the
/// same tools): recipe, release, arch, `--ptx`, `--cuda`, runtime mode, every
/// Python of the plan (its hash covers them all) and the CPU baseline.
/// `source` must be given when the recorded source was local; for a pinned one it
/// is an offline copy (the plan is the same when its sha256 matches the pin).
pub fn build_request(
    plan: &Plan,
    source: Option<PathBuf>,
    dist: Option<PathBuf>,
    cuda_path: Option<PathBuf>,
) -> Result<BuildRequest> {
    // The recipe is looked up by name in this checkout's recipes/: a name, never a path.
    if plan.recipe.is_empty()
        || plan.recipe.starts_with('.')
        || !plan
            .recipe
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        bail!("the manifest's recipe is {:?}: not a recipe name (such as llama.cpp or llama-cpp-python); refusing this manifest", plan.recipe);
    }
    // A pinned source may be given as a local copy: the plan shows a source drift if its hash differs.
    if plan.source.kind == crate::plan::SourceKind::Local && source.is_none() {
        bail!(
            "the manifest's source is local ({}{}): give the same source with --source PATH",
            plan.source.location,
            plan.source
                .sha256
                .as_ref()
                .map(|s| format!(", sha256 {s}"))
                .unwrap_or_else(|| ", a directory".into())
        );
    }
    let (ptx, cuda, bundle) = match (&plan.accelerator, &plan.cuda) {
        (Accelerator::Cuda(request), Some(c)) => {
            let recorded = &c.architectures;
            // --ptx only when the arch request alone does not already give the PTX recorded.
            let ptx = recorded.ptx().next().is_some()
                && request.resolve(false).targets.ptx().next().is_none();
            let release = c.release;
            (
                ptx,
                Some(release),
                c.runtime == crate::plan::cuda::RuntimeMode::Bundled,
            )
        }
        (Accelerator::Cuda(_), None) => bail!(
            "the manifest's plan is for a GPU ({}) but has no CUDA section",
            plan.accelerator
        ),
        (Accelerator::Cpu, _) => (false, None, false),
    };
    let pythons = match &plan.package {
        Package::Wheel { pythons, .. } => pythons.asked(),
        Package::Archive { .. } => vec![],
    };
    Ok(BuildRequest {
        recipe: plan.recipe.clone(),
        // An upstream build (its tarball placed under the recipe's tree) by its tag.
        release: Some(match (&plan.source.under, &plan.upstream) {
            (Some(_), Some(crate::plan::PlannedUpstream::Build(u))) => {
                crate::request::ReleaseChoice::Build(u.build)
            }
            _ => crate::request::ReleaseChoice::Exact(plan.version.clone()),
        }),
        // An unpinned release is rebuilt from the source the manifest recorded, by its hash.
        recorded_source: match (&plan.source.hash_from, &plan.source.sha256) {
            (Some(hash_from), Some(sha256)) => Some(crate::request::RecordedSource {
                url: plan.source.location.clone(),
                sha256: sha256.clone(),
                date: plan.source_date_epoch,
                hash_from: hash_from.clone(),
                vendored: match &plan.upstream {
                    Some(crate::plan::PlannedUpstream::Build(u))
                        if plan.source.overlay.is_none() =>
                    {
                        Some((u.commit.to_string(), u.build))
                    }
                    _ => None,
                },
            }),
            _ => None,
        },
        target: plan.target,
        // The arch the manifest names: a rebuild never resolves `auto`.
        accelerator: plan.accelerator.clone().into(),
        ptx,
        cuda,
        cuda_path,
        bundle_cuda_runtime: bundle,
        pythons,
        cpu_baseline: plan.cpu_baseline,
        source,
        // Another llama.cpp tree: upstream's build again, by the hash the manifest recorded,
        // or the local tree at the path it recorded (its content is compared as drift).
        llama_cpp: plan
            .source
            .overlay
            .as_ref()
            .map(|o| match (&o.sha256, &plan.upstream) {
                (Some(_), Some(crate::plan::PlannedUpstream::Build(u)))
                    if o.kind != crate::plan::SourceKind::Local =>
                {
                    crate::request::LlamaCppChoice::Build(u.build)
                }
                _ => crate::request::LlamaCppChoice::Path(PathBuf::from(&o.location)),
            }),
        force: false,
        recorded_llama_cpp: plan.source.overlay.as_ref().and_then(|o| {
            Some(crate::request::RecordedSource {
                url: o.location.clone(),
                sha256: o.sha256.clone()?,
                date: plan.source_date_epoch,
                hash_from: o.hash_from.clone()?,
                vendored: None,
            })
        }),
        dist,
        launcher: None,
        jobs: None,
        // Never the compiler the manifest records: tools are resolved on this machine
        // (the commands layer passes the user's own `--host-cc`).
        host_cc: None,
        defaults: Vec::new(),
        substituters: Vec::new(),
        // The --define's the build was given, again.
        defines: plan
            .defines
            .iter()
            .filter(|d| d.origin == crate::plan::setting::SettingOrigin::CommandLine)
            .map(|d| crate::request::UserDefine {
                name: d.name.clone(),
                value: d.value.clone(),
            })
            .collect(),
    })
}

/// A line where the manifest was made by another commit of this tool than this one (the
/// commit the manifest beside an artifact records): which, and how to check it out. The
/// commit is the manifest's, untrusted: only a hex id of 7 to 40 digits is named.
pub fn tool_note(
    recorded: &crate::manifest::ToolInfo,
    this: &crate::manifest::ToolInfo,
) -> Option<String> {
    let theirs = recorded.commit.as_deref()?;
    if !(7..=40).contains(&theirs.len()) || !theirs.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(
            "the manifest's tool commit is not a commit id: which llama-forge made it is not known"
                .to_string(),
        );
    }
    let dirty = if recorded.dirty == Some(true) {
        ", with changes not committed (a checkout of it is not quite that tool)"
    } else {
        ""
    };
    match this.commit.as_deref() {
        Some(ours) if ours.starts_with(theirs) || theirs.starts_with(ours) => {
            (!dirty.is_empty()).then(|| format!("the manifest was made by this commit, {theirs}{dirty}"))
        }
        ours => Some(format!(
            "the manifest was made by llama-forge at commit {theirs}{dirty}; this is {}. A drift below may come from the tool itself: to rebuild with that one, `git fetch && git checkout {theirs}` in the checkout, then run reproduce again",
            ours.unwrap_or("a build without a commit")
        )),
    }
}

/// What kind of input drifted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Area {
    Toolchain,
    Source,
    Define,
    Env,
    Cuda,
    Other,
}

/// One difference between the recorded plan and the plan made here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub area: Area,
    /// `nvcc`, `cxx (gcc)`, `define GGML_NATIVE`, `commands.build[3]`.
    pub what: String,
    pub recorded: String,
    pub here: String,
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (manifest) vs {} (here)",
            self.what, self.recorded, self.here
        )
    }
}

const NONE: &str = "none";

fn drift(
    area: Area,
    what: impl Into<String>,
    recorded: impl Into<String>,
    here: impl Into<String>,
) -> Drift {
    Drift {
        area,
        what: what.into(),
        recorded: recorded.into(),
        here: here.into(),
    }
}

/// Every difference between `recorded` and `here`, grouped by area; empty when
/// the plans are equal (and so hash equal). Each difference is named once: a
/// define that only carries a tool's path is reported as that tool's path, and
/// the configure command's `-D` arguments as the defines.
pub fn plan_drift(recorded: &Plan, here: &Plan) -> Vec<Drift> {
    let mut out = Vec::new();
    tool_drift(recorded, here, &mut out);
    source_drift(recorded, here, &mut out);
    cuda_drift(recorded, here, &mut out);
    // Value pairs already explained by a tool or CUDA drift (CMAKE_CXX_COMPILER is the cxx path).
    let explained: BTreeSet<(String, String)> = out
        .iter()
        .map(|d| (d.recorded.clone(), d.here.clone()))
        .collect();
    settings_drift(
        Area::Define,
        "define",
        &recorded.defines,
        &here.defines,
        &explained,
        &mut out,
    );
    settings_drift(
        Area::Env,
        "env",
        &recorded.env,
        &here.env,
        &explained,
        &mut out,
    );
    let mut rest = Vec::new();
    json_diff("", &rest_of(recorded), &rest_of(here), &mut rest);
    out.extend(
        rest.into_iter()
            .map(|(what, a, b)| drift(Area::Other, what, a, b)),
    );
    if out.is_empty() && recorded.hash() != here.hash() {
        out.push(drift(
            Area::Other,
            "plan",
            recorded.hash().to_string(),
            here.hash().to_string(),
        ));
    }
    out
}

fn tools(p: &Plan) -> Vec<(&'static str, Option<&ToolRecord>)> {
    let t = &p.tools;
    vec![
        ("cmake", Some(&t.cmake)),
        ("ninja", Some(&t.ninja)),
        ("patchelf", t.patchelf.as_ref()),
        ("cc", Some(&t.cc)),
        ("cxx", Some(&t.cxx)),
        ("nvcc", p.cuda.as_ref().map(|c| &c.nvcc)),
        (
            "cuobjdump",
            p.cuda.as_ref().and_then(|c| c.cuobjdump.as_ref()),
        ),
    ]
}

/// `pinned wheel cmake-….whl (sha256 0123456789ab)`: enough to tell two origins apart.
fn origin_text(o: &crate::platform::host::Origin) -> String {
    match o {
        crate::platform::host::Origin::PinnedSet { file, sha256 } => format!(
            "pinned wheels in {file} (sha256 {})",
            &sha256.as_str()[..12]
        ),
        other => other.to_string(),
    }
}

fn kind_name(t: &ToolRecord) -> &'static str {
    match t.kind {
        Some(crate::platform::host::CompilerKind::Gcc) => "gcc",
        Some(crate::platform::host::CompilerKind::Clang) => "clang",
        Some(crate::platform::host::CompilerKind::Msvc) => "msvc",
        None => NONE,
    }
}

fn tool_drift(recorded: &Plan, here: &Plan, out: &mut Vec<Drift>) {
    for ((name, a), (_, b)) in tools(recorded).into_iter().zip(tools(here)) {
        let label = |t: &ToolRecord| match t.kind {
            Some(_) => format!("{name} ({})", kind_name(t)),
            None => name.to_string(),
        };
        match (a, b) {
            (None, None) => {}
            (Some(a), None) => out.push(drift(
                Area::Toolchain,
                label(a),
                a.version.to_string(),
                NONE,
            )),
            (None, Some(b)) => out.push(drift(
                Area::Toolchain,
                label(b),
                NONE,
                b.version.to_string(),
            )),
            (Some(a), Some(b)) => {
                if a.kind != b.kind {
                    out.push(drift(
                        Area::Toolchain,
                        format!("{name} kind"),
                        kind_name(a),
                        kind_name(b),
                    ));
                }
                if a.version != b.version {
                    out.push(drift(
                        Area::Toolchain,
                        label(a),
                        a.version.to_string(),
                        b.version.to_string(),
                    ));
                }
                if a.path != b.path {
                    out.push(drift(
                        Area::Toolchain,
                        format!("{name} path"),
                        a.path.clone(),
                        b.path.clone(),
                    ));
                }
                if a.origin != b.origin {
                    out.push(drift(
                        Area::Toolchain,
                        format!("{name} origin"),
                        origin_text(&a.origin),
                        origin_text(&b.origin),
                    ));
                }
            }
        }
    }
}

fn source_drift(recorded: &Plan, here: &Plan, out: &mut Vec<Drift>) {
    let (a, b) = (&recorded.source, &here.source);
    let sha = |s: &Option<crate::digest::Sha256Hex>| {
        s.as_ref()
            .map(|s| s.to_string())
            .unwrap_or_else(|| NONE.into())
    };
    for (what, x, y) in [
        ("kind", a.kind.to_string(), b.kind.to_string()),
        ("location", a.location.clone(), b.location.clone()),
        ("sha256", sha(&a.sha256), sha(&b.sha256)),
        ("strip", a.strip.clone(), b.strip.clone()),
        ("project_dir", a.project_dir.clone(), b.project_dir.clone()),
    ] {
        if x != y {
            out.push(drift(Area::Source, format!("source {what}"), x, y));
        }
    }
}

/// The CUDA policy's outcome, less what is reported elsewhere: nvcc and
/// cuobjdump (toolchains), the flags, launcher and arch reasons (they are the
/// CMAKE_CUDA_* defines and their reasons), and the toolkits skipped here
/// (not part of the plan hash).
fn cuda_drift(recorded: &Plan, here: &Plan, out: &mut Vec<Drift>) {
    let policy = |p: &Plan| {
        p.cuda.as_ref().map(|c| {
            let mut v = serde_json::to_value(c).expect("CUDA plan serialises");
            let m = v.as_object_mut().expect("an object");
            for k in [
                "nvcc",
                "cuobjdump",
                "flags",
                "launcher",
                "arch_reasons",
                "skipped",
            ] {
                m.remove(k);
            }
            v
        })
    };
    let summary = |c: &crate::plan::cuda::PlannedCuda| {
        format!(
            "CUDA {} for {}, runtime {}",
            c.release,
            c.architectures,
            serde_json::to_value(c.runtime)
                .map(|v| scalar(&v))
                .unwrap_or_default()
        )
    };
    match (policy(recorded), policy(here)) {
        (None, None) => {}
        (Some(_), None) => out.push(drift(
            Area::Cuda,
            "cuda",
            summary(recorded.cuda.as_ref().expect("some")),
            NONE,
        )),
        (None, Some(_)) => out.push(drift(
            Area::Cuda,
            "cuda",
            NONE,
            summary(here.cuda.as_ref().expect("some")),
        )),
        (a, b) => {
            let mut found = Vec::new();
            json_diff(
                "cuda",
                &a.unwrap_or(Value::Null),
                &b.unwrap_or(Value::Null),
                &mut found,
            );
            out.extend(
                found
                    .into_iter()
                    .map(|(what, x, y)| drift(Area::Cuda, what, x, y)),
            );
        }
    }
}

/// Settings by name: value changes (unless `explained`), settings on one side
/// only, reasons and origins that changed, and a changed order.
fn settings_drift(
    area: Area,
    word: &str,
    a: &[Setting],
    b: &[Setting],
    explained: &BTreeSet<(String, String)>,
    out: &mut Vec<Drift>,
) {
    let by_name = |s: &[Setting]| {
        s.iter()
            .map(|d| (d.name.clone(), d.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    let (am, bm) = (by_name(a), by_name(b));
    let names: Vec<&String> = a
        .iter()
        .map(|d| &d.name)
        .chain(b.iter().map(|d| &d.name).filter(|n| !am.contains_key(*n)))
        .collect();
    for n in names {
        match (am.get(n), bm.get(n)) {
            (Some(x), Some(y)) => {
                if x.value != y.value && !explained.contains(&(x.value.clone(), y.value.clone())) {
                    out.push(drift(area, format!("{word} {n}"), &x.value, &y.value));
                }
                if x.origin != y.origin {
                    out.push(drift(
                        area,
                        format!("{word} {n} origin"),
                        x.origin.as_str(),
                        y.origin.as_str(),
                    ));
                }
                // A new value usually comes with its own reason: only a reworded reason is news.
                if x.reason != y.reason && x.value == y.value {
                    out.push(drift(
                        area,
                        format!("{word} {n} reason"),
                        &x.reason,
                        &y.reason,
                    ));
                }
            }
            (Some(x), None) => out.push(drift(area, format!("{word} {n}"), &x.value, "(not set)")),
            (None, Some(y)) => out.push(drift(area, format!("{word} {n}"), "(not set)", &y.value)),
            (None, None) => unreachable!("names come from either side"),
        }
    }
    let common = |s: &[Setting], other: &BTreeMap<String, Setting>| {
        s.iter()
            .filter(|d| other.contains_key(&d.name))
            .map(|d| d.name.clone())
            .collect::<Vec<_>>()
    };
    let (ao, bo) = (common(a, &bm), common(b, &am));
    if ao != bo {
        out.push(drift(
            area,
            format!("{word} order"),
            ao.join(","),
            bo.join(","),
        ));
    }
}

/// The plan less the parts compared above; the configure command without its
/// `-D` arguments (the defines), and CMake's path in argv[0] as `<cmake>`.
fn rest_of(p: &Plan) -> Value {
    // What is not recorded (the patch check's verdicts, the launcher) is no drift.
    let mut v = serde_json::to_value(Plan {
        patch_check: None,
        ..p.clone()
    })
    .expect("plan serialises");
    let m = v.as_object_mut().expect("an object");
    for k in ["tools", "source", "defines", "env", "cuda"] {
        m.remove(k);
    }
    if let Some(Value::Object(cmds)) = m.get_mut("commands") {
        for (_, cmd) in cmds.iter_mut() {
            if let Value::Array(argv) = cmd {
                argv.retain(|a| !a.as_str().is_some_and(|s| s.starts_with("-D")));
                if argv.first().and_then(Value::as_str) == Some(p.tools.cmake.path.as_str()) {
                    argv[0] = Value::String("<cmake>".into());
                }
            }
        }
    }
    v
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => NONE.into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A structural diff: objects key by key, arrays of equal length element by
/// element; anything else that differs is one entry `(path, a, b)`.
pub fn json_diff(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, String, String)>) {
    if a == b {
        return;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                json_diff(&join(k), va, y.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                json_diff(&join(k), &Value::Null, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                json_diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ => out.push((path.to_string(), scalar(a), scalar(b))),
    }
}

/// One file that differs between the recorded artifact and the rebuild.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub path: String,
    /// Size in the recorded artifact; `None`: only in the rebuild.
    pub recorded: Option<u64>,
    /// Size in the rebuild; `None`: only in the recorded artifact.
    pub rebuilt: Option<u64>,
    /// Bytes that differ, when both files' bytes are at hand.
    pub differing_bytes: Option<u64>,
}

/// The files whose sha256 or size differ, and those on one side only, by path.
pub fn diff_files(
    recorded: &BTreeMap<String, FileEntry>,
    rebuilt: &BTreeMap<String, FileEntry>,
) -> Vec<FileDiff> {
    let paths: BTreeSet<&String> = recorded.keys().chain(rebuilt.keys()).collect();
    paths
        .into_iter()
        .filter(|p| recorded.get(*p) != rebuilt.get(*p))
        .map(|p| FileDiff {
            path: p.clone(),
            recorded: recorded.get(p).map(|e| e.size),
            rebuilt: rebuilt.get(p).map(|e| e.size),
            differing_bytes: None,
        })
        .collect()
}

/// How many bytes differ: for files of one size, the bytes at the same offset
/// that differ; otherwise the span of the longer file between the common
/// prefix and the common suffix (an insertion shifts everything after it).
pub fn differing_bytes(a: &[u8], b: &[u8]) -> u64 {
    if a.len() == b.len() {
        return a.iter().zip(b).filter(|(x, y)| x != y).count() as u64;
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let shorter = a.len().min(b.len());
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(shorter - prefix)
        .take_while(|(x, y)| x == y)
        .count();
    (a.len().max(b.len()) - prefix - suffix) as u64
}

/// The table `reproduce` prints under `differs:`.
pub fn table(diffs: &[FileDiff]) -> String {
    let size = |s: Option<u64>| s.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
    let mut rows = vec![[
        "file".to_string(),
        "manifest".into(),
        "rebuilt".into(),
        "delta".into(),
        "differing bytes".into(),
    ]];
    for d in diffs {
        let delta = match (d.recorded, d.rebuilt) {
            (Some(a), Some(b)) => format!("{:+}", b as i64 - a as i64),
            (None, Some(_)) => "only rebuilt".into(),
            (Some(_), None) => "only manifest".into(),
            (None, None) => String::new(),
        };
        let bytes = match (
            d.differing_bytes,
            d.recorded.is_some() && d.rebuilt.is_some(),
        ) {
            (Some(n), _) => n.to_string(),
            (None, true) => "?".into(),
            (None, false) => "-".into(),
        };
        rows.push([
            d.path.clone(),
            size(d.recorded),
            size(d.rebuilt),
            delta,
            bytes,
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line = format!(
            "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {:>w4$}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The recorded artifact's name, which `reproduce` looks for beside the
/// manifest: one plain file name (no directory part, no `..`) of a wheel
/// (`.whl`, a valid wheel name) or an archive (`.tar.gz`, `.zip`). Anything else
/// could make it read a file elsewhere: the manifest is refused.
pub fn check_artifact_name(name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && matches!(std::path::Path::new(name).components().collect::<Vec<_>>().as_slice(), [std::path::Component::Normal(n)] if *n == name);
    let archive = |n: &str| {
        (n.strip_suffix(".tar.gz").or_else(|| n.strip_suffix(".zip"))).is_some_and(|stem| {
            !stem.is_empty()
                && stem
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
        })
    };
    let kind = name.parse::<crate::tags::WheelFilename>().is_ok() || archive(name);
    if !(plain && kind) {
        bail!(
            "the manifest's artifact.filename is {name:?}: not the plain file name of a wheel (.whl) or an archive (.tar.gz, .zip); a manifest names the artifact beside it, never a path: get the manifest from where the artifact was published"
        );
    }
    Ok(())
}

/// Which rebuilt artifact to compare with the recorded one: the same file
/// name, else (wheels) the same Python tag, else the only one.
pub fn pick_artifact(recorded: &str, rebuilt: &[String]) -> Option<usize> {
    if let Some(i) = rebuilt.iter().position(|r| r == recorded) {
        return Some(i);
    }
    if let Ok(w) = recorded.parse::<crate::tags::WheelFilename>() {
        let same_py = |r: &String| {
            r.parse::<crate::tags::WheelFilename>()
                .is_ok_and(|x| x.python == w.python)
        };
        if let Some(i) = rebuilt.iter().position(same_py) {
            return Some(i);
        }
    }
    (rebuilt.len() == 1).then_some(0)
}

#[cfg(test)]
mod tests;
