use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::*;
use crate::cuda::CudaVersion;
use crate::digest::Sha256Hex;
use crate::recipe::Recipe;
use crate::request::CpuBaseline;

fn recipe(name: &str) -> Recipe {
    crate::recipe::fixture(name)
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("releases/test.toml"))
}

fn cells(text: &str, r: &str) -> Vec<String> {
    expand(&parse(text).unwrap(), &recipe(r))
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect()
}

#[test]
fn parses_a_full_release_file() {
    let c = parse(
        r#"
recipe = "llama-cpp-python"
versions = ["0.3.36"]
arch = ["cpu", "120", "120,121"]
cuda = ["13.0", "13.1"]
python = ["310", "3.11"]
cpu_baseline = "x86-64-v3"
max_size_mb = 0.5
"#,
    )
    .unwrap();
    assert_eq!(
        c.python,
        vec!["310".parse().unwrap(), "311".parse().unwrap()]
    );
    assert_eq!(c.cpu_baseline, CpuBaseline::V3);
    assert_eq!(c.max_size_mb, Some(0.5));
    assert_eq!(c.name(), "test");
}

#[test]
fn errors_name_the_file_and_the_key() {
    let e = parse("recipe = \"llama.cpp\"\narch = [\"cpu\"]\npyton = [\"311\"]\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("releases/test.toml")
            && e.contains("unknown field `pyton`")
            && e.contains("line 3"),
        "{e}"
    );
    let e = parse("recipe = \"llama.cpp\"\narch = [\"cpu\", \"gpu\"]\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("releases/test.toml")
            && e.contains("unknown --arch value `gpu`")
            && e.contains("line 2"),
        "{e}"
    );
    let e = parse("recipe = \"x\"\narch = [\"cpu\"]\npython = [\"27\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`27` is not a Python version"), "{e}");
    let e = parse("recipe = \"x\"\narch = [\"120\"]\ncuda = [\"thirteen\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid CUDA version `thirteen`"), "{e}");
    let e = parse("recipe = \"x\"\narch = [\"120\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`cuda` is empty"), "{e}");
    let e = parse("recipe = \"x\"\narch = []\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`arch` is empty"), "{e}");
    let e = parse("recipe = \"x\"\narch = [\"cpu\"]\nmax_size_mb = -1\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_size_mb = -1"), "{e}");
    let e = parse("recipe = \"x\"\narch = [\"cpu\", \"CPU\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`arch` lists cpu twice"), "{e}");
    let e = parse("recipe = \"x\"\narch = [\"cpu\"]\nsource = \"no/such/dir\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("source = \"no/such/dir\"") && e.contains("releases/no/such/dir"),
        "{e}"
    );
}

#[test]
fn errors_against_the_recipe() {
    let check = |text: &str, r: &str, needle: &str| {
        let e = expand(&parse(text).unwrap(), &recipe(r))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(needle) && e.contains("releases/test.toml"),
            "{e}"
        );
    };
    check(
        "recipe = \"llama.cpp\"\narch = [\"cpu\"]\npython = [\"311\"]\n",
        "llama.cpp",
        "remove `python`",
    );
    check(
        "recipe = \"llama.cpp\"\nversions = [\"9.9\"]\narch = [\"cpu\"]\n",
        "llama.cpp",
        "no release `9.9`",
    );
    check(
        "recipe = \"llama.cpp\"\narch = [\"120\", \"rtx5090\"]\ncuda = [\"13.0\"]\n",
        "llama.cpp",
        "arch `120` and `rtx5090` build the same targets (120a-real)",
    );
}

#[test]
fn cells_are_versions_by_arch_sets_by_cuda() {
    let names = cells(
        "recipe = \"llama-cpp-python\"\nversions = [\"0.3.36\", \"0.3.16\"]\narch = [\"cpu\", \"120\", \"120,121\"]\ncuda = [\"13.0\", \"13.1\"]\npython = [\"311\", \"312\"]\n",
        "llama-cpp-python",
    );
    assert_eq!(
        names,
        [
            "llama-cpp-python-0.3.36-cpu-x86_64-linux",
            "llama-cpp-python-0.3.36-cu13.0-120-x86_64-linux",
            "llama-cpp-python-0.3.36-cu13.1-120-x86_64-linux",
            "llama-cpp-python-0.3.36-cu13.0-120_121-x86_64-linux",
            "llama-cpp-python-0.3.36-cu13.1-120_121-x86_64-linux",
            "llama-cpp-python-0.3.16-cpu-x86_64-linux",
            "llama-cpp-python-0.3.16-cu13.0-120-x86_64-linux",
            "llama-cpp-python-0.3.16-cu13.1-120-x86_64-linux",
            "llama-cpp-python-0.3.16-cu13.0-120_121-x86_64-linux",
            "llama-cpp-python-0.3.16-cu13.1-120_121-x86_64-linux",
        ]
    );
    // cuda is ignored for cpu; versions default to the recipe's newest.
    assert_eq!(
        cells(
            "recipe = \"llama.cpp\"\narch = [\"cpu\"]\ncuda = [\"13.0\"]\n",
            "llama.cpp"
        ),
        ["llama.cpp-0.3.36-cpu-x86_64-linux"]
    );
}

