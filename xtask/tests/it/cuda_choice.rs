//! Which CUDA toolkit a plan uses: `--cuda-path` and `--cuda` are binding, and
//! a toolkit found here but skipped is named in the plan. Fake nvcc shims (a
//! script printing `nvcc --version`); nothing is downloaded or built.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// A toolkit root whose bin/nvcc prints the version text of `nvcc_version`.
fn fake_toolkit(dir: &Path, nvcc_version: &str) -> PathBuf {
    let release = &nvcc_version[..nvcc_version.rfind('.').unwrap()];
    let root = dir.join(format!("cuda-{release}"));
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let nvcc = root.join("bin/nvcc");
    std::fs::write(
        &nvcc,
        format!("#!/bin/sh\ncat <<'EOF'\nnvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nCuda compilation tools, release {release}, V{nvcc_version}\nEOF\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    root
}

/// xtask with an empty cache and build dir of its own, and no CUDA variables but `envs`.
fn run_in(d: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = xtask(args, envs);
    c.env("LLAMA_FORGE_CACHE", d.join("cache"))
        .env("LLAMA_FORGE_BUILD_DIR", d.join("work"));
    for k in ["CUDACXX", "CUDA_PATH", "CUDA_HOME"]
        .into_iter()
        .filter(|k| !envs.iter().any(|(e, _)| e == k))
    {
        c.env_remove(k);
    }
    let o = c.output().unwrap();
    eprintln!("$ xtask {}\n{}", args.join(" "), text(&o));
    o
}

/// A toolkit given with `--cuda-path` that cannot emit the targets is refused,
/// saying what it emits and what to use, by `plan` and by `build` before
/// anything is provisioned: never swapped for the package index's CUDA.
#[test]
fn cuda_path_that_cannot_emit_the_targets_is_refused_not_replaced() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    for (version, arch, needs, emits) in [
        (
            "12.6.85",
            "120",
            "needs CUDA >= 12.8",
            "emits at most sm_50 to sm_90",
        ),
        (
            "12.8.93",
            "121",
            "needs CUDA >= 12.9",
            "emits sm_50 to sm_120",
        ),
    ] {
        let root = fake_toolkit(d.path(), version);
        let root_s = root.display().to_string();
        let head = format!(
            "--cuda-path {root_s}: nvcc {version} at {root_s}/bin/nvcc cannot build --arch {arch}"
        );
        let o = run_in(
            d.path(),
            &[
                "plan",
                "llama.cpp",
                "--arch",
                arch,
                "--cuda-path",
                &root_s,
                "--version",
                "0.3.36",
                "--source",
                &src,
                "--json",
            ],
            &[],
        );
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        for want in [
            head.as_str(),
            needs,
            emits,
            "no other is tried",
            "`cargo xtask toolchains install cuda 13.5`",
        ] {
            assert!(t.contains(want), "{want}: {t}");
        }

        let started = Instant::now();
        let dist = d.path().join("dist");
        let o = run_in(
            d.path(),
            &[
                "build",
                "llama.cpp",
                "--arch",
                arch,
                "--cuda-path",
                &root_s,
                "--version",
                "0.3.36",
                "--source",
                &src,
                "--dist",
                &dist.display().to_string(),
            ],
            &[],
        );
        assert!(
            !o.status.success() && text(&o).contains(&head),
            "{}",
            text(&o)
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "refused before any download"
        );
        assert!(
            files_in(&d.path().join("cache")).is_empty()
                && files_in(&d.path().join("work")).is_empty()
                && !dist.exists(),
            "nothing provisioned, nothing built (the cache and build dir are made private first, empty)"
        );
    }
}

/// `--cuda 12.8` for a GB10 (sm_121): refused, with the releases that can.
#[test]
fn cuda_release_that_cannot_emit_the_targets_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let root = fake_toolkit(d.path(), "12.8.93");
    let nvcc = root.join("bin/nvcc").display().to_string();
    let o = run_in(
        d.path(),
        &[
            "plan",
            "llama.cpp",
            "--arch",
            "gb10",
            "--cuda",
            "12.8",
            "--version",
            "0.3.36",
            "--source",
            &src,
        ],
        &[("CUDACXX", &nvcc)],
    );
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    for want in [
        format!("--cuda 12.8: nvcc 12.8.93 at {nvcc} cannot build --arch gb10"),
        "needs CUDA >= 12.9".into(),
        "ask for --cuda 13.5, 13.4, 13.3, 13.2, 13.1 or 13.0".into(),
    ] {
        assert!(t.contains(&want), "{want}: {t}");
    }
}

