//! `cargo xtask release`: on the mini-llama fixture (seconds) for failures, the
//! size budget and the CI flow, and once for real: llama-cpp-python for two
//! Pythons from one native build, installed with pip from the release's index.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// `xtask release <file> ...` with its own build dir.
fn release(file: &Path, build: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut args = vec!["release".to_string(), file.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let build = build.display().to_string();
    let mut envs = envs.to_vec();
    envs.push(("LLAMA_FORGE_BUILD_DIR", &build));
    run(&args, &envs)
}

/// A release of the llama.cpp recipe built from the mini-llama fixture.
fn mini_release(dir: &Path, extra: &str) -> PathBuf {
    mini_source(dir);
    let file = dir.join("mini.toml");
    std::fs::write(&file, format!("recipe = \"llama.cpp\"\nversions = [\"0.3.36\", \"0.3.16\"]\narch = [\"cpu\"]\nsource = \"mini-llama\"\n{extra}")).unwrap();
    file
}

fn sums(dist: &Path) -> Vec<String> {
    std::fs::read_to_string(dist.join("SHA256SUMS"))
        .unwrap()
        .lines()
        .map(|l| l.split_once("  ").unwrap().1.to_string())
        .collect()
}

fn sha256sum_check(dist: &Path) {
    sh(Command::new("sha256sum")
        .args(["-c", "--strict", "SHA256SUMS"])
        .current_dir(dist));
}

/// The name of the mini release's CPU cell of llama.cpp `version` (the host's target).
fn cell(version: &str) -> String {
    format!("llama.cpp-{version}-cpu-{}-linux", std::env::consts::ARCH)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn a_failing_cell_does_not_lose_the_others() {
    let d = tempfile::tempdir().unwrap();
    let file = mini_release(d.path(), "");
    // A recipe copy whose 0.3.16 asks Ninja for a target the fixture lacks.
    let recipes = d.path().join("recipes");
    copy_tree(&repo().join("recipes/patches"), &recipes.join("patches"));
    copy_tree(&repo().join("recipes/profiles"), &recipes.join("profiles"));
    for r in ["llama.cpp", "llama-cpp-python"] {
        let text = std::fs::read_to_string(repo().join(format!("recipes/{r}.toml"))).unwrap();
        std::fs::write(
            recipes.join(format!("{r}.toml")),
            text.replace(
                "version = \"0.3.16\"\n",
                "version = \"0.3.16\"\nextra_targets = [\"no-such-target\"]\n",
            ),
        )
        .unwrap();
    }
    let recipes = recipes.display().to_string();
    let env = [("LLAMA_FORGE_RECIPES", recipes.as_str())];

    let m = release(&file, &d.path().join("build"), &["--github-matrix"], &env);
    assert!(m.status.success());
    let m: serde_json::Value = serde_json::from_slice(&m.stdout).unwrap();
    let names: Vec<&str> = m["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cell"].as_str().unwrap())
        .collect();
    assert_eq!(names, [cell("0.3.36"), cell("0.3.16")]);

    let dist = d.path().join("dist");
    let o = release(
        &file,
        &d.path().join("build"),
        &["--jobs", "2", "--dist", &dist.display().to_string()],
        &env,
    );
    let t = text(&o);
    assert!(!o.status.success(), "a failed cell fails the release");
    assert!(
        t.contains(&format!("cell {} failed", cell("0.3.16")))
            && t.contains("unknown target 'no-such-target'"),
        "{t}"
    );
    let log = d
        .path()
        .join(format!("build/release-logs/{}.log", cell("0.3.16")));
    assert!(
        t.contains(&log.display().to_string()) && log.is_file(),
        "the cell's log is named:\n{t}"
    );
    // Each cell's log holds its own build's output, as `cargo xtask build` prints
    // it, and nothing of the other cell built beside it (--jobs 2).
    let failed_log = std::fs::read_to_string(&log).unwrap();
    let last = failed_log.lines().last().unwrap_or_default();
    assert!(
        failed_log.contains("building llama.cpp 0.3.16")
            && !failed_log.contains("0.3.36")
            && failed_log.contains("error: build failed")
            && failed_log.contains("unknown target 'no-such-target'")
            && !last.is_empty(),
        "{failed_log}"
    );
    let built_log = std::fs::read_to_string(
        d.path()
            .join(format!("build/release-logs/{}.log", cell("0.3.36"))),
    )
    .unwrap();
    let archive = dist
        .canonicalize()
        .unwrap()
        .join("llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz");
    assert!(
        built_log.contains("building llama.cpp 0.3.36")
            && built_log.contains(&format!("{} (", archive.display()))
            && built_log.contains(&format!("  manifest: {}.manifest.json", archive.display()))
            && built_log.lines().last().unwrap().starts_with("done in ")
            && !built_log.contains("0.3.16")
            && !built_log.contains("error: "),
        "{built_log}"
    );
    let row = |cell: &str| {
        t.lines()
            .find(|l| l.starts_with(cell))
            .unwrap_or_else(|| panic!("no row for {cell}:\n{t}"))
            .to_string()
    };
    assert!(
        row(&cell("0.3.36")).contains("built") && row(&cell("0.3.16")).contains("FAILED"),
        "{t}"
    );

    assert_eq!(sums(&dist), ["llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz"]);
    sha256sum_check(&dist);
    let rel = json(&dist.join("release.json"));
    assert_eq!(rel["incomplete"], serde_json::json!([cell("0.3.16")]));
    assert_eq!(rel["artifacts"][0]["cell"], cell("0.3.36").as_str());
    assert!(
        !dist.join("simple").exists() && !dist.join("cpu").exists(),
        "archives are not a Python index"
    );
    assert!(rel.get("indexes").is_none(), "{rel}");
    assert!(!dist.join(format!("cells/{}.json", cell("0.3.16"))).exists());

    // A malformed release file names itself and the key.
    std::fs::write(
        &file,
        "recipe = \"llama.cpp\"\narch = [\"cpu\"]\nmax_size = 1\n",
    )
    .unwrap();
    let o = release(&file, &d.path().join("build"), &[], &[]);
    let t = text(&o);
    assert!(
        !o.status.success() && t.contains("mini.toml") && t.contains("unknown field `max_size`"),
        "{t}"
    );
}

#[test]
fn size_budget_fails_the_cell_and_names_its_libraries() {
    let d = tempfile::tempdir().unwrap();
    let (build, dist) = (d.path().join("build"), d.path().join("dist"));
    let dist_s = dist.display().to_string();
    let file = mini_release(d.path(), "");
    let o = release(&file, &build, &["--dist", &dist_s], &[]);
    assert!(o.status.success());
    // Each cell's log: its one build, as `cargo xtask build` reports it.
    let logs: Vec<String> = ["0.3.36", "0.3.16"]
        .iter()
        .map(|v| {
            let log = std::fs::read_to_string(build.join(format!("release-logs/{}.log", cell(v))))
                .unwrap();
            let lines: Vec<&str> = log.lines().collect();
            assert!(
                lines[0].starts_with(&format!("building llama.cpp {v} (plan "))
                    && log.matches("building llama.cpp").count() == 1
                    && log.contains(&format!("llama.cpp-{v}-cpu-linux-x86_64.tar.gz ("))
                    && log.contains(", sha256 ")
                    && lines[lines.len() - 2].starts_with("  manifest: ")
                    && lines[lines.len() - 1].starts_with("done in "),
                "{log}"
            );
            log
        })
        .collect();
    // 0.3.36 also ships llama-completion, so its archive is larger: a budget
    // between the two sizes fails only that cell.
    let rel = json(&dist.join("release.json"));
    let size = |cell: &str| {
        rel["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["cell"] == cell)
            .unwrap()["size"]
            .as_u64()
            .unwrap()
    };
    let (big, small) = (size(&cell("0.3.36")), size(&cell("0.3.16")));
    assert!(big > small, "{big} > {small}");
    let budget = (big + small) as f64 / 2.0 / 1e6;
    let file = mini_release(d.path(), &format!("max_size_mb = {budget}\n"));

    let o = release(&file, &build, &["--dist", &dist_s], &[]);
    let t = text(&o);
    assert!(!o.status.success(), "over budget fails the release");
    let is = format!(
        "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz is {}",
        xtask::release::human(big)
    );
    let over = format!("over the size budget of {budget} MB");
    for needle in [
        is.as_str(),
        over.as_str(),
        "max_size_mb in",
        "libggml-base.so",
        "libllama.so",
        "llama-completion",
        "kB",
    ] {
        assert!(t.contains(needle), "`{needle}` not in:\n{t}");
    }
    let row = |cell: &str| t.lines().find(|l| l.starts_with(cell)).unwrap().to_string();
    assert!(row(&cell("0.3.36")).contains("over budget"), "{t}");
    for (v, log) in ["0.3.36", "0.3.16"].iter().zip(&logs) {
        assert_eq!(
            &std::fs::read_to_string(build.join(format!("release-logs/{}.log", cell(v)))).unwrap(),
            log,
            "no cell was built again"
        );
    }
    assert!(
        row(&cell("0.3.16")).contains("up to date"),
        "the other cell survives, not rebuilt:\n{t}"
    );
    assert_eq!(sums(&dist), ["llama.cpp-0.3.16-cpu-linux-x86_64.tar.gz"]);
    sha256sum_check(&dist);
    let files = files_in(&dist);
    assert!(
        !files.iter().any(|f| f.contains("0.3.36")),
        "nothing of the failed cell in dist: {files:?}"
    );
    assert_eq!(
        files_in(&dist.join("rejected")),
        [
            "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
            "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz.manifest.json"
        ]
    );
    let rel = json(&dist.join("release.json"));
    assert_eq!(rel["artifacts"].as_array().unwrap().len(), 1);
    assert_eq!(rel["incomplete"], serde_json::json!([cell("0.3.36")]));
}

/// What the workflow does: one job per cell (`--cell`), then one job gathers
/// their dist/ files and writes the release's files (`--index-only`).
#[test]
fn cell_jobs_then_index_only_make_one_release() {
    let d = tempfile::tempdir().unwrap();
    let file = mini_release(d.path(), "");
    let all = d.path().join("dist-all");
    for cell in [cell("0.3.36"), cell("0.3.16")] {
        let dist = d.path().join(format!("dist-{cell}"));
        let o = release(
            &file,
            &d.path().join(format!("build-{cell}")),
            &["--cell", &cell, "--dist", &dist.display().to_string()],
            &[],
        );
        assert!(
            o.status.success(),
            "a --cell run succeeds with the other cells missing"
        );
        assert_eq!(sums(&dist).len(), 1);
        // What the job uploads: artifacts, manifests, the cell record.
        for f in files_in(&dist)
            .into_iter()
            .filter(|f| f.ends_with(".tar.gz") || f.ends_with(".manifest.json"))
        {
            std::fs::create_dir_all(&all).unwrap();
            std::fs::copy(dist.join(&f), all.join(&f)).unwrap();
        }
        std::fs::create_dir_all(all.join("cells")).unwrap();
        std::fs::copy(
            dist.join(format!("cells/{cell}.json")),
            all.join(format!("cells/{cell}.json")),
        )
        .unwrap();
    }
    let all_s = all.display().to_string();
    let o = release(
        &file,
        &d.path().join("build-gather"),
        &["--index-only", "--dist", &all_s],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("in dist"));
    assert_eq!(sums(&all).len(), 2);
    sha256sum_check(&all);
    assert!(json(&all.join("release.json")).get("incomplete").is_none());
    // The build dir is made (private) before any command that builds, and left empty.
    assert!(
        files_in(&d.path().join("build-gather")).is_empty(),
        "--index-only builds nothing"
    );

    // A cell whose job failed: the gather still writes the others, and fails.
    std::fs::remove_file(all.join(format!("cells/{}.json", cell("0.3.16")))).unwrap();
    let o = release(
        &file,
        &d.path().join("build-gather"),
        &["--index-only", "--dist", &all_s],
        &[],
    );
    assert!(!o.status.success());
    assert_eq!(sums(&all), ["llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz"]);
    assert!(
        text(&o).contains("llama.cpp-0.3.16-cpu-linux-x86_64.tar.gz belongs to no cell"),
        "{}",
        text(&o)
    );
}

/// Release files in `dir` built from the fixtures (seconds each): `name.toml` of
/// `recipe` (`llama.cpp` from mini-llama, `llama-cpp-python` from mini-llama-python),
/// 0.3.36, CPU, plus `extra`.
fn fixture_release(dir: &Path, name: &str, recipe: &str, extra: &str) -> PathBuf {
    let source = match recipe {
        "llama.cpp" => "mini-llama",
        _ => "mini-llama-python",
    };
    if !dir.join(source).is_dir() {
        copy_tree(
            &repo().join("tests/fixtures").join(source),
            &dir.join(source),
        );
    }
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!("recipe = \"{recipe}\"\nversions = [\"0.3.36\"]\narch = [\"cpu\"]\nsource = \"{source}\"\n{extra}"),
    )
    .unwrap();
    file
}

/// The cells of release.json, each with its recipe and the release file it names.
fn cells_of(dist: &Path) -> Vec<(String, String, String)> {
    let rel = json(&dist.join("release.json"));
    rel["cells"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, c)| {
            (
                name.clone(),
                c["recipe"].as_str().unwrap().to_string(),
                c["release"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Two release files shaped like the project's releases/llama.cpp.toml and
/// releases/llama-cpp-python.toml (CPU cells of the fixtures, so seconds), released one
/// after the other into one dist/: each release keeps the other file's cells in
/// SHA256SUMS, release.json and the indexes, and says so; a rerun of the first builds
/// nothing and keeps the second's wheel and its index.
#[test]
fn release_files_sharing_a_dist_keep_each_others_cells() {
    let d = tempfile::tempdir().unwrap();
    let (build, dist) = (d.path().join("build"), d.path().join("dist"));
    let dist_s = dist.display().to_string();
    let tools = fixture_release(d.path(), "llama.cpp", "llama.cpp", "max_size_mb = 200\n");
    let wheels = fixture_release(
        d.path(),
        "llama-cpp-python",
        "llama-cpp-python",
        "max_size_mb = 100\n",
    );
    // Outside the checkout, a record names its release file by its absolute path.
    let id = |f: &Path| f.canonicalize().unwrap().display().to_string();
    let archive = "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz";
    let arch = std::env::consts::ARCH;
    let (tool_cell, wheel_cell) = (
        cell("0.3.36"),
        format!("llama-cpp-python-0.3.36-cpu-{arch}-linux"),
    );

    let o = release(&tools, &build, &["--dist", &dist_s], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("also holds"), "{}", text(&o));
    assert_eq!(sums(&dist), [archive]);

    let o = release(&wheels, &build, &["--dist", &dist_s], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!(
            "{} also holds 1 cell of {}: kept in SHA256SUMS, release.json",
            dist.display(),
            id(&tools)
        )),
        "the release says it merged:\n{t}"
    );
    let all = sums(&dist);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0], archive);
    assert!(
        all[1].starts_with("llama_cpp_python-0.3.36+cpu-py3-none-") && all[1].ends_with(".whl"),
        "{all:?}"
    );
    sha256sum_check(&dist);
    let both = vec![
        (
            wheel_cell.clone(),
            "llama-cpp-python".to_string(),
            id(&wheels),
        ),
        (tool_cell.clone(), "llama.cpp".to_string(), id(&tools)),
    ];
    assert_eq!(cells_of(&dist), both);
    let rel = json(&dist.join("release.json"));
    let listed: Vec<&str> = rel["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["filename"].as_str().unwrap())
        .collect();
    assert_eq!(listed, all);
    assert_eq!(rel["indexes"], serde_json::json!({"cpu": "cpu/simple"}));
    assert!(rel.get("incomplete").is_none(), "{rel}");
    assert!(
        t.contains(&format!("2 artifacts of 2 cells in {}", dist.display())),
        "{t}"
    );

    // The first file again: its cell is up to date, the wheel and its index stay.
    let o = release(&tools, &build, &["--dist", &dist_s], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!("[{tool_cell}] up to date"))
            && t.contains(&format!("also holds 1 cell of {}", id(&wheels))),
        "{t}"
    );
    assert_eq!(sums(&dist), all);
    sha256sum_check(&dist);
    assert_eq!(cells_of(&dist), both);
    let page =
        std::fs::read_to_string(dist.join("cpu/simple/llama-cpp-python/index.html")).unwrap();
    assert!(page.contains(&all[1]), "{page}");
    assert_eq!(
        json(&dist.join("release.json"))["indexes"],
        serde_json::json!({"cpu": "cpu/simple"}),
        "an index whose cells remain is kept"
    );
}

/// A second wheel release of another CPU baseline into the same dist/: its own cell
/// name and flavour (`cpu-v3`), and the first release's index dir stays beside it.
#[test]
fn another_cpu_baseline_keeps_the_first_index() {
    let d = tempfile::tempdir().unwrap();
    let (build, dist) = (d.path().join("build"), d.path().join("dist"));
    let dist_s = dist.display().to_string();
    let v2 = fixture_release(d.path(), "cpu", "llama-cpp-python", "");
    let v3 = fixture_release(
        d.path(),
        "cpu-v3",
        "llama-cpp-python",
        "cpu_baseline = \"x86-64-v3\"\n",
    );
    let o = release(&v2, &build, &["--dist", &dist_s], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let first =
        std::fs::read_to_string(dist.join("cpu/simple/llama-cpp-python/index.html")).unwrap();

    let o = release(&v3, &build, &["--dist", &dist_s], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let arch = std::env::consts::ARCH;
    assert!(
        t.contains(&format!(
            "[llama-cpp-python-0.3.36-cpu-v3-{arch}-linux] built"
        )),
        "{t}"
    );
    assert!(t.contains("also holds 1 cell of"), "{t}");
    assert_eq!(
        std::fs::read_to_string(dist.join("cpu/simple/llama-cpp-python/index.html")).unwrap(),
        first,
        "the first release's index is kept as it was"
    );
    let page =
        std::fs::read_to_string(dist.join("cpu-v3/simple/llama-cpp-python/index.html")).unwrap();
    assert!(page.contains("+cpu.v3-py3-none-"), "{page}");
    assert_eq!(
        json(&dist.join("release.json"))["indexes"],
        serde_json::json!({"cpu": "cpu/simple", "cpu.v3": "cpu-v3/simple"})
    );
    assert_eq!(sums(&dist).len(), 2);
    sha256sum_check(&dist);
    let names: Vec<String> = cells_of(&dist).into_iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            format!("llama-cpp-python-0.3.36-cpu-v3-{arch}-linux"),
            format!("llama-cpp-python-0.3.36-cpu-{arch}-linux"),
        ]
    );
}

/// A GitHub Actions matrix takes 256 cells: `--github-matrix` of 272 is a usage error
/// (exit 2) that names both numbers, and prints no matrix; `--cell` narrows it. A local
/// run of more than 32 cells asks for `--yes` and builds nothing without it.
#[test]
fn too_many_cells_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let build = d.path().join("build");
    let cuda: Vec<String> = (0..=9)
        .map(|m| format!("\"12.{m}\""))
        .chain((0..=6).map(|m| format!("\"13.{m}\"")))
        .collect();
    // 2 versions x 8 arch sets x 17 CUDA releases.
    let file = d.path().join("big.toml");
    std::fs::write(
        &file,
        format!(
            "recipe = \"llama.cpp\"\nversions = [\"0.3.36\", \"0.3.16\"]\narch = [\"120\", \"100\", \"90\", \"89\", \"86\", \"80\", \"75\", \"70\"]\ncuda = [{}]\n",
            cuda.join(", ")
        ),
    )
    .unwrap();
    let o = release(&file, &build, &["--github-matrix"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("the release has 272 cells, more than the 256 a GitHub Actions matrix takes"),
        "{t}"
    );
    assert!(o.stdout.is_empty(), "no matrix: {t}");
    let one = format!(
        "llama.cpp-0.3.36-cu13.0-120-{}-linux",
        std::env::consts::ARCH
    );
    let o = release(&file, &build, &["--github-matrix", "--cell", &one], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(m["include"].as_array().unwrap().len(), 1);

    let o = release(&file, &build, &[], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("the release would build 272 cells here, more than 32: give --yes"),
        "{t}"
    );
    assert!(files_in(&build).is_empty(), "nothing was built");
}

/// A release file's `source` stays under its dir: `..`, an absolute path and a link
/// that leads out are refused, naming the path, before anything is built.
#[cfg(unix)]
#[test]
fn a_source_outside_the_release_files_dir_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let build = d.path().join("build");
    let here = d.path().join("releases");
    std::fs::create_dir_all(&here).unwrap();
    mini_source(d.path());
    std::os::unix::fs::symlink(d.path().join("mini-llama"), here.join("link")).unwrap();
    let outside = d.path().join("mini-llama").canonicalize().unwrap();
    let file = here.join("r.toml");
    for (source, says) in [
        ("../mini-llama".to_string(), "`..`".to_string()),
        (
            outside.display().to_string(),
            "it is an absolute path".to_string(),
        ),
        (
            "link".to_string(),
            format!(
                "is {}, outside the release file's directory",
                outside.display()
            ),
        ),
    ] {
        std::fs::write(
            &file,
            format!("recipe = \"llama.cpp\"\narch = [\"cpu\"]\nsource = \"{source}\"\n"),
        )
        .unwrap();
        let o = release(&file, &build, &[], &[]);
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(
            t.contains(&format!("source = \"{source}\"")) && t.contains(&says),
            "{source}: {t}"
        );
        assert!(files_in(&build).is_empty(), "nothing was built");
    }
}

/// The real thing: llama-cpp-python, CPU, one py3-none wheel for every Python.
/// One native build, SHA256SUMS that `sha256sum -c` accepts, the flavour's own
/// index that the printed pip and uv lines install from, as printed, with the wheel's real
/// dependencies from the package index; the wheel loads a model and generates. Then a rerun
/// builds nothing. Its build dir and plan are e2e's main wheel's (no --py): when
/// e2e.rs ran first, that work dir holds the objects and nothing is recompiled.
#[test]
fn wheel_release_builds_once_and_pip_installs_from_its_index() {
    let d = tempfile::tempdir().unwrap();
    let (build, dist) = (real_build_dir(), d.path().join("dist"));
    let _ = std::fs::remove_dir_all(build.join("release-logs"));
    let file = d.path().join("cpu.toml");
    std::fs::write(&file, "recipe = \"llama-cpp-python\"\nversions = [\"0.3.36\"]\narch = [\"cpu\"]\nmax_size_mb = 100\n").unwrap();
    let dist_s = dist.display().to_string();

    let t0 = std::time::Instant::now();
    // With ccache, as e2e.rs's real builds: where llama.cpp's archive was built first,
    // its objects of the shared tree come from the cache.
    let o = release(
        &file,
        &build,
        &["--dist", &dist_s, "--launcher", "ccache"],
        &[],
    );
    let cold = t0.elapsed();
    assert!(o.status.success(), "{}", text(&o));

    // One native build: one "building ..." line in the cell's log, one work dir, one configure.
    let wheel_cell = format!(
        "llama-cpp-python-0.3.36-cpu-{}-linux",
        std::env::consts::ARCH
    );
    let log_path = build.join(format!("release-logs/{wheel_cell}.log"));
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(
        log.matches("building llama-cpp-python 0.3.36").count(),
        1,
        "{log}"
    );
    let work: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("building llama-cpp-python 0.3.36 "))
        .filter_map(|(_, rest)| rest.split_once(" in ").map(|(_, dir)| dir.trim()))
        .collect();
    assert_eq!(work.len(), 1, "one work dir named: {log}");
    let work = Path::new(work[0]);
    assert_eq!(work.parent(), Some(build.as_path()), "{log}");
    assert!(work.join("logs/configure.log").is_file());

    let wheels: Vec<String> = files_in(&dist)
        .into_iter()
        .filter(|f| f.ends_with(".whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    assert!(wheels[0].contains("+cpu-py3-none-manylinux_"), "{wheels:?}");
    assert_eq!(sums(&dist), wheels);
    sha256sum_check(&dist);
    // One index per flavour: this release's only flavour is `cpu`.
    let page =
        std::fs::read_to_string(dist.join("cpu/simple/llama-cpp-python/index.html")).unwrap();
    assert_eq!(page.matches("#sha256=").count(), 1, "{page}");
    assert!(!dist.join("simple").exists(), "no index of every flavour");
    assert_eq!(
        json(&dist.join("release.json"))["indexes"],
        serde_json::json!({"cpu": "cpu/simple"})
    );
    // The lines the release printed for its one flavour, run as printed, each by `sh -c`
    // in a fresh dir: a venv, our wheel from the flavour's index at its exact version, its
    // real dependencies (numpy, jinja2, diskcache, typing-extensions) from the package
    // index. Once with pip, once with uv (from the index, pinned).
    let out = text(&o);
    let block: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "  cpu (llama-cpp-python 0.3.36+cpu):")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(str::trim)
        .collect();
    let index = url::Url::from_directory_path(dist.join("cpu/simple")).unwrap();
    assert_eq!(
        block,
        [
            "with pip:".to_string(),
            "python3 -m venv .venv".to_string(),
            format!(".venv/bin/python -m pip install --extra-index-url {index} llama-cpp-python==0.3.36+cpu"),
            "with uv:".to_string(),
            "uv venv".to_string(),
            format!("uv pip install --extra-index-url {index} llama-cpp-python==0.3.36+cpu"),
        ],
        "{out}"
    );
    let uv_tools = d.path().join("uv-tools");
    let uv_python = venv(&uv_tools);
    sh(Command::new(&uv_python).args(["-m", "pip", "install", "-q", "uv==0.13.9"]));
    let path = format!(
        "{}:{}",
        uv_tools.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let mut pythons = Vec::new();
    for (tool, lines) in [("pip", &block[1..3]), ("uv", &block[4..6])] {
        let here = d.path().join(format!("with-{tool}"));
        std::fs::create_dir_all(&here).unwrap();
        for line in lines {
            sh(Command::new("sh")
                .args(["-c", line])
                .current_dir(&here)
                .env("PATH", &path)
                .env("UV_CACHE_DIR", d.path().join("uv-cache"))
                .env_remove("VIRTUAL_ENV"));
        }
        pythons.push(here.join(".venv/bin/python"));
    }
    for python in &pythons {
        let listed = sh(Command::new(python).args([
            "-c",
            "import importlib.metadata as m; print(*sorted(d.metadata['Name'].lower() for d in m.distributions()))",
        ]));
        for dep in ["numpy", "jinja2", "diskcache", "typing_extensions"] {
            assert!(
                listed.replace('-', "_").contains(dep),
                "{python:?}: {dep} not installed: {listed}"
            );
        }
    }
    let model = tiny_model(&pythons[0], &d.path().join("tiny.gguf"));
    for (python, tool) in pythons.iter().zip(["with-pip", "with-uv"]) {
        let version = sh(Command::new(python).args([
            "-c",
            "import importlib.metadata as m; print(m.version('llama_cpp_python'))",
        ]));
        assert_eq!(version.trim(), "0.3.36+cpu");
        let out = sh(Command::new(python)
            .arg(repo().join("tests/e2e/smoke_llama_cpp_python.py"))
            .arg(&model)
            .args(["--tokens", "8"])
            .current_dir(d.path()));
        assert!(out.contains(tool), "imported from the venv:\n{out}");
        assert_eq!(tokens(&out).len(), 8);
    }

    // The rerun is a no-op.
    let sums_before = std::fs::read(dist.join("SHA256SUMS")).unwrap();
    let t1 = std::time::Instant::now();
    let o = release(&file, &build, &["--dist", &dist_s], &[]);
    let noop = t1.elapsed();
    assert!(o.status.success());
    assert!(
        text(&o).contains(&format!("[{wheel_cell}] up to date")),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&log_path).unwrap(),
        log,
        "no child ran"
    );
    assert_eq!(std::fs::read(dist.join("SHA256SUMS")).unwrap(), sums_before);
    eprintln!(
        "release of 2 wheels: {:.1} s (in e2e's build dir), no-op rerun {:.2} s",
        cold.as_secs_f64(),
        noop.as_secs_f64()
    );
}