#[test]
fn selects_cells_by_name() {
    let all = expand(
        &parse("recipe = \"llama.cpp\"\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\n").unwrap(),
        &recipe("llama.cpp"),
    )
    .unwrap();
    assert_eq!(select(&all, &[]).unwrap().len(), 2);
    let one = select(&all, &["llama.cpp-0.3.36-cu13.0-120-x86_64-linux".into()]).unwrap();
    assert_eq!(one[0].cuda, Some(CudaVersion::new(13, 0)));
    let e = select(&all, &["0.3.36-cu13.0-120".into()]).unwrap_err();
    assert!(e.contains("--cell 0.3.36-cu13.0-120: the release has no such cell; its cells are llama.cpp-0.3.36-cpu-x86_64-linux, llama.cpp-0.3.36-cu13.0-120-x86_64-linux"), "{e}");
    let m = github_matrix(
        &select(&all, &[]).unwrap(),
        crate::platform::Target::LINUX_X86_64,
    );
    assert_eq!(
        m.to_string(),
        r#"{"include":[{"cell":"llama.cpp-0.3.36-cpu-x86_64-linux","version":"0.3.36","arch":"cpu","cuda":"","target":"x86_64-unknown-linux-gnu"},{"cell":"llama.cpp-0.3.36-cu13.0-120-x86_64-linux","version":"0.3.36","arch":"120","cuda":"13.0","target":"x86_64-unknown-linux-gnu"}]}"#
    );
}

fn entry(filename: &str, byte: char, size: u64) -> ArtifactEntry {
    ArtifactEntry {
        filename: filename.into(),
        sha256: byte.to_string().repeat(64).parse().unwrap(),
        size,
        manifest: format!("{filename}.manifest.json"),
    }
}

#[test]
fn sha256sums_and_simple_index() {
    let a = entry(
        "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_17_x86_64.whl",
        'b',
        10,
    );
    let b = entry(
        "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl",
        'a',
        10,
    );
    let c = entry("llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz", 'c', 10);
    let all = [&a, &b, &c];
    assert_eq!(
        sha256sums(&all),
        format!(
            "{}  llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz\n{}  llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl\n{}  llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_17_x86_64.whl\n",
            "c".repeat(64),
            "a".repeat(64),
            "b".repeat(64)
        )
    );
    let gpu = entry(
        "llama_cpp_python-0.3.36+cu130.sm120a-py3-none-manylinux_2_28_x86_64.whl",
        'd',
        10,
    );
    let indexes = flavour_indexes(&[&a, &b, &c, &gpu]);
    assert_eq!(
        indexes.keys().collect::<Vec<_>>(),
        ["cpu", "cu130-sm120a"],
        "one index per flavour"
    );
    assert_eq!(indexes["cu130-sm120a"].label.to_string(), "cu130.sm120a");
    let index = &indexes["cpu"].pages;
    assert_eq!(
        index.keys().collect::<Vec<_>>(),
        ["index.html", "llama-cpp-python/index.html"]
    );
    assert!(index["index.html"].contains("<a href=\"llama-cpp-python/\">llama-cpp-python</a>"));
    let page = &index["llama-cpp-python/index.html"];
    let first = page.find("cp311").unwrap();
    assert!(first < page.find("cp312").unwrap(), "sorted");
    assert!(page.contains(&format!(
        "<a href=\"../../../llama_cpp_python-0.3.36%2Bcpu-cp311-cp311-manylinux_2_17_x86_64.whl#sha256={}\">llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl</a>",
        "a".repeat(64)
    )));
    assert!(
        !page.contains("tar.gz") && !page.contains("cu130"),
        "archives and other flavours are not in the cpu index"
    );
    let gpu_page = &indexes["cu130-sm120a"].pages["llama-cpp-python/index.html"];
    assert!(gpu_page.contains("py3-none") && !gpu_page.contains("+cpu"));
    assert!(flavour_indexes(&[&c]).is_empty());
    assert_eq!(pep503_name("Llama_CPP.python"), "llama-cpp-python");
    assert_eq!(pep503_name("a__-b"), "a-b");
}

