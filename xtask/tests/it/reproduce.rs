//! `cargo xtask reproduce` on real builds of the mini-llama fixture (seconds
//! each): checkouts at different paths, each with its own recipes, toolchains
//! and build dir, and a recorded manifest from another machine.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

/// A checkout at `dir/repo` (recipes and toolchains copied, `edit` applied to
/// every recipe), with its own build dir at `dir/work`.
struct Checkout {
    root: PathBuf,
    work: PathBuf,
}

impl Checkout {
    fn new(dir: &Path, edit: impl Fn(String) -> String) -> Checkout {
        let root = dir.join("repo");
        checkout(&root);
        for e in std::fs::read_dir(root.join("recipes")).unwrap().flatten() {
            if e.path().is_dir() {
                continue; // recipes/patches: the shared patches, not edited
            }
            let text = std::fs::read_to_string(e.path()).unwrap();
            std::fs::write(e.path(), edit(text)).unwrap();
        }
        Checkout {
            root,
            work: dir.join("work"),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = xtask(args, &[]);
        c.env("LLAMA_FORGE_ROOT", &self.root)
            .env("LLAMA_FORGE_BUILD_DIR", &self.work);
        let o = c.output().unwrap();
        eprintln!("$ xtask {}\n{}", args.join(" "), text(&o));
        o
    }
}

/// A recipe's text with one define's value changed (where the recipe has it).
fn set_define(recipe: String, name: &str, from: &str, to: &str) -> String {
    recipe.replace(
        &format!("name = \"{name}\"\nvalue = \"{from}\""),
        &format!("name = \"{name}\"\nvalue = \"{to}\""),
    )
}

/// The file column of the table under `differs:`.
fn differing_files(o: &Output) -> Vec<String> {
    let out = String::from_utf8_lossy(&o.stdout);
    out.lines()
        .skip_while(|l| !l.contains("differing bytes"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn drift_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("drift: "))
        .map(str::to_string)
        .collect()
}

/// `sha256 <hex>` at the end of the `identical:` line.
fn identical_sha(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("identical: "))
        .unwrap_or_else(|| panic!("no identical line in:\n{out}"));
    line.rsplit("sha256 ").next().unwrap().to_string()
}

#[test]
fn another_checkout_reproduces_identically_and_a_changed_define_is_named() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let src_s = src.display().to_string();

    // A: the colleague's build.
    let a = Checkout::new(&d.path().join("a"), |t| t);
    let dist_a = a.root.join("dist");
    let o = a.run(&[
        "build",
        "llama.cpp",
        "--version",
        "0.3.36",
        "--source",
        &src_s,
        "--dist",
        &dist_a.display().to_string(),
    ]);
    assert!(o.status.success());
    let archive = files_in(&dist_a)
        .into_iter()
        .find(|f| f.ends_with(".tar.gz"))
        .unwrap();
    let manifest = dist_a
        .join(format!("{archive}.manifest.json"))
        .display()
        .to_string();
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let recorded_sha = recorded["artifact"]["sha256"].as_str().unwrap().to_string();

    // B: another checkout, at a longer path, rebuilds the recorded plan.
    let b = Checkout::new(&d.path().join("checkout-b-elsewhere"), |t| t);
    let o = b.run(&["reproduce", &manifest, "--source", &src_s]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("no drift: plan ") && drift_lines(&o).is_empty(),
        "{t}"
    );
    assert_eq!(identical_sha(&o), recorded_sha);
    assert!(
        b.root.join("dist/reproduce").join(&archive).is_file(),
        "default dist is dist/reproduce/"
    );
    assert!(
        !b.root.join("dist").join(&archive).exists(),
        "never written over the user's dist/"
    );

    // An edited copy of the source dir is not the recorded source: refused before building.
    let edited = mini_source(&d.path().join("edited"));
    std::fs::write(
        edited.join("tool.cpp"),
        std::fs::read_to_string(src.join("tool.cpp")).unwrap() + "\n// edited\n",
    )
    .unwrap();
    let o = b.run(&[
        "reproduce",
        &manifest,
        "--source",
        &edited.display().to_string(),
    ]);
    let t = text(&o);
    assert!(
        !o.status.success()
            && t.contains("tree sha256")
            && t.contains(recorded["plan"]["source"]["tree_sha256"].as_str().unwrap()),
        "{t}"
    );