/// For an aarch64 target (`--arch gb10` on this x86-64 host), a toolkit of this
/// machine without `targets/sbsa-linux/lib` is refused by name with what to install,
/// whether given with `--cuda-path` or found (CUDACXX) and asked for with `--cuda`;
/// once that directory is there, the same toolkit plans.
#[test]
fn a_toolkit_without_the_targets_arch_libraries_is_named() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let root = fake_toolkit(d.path(), "13.0.88");
    let nvcc = root.join("bin/nvcc").display().to_string();
    let root_s = root.display().to_string();
    let missing = format!(
        "it has no aarch64-unknown-linux-gnu target libraries ({root_s}/targets/sbsa-linux/lib is missing): install its cross package for aarch64 (cuda-cross-sbsa)"
    );
    let plan = |extra: &[&str], envs: &[(&str, &str)]| {
        let args = [
            &[
                "plan",
                "llama.cpp",
                "--arch",
                "gb10",
                "--version",
                "0.3.36",
                "--source",
                &src,
            ][..],
            extra,
        ]
        .concat();
        run_in(d.path(), &args, envs)
    };
    let o = plan(&["--cuda-path", &root_s], &[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    let head =
        format!("--cuda-path {root_s}: nvcc 13.0.88 at {nvcc} cannot build --arch gb10: {missing}");
    assert!(t.contains(&head), "{head}\n{t}");
    // Found (CUDACXX) and of the release asked for: the package index's aarch64
    // libraries stand in, and the plan says why this one was not used.
    let o = plan(&["--cuda", "13.0", "--json"], &[("CUDACXX", &nvcc)]);
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    let skipped = p["cuda"]["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", p["cuda"]));
    assert!(
        skipped.iter().any(|s| s["root"] == root_s.as_str()
            && s["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with(&missing))),
        "{skipped:#?}"
    );
    std::fs::create_dir_all(root.join("targets/sbsa-linux/lib")).unwrap();
    let o = plan(&["--cuda-path", &root_s, "--json"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(p["cuda"]["root"], root_s.as_str(), "{}", p["cuda"]);
}

/// Without `--cuda-path`/`--cuda`, a toolkit found here (CUDACXX) that cannot
/// emit sm_121 is skipped for one that can, and named in the plan with the
/// reason: in the JSON and as a warning. It does not change the plan hash.
#[test]
fn a_skipped_toolkit_is_named_in_the_plan() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let root = fake_toolkit(d.path(), "12.8.93");
    let nvcc = root.join("bin/nvcc").display().to_string();
    let args = [
        "plan",
        "llama.cpp",
        "--arch",
        "121",
        "--version",
        "0.3.36",
        "--source",
        &src,
    ];
    let o = run_in(
        d.path(),
        &[&args[..], &["--json"]].concat(),
        &[("CUDACXX", &nvcc)],
    );
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_ne!(
        plan["cuda"]["release"], "12.8",
        "a toolkit that can was used"
    );
    let skipped = plan["cuda"]["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("no cuda.skipped: {}", plan["cuda"]));
    let ours = skipped
        .iter()
        .find(|s| s["root"] == root.display().to_string().as_str())
        .unwrap_or_else(|| panic!("{skipped:#?}"));
    assert_eq!(
        (ours["nvcc"].as_str(), ours["found_by"].as_str()),
        (Some("12.8.93"), Some("CUDACXX"))
    );
    assert!(
        ours["reason"]
            .as_str()
            .unwrap()
            .starts_with("CUDA 12.8 cannot emit sm_121a: needs CUDA >= 12.9"),
        "{ours}"
    );

    let with = run_in(d.path(), &args, &[("CUDACXX", &nvcc)]);
    let t = String::from_utf8_lossy(&with.stdout).to_string();
    // The summary wraps long warnings: compare the words.
    let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains(&format!("warning: CUDA toolkit skipped: nvcc 12.8.93 at {} (found by CUDACXX): CUDA 12.8 cannot emit sm_121a", root.display())), "{t}");
    let without = run_in(d.path(), &args, &[]);
    let hash = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert!(hash(&with).starts_with("plan "), "{t}");
    assert_eq!(
        hash(&with),
        hash(&without),
        "the skipped toolkit is not part of the plan hash"
    );
}

/// `--arch auto` with a GPU seen (an nvidia-smi script answering as an RTX 5090 does):
/// a plan for its compute capability, saying which GPU it saw; for another target the
/// GPU is not even asked about, and the plan is for the CPU with a line saying why.
#[test]
fn auto_builds_for_the_gpu_nvidia_smi_lists() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path()).display().to_string();
    let fixtures = repo().join("tests/fixtures/doctor");
    let asked = d.path().join("nvidia-smi-ran");
    let smi = d.path().join("nvidia-smi");
    std::fs::write(
        &smi,
        format!(
            "#!/bin/sh\ntouch '{}'\nif [ $# -eq 0 ]; then cat '{}'; else cat '{}'; fi\n",
            asked.display(),
            fixtures.join("rtx5090.banner.txt").display(),
            fixtures.join("rtx5090.query.csv").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let smi_s = smi.display().to_string();
    let envs = [("LLAMA_FORGE_NVIDIA_SMI", smi_s.as_str())];
    let o = run_in(
        d.path(),
        &[
            "plan",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &src,
            "--json",
        ],
        &envs,
    );
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(p["accelerator"], "rtx5090");
    assert_eq!(p["cuda"]["architectures"], "120a-real");
    assert_eq!(p["auto_arch"], "auto: NVIDIA GeForce RTX 5090 (12.0)");
    assert!(String::from_utf8_lossy(&o.stderr).contains("auto: NVIDIA GeForce RTX 5090 (12.0)"));
    assert!(asked.exists());

    std::fs::remove_file(&asked).unwrap();
    let o = run_in(
        d.path(),
        &[
            "plan",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &src,
            "--target",
            "aarch64-unknown-linux-gnu",
            "--json",
        ],
        &envs,
    );
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(p["accelerator"], "cpu");
    assert!(
        text(&o).contains("--arch auto: the artifact is for aarch64-unknown-linux-gnu, not this x86_64-unknown-linux-gnu machine"),
        "{}",
        text(&o)
    );
    assert!(!asked.exists(), "nvidia-smi ran for another target");
}