#[test]
fn size_budget_lists_each_library() {
    let files: BTreeMap<String, u64> = [
        ("llama_cpp/lib/libggml-cuda.so", 150_000_000),
        ("llama_cpp/lib/libllama.so", 2_500_000),
        ("llama_cpp/__init__.py", 1_000),
        ("llama_cpp/llama.py", 2_000),
    ]
    .into_iter()
    .map(|(p, s)| (p.to_string(), s))
    .collect();
    let libs: BTreeSet<String> = ["llama_cpp/lib/libggml-cuda.so", "llama_cpp/lib/libllama.so"]
        .into_iter()
        .map(String::from)
        .collect();
    let cfg = Path::new("releases/x.toml");
    assert_eq!(
        over_budget("x.whl", 100_000_000, 100.0, &files, &libs, cfg),
        None,
        "exactly the budget fits"
    );
    let m = over_budget("x.whl", 120_000_000, 100.0, &files, &libs, cfg).unwrap();
    assert_eq!(
        m,
        "x.whl is 120.0 MB, over the size budget of 100 MB (max_size_mb in releases/x.toml). Inside it, uncompressed:\n  \
         llama_cpp/lib/libggml-cuda.so  150.0 MB\n  \
         llama_cpp/lib/libllama.so      2.5 MB\n  \
         other files (2)                3.0 kB\n\
         Build fewer GPU targets, leave out ptx, or raise max_size_mb."
    );
    assert!(over_budget("x.whl", 20_000, 0.01, &files, &libs, cfg)
        .unwrap()
        .contains("budget of 0.01 MB"));
}

#[test]
fn record_check_catches_a_stale_cell() {
    let cfg =
        parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\npython = [\"311\", \"312\"]\n")
            .unwrap();
    let cell = &expand(&cfg, &recipe("llama-cpp-python")).unwrap()[0];
    let wheel = |py: &str| {
        entry(
            &format!("llama_cpp_python-0.3.36+cpu-cp{py}-cp{py}-manylinux_2_17_x86_64.whl"),
            'a',
            1,
        )
    };
    let sha: Sha256Hex = "d".repeat(64).parse().unwrap();
    let ok = CellRecord::new(
        cell,
        "llama-cpp-python",
        sha.clone(),
        vec![wheel("312"), wheel("311")],
    );
    assert_eq!(ok.artifacts[0].filename, wheel("311").filename, "sorted");
    ok.check(cell, &cfg).unwrap();
    let short = CellRecord::new(cell, "llama-cpp-python", sha.clone(), vec![wheel("311")]);
    assert!(short
        .check(cell, &cfg)
        .unwrap_err()
        .to_string()
        .contains("wheels for Python 3.11, but the release asks for 3.11, 3.12"));
    let mut other = ok.clone();
    other.version = "0.3.16".parse().unwrap();
    assert_eq!(
        other.check(cell, &cfg).unwrap_err().to_string(),
        "its record is for llama-cpp-python 0.3.16 arch cpu cuda -, not what the release file asks for: build the cell again"
    );
    let mut empty = ok.clone();
    empty.artifacts.clear();
    assert_eq!(
        empty.check(cell, &cfg).unwrap_err().to_string(),
        "its record lists no artifacts: build the cell again"
    );
}

#[test]
fn release_manifest_is_sorted_and_complete() {
    let cfg =
        parse("recipe = \"llama.cpp\"\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\n").unwrap();
    let cells = expand(&cfg, &recipe("llama.cpp")).unwrap();
    let r1 = CellRecord::new(
        &cells[1],
        "llama.cpp",
        "1".repeat(64).parse().unwrap(),
        vec![entry("b.tar.gz", 'b', 2)],
    );
    let r0 = CellRecord::new(
        &cells[0],
        "llama.cpp",
        "0".repeat(64).parse().unwrap(),
        vec![entry("a.tar.gz", 'a', 1)],
    );
    let m = ReleaseManifest::new(&cfg, &[&r1, &r0], vec![]);
    assert_eq!(
        m.artifacts
            .iter()
            .map(|a| (a.filename.as_str(), a.cell.as_str()))
            .collect::<Vec<_>>(),
        [
            ("a.tar.gz", "llama.cpp-0.3.36-cpu-x86_64-linux"),
            ("b.tar.gz", "llama.cpp-0.3.36-cu13.0-120-x86_64-linux")
        ]
    );
    assert_eq!(m.artifacts[1].plan_hash.as_str(), "1".repeat(64));
    assert_eq!(
        m,
        ReleaseManifest::new(&cfg, &[&r0, &r1], vec![]),
        "order of the records does not matter"
    );
    let json = String::from_utf8(m.to_json()).unwrap();
    assert!(!json.contains("incomplete"));
    let partial = ReleaseManifest::new(&cfg, &[&r0], vec![cells[1].name.clone()]);
    assert!(String::from_utf8(partial.to_json())
        .unwrap()
        .contains("\"incomplete\": [\n    \"llama.cpp-0.3.36-cu13.0-120-x86_64-linux\""));
}

