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
use crate::plan::target::Accelerator;
use crate::plan::{Package, Plan, Setting, ToolRecord};
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
        release: Some(plan.version.clone()),
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
        dist,
        launcher: None,
        // Never the compiler the manifest records: tools are resolved on this machine
        // (the commands layer passes the user's own `--host-cc`).
        host_cc: None,
    })
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
    let mut v = serde_json::to_value(p).expect("plan serialises");
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
    let kind = name.parse::<crate::package::tags::WheelFilename>().is_ok() || archive(name);
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
    if let Ok(w) = recorded.parse::<crate::package::tags::WheelFilename>() {
        let same_py = |r: &String| {
            r.parse::<crate::package::tags::WheelFilename>()
                .is_ok_and(|x| x.python == w.python)
        };
        if let Some(i) = rebuilt.iter().position(same_py) {
            return Some(i);
        }
    }
    (rebuilt.len() == 1).then_some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::{fake_tools, opts};
    use crate::recipe::Recipe;

    fn recipe(name: &str) -> Recipe {
        crate::recipe::fixture(name)
    }

    fn archive_plan(tools: &crate::detect::toolchain::Toolchains) -> Plan {
        let r = recipe("llama.cpp");
        let o = opts(&[]);
        crate::plan::make(&r, r.release(None).unwrap(), tools, &o).unwrap()
    }

    fn lines(d: &[Drift]) -> Vec<String> {
        d.iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn equal_plans_do_not_drift() {
        let o = opts(&[]);
        let p = archive_plan(&fake_tools(&o.cache));
        assert_eq!(plan_drift(&p, &p.clone()), vec![]);
    }

    #[test]
    fn one_changed_define_is_reported_alone() {
        let o = opts(&[]);
        let a = archive_plan(&fake_tools(&o.cache));
        let mut r = recipe("llama.cpp");
        r.cmake
            .defines
            .iter_mut()
            .find(|d| d.name == "LLAMA_BUILD_SERVER")
            .unwrap()
            .value = "OFF".into();
        let b = crate::plan::make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        assert_ne!(a.hash(), b.hash());
        assert_eq!(
            lines(&plan_drift(&a, &b)),
            ["define LLAMA_BUILD_SERVER: ON (manifest) vs OFF (here)"]
        );
    }

    #[test]
    fn a_reworded_reason_and_a_new_define_are_named() {
        let o = opts(&[]);
        let a = archive_plan(&fake_tools(&o.cache));
        let mut b = a.clone();
        b.defines
            .iter_mut()
            .find(|d| d.name == "LLAMA_CURL")
            .unwrap()
            .reason = "no curl".into();
        b.defines.push(Setting {
            name: "GGML_LTO".into(),
            value: "ON".into(),
            reason: "smaller".into(),
            origin: crate::plan::SettingOrigin::Recipe,
        });
        let l = lines(&plan_drift(&a, &b));
        assert_eq!(l[0], "define LLAMA_CURL reason: no libcurl dependency: models are given as local files (manifest) vs no curl (here)");
        assert_eq!(l[1], "define GGML_LTO: (not set) (manifest) vs ON (here)");
        // The configure command is the defines: not reported again.
        assert_eq!(l.len(), 2, "{l:#?}");
    }

    #[test]
    fn a_newer_compiler_is_one_version_and_one_path_drift() {
        let o = opts(&[]);
        let a = archive_plan(&fake_tools(&o.cache));
        let mut t = fake_tools(&o.cache);
        let c = t.compiler.as_mut().unwrap();
        c.version = "14.2.0".parse().unwrap();
        c.cc = "/usr/bin/gcc-14".into();
        c.cxx = "/usr/bin/g++-14".into();
        let b = archive_plan(&t);
        let d = plan_drift(&a, &b);
        assert_eq!(
            lines(&d),
            [
                "cc (gcc): 12.2.0 (manifest) vs 14.2.0 (here)",
                "cc path: /usr/bin/gcc-12 (manifest) vs /usr/bin/gcc-14 (here)",
                "cxx (gcc): 12.2.0 (manifest) vs 14.2.0 (here)",
                "cxx path: /usr/bin/g++-12 (manifest) vs /usr/bin/g++-14 (here)",
            ],
            "CMAKE_C(XX)_COMPILER are the tool paths: not repeated"
        );
        assert!(d.iter().all(|d| d.area == Area::Toolchain));
    }

    #[test]
    fn cmake_origin_and_env_and_other_parts_are_classified() {
        let o = opts(&[]);
        let a = archive_plan(&fake_tools(&o.cache));
        let mut b = a.clone();
        b.tools.cmake.version = "3.31.6".parse().unwrap();
        b.tools.cmake.origin = crate::platform::host::Origin::System;
        b.tools.cmake.path = "/usr/bin/cmake".into();
        for c in [&mut b.commands.configure, &mut b.commands.build] {
            c[0] = "/usr/bin/cmake".into();
        }
        b.env.iter_mut().find(|e| e.name == "TZ").unwrap().value = "Europe/Paris".into();
        b.commands.build.push("--verbose".into());
        b.source_date_epoch += 1;
        let d = plan_drift(&a, &b);
        let l = lines(&d);
        assert_eq!(l[0], "cmake: 4.4.4 (manifest) vs 3.31.6 (here)");
        assert!(
            l[1].starts_with("cmake path: ${CACHE}/tools/cmake-4.4.4/"),
            "{l:?}"
        );
        assert!(l[2].starts_with("cmake origin: pinned wheel cmake.whl (sha256 abababababab) (manifest) vs system (here)"), "{l:?}");
        assert_eq!(l[3], "env TZ: UTC (manifest) vs Europe/Paris (here)");
        assert_eq!(d[3].area, Area::Env);
        assert!(
            l.contains(&format!(
                "source_date_epoch: {} (manifest) vs {} (here)",
                a.source_date_epoch, b.source_date_epoch
            )),
            "{l:?}"
        );
        assert!(
            l.iter().any(|x| x.starts_with("commands.build: ")),
            "argv lengths differ: the whole command: {l:?}"
        );
        assert!(
            !l.iter().any(|x| x.starts_with("commands.configure")),
            "argv[0] is the cmake path, reported above: {l:?}"
        );
        // The SOURCE_DATE_EPOCH env var follows source_date_epoch in real plans; here only the field moved.
        assert_eq!(
            d.iter().filter(|d| d.area == Area::Other).count(),
            2,
            "{l:?}"
        );
    }

    /// A GPU plan for `arch` with one system toolkit of `nvcc_version`.
    fn gpu_plan(arch: &str, nvcc_version: &str, tweak: impl Fn(&mut crate::plan::Options)) -> Plan {
        let release = &nvcc_version[..nvcc_version.rfind('.').unwrap()];
        let root = format!("/usr/local/cuda-{release}");
        let out = format!("Cuda compilation tools, release {release}, V{nvcc_version}\n");
        let tk = crate::detect::cuda::Toolkit {
            nvcc: format!("{root}/bin/nvcc").into(),
            cuobjdump: Some((
                format!("{root}/bin/cuobjdump").into(),
                nvcc_version.parse().unwrap(),
            )),
            root: root.into(),
            version: crate::cuda::NvccVersion::from_nvcc_output(&out).unwrap(),
            origin: crate::platform::host::Origin::System,
            found_by: "test".into(),
            cuda_path_flag: false,
            lacks_target: None,
        };
        let r = recipe("llama.cpp");
        let mut o = opts(&[]);
        o.accelerator = arch.parse().unwrap();
        tweak(&mut o);
        let mut t = fake_tools(&o.cache);
        t.cuda = vec![tk];
        t.patchelf = t.ninja.clone();
        crate::plan::make(&r, r.release(None).unwrap(), &t, &o).unwrap()
    }

    #[test]
    fn another_cuda_release_is_named_as_nvcc_and_cuda_policy() {
        let a = gpu_plan("120", "13.0.88", |_| {});
        let b = gpu_plan("120", "13.1.115", |_| {});
        let d = plan_drift(&a, &b);
        let l = lines(&d);
        for want in [
            "nvcc: 13.0.88 (manifest) vs 13.1.115 (here)",
            "nvcc path: /usr/local/cuda-13.0/bin/nvcc (manifest) vs /usr/local/cuda-13.1/bin/nvcc (here)",
            "cuobjdump: 13.0.88 (manifest) vs 13.1.115 (here)",
            "cuda.root: /usr/local/cuda-13.0 (manifest) vs /usr/local/cuda-13.1 (here)",
            "cuda.release: 13.0 (manifest) vs 13.1 (here)",
            "cuda.label: cu130 (manifest) vs cu131 (here)",
        ] {
            assert!(l.contains(&want.to_string()), "{want}: {l:#?}");
        }
        assert!(d.iter().any(|d| d.area == Area::Cuda));
        // CMAKE_CUDA_COMPILER and CUDAToolkit_ROOT are those paths: not repeated as defines.
        assert!(
            !l.iter()
                .any(|x| x.starts_with("define CMAKE_CUDA_COMPILER:")
                    || x.starts_with("define CUDAToolkit_ROOT:")),
            "{l:#?}"
        );
    }

    #[test]
    fn cpu_against_gpu_reports_the_cuda_section_and_defines() {
        let o = opts(&[]);
        let cpu = archive_plan(&fake_tools(&o.cache));
        let gpu = gpu_plan("120", "13.0.88", |_| {});
        let l = lines(&plan_drift(&gpu, &cpu));
        for want in [
            "nvcc: 13.0.88 (manifest) vs none (here)",
            "define GGML_CUDA: ON (manifest) vs OFF (here)",
            "accelerator: 120 (manifest) vs cpu (here)",
        ] {
            assert!(l.contains(&want.to_string()), "{want}: {l:#?}");
        }
        assert!(
            l.iter().any(|x| x
                == "cuda: CUDA 13.0 for 120a-real, runtime index-wheels (manifest) vs none (here)"),
            "{l:#?}"
        );
    }

    #[test]
    fn json_diff_names_paths() {
        let a = serde_json::json!({"a": {"b": [1, 2, 3]}, "c": "x", "d": [1]});
        let b = serde_json::json!({"a": {"b": [1, 5, 3]}, "c": "y", "d": [1, 2], "e": true});
        let mut out = Vec::new();
        json_diff("", &a, &b, &mut out);
        let want: Vec<(String, String, String)> = [
            ("a.b[1]", "2", "5"),
            ("c", "x", "y"),
            ("d", "[1]", "[1,2]"),
            ("e", "none", "true"),
        ]
        .into_iter()
        .map(|(p, x, y)| (p.to_string(), x.to_string(), y.to_string()))
        .collect();
        assert_eq!(out, want);
    }

    #[test]
    fn build_request_follows_the_recorded_plan() {
        let r = recipe("llama-cpp-python");
        let mut o = opts(&["311", "312"]);
        o.cpu_baseline = crate::plan::target::CpuBaseline::V3;
        let p = crate::plan::make(
            &r,
            r.release(Some(&"0.3.16".parse().unwrap())).unwrap(),
            &fake_tools(&o.cache),
            &o,
        )
        .unwrap();
        let a = build_request(&p, None, Some("/tmp/d".into()), None).unwrap();
        assert_eq!(
            (a.recipe.as_str(), a.release.as_ref().map(|v| v.to_string())),
            ("llama-cpp-python", Some("0.3.16".to_string()))
        );
        assert_eq!(
            a.pythons.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            ["3.11", "3.12"]
        );
        assert_eq!(a.cpu_baseline, crate::plan::target::CpuBaseline::V3);
        assert!(!a.ptx && a.cuda.is_none() && !a.bundle_cuda_runtime && a.source.is_none());
        assert!(
            build_request(&p, Some("/x/src.tar.gz".into()), None, None)
                .unwrap()
                .source
                .is_some(),
            "an offline copy of the pinned sdist"
        );

        let mut local = p.clone();
        local.source.kind = crate::plan::SourceKind::Local;
        local.source.location = "/home/ann/llama.cpp".into();
        let e = build_request(&local, None, None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/home/ann/llama.cpp") && e.contains("--source"),
            "{e}"
        );
        assert!(
            build_request(&local, Some("/elsewhere/llama.cpp".into()), None, None)
                .unwrap()
                .source
                .is_some()
        );

        for bad in ["../../etc/x", "/etc/x", "..", ""] {
            let mut hostile = p.clone();
            hostile.recipe = bad.into();
            let e = build_request(&hostile, None, None, None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("recipe is {bad:?}")), "{e}");
        }
    }

    #[test]
    fn build_request_for_gpu_plans_name_release_ptx_and_runtime() {
        let p = gpu_plan("rtx5090", "13.0.88", |_| {});
        let a = build_request(&p, None, None, None).unwrap();
        assert_eq!(a.cuda.map(|c| c.to_string()).as_deref(), Some("13.0"));
        assert_eq!(a.accelerator.to_string(), "rtx5090");
        assert!(!a.ptx && !a.bundle_cuda_runtime);
        let p = gpu_plan("120", "13.0.88", |o| {
            o.ptx = true;
            o.cuda_runtime = crate::plan::cuda::RuntimeMode::Bundled;
        });
        let a = build_request(&p, None, None, None).unwrap();
        assert!(
            a.ptx && a.bundle_cuda_runtime,
            "{}",
            p.cuda.as_ref().unwrap().architectures
        );
    }

    #[test]
    fn file_diffs_sizes_and_bytes() {
        let e = |size: u64, c: char| FileEntry {
            size,
            sha256: c.to_string().repeat(64).parse().unwrap(),
        };
        let rec: BTreeMap<String, FileEntry> = [
            ("libllama.so", e(100, 'a')),
            ("libggml.so", e(50, 'b')),
            ("old.txt", e(3, 'c')),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let new: BTreeMap<String, FileEntry> = [
            ("libllama.so", e(108, 'd')),
            ("libggml.so", e(50, 'b')),
            ("new.txt", e(4, 'e')),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut d = diff_files(&rec, &new);
        assert_eq!(
            d.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(),
            ["libllama.so", "new.txt", "old.txt"]
        );
        assert_eq!(
            differing_bytes(b"abcdef", b"abXdeY"),
            2,
            "same size: bytes at the same offset"
        );
        assert_eq!(
            differing_bytes(b"abcdef", b"abcXYZdef"),
            3,
            "an insertion: the span inserted"
        );
        assert_eq!(differing_bytes(b"abcdef", b"abc"), 3);
        assert_eq!(
            differing_bytes(b"aaaa", b"aaaaaa"),
            2,
            "prefix and suffix may not overlap"
        );
        d[0].differing_bytes = Some(differing_bytes(b"abcdef", b"abXdefgh"));
        assert_eq!(d[0].differing_bytes, Some(6));
        assert_eq!(
            table(&d),
            "file         manifest  rebuilt          delta  differing bytes\n\
             libllama.so       100      108             +8                6\n\
             new.txt             -        4   only rebuilt                -\n\
             old.txt             3        -  only manifest                -\n"
        );
    }

    #[test]
    fn the_artifact_name_must_be_a_plain_wheel_or_archive_name() {
        for ok in [
            "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
            "llama.cpp-0.3.36-cpu-windows-x86_64.zip",
            "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
        ] {
            check_artifact_name(ok).unwrap();
        }
        for bad in [
            "../../etc/passwd",
            "/etc/passwd",
            "sub/llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
            "../llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
            "..",
            ".",
            "",
            ".hidden.tar.gz",
            ".tar.gz",
            "x\\..\\y.tar.gz",
            "llama.cpp-0.3.36.rar",
            "sub/llama.cpp-0.3.36-cpu-windows-x86_64.zip",
            ".zip",
            "not-a-wheel.whl",
            "a b.tar.gz",
        ] {
            let e = check_artifact_name(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad:?}")) && e.contains("never a path"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn picks_the_same_name_else_the_same_python() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rebuilt = names(&[
            "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_35_x86_64.whl",
            "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
        ]);
        assert_eq!(
            pick_artifact(
                "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
                &rebuilt
            ),
            Some(1)
        );
        assert_eq!(
            pick_artifact(
                "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_34_x86_64.whl",
                &rebuilt
            ),
            Some(1)
        );
        assert_eq!(
            pick_artifact(
                "llama_cpp_python-0.3.36+cpu-cp313-cp313-manylinux_2_34_x86_64.whl",
                &rebuilt
            ),
            None
        );
        assert_eq!(
            pick_artifact(
                "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
                &names(&["llama.cpp-0.3.36-cpu.v3-linux-x86_64.tar.gz"])
            ),
            Some(0)
        );
    }
}