    // C: its recipe sets one define differently.
    let c = Checkout::new(&d.path().join("c"), |t| {
        set_define(t, "LLAMA_BUILD_SERVER", "ON", "OFF")
    });
    let strict = c.run(&["reproduce", &manifest, "--source", &src_s, "--strict"]);
    assert_eq!(strict.status.code(), Some(3), "--strict refuses on drift");
    assert_eq!(
        drift_lines(&strict),
        ["define LLAMA_BUILD_SERVER: ON (manifest) vs OFF (here)"]
    );
    assert!(text(&strict).contains("refusing to build (--strict)"));
    assert!(
        !c.root.join("dist").exists() && !c.work.exists(),
        "nothing was built"
    );

    let o = c.run(&["reproduce", &manifest, "--source", &src_s]);
    assert_eq!(o.status.code(), Some(1), "the rebuilt artifact differs");
    assert_eq!(
        drift_lines(&o),
        ["define LLAMA_BUILD_SERVER: ON (manifest) vs OFF (here)"]
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "differs: {}",
            c.root.join("dist/reproduce").join(&archive).display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("sha256: {recorded_sha} (manifest) vs ")),
        "{out}"
    );
    // The define reaches libllama.so only; the manifest inside the archive records it too.
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("differing bytes"))
        .skip(1)
        .map(str::trim)
        .collect();
    let files: Vec<&str> = table
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(files, ["libllama.so", "manifest.json"], "{out}");
    let cols: Vec<&str> = table[0].split_whitespace().collect();
    assert_eq!(cols.len(), 5, "{out}");
    let n: u64 = cols[4]
        .parse()
        .expect("the recorded archive is beside the manifest: differing bytes are counted");
    assert!(n > 0, "{out}");
}

/// `tests/fixtures/manifests/other-machine.manifest.json` is a real mini-llama
/// manifest edited to say it was built with gcc 14.2.0, the system's CMake
/// 3.31.6 and Ninja 1.12.1, from /home/ann/src/mini-llama (see the script beside it).
#[test]
fn a_manifest_from_another_machine_reports_its_toolchains() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let fixture = repo()
        .join("tests/fixtures/manifests/other-machine.manifest.json")
        .display()
        .to_string();
    let here = Checkout::new(&d.path().join("here"), |t| t);

    let o = here.run(&["reproduce", &fixture, "--source", &src, "--strict"]);
    assert_eq!(o.status.code(), Some(3), "drift under --strict: refused");
    let drift = drift_lines(&o);
    for want in [
        "cc (gcc): 14.2.0 (manifest) vs ",
        "cxx (gcc): 14.2.0 (manifest) vs ",
        "cxx path: /usr/bin/g++-14 (manifest) vs ",
        "source location: /home/ann/src/mini-llama (manifest) vs ",
    ] {
        assert!(
            drift.iter().any(|l| l.starts_with(want)),
            "{want}: {drift:#?}"
        );
    }
    // Unless this machine has them too, CMake and Ninja differ (here: pinned 4.4.4 and 1.13.2).
    // The compiler defines are the compiler paths above, not repeated.
    assert!(
        drift
            .iter()
            .all(|l| !l.starts_with("define CMAKE_C_COMPILER")
                && !l.starts_with("define CMAKE_CXX_COMPILER")
                && !l.starts_with("define order")),
        "{drift:#?}"
    );
    assert!(!here.work.exists(), "nothing was built");

    // Without --strict it warns, builds, and reports the artifact as different.
    let o = here.run(&[
        "reproduce",
        &fixture,
        "--source",
        &src,
        "--dist",
        &d.path().join("out").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("warning: building anyway") && t.contains("differs: "),
        "{t}"
    );
    assert!(
        t.contains("differing bytes are counted when the recorded artifact"),
        "no artifact beside the fixture: {t}"
    );
}