#[test]
fn summary_table_aligns() {
    let rows = [
        SummaryRow {
            cell: "0.3.36-cpu".into(),
            status: "built".into(),
            seconds: Some(12.34),
            artifacts: 2,
            bytes: 9_000_000,
        },
        SummaryRow {
            cell: "0.3.36-cu13.0-120".into(),
            status: "FAILED".into(),
            seconds: None,
            artifacts: 0,
            bytes: 0,
        },
    ];
    assert_eq!(
        summary_table(&rows),
        "cell               status    time  artifacts    size\n\
         -----------------  ------  ------  ---------  ------\n\
         0.3.36-cpu         built   12.3 s          2  9.0 MB\n\
         0.3.36-cu13.0-120  FAILED       -          0       -\n"
    );
}

#[test]
fn release_files_are_written_and_replaced() {
    let d = tempfile::tempdir().unwrap();
    let cfg =
        parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\npython = [\"311\"]\n").unwrap();
    let cell = &expand(&cfg, &recipe("llama-cpp-python")).unwrap()[0];
    let w = entry(
        "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl",
        'a',
        1,
    );
    let rec = CellRecord::new(
        cell,
        "llama-cpp-python",
        "d".repeat(64).parse().unwrap(),
        vec![w],
    );
    write_record(d.path(), &rec).unwrap();
    assert_eq!(
        read_record(d.path(), &cell.name).unwrap(),
        Some(rec.clone())
    );
    let m = ReleaseManifest::new(&cfg, &[&rec], vec![]);
    assert_eq!(
        m.indexes,
        BTreeMap::from([("cpu".to_string(), "cpu/simple".to_string())])
    );
    // The single index of releases from before indexes per flavour goes.
    std::fs::create_dir_all(d.path().join("simple/llama-cpp-python")).unwrap();
    write_release_files(d.path(), &[&rec], &m).unwrap();
    write_release_files(d.path(), &[&rec], &m).unwrap();
    assert!(d
        .path()
        .join("cpu/simple/llama-cpp-python/index.html")
        .is_file());
    assert!(!d.path().join("cpu/.simple-old").exists());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join(MANIFEST_FILE)).unwrap()).unwrap();
    assert_eq!(json["indexes"], serde_json::json!({"cpu": "cpu/simple"}));
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut leftovers = leftovers;
    leftovers.sort();
    assert_eq!(leftovers, ["SHA256SUMS", "cells", "cpu", "release.json"]);
    // A flavour the release no longer makes: its index goes with the next release.json.
    let mut empty = m.clone();
    empty.indexes.clear();
    write_release_files(d.path(), &[], &empty).unwrap();
    assert!(!d.path().join("cpu").exists());
    remove_record(d.path(), &cell.name).unwrap();
    remove_record(d.path(), &cell.name).unwrap();
    assert_eq!(read_record(d.path(), &cell.name).unwrap(), None);
}

/// `target` in a release file: the host's by default; a triple; an unknown one gets
/// the list; the mingw target with a GPU set is refused before any cell is built.
#[test]
fn a_release_file_names_its_target() {
    let c = parse("recipe = \"llama.cpp\"\narch = [\"cpu\"]\n").unwrap();
    assert_eq!(c.target, crate::platform::Target::host());
    let c = parse("recipe = \"llama.cpp\"\narch = [\"cpu\"]\ntarget = \"x86_64-pc-windows-gnu\"\n")
        .unwrap();
    assert_eq!(c.target, crate::platform::Target::WINDOWS_GNU);
    let e = parse("recipe = \"llama.cpp\"\narch = [\"cpu\"]\ntarget = \"win64\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("releases/test.toml")
            && e.contains("target = \"win64\": unknown --target `win64`")
            && e.contains("x86_64-pc-windows-gnu"),
        "{e}"
    );
    let e = parse(
        "recipe = \"llama.cpp\"\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\ntarget = \"x86_64-pc-windows-gnu\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("arch `120` is a GPU set") && e.contains("target = \"x86_64-pc-windows-msvc\""),
        "{e}"
    );
}

