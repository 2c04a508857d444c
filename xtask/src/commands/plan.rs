//! `cargo xtask plan RECIPE ...`: prints the plan, as text or JSON.

use std::process::ExitCode;

use anyhow::Result;

use super::{PlanArgs, Ui};
use crate::detect::{prepare, Env};

pub fn run(args: &PlanArgs, env: &Env, _ui: Ui) -> Result<ExitCode> {
    let p = prepare(&args.build.request(), env, &crate::report::Log::stderr())?;
    let plan = &p.plan;
    if args.json {
        println!("{}", serde_json::to_string_pretty(plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "plan {} for {} {} ({:?})",
        &plan.hash().as_str()[..16],
        plan.recipe,
        plan.version,
        plan.artifact
    );
    let sha = plan
        .source
        .sha256
        .as_ref()
        .map(|s| s.to_string())
        .unwrap_or_else(|| "unpinned".into());
    println!(
        "source: {} {} (sha256 {sha})",
        plan.source.kind, plan.source.location
    );
    if let Some(u) = &plan.upstream {
        println!("upstream: {u}");
    }
    let t = &plan.tools;
    for (name, tool) in [
        ("cmake", &t.cmake),
        ("ninja", &t.ninja),
        ("cc", &t.cc),
        ("cxx", &t.cxx),
    ] {
        println!(
            "{name:>6}: {} {} ({})",
            tool.version, tool.path, tool.origin
        );
    }
    if let Some(m) = &t.msvc {
        println!(
            "  msvc: toolset {}, environment from {}, {} {} at {}",
            m.toolset,
            m.source,
            m.instance.display_name,
            m.instance.version,
            m.instance.path.display()
        );
    }
    if let Some(c) = &plan.cuda {
        println!(
            "  nvcc: {} {} ({})",
            c.nvcc.version, c.nvcc.path, c.nvcc.origin
        );
        println!(
            "CUDA {}: CMAKE_CUDA_ARCHITECTURES={}",
            c.release, c.architectures
        );
        for r in &c.arch_reasons {
            println!("  {r}");
        }
        println!("  host compiler: {}", c.host_policy);
        println!(
            "  runtime: {:?}; Requires-Dist {:?}; RUNPATH {}",
            c.runtime,
            c.requires,
            c.runpath.join(":")
        );
        if let Some(d) = &c.min_driver {
            println!("  needs Linux driver >= {d}");
        }
    }
    for w in crate::pipeline::plan_warnings(plan) {
        println!("warning: {w}");
    }
    println!("environment (nothing else is inherited):");
    for e in &plan.env {
        println!("  {}={}  # {}", e.name, e.value, e.reason);
    }
    println!("CMake defines:");
    for d in &plan.defines {
        println!("  -D{}={}  # [{}] {}", d.name, d.value, d.origin, d.reason);
    }
    if let Some(l) = &plan.launcher {
        println!(
            "launcher: {} {} {} ({}; not part of the plan hash: it does not change the bytes)",
            l.kind, l.tool.version, l.tool.path, l.tool.origin
        );
        for d in &l.defines {
            println!("  -D{}={}  # {}", d.name, d.value, d.reason);
        }
        for e in &l.env {
            println!("  {}={}  # {}", e.name, e.value, e.reason);
        }
    }
    println!("configure: {}", plan.commands.configure.join(" "));
    println!("build:     {}", plan.commands.build.join(" "));
    if let Some(i) = &plan.commands.install {
        println!("install:   {}", i.join(" "));
    }
    println!("package:   {}", serde_json::to_string(&plan.package)?);
    Ok(ExitCode::SUCCESS)
}