#[test]
fn bad_manifests_and_sources_are_refused_clearly() {
    let d = tempfile::tempdir().unwrap();
    let fixture = repo().join("tests/fixtures/manifests/other-machine.manifest.json");
    let here = Checkout::new(&d.path().join("here"), |t| t);
    // The recorded source was local: it must be given.
    let o = here.run(&["reproduce", &fixture.display().to_string()]);
    assert!(
        !o.status.success() && text(&o).contains("give the same source with --source PATH"),
        "{}",
        text(&o)
    );
    // An edited manifest no longer matches its plan hash; a schema 1 manifest is named as such.
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&fixture).unwrap()).unwrap();
    m["plan"]["source_date_epoch"] = 1.into();
    let edited = d.path().join("edited.manifest.json");
    std::fs::write(&edited, serde_json::to_vec(&m).unwrap()).unwrap();
    let o = here.run(&[
        "reproduce",
        &edited.display().to_string(),
        "--source",
        "/nonexistent",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("was edited or damaged"),
        "{}",
        text(&o)
    );
    // A recorded local archive: the one given must have its sha256.
    let mut archived = xtask::manifest::Manifest::read(&fixture).unwrap();
    archived.plan.source.sha256 = Some("ab".repeat(32).parse().unwrap());
    archived.plan_hash = archived.plan.hash();
    let archived_path = d.path().join("archived.manifest.json");
    std::fs::write(&archived_path, archived.to_json()).unwrap();
    let other = d.path().join("other.tar.gz");
    std::fs::write(&other, b"not the recorded source").unwrap();
    let o = here.run(&[
        "reproduce",
        &archived_path.display().to_string(),
        "--source",
        &other.display().to_string(),
    ]);
    assert!(
        !o.status.success()
            && text(&o).contains(&format!(
                "but the recorded source (/home/ann/src/mini-llama) has {}",
                "ab".repeat(32)
            )),
        "{}",
        text(&o)
    );
    let o = here.run(&[
        "reproduce",
        &archived_path.display().to_string(),
        "--source",
        &d.path().display().to_string(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("give that archive"),
        "{}",
        text(&o)
    );
    // The rebuild never replaces the recorded manifest and artifact.
    let o = here.run(&[
        "reproduce",
        &fixture.display().to_string(),
        "--source",
        "/nonexistent",
        "--dist",
        &fixture.parent().unwrap().display().to_string(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("give another --dist"),
        "{}",
        text(&o)
    );
    m["schema"] = 1.into();
    std::fs::write(&edited, serde_json::to_vec(&m).unwrap()).unwrap();
    let o = here.run(&["reproduce", &edited.display().to_string()]);
    assert!(
        !o.status.success() && text(&o).contains("manifest schema 1 is not supported"),
        "{}",
        text(&o)
    );
}

/// The wheel recipe, on the mini-llama-python fixture: a manifest of one of two
/// wheels (one per Python) is rebuilt identically elsewhere; a changed define
/// shows up as the library it reaches, plus the wheel's manifest and RECORD.
#[test]
fn wheels_reproduce_too() {
    let d = tempfile::tempdir().unwrap();
    let src = repo()
        .join("tests/fixtures/mini-llama-python")
        .display()
        .to_string();
    let a = Checkout::new(&d.path().join("a"), |t| t);
    let dist_a = a.root.join("dist");
    let o = a.run(&[
        "wheel",
        "llama-cpp-python",
        "--py",
        "311,312",
        "--version",
        "0.3.36",
        "--source",
        &src,
        "--dist",
        &dist_a.display().to_string(),
    ]);
    assert!(o.status.success());
    let wheel = files_in(&dist_a)
        .into_iter()
        .find(|f| f.contains("-cp312-") && f.ends_with(".whl"))
        .unwrap();
    let manifest = dist_a
        .join(format!("{wheel}.manifest.json"))
        .display()
        .to_string();
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();

    let b = Checkout::new(&d.path().join("checkout-b"), |t| t);
    let o = b.run(&["reproduce", &manifest, "--source", &src]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        identical_sha(&o),
        recorded["artifact"]["sha256"].as_str().unwrap()
    );
    assert!(
        text(&o).contains(&format!(
            "identical: {}",
            b.root.join("dist/reproduce").join(&wheel).display()
        )),
        "the cp312 wheel is compared"
    );
    let rebuilt: Vec<String> = files_in(&b.root.join("dist/reproduce"))
        .into_iter()
        .filter(|f| f.ends_with(".whl"))
        .collect();
    assert_eq!(
        rebuilt.len(),
        2,
        "every Python of the plan is rebuilt (its hash covers them): {rebuilt:?}"
    );

    let c = Checkout::new(&d.path().join("c"), |t| {
        set_define(t, "LLAVA_BUILD", "ON", "OFF")
    });
    let o = c.run(&["reproduce", &manifest, "--source", &src]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        drift_lines(&o),
        ["define LLAVA_BUILD: ON (manifest) vs OFF (here)"]
    );
    let di = "llama_cpp_python-0.3.36+cpu.dist-info";
    assert_eq!(
        differing_files(&o),
        [
            "llama_cpp/lib/libmtmd.so".to_string(),
            format!("{di}/RECORD"),
            format!("{di}/llama-forge.json")
        ]
    );
}

/// A GPU build recorded on a machine with a system CUDA 13.1 (nvcc 13.1.80 in
/// /opt/nvidia/cuda-13.1): the plan is the one this tool makes here for
/// `--arch 120 --cuda 13.1`, with the colleague's toolkit put in. `reproduce`
/// asks for the same release and arch here and names the toolkit drift;
/// `--strict` refuses before anything is provisioned or built.
#[test]
fn a_gpu_manifest_names_the_nvcc_drift() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let here = Checkout::new(&d.path().join("here"), |t| t);
    let o = here.run(&[
        "plan",
        "llama.cpp",
        "--arch",
        "120",
        "--cuda",
        "13.1",
        "--version",
        "0.3.36",
        "--source",
        &src,
        "--json",
    ]);
    assert!(o.status.success());
    let mut plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    let here_nvcc = plan["cuda"]["nvcc"].clone();
    let (root, version) = ("/opt/nvidia/cuda-13.1", "13.1.80");
    let theirs = |bin: &str| serde_json::json!({"path": format!("{root}/bin/{bin}"), "version": version, "origin": {"kind": "system"}});
    plan["cuda"]["nvcc"] = theirs("nvcc");
    plan["cuda"]["cuobjdump"] = theirs("cuobjdump");
    plan["cuda"]["root"] = root.into();
    let here_path = here_nvcc["path"].as_str().unwrap().to_string();
    let here_root = here_path.trim_end_matches("/bin/nvcc").to_string();
    for d in plan["defines"].as_array_mut().unwrap() {
        match d["name"].as_str().unwrap() {
            "CMAKE_CUDA_COMPILER" => d["value"] = format!("{root}/bin/nvcc").into(),
            "CUDAToolkit_ROOT" => d["value"] = root.into(),
            _ => {}
        }
    }
    for a in plan["commands"]["configure"].as_array_mut().unwrap() {
        let s = a
            .as_str()
            .unwrap()
            .replace(&here_path, &format!("{root}/bin/nvcc"))
            .replace(&format!("={here_root}"), &format!("={root}"));
        *a = s.into();
    }
    let plan: xtask::plan::Plan = serde_json::from_value(plan).unwrap();
    let mut m = xtask::manifest::Manifest::read(
        &repo().join("tests/fixtures/manifests/other-machine.manifest.json"),
    )
    .unwrap();
    let xtask::plan::Package::Archive { stem, .. } = &plan.package else {
        panic!()
    };
    m.artifact.filename = format!("{stem}.tar.gz");
    m.plan_hash = plan.hash();
    m.plan = plan;
    let manifest = d
        .path()
        .join(format!("{}.manifest.json", m.artifact.filename));
    std::fs::write(&manifest, m.to_json()).unwrap();

    let o = here.run(&[
        "reproduce",
        &manifest.display().to_string(),
        "--source",
        &src,
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let drift = drift_lines(&o);
    let mut want = vec![
        format!("nvcc path: {root}/bin/nvcc (manifest) vs {here_path} (here)"),
        format!("cuda.root: {root} (manifest) vs {here_root} (here)"),
    ];
    if here_nvcc["version"] != version {
        want.push(format!(
            "nvcc: {version} (manifest) vs {} (here)",
            here_nvcc["version"].as_str().unwrap()
        ));
    }
    for w in &want {
        assert!(drift.contains(w), "{w}: {drift:#?}");
    }
    assert!(
        !drift
            .iter()
            .any(|l| l.starts_with("define CMAKE_CUDA_COMPILER:")
                || l.starts_with("define CUDAToolkit_ROOT:")),
        "{drift:#?}"
    );
    assert!(
        !drift
            .iter()
            .any(|l| l.starts_with("cuda.release") || l.starts_with("accelerator")),
        "same release and arch asked for: {drift:#?}"
    );
    assert!(!here.work.exists(), "nothing provisioned or built");
}

/// A script that leaves `marker` behind when it runs, and then passes for gcc 14.
fn trap(path: &Path, marker: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "#!/bin/sh\necho \"$0 $*\" >> '{}'\necho 'g++ (GCC) 14.2.0'\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A manifest is untrusted: the compilers (given with `--host-cc` on the
/// recorded machine), CMake and Ninja it names are compared, never run, with
/// `--strict` or without; the drift names the recorded paths.
#[test]
fn a_manifest_never_runs_the_tools_it_records() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let here = Checkout::new(&d.path().join("here"), |t| t);
    let (evil, marker) = (d.path().join("evil"), d.path().join("marker"));
    for tool in ["g++", "gcc", "cmake", "ninja"] {
        trap(&evil.join(tool), &marker);
    }
    let fixture = repo().join("tests/fixtures/manifests/other-machine.manifest.json");
    let mut m = xtask::manifest::Manifest::read(&fixture).unwrap();
    let at = |tool: &str| evil.join(tool).display().to_string();
    let by_flag = xtask::platform::host::Origin::Explicit {
        by: "--host-cc".into(),
    };
    let t = &mut m.plan.tools;
    (t.cxx.path, t.cxx.origin, t.cc.path, t.cc.origin) =
        (at("g++"), by_flag.clone(), at("gcc"), by_flag);
    (t.cmake.path, t.ninja.path) = (at("cmake"), at("ninja"));
    for c in [&mut m.plan.commands.configure, &mut m.plan.commands.build] {
        c[0] = at("cmake");
    }
    m.plan_hash = m.plan.hash();
    let dir = d.path().join("recorded");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join(format!("{}.manifest.json", m.artifact.filename));
    std::fs::write(&manifest, m.to_json()).unwrap();
    let manifest = manifest.display().to_string();

    let o = here.run(&["reproduce", &manifest, "--source", &src, "--strict"]);
    assert!(
        !marker.exists(),
        "a tool named by the manifest ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let drift = drift_lines(&o);
    for want in [
        format!("cxx path: {} (manifest) vs ", at("g++")),
        format!("cc path: {} (manifest) vs ", at("gcc")),
        "cxx origin: set by --host-cc (manifest) vs ".into(),
        format!("cmake path: {} (manifest) vs ", at("cmake")),
    ] {
        assert!(
            drift.iter().any(|l| l.starts_with(&want)),
            "{want}: {drift:#?}"
        );
    }
    assert!(!here.work.exists(), "nothing was built");

    // The recorded artifact's name beside the manifest is a symlink to a file elsewhere: not followed.
    let outside = d.path().join("outside.tar.gz");
    std::fs::write(&outside, b"not beside the manifest").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(&m.artifact.filename)).unwrap();
    let o = here.run(&[
        "reproduce",
        &manifest,
        "--source",
        &src,
        "--dist",
        &d.path().join("out").display().to_string(),
    ]);
    assert!(
        !marker.exists(),
        "a tool named by the manifest ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "built here with this machine's tools, and differs: {}",
        text(&o)
    );
    assert!(
        text(&o).contains("warning: building anyway"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("differing bytes are counted when the recorded artifact")
            && !text(&o).contains("beside the manifest has sha256"),
        "the symlink was read: {}",
        text(&o)
    );
}

/// `artifact.filename` names the recorded artifact beside the manifest: a
/// path (absolute, with `..`, or with a directory) would make `reproduce` read
/// a file elsewhere. Such a manifest is refused before anything else, naming
/// the value.
#[test]
fn an_artifact_filename_that_is_a_path_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let here = Checkout::new(&d.path().join("here"), |t| t);
    let fixture = repo().join("tests/fixtures/manifests/other-machine.manifest.json");
    let good = xtask::manifest::Manifest::read(&fixture).unwrap();
    // The file a hostile name points at: a real archive name, outside the manifest's dir.
    std::fs::write(d.path().join(&good.artifact.filename), b"outside").unwrap();
    let dir = d.path().join("recorded");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    for bad in [
        format!("../{}", good.artifact.filename),
        d.path().join(&good.artifact.filename).display().to_string(),
        format!("sub/{}", good.artifact.filename),
        "..".into(),
        "notes.txt".into(),
    ] {
        let mut m = good.clone();
        m.artifact.filename = bad.clone();
        let manifest = dir.join("x.manifest.json");
        std::fs::write(&manifest, m.to_json()).unwrap();
        let o = here.run(&[
            "reproduce",
            &manifest.display().to_string(),
            "--source",
            "/nonexistent",
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(
            t.contains(&format!("artifact.filename is {bad:?}"))
                && t.contains(&manifest.display().to_string()),
            "{bad}: {t}"
        );
        assert!(
            !t.contains("reproducing "),
            "refused before anything else: {t}"
        );
    }
    assert!(
        !here.work.exists() && !here.root.join("dist").exists(),
        "nothing was built"
    );
}