/// Every release file the repo ships loads and expands against its recipe: the
/// `-windows` ones for the mingw-w64 target, the `-windows-msvc` ones for MSVC, the
/// others for Linux.
#[test]
fn the_shipped_release_files_expand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut targets = BTreeMap::new();
    // Every release file may share a dist/ with the others: no two cells share a name.
    let mut names = BTreeSet::new();
    use crate::platform::Target;
    for e in std::fs::read_dir(root.join("releases")).unwrap() {
        let path = e.unwrap().path();
        let config = Config::load(&path).unwrap();
        let recipe = Recipe::find(&root.join("recipes"), &config.recipe).unwrap();
        let cells = expand(&config, &recipe).unwrap();
        assert!(!cells.is_empty(), "{}", path.display());
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (want, ends) = if name.ends_with("-windows.toml") {
            (Target::WINDOWS_GNU, "-x86_64-windows-gnu")
        } else if name.ends_with("-windows-msvc.toml") {
            (Target::WINDOWS_MSVC, "-x86_64-windows-msvc")
        } else if name.ends_with("-linux-aarch64.toml") {
            (Target::LINUX_AARCH64, "-aarch64-linux")
        } else {
            (Target::LINUX_X86_64, "-x86_64-linux")
        };
        assert_eq!(config.target, want, "{name}");
        for c in &cells {
            assert!(
                c.name
                    .starts_with(&format!("{}-{}-", config.recipe, c.version))
                    && c.name.ends_with(ends),
                "{name}: {}",
                c.name
            );
            assert!(names.insert(c.name.clone()), "{name}: {} twice", c.name);
        }
        targets.insert(name, config.target);
    }
    assert!(targets.len() >= 7, "{targets:?}");
}

/// Cell records are data, not paths (`release --index-only` trusts what CI jobs
/// uploaded): a record naming `../outside.txt`, an absolute path, a hidden or
/// option-like name, or a link in dist/ to a file outside is refused, naming the
/// record file and its field; nothing outside dist/ is listed, read or moved.
#[test]
fn records_name_plain_regular_files_in_dist_only() {
    let d = tempfile::tempdir().unwrap();
    let dist = d.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let outside = d.path().join("outside.txt");
    std::fs::write(&outside, b"not an artifact of this release").unwrap();
    std::fs::write(d.path().join("outside.txt.manifest.json"), b"{}").unwrap();
    let sha = crate::digest::sha256_file(&outside).unwrap();
    for budget in ["", "max_size_mb = 0.000001\n"] {
        let cfg = parse(&format!(
            "recipe = \"llama.cpp\"\narch = [\"cpu\"]\n{budget}"
        ))
        .unwrap();
        let cells = expand(&cfg, &recipe("llama.cpp")).unwrap();
        let cell = &cells[0];
        let plan: Sha256Hex = "d".repeat(64).parse().unwrap();
        let record = |filename: &str, manifest: &str| {
            CellRecord::new(
                cell,
                "llama.cpp",
                plan.clone(),
                vec![ArtifactEntry {
                    filename: filename.into(),
                    sha256: sha.clone(),
                    size: 31,
                    manifest: manifest.into(),
                }],
            )
        };
        let record_file = record_path(&dist, &cell.name).display().to_string();
        let abs = outside.display().to_string();
        for (rec, field, name) in [
            (
                record("../outside.txt", "../outside.txt.manifest.json"),
                "filename",
                "../outside.txt",
            ),
            (record(&abs, "x.manifest.json"), "filename", abs.as_str()),
            (
                record("ok.tar.gz", "../outside.txt.manifest.json"),
                "manifest",
                "../outside.txt.manifest.json",
            ),
            (record("-rf", "x.manifest.json"), "filename", "-rf"),
            (record(".hidden", "x.manifest.json"), "filename", ".hidden"),
            (record("a\nb", "x.manifest.json"), "filename", "a\\nb"),
            (
                record("a\\..\\b", "x.manifest.json"),
                "filename",
                "a\\\\..\\\\b",
            ),
        ] {
            write_record(&dist, &rec).unwrap();
            let e = format!("{:#}", read_record(&dist, &cell.name).unwrap_err());
            assert!(
                e.contains(&record_file)
                    && e.contains(&format!("artifacts[0].{field} is \"{name}\""))
                    && e.contains("plain name only"),
                "{e}"
            );
            let g = super::records::gather(&cfg, &cells, &dist, "releases/test.toml").unwrap();
            assert!(g.accepted.is_empty(), "{name}: accepted");
            assert!(
                g.rejected[&cell.name].1.contains(&record_file),
                "{:?}",
                g.rejected
            );
            assert!(
                outside.is_file(),
                "{name}: the file outside stays where it is"
            );
            assert!(!dist.join(REJECTED_DIR).exists(), "{name}: nothing moved");
        }
        // A plain name, but a link in dist/ to the file outside: not a file in dist/.
        std::os::unix::fs::symlink(&outside, dist.join("linked.tar.gz")).unwrap();
        std::fs::write(dist.join("linked.tar.gz.manifest.json"), b"{}").unwrap();
        write_record(
            &dist,
            &record("linked.tar.gz", "linked.tar.gz.manifest.json"),
        )
        .unwrap();
        let g = super::records::gather(&cfg, &cells, &dist, "releases/test.toml").unwrap();
        assert!(g.accepted.is_empty());
        let why = &g.rejected[&cell.name].1;
        assert!(
            why.contains(&dist.join("linked.tar.gz").display().to_string())
                && why.contains("symbolic link"),
            "{why}"
        );
        assert!(outside.is_file() && !dist.join(REJECTED_DIR).exists());
        std::fs::remove_file(dist.join("linked.tar.gz")).unwrap();
        std::fs::remove_file(dist.join("linked.tar.gz.manifest.json")).unwrap();
    }
}

/// A wheel release without `python` makes one py3 wheel a cell; two cells of one
/// flavour (13.0 and 13.0.2 are both cu130) are refused before anything is built.
#[test]
fn py3_cells_and_one_flavour_per_index() {
    let cfg =
        parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\n")
            .unwrap();
    let cells = expand(&cfg, &recipe("llama-cpp-python")).unwrap();
    let labels: Vec<String> = cells.iter().map(|c| flavour(&cfg, c).to_string()).collect();
    assert_eq!(labels, ["cpu", "cu130.sm120a"]);
    let py3 = |local: &str| {
        entry(
            &format!("llama_cpp_python-0.3.36+{local}-py3-none-manylinux_2_28_x86_64.whl"),
            'a',
            1,
        )
    };
    let sha: Sha256Hex = "d".repeat(64).parse().unwrap();
    let rec = CellRecord::new(&cells[0], "llama-cpp-python", sha.clone(), vec![py3("cpu")]);
    rec.check(&cells[0], &cfg).unwrap();
    let cp = entry(
        "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        'a',
        1,
    );
    let old = CellRecord::new(&cells[0], "llama-cpp-python", sha, vec![cp]);
    let stale = old.check(&cells[0], &cfg).unwrap_err().to_string();
    let v3 =
        parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\ncpu_baseline = \"x86-64-v3\"\n")
            .unwrap();
    let v3_cells = expand(&v3, &recipe("llama-cpp-python")).unwrap();
    assert_eq!(flavour(&v3, &v3_cells[0]).flavour(), "cpu-v3");
    let clash = expand(
        &parse("recipe = \"llama-cpp-python\"\narch = [\"120\"]\ncuda = [\"13.0\", \"13.0.2\"]\n")
            .unwrap(),
        &recipe("llama-cpp-python"),
    )
    .unwrap_err()
    .to_string();
    let m = ReleaseManifest {
        indexes: BTreeMap::from([
            ("cpu".to_string(), "cpu/simple".to_string()),
            (
                "cu130.sm120a".to_string(),
                "cu130-sm120a/simple".to_string(),
            ),
        ]),
        artifacts: [
            "llama_cpp_python-0.3.36+cpu-py3-none-manylinux_2_28_x86_64.whl",
            "llama_cpp_python-0.3.36+cu130.sm120a-py3-none-manylinux_2_28_x86_64.whl",
        ]
        .map(|f| ReleasedArtifact {
            filename: f.to_string(),
            cell: "cell".to_string(),
            sha256: "e".repeat(64).parse().unwrap(),
            size: 1,
            plan_hash: "f".repeat(64).parse().unwrap(),
            manifest: format!("{f}.manifest.json"),
        })
        .to_vec(),
        ..ReleaseManifest::new(&cfg, &[], vec![])
    };
    let linux = crate::platform::Os::Linux;
    let pip = pip_lines(Path::new("/srv/dist"), "llama-cpp-python", &m, linux);
    let none = ReleaseManifest::new(&cfg, &[], vec![]);
    assert_eq!(pip_lines(Path::new("/srv/dist"), "x", &none, linux), "");
    insta::assert_snapshot!(
        "py3_cells_and_flavours",
        format!("{stale}\n\n{clash}\n\n{pip}")
    );
}

/// Issue 48: a cell's name carries every setting that makes another artifact, so two
/// release files sharing a dist/ never write one record for two artifacts.
#[test]
fn cells_differing_in_any_artifact_setting_get_different_names() {
    let base = "versions = [\"0.3.36\"]\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\n";
    let names =
        |recipe: &str, extra: &str| cells(&format!("recipe = \"{recipe}\"\n{base}{extra}"), recipe);
    let plain = names("llama.cpp", "target = \"x86_64-unknown-linux-gnu\"\n");
    assert_eq!(
        plain,
        [
            "llama.cpp-0.3.36-cpu-x86_64-linux",
            "llama.cpp-0.3.36-cu13.0-120-x86_64-linux"
        ]
    );
    let mut all = BTreeSet::new();
    for (recipe, extra) in [
        ("llama.cpp", "target = \"x86_64-unknown-linux-gnu\"\n"),
        (
            "llama-cpp-python",
            "target = \"x86_64-unknown-linux-gnu\"\n",
        ),
        ("llama.cpp", "target = \"aarch64-unknown-linux-gnu\"\n"),
        (
            "llama.cpp",
            "target = \"x86_64-unknown-linux-gnu\"\ncpu_baseline = \"x86-64-v3\"\n",
        ),
        (
            "llama.cpp",
            "target = \"x86_64-unknown-linux-gnu\"\nptx = true\n",
        ),
        (
            "llama.cpp",
            "target = \"x86_64-unknown-linux-gnu\"\nbundle_cuda_runtime = true\n",
        ),
    ] {
        for n in names(recipe, extra) {
            // PTX and the bundled runtime change the GPU cells only.
            if (extra.contains("ptx") || extra.contains("bundle")) && n.contains("-cpu-") {
                assert_eq!(n, plain[0], "a CPU cell is the same artifact");
                continue;
            }
            assert!(all.insert(n.clone()), "{n} twice ({recipe}, {extra})");
        }
    }
    assert!(all.contains("llama-cpp-python-0.3.36-cpu-x86_64-linux"));
    assert!(all.contains("llama.cpp-0.3.36-cpu-v3-x86_64-linux"));
    assert!(all.contains("llama.cpp-0.3.36-cu13.0-120-ptx-x86_64-linux"));
    assert!(all.contains("llama.cpp-0.3.36-cu13.0-120-rt-x86_64-linux"));
    assert!(all.contains("llama.cpp-0.3.36-cpu-aarch64-linux"));
    let win = cells(
        "recipe = \"llama.cpp\"\narch = [\"cpu\"]\ntarget = \"x86_64-pc-windows-gnu\"\n",
        "llama.cpp",
    );
    assert_eq!(win, ["llama.cpp-0.3.36-cpu-x86_64-windows-gnu"]);
}

#[test]
fn matrix_and_local_cell_caps() {
    assert!(check_cell_count(256, true, false).is_ok());
    let e = check_cell_count(257, true, true).unwrap_err();
    assert!(
        e.contains("257 cells") && e.contains("256") && e.contains("split"),
        "{e}"
    );
    assert!(check_cell_count(32, false, false).is_ok());
    let e = check_cell_count(33, false, false).unwrap_err();
    assert!(e.contains("33 cells") && e.contains("--yes"), "{e}");
    assert!(check_cell_count(33, false, true).is_ok());
    assert!(
        check_cell_count(300, false, true).is_ok(),
        "--yes lifts the local cap"
    );
}

/// `source` stays under the release file's directory: no absolute path, no `..`, no
/// link out of it.
#[test]
fn source_stays_under_the_release_files_dir() {
    let d = tempfile::tempdir().unwrap();
    let rel = d.path().join("releases");
    std::fs::create_dir_all(rel.join("src")).unwrap();
    std::fs::create_dir_all(d.path().join("outside")).unwrap();
    let file = rel.join("r.toml");
    let parse_in = |source: &str| {
        Config::parse(
            &format!("recipe = \"llama.cpp\"\narch = [\"cpu\"]\nsource = \"{source}\"\n"),
            &file,
        )
    };
    assert!(parse_in("src")
        .unwrap()
        .source
        .unwrap()
        .ends_with("releases/src"));
    for under in ["./src", "src/", "."] {
        assert!(parse_in(under).is_ok(), "{under} is under the dir");
    }
    let outside = d.path().join("outside").display().to_string();
    for (bad, why) in [
        ("../outside", "`..`"),
        ("src/../../outside", "`..`"),
        (outside.as_str(), "absolute"),
    ] {
        let e = parse_in(bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!("source = \"{bad}\""))
                && e.contains(why)
                && e.contains("under the release file's directory"),
            "{e}"
        );
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(d.path().join("outside"), rel.join("link")).unwrap();
        let e = parse_in("link").unwrap_err().to_string();
        assert!(
            e.contains("source = \"link\"") && e.contains("outside the release file's directory"),
            "{e}"
        );
    }
}

/// Issue 48: a release into a dist/ that holds another release file's cells keeps
/// them in its files, and the flavour index of the other file's cells stays.
#[test]
fn another_release_files_cells_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let dist = d.path();
    let cpu = parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\n").unwrap();
    let v3 = Config::parse(
        "recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\ncpu_baseline = \"x86-64-v3\"\n",
        Path::new("releases/v3.toml"),
    )
    .unwrap();
    let plant = |cfg: &Config, local: &str, release: &str| {
        let cells = expand(cfg, &recipe("llama-cpp-python")).unwrap();
        let f = format!("llama_cpp_python-0.3.36+{local}-py3-none-manylinux_2_28_x86_64.whl");
        std::fs::write(dist.join(&f), local).unwrap();
        std::fs::write(dist.join(format!("{f}.manifest.json")), "{}").unwrap();
        let a = ArtifactEntry {
            filename: f.clone(),
            sha256: crate::digest::sha256_file(&dist.join(&f)).unwrap(),
            size: local.len() as u64,
            manifest: format!("{f}.manifest.json"),
        };
        let r = CellRecord::new(
            &cells[0],
            "llama-cpp-python",
            "d".repeat(64).parse().unwrap(),
            vec![a],
        )
        .of_release(release);
        write_record(dist, &r).unwrap();
        cells
    };
    let write = |cfg: &Config, cells: &[Cell], release: &str| {
        let g = super::records::gather(cfg, cells, dist, release).unwrap();
        let all: Vec<&CellRecord> = g.accepted.values().chain(g.others.values()).collect();
        let m = ReleaseManifest::new(cfg, &all, vec![]);
        write_release_files(dist, &all, &m).unwrap();
        (g.accepted.len(), g.others.len())
    };
    let cpu_cells = plant(&cpu, "cpu", "releases/test.toml");
    assert_eq!(write(&cpu, &cpu_cells, "releases/test.toml"), (1, 0));
    assert!(dist
        .join("cpu/simple/llama-cpp-python/index.html")
        .is_file());
    let v3_cells = plant(&v3, "cpu.v3", "releases/v3.toml");
    assert_ne!(cpu_cells[0].name, v3_cells[0].name);
    assert_eq!(write(&v3, &v3_cells, "releases/v3.toml"), (1, 1));
    assert!(
        dist.join("cpu/simple/llama-cpp-python/index.html")
            .is_file(),
        "the other release file's index stays"
    );
    assert!(dist
        .join("cpu-v3/simple/llama-cpp-python/index.html")
        .is_file());
    let sums = std::fs::read_to_string(dist.join(SUMS_FILE)).unwrap();
    assert_eq!(sums.lines().count(), 2, "{sums}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join(MANIFEST_FILE)).unwrap()).unwrap();
    assert_eq!(
        json["cells"][&cpu_cells[0].name]["release"],
        "releases/test.toml"
    );
    assert_eq!(
        json["indexes"],
        serde_json::json!({"cpu": "cpu/simple", "cpu.v3": "cpu-v3/simple"})
    );
    // The same release file again replaces its own cells and keeps the other's.
    assert_eq!(write(&cpu, &cpu_cells, "releases/test.toml"), (1, 1));
    // An artifact of the other file changed under it: not listed, and said so.
    std::fs::write(
        dist.join("llama_cpp_python-0.3.36+cpu.v3-py3-none-manylinux_2_28_x86_64.whl"),
        "x",
    )
    .unwrap();
    let g = super::records::gather(&cpu, &cpu_cells, dist, "releases/test.toml").unwrap();
    assert!(g.others.is_empty());
    assert!(
        g.notes[0].contains("releases/v3.toml") && g.notes[0].contains("sha256"),
        "{:?}",
        g.notes
    );
}
