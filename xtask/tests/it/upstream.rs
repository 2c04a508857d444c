//! Every upstream release, not only the pinned ones: releases resolved from the package
//! index (the real one, and one served on 127.0.0.1 by the test), each patch checked
//! against the release's tree before anything is built, and a source named by what it
//! says it is.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use sha2::Digest;

/// `plan ... --json`'s document, after checking the command succeeded.
fn plan_json(args: &[&str], envs: &[(&str, &str)]) -> serde_json::Value {
    let mut all = vec!["plan"];
    all.extend_from_slice(args);
    all.push("--json");
    let o = run(&all, envs);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A stand-in for GitHub's API on 127.0.0.1 (`LLAMA_FORGE_GITHUB_API_URL`): the list of
/// `ggml-org/llama.cpp`'s commits from each commit in `counts`, one per page, answered as
/// GitHub answers it, with the count as the last page in its Link header; any other
/// request is a 404. The counts are the test's, not upstream's (no clone is at hand).
fn github_stand_in(counts: &[(&str, u32)]) -> String {
    let counts: BTreeMap<String, u32> = counts.iter().map(|(c, n)| (c.to_string(), *n)).collect();
    let server = FileServer::answering(move |path| {
        let found = path
            .strip_prefix("/repos/ggml-org/llama.cpp/commits?sha=")
            .and_then(|q| q.strip_suffix("&per_page=1"))
            .and_then(|c| counts.get(c).map(|n| (c, n)));
        match found {
            Some((c, n)) => {
                let page = |p: &dyn std::fmt::Display| {
                    format!("</repositories/612354784/commits?sha={c}&per_page=1&page={p}>")
                };
                (
                    "200 OK",
                    vec![format!(
                        "Link: {}; rel=\"next\", {}; rel=\"last\"",
                        page(&2),
                        page(n)
                    )],
                    format!("[{{\"sha\": \"{c}\"}}]").into_bytes(),
                )
            }
            None => (
                "404 Not Found",
                vec![],
                b"{\"message\": \"Not Found\"}".to_vec(),
            ),
        }
    });
    server.base
}

/// `--source` of a 0.3.35 source beside `--version 0.3.36`: refused, naming both.
fn a_0_3_35_source_refuses_version_0_3_36(src: &str) {
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--arch",
            "cpu",
            "--source",
            src,
            "--version",
            "0.3.36",
        ],
        &[],
    );
    refused(
        &o,
        2,
        "is llama-cpp-python 0.3.35 (its PKG-INFO says so), but --version asks for 0.3.36",
    );
}

/// The command failed with `code` (README, "Exit codes": 2 where the command line asks
/// what the tool refuses by its rules, 1 where what it was given fails) saying `want`.
fn refused(o: &std::process::Output, code: i32, want: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
    assert!(text(o).contains(want), "{}", text(o));
}

fn verdicts(plan: &serde_json::Value) -> Vec<String> {
    plan["patch_check"]
        .as_array()
        .unwrap_or_else(|| panic!("patches checked: {plan:#}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn skipped(plan: &serde_json::Value) -> Vec<String> {
    plan["plan"]["source"]["skipped_patches"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Every llama-cpp-python release from 0.3.20 to 0.3.36, from the real package index:
/// each resolves (URL, sha256 and date from the index, for the 16 the recipe does not pin),
/// plans under its own number and passes the patch check, with each patch's verdict. The
/// llama.cpp recipe, on the same sdists' vendored trees, for three of them. Downloads the
/// sdists (59-77 MB each) into the tests' cache once.
#[test]
fn every_release_since_0_3_20_plans_and_passes_the_patch_check() {
    for minor in 20..=36 {
        let v = format!("0.3.{minor}");
        let plan = plan_json(
            &[
                "llama-cpp-python",
                "--arch",
                "cpu",
                "--version",
                &v,
                "--check-patches",
            ],
            &[],
        );
        assert_eq!(plan["plan"]["version"], v.as_str());
        let file = plan["artifacts"][0]["file"].as_str().unwrap();
        assert!(
            file.starts_with(&format!("llama_cpp_python-{v}+cpu-py3-none-")),
            "{file}"
        );
        let source = &plan["plan"]["source"];
        assert!(
            source["location"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/llama_cpp_python-{v}.tar.gz")),
            "{source:#}"
        );
        let from = source["hash_from"].as_str().unwrap_or("");
        assert_eq!(
            from.contains("https://pypi.org/simple/llama-cpp-python/"),
            minor != 36,
            "{v}: the recipe pins 0.3.36 only: {from}"
        );
        let verdicts = verdicts(&plan);
        eprintln!("{v}: {verdicts:#?}");
        assert_eq!(verdicts.len(), 16, "{v}: {verdicts:?}");
        let security = verdicts
            .iter()
            .find(|l| l.starts_with("no-modules-from-cwd:"))
            .unwrap();
        if minor == 36 {
            assert_eq!(security, "no-modules-from-cwd: applies");
        } else {
            assert_eq!(
                security,
                "no-modules-from-cwd: applies (the text for llama-cpp-python 0.3.16 to 0.3.35)"
            );
        }
        // Before 0.3.32, mtmd's CMakeLists builds its CLIs in every build, so libllama-common
        // must be built (the recipe's no-common-library is not for those trees); mtmd's model
        // files are grouped from 0.3.35 on, and before its CMakeLists differs. Both optional:
        // left out, with what that costs.
        let want: &[&str] = match minor {
            ..=31 => &["no-common-library", "mtmd-models-unity"],
            32..=34 => &["mtmd-models-unity"],
            _ => &[],
        };
        assert_eq!(skipped(&plan), want, "{v}");
        if minor < 35 {
            assert!(
                source["skipped_patches"][want.len() - 1]["cost"]
                    .as_str()
                    .unwrap()
                    .contains("CPU-s"),
                "{source:#}"
            );
        }
    }
    // The llama.cpp archive of a release's vendored tree is named by the llama.cpp build it
    // is: the commit read from the sdist (its submodule's HEAD: these are the real ones),
    // the count asked of GitHub's API (here its stand-in's numbers) and kept in the cache.
    let vendored = [
        ("0.3.20", "f49e9178767d557a522618b16ce8694f9ddac628", 6501),
        ("0.3.28", "9e3b928fd8c9d14dbf15a8768b9fdd7e5c721d66", 7302),
        ("0.3.30", "e3a74b299085cd00013804f7fca2e03441b2da20", 7391),
        ("0.3.35", "4df29be4f4c3673f428170fda944a5b19f743bb8", 9870),
    ];
    let counts: Vec<(&str, u32)> = vendored.iter().map(|(_, c, n)| (*c, *n)).collect();
    let api = github_stand_in(&counts);
    for (v, commit, build) in vendored {
        let plan = plan_json(
            &[
                "llama.cpp",
                "--arch",
                "cpu",
                "--version",
                v,
                "--check-patches",
            ],
            &[("LLAMA_FORGE_GITHUB_API_URL", &api)],
        );
        assert_eq!(plan["plan"]["version"], v);
        assert!(
            plan["artifacts"][0]["file"]
                .as_str()
                .unwrap()
                .starts_with(&format!("llama.cpp-b{build}-cpu-linux-x86_64")),
            "{plan:#}"
        );
        assert_eq!(plan["plan"]["upstream"]["commit"], commit, "{v}");
        assert_eq!(plan["plan"]["upstream"]["build"], build, "{v}");
        let defines = plan["plan"]["defines"].as_array().unwrap();
        let define = |name: &str| {
            defines
                .iter()
                .find(|d| d["name"] == name)
                .map(|d| d["value"].as_str().unwrap().to_string())
        };
        assert_eq!(define("LLAMA_BUILD_NUMBER"), Some(build.to_string()), "{v}");
        assert_eq!(
            define("LLAMA_BUILD_COMMIT"),
            Some(commit[..9].to_string()),
            "{v}"
        );
        assert!(verdicts(&plan)
            .iter()
            .any(|l| l.starts_with("no-modules-from-cwd: applies")));
    }

    // Where GitHub cannot be asked (nothing listens on port 9), the build is unknown: said,
    // and the archive named by the release, as before.
    let o = run(
        &["plan", "llama.cpp", "--arch", "cpu", "--version", "0.3.30"],
        &[("LLAMA_FORGE_GITHUB_API_URL", "http://127.0.0.1:9")],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("which llama.cpp build")
            && text(&o).contains("e3a74b299085cd00013804f7fca2e03441b2da20")
            && text(&o).contains("llama.cpp-0.3.30-cpu-linux-x86_64"),
        "{}",
        text(&o)
    );

    // --source names the release it is: the real 0.3.35 sdist plans as 0.3.35 (the same
    // plan as fetching it from the index), and --version 0.3.36 beside it is refused.
    let sdist = walkdir::WalkDir::new(cache().join("downloads"))
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == "llama_cpp_python-0.3.35.tar.gz")
        .expect("downloaded above")
        .into_path();
    let sdist_s = sdist.display().to_string();
    let fetched = plan_json(
        &["llama-cpp-python", "--arch", "cpu", "--version", "0.3.35"],
        &[],
    );
    let local = plan_json(
        &["llama-cpp-python", "--arch", "cpu", "--source", &sdist_s],
        &[],
    );
    assert_eq!(local["plan_hash"], fetched["plan_hash"]);
    assert!(local["artifacts"][0]["file"]
        .as_str()
        .unwrap()
        .starts_with("llama_cpp_python-0.3.35+cpu"));
    a_0_3_35_source_refuses_version_0_3_36(&sdist_s);
}

/// An index of the test's own (PEP 691 JSON on 127.0.0.1) offering releases the recipe
/// lacks, each the mini-llama-python fixture as an sdist: `latest` takes the newest, a
/// required patch that does not fit refuses the plan naming the patch, the file and the
/// text, and an optional one is skipped and recorded.
#[test]
fn a_local_index_serves_releases_the_recipe_does_not_pin() {
    let server = mini_index(&[
        ("0.3.99", Edit::None),
        (
            "0.3.98",
            Edit::Cut(
                "vendor/llama.cpp/ggml/src/ggml-backend-reg.cpp",
                "search_paths.push_back(",
            ),
        ),
        ("0.3.97", Edit::Cut(MTMD_CMAKE, MTMD_UNITY_LINE)),
    ]);
    let index = format!("{}/simple/", server.base);
    let d = tempfile::tempdir().unwrap();
    let cache_dir = d.path().join("cache").display().to_string();
    let envs = [
        ("LLAMA_FORGE_INDEX_URL", index.as_str()),
        ("LLAMA_FORGE_CACHE", cache_dir.as_str()),
    ];

    let plan = plan_json(
        &["llama-cpp-python", "--arch", "cpu", "--version", "latest"],
        &envs,
    );
    assert_eq!(plan["plan"]["version"], "0.3.99");
    assert_eq!(
        plan["plan"]["source_date_epoch"], 1795946400u64,
        "the upload time, whole seconds"
    );
    assert_eq!(
        plan["plan"]["source"]["location"].as_str().unwrap(),
        format!("{}/files/llama_cpp_python-0.3.99.tar.gz", server.base)
    );
    assert!(
        plan["plan"]["source"]["hash_from"]
            .as_str()
            .unwrap()
            .contains(&index),
        "{plan:#}"
    );
    assert!(
        verdicts(&plan).iter().all(|v| v.ends_with(": applies")),
        "{plan:#}"
    );
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--arch",
            "cpu",
            "--version",
            "latest",
        ],
        &envs,
    );
    assert!(
        text(&o).contains("not pinned in the recipe: sha256 from the package index"),
        "{}",
        text(&o)
    );

    // A required patch whose text is gone: refused before anything is built.
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--arch",
            "cpu",
            "--version",
            "0.3.98",
        ],
        &envs,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("the patch `no-modules-from-cwd` (security, required) does not fit this source: vendor/llama.cpp/ggml/src/ggml-backend-reg.cpp does not have the text")
            && t.contains("search_paths.push_back(cwd);")
            && t.contains("If upstream made the change another way"),
        "{t}"
    );
    // An optional one: skipped, and the plan (so the manifest) says so, with its cost.
    let plan = plan_json(
        &["llama-cpp-python", "--arch", "cpu", "--version", "0.3.97"],
        &envs,
    );
    assert_eq!(skipped(&plan), ["mtmd-models-unity"]);
    // Not on the index: the newest it has are named.
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--arch",
            "cpu",
            "--version",
            "0.3.50",
        ],
        &envs,
    );
    assert!(
        text(&o).contains("has no release `0.3.50`: the recipe pins 0.3.36, 0.3.16")
            && text(&o).contains("the newest there are 0.3.99, 0.3.98, 0.3.97"),
        "{}",
        text(&o)
    );
}

const MTMD_CMAKE: &str = "vendor/llama.cpp/tools/mtmd/CMakeLists.txt";
/// A line of the text the optional `mtmd-models-unity` patch looks for.
const MTMD_UNITY_LINE: &str =
    "    MACHO_CURRENT_VERSION 0 # keep macOS linker from seeing oversized version number\n";

/// How a served release differs from the mini-llama-python fixture.
enum Edit {
    None,
    /// This text cut from this file.
    Cut(&'static str, &'static str),
}

/// The mini-llama-python fixture as the sdist of `version` (its PKG-INFO saying so), with
/// the files the target-specific patches of the shared set change (the mingw-w64 ones), each
/// holding the text its patch looks for, as a real sdist has them.
fn mini_sdist(version: &str, edit: &Edit) -> Vec<u8> {
    let d = tempfile::tempdir().unwrap();
    let fixture = repo().join("tests/fixtures/mini-llama-python");
    let src = d.path().join("src");
    copy_tree(&fixture, &src);
    // The submodule's commit, where a real sdist has it.
    let head = src.join(".git/modules/vendor/llama.cpp/HEAD");
    std::fs::create_dir_all(head.parent().unwrap()).unwrap();
    std::fs::write(&head, format!("{MINI_COMMIT}\n")).unwrap();
    let set: toml::Table = toml::from_str(
        &std::fs::read_to_string(repo().join("recipes/patches/llama.cpp.toml")).unwrap(),
    )
    .unwrap();
    for p in set["patch"].as_array().unwrap() {
        let file = src
            .join("vendor/llama.cpp")
            .join(p["file"].as_str().unwrap());
        if p.get("targets").is_some() && !file.exists() {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, p["find"].as_str().unwrap()).unwrap();
        }
    }
    tar_gz_of(
        &src,
        &format!("llama_cpp_python-{version}"),
        &|rel, data| {
            let mut t = String::from_utf8(data).unwrap();
            if rel == "PKG-INFO" {
                t = t.replace("Version: 0.3.36", &format!("Version: {version}"));
            }
            if let Edit::Cut(file, text) = edit {
                if rel == *file {
                    assert!(t.contains(text), "{file} has {text}");
                    t = t.replace(text, "");
                }
            }
            t.into_bytes()
        },
    )
}

/// A package index on 127.0.0.1 (PEP 691 JSON at `/simple/llama-cpp-python/`) serving these
/// releases, the first the newest (uploaded 2026-11-29T10:00:00.5Z, each next a day before).
fn mini_index(releases: &[(&str, Edit)]) -> FileServer {
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut listed = Vec::new();
    for (i, (v, edit)) in releases.iter().enumerate() {
        let data = mini_sdist(v, edit);
        let name = format!("llama_cpp_python-{v}.tar.gz");
        listed.push(serde_json::json!({
            "filename": name,
            "url": format!("../../files/{name}"),
            "hashes": {"sha256": hex::encode(sha2::Sha256::digest(&data))},
            "upload-time": format!("2026-11-2{}T10:00:00.5Z", 9 - i),
        }));
        files.insert(format!("/files/{name}"), data);
    }
    let page = serde_json::json!({"meta": {"api-version": "1.1"}, "name": "llama-cpp-python", "files": listed});
    files.insert(
        "/simple/llama-cpp-python/".into(),
        serde_json::to_vec(&page).unwrap(),
    );
    FileServer::start(files)
}

/// A copy of the recipes in `dir`, each file through `edit`.
fn recipes_copy(dir: &Path, edit: &dyn Fn(String) -> String) -> std::path::PathBuf {
    let recipes = dir.join("recipes");
    std::fs::create_dir_all(recipes.join("patches")).unwrap();
    std::fs::create_dir_all(recipes.join("profiles")).unwrap();
    for f in [
        "llama.cpp.toml",
        "llama-cpp-python.toml",
        "patches/llama.cpp.toml",
        "profiles/ggml.toml",
    ] {
        let t = std::fs::read_to_string(repo().join("recipes").join(f)).unwrap();
        std::fs::write(recipes.join(f), edit(t)).unwrap();
    }
    recipes
}

/// The llama.cpp commit the mini sdists say they vendor (0.3.35's).
const MINI_COMMIT: &str = "4df29be4f4c3673f428170fda944a5b19f743bb8";

/// `recipe update` against an index of the test's own: a newest release whose required
/// patch does not fit pins nothing (exit 1, the recipe file unchanged); one where an
/// optional patch does not fit is pinned first in the recipe, with each verdict reported and
/// written beside it; then the release plans as a pin, and a second update is a no-op.
#[test]
fn recipe_update_pins_the_newest_release_after_the_patch_check() {
    let d = tempfile::tempdir().unwrap();
    let recipes = recipes_copy(d.path(), &|t| t);
    let file = recipes.join("llama-cpp-python.toml");
    let before = std::fs::read_to_string(&file).unwrap();
    let cache_dir = d.path().join("cache").display().to_string();
    let recipes_s = recipes.display().to_string();
    let update = |server: &FileServer| {
        let index = format!("{}/simple/", server.base);
        run(
            &["recipe", "update", "llama-cpp-python"],
            &[
                ("LLAMA_FORGE_INDEX_URL", index.as_str()),
                ("LLAMA_FORGE_CACHE", cache_dir.as_str()),
                ("LLAMA_FORGE_RECIPES", recipes_s.as_str()),
            ],
        )
    };

    let broken = mini_index(&[(
        "0.3.98",
        Edit::Cut(
            "vendor/llama.cpp/ggml/src/ggml-backend-reg.cpp",
            "search_paths.push_back(",
        ),
    )]);
    let o = update(&broken);
    refused(&o, 1, "llama-cpp-python 0.3.98 is not pinned: for x86_64-unknown-linux-gnu, the patch `no-modules-from-cwd`");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        before,
        "nothing written"
    );

    let server = mini_index(&[("0.3.97", Edit::Cut(MTMD_CMAKE, MTMD_UNITY_LINE))]);
    let o = update(&server);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("pinned llama-cpp-python 0.3.97 in"), "{t}");
    assert!(
        t.contains("mtmd-models-unity: does not fit: skipped"),
        "{t}"
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.contains("version = \"0.3.97\"")
            && after.contains("#   mtmd-models-unity: does not fit: skipped")
    );
    let envs = [
        ("LLAMA_FORGE_RECIPES", recipes_s.as_str()),
        ("LLAMA_FORGE_CACHE", cache_dir.as_str()),
    ];
    // Now a pin: planned offline, from the recipe, its patches checked against the cached sdist.
    let plan = plan_json(
        &["llama-cpp-python", "--arch", "cpu", "--version", "0.3.97"],
        &envs,
    );
    assert_eq!(
        plan["plan"]["source"]["hash_from"],
        serde_json::Value::Null,
        "{plan:#}"
    );
    assert_eq!(skipped(&plan), ["mtmd-models-unity"]);
    let o = update(&server);
    assert!(
        o.status.success() && text(&o).contains("up to date: it pins 0.3.97"),
        "{}",
        text(&o)
    );

    // The llama.cpp recipe asks GitHub's API (its stand-in) for the vendored commit's build
    // number: the new pin gets its [release.upstream].
    let api = github_stand_in(&[(MINI_COMMIT, 11400)]);
    let index = format!("{}/simple/", server.base);
    let o = run(
        &["recipe", "update", "llama.cpp"],
        &[
            ("LLAMA_FORGE_INDEX_URL", index.as_str()),
            ("LLAMA_FORGE_CACHE", cache_dir.as_str()),
            ("LLAMA_FORGE_RECIPES", recipes_s.as_str()),
            ("LLAMA_FORGE_GITHUB_API_URL", api.as_str()),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let pinned = std::fs::read_to_string(recipes.join("llama.cpp.toml")).unwrap();
    assert!(
        pinned.contains(&format!(
            "[release.upstream]\nrepo = \"ggml-org/llama.cpp\"\ncommit = \"{MINI_COMMIT}\"\nbuild = 11400\n"
        )),
        "{pinned}"
    );
}

/// The proxy variables are the command line's, read as pip reads them: the index's GET goes
/// through `HTTP_PROXY` (a CONNECT to the index's host, which this stand-in refuses), and
/// straight to the index where `NO_PROXY` names its host.
#[test]
fn downloads_go_through_the_proxy_the_environment_names() {
    let server = mini_index(&[("0.3.97", Edit::None)]);
    let index = format!("{}/simple/", server.base);
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = asked.clone();
    let proxy = FileServer::answering(move |target| {
        seen.lock().unwrap().push(target.to_string());
        ("403 Forbidden", vec![], b"no".to_vec())
    });
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache").display().to_string();
    let recipes = recipes_copy(d.path(), &|t| t).display().to_string();
    let update = |extra: &[(&str, &str)]| {
        let mut envs = vec![
            ("LLAMA_FORGE_INDEX_URL", index.as_str()),
            ("LLAMA_FORGE_CACHE", cache.as_str()),
            ("LLAMA_FORGE_RECIPES", recipes.as_str()),
            ("HTTP_PROXY", proxy.base.as_str()),
        ];
        envs.extend_from_slice(extra);
        run(&["recipe", "update", "llama-cpp-python"], &envs)
    };
    let host = server.base.trim_start_matches("http://");
    let o = update(&[]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&index),
        "the error names the URL: {}",
        text(&o)
    );
    assert_eq!(*asked.lock().unwrap(), [host], "{}", text(&o));
    let o = update(&[("NO_PROXY", "localhost,127.0.0.1")]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(*asked.lock().unwrap(), [host], "NO_PROXY: not asked again");
}

/// An unpinned release built from a local index, then rebuilt from its manifest in another
/// checkout: the rebuild takes the source the manifest recorded (its URL and sha256, and
/// where that hash came from), makes the recorded plan and the same wheel.
#[test]
fn an_unpinned_release_reproduces_from_its_manifest() {
    let server = mini_index(&[("0.3.99", Edit::None)]);
    let index = format!("{}/simple/", server.base);
    let d = tempfile::tempdir().unwrap();
    let side = |name: &str| {
        let root = d.path().join(name).join("repo");
        checkout(&root);
        root
    };
    let (a, b) = (side("a"), side("b"));
    let dist = a.join("dist");
    let in_checkout = |root: &Path, args: &[&str], index: &str| {
        let mut c = xtask(args, &[("LLAMA_FORGE_INDEX_URL", index)]);
        c.env("LLAMA_FORGE_ROOT", root)
            .env("LLAMA_FORGE_BUILD_DIR", root.parent().unwrap().join("work"));
        let o = c.output().unwrap();
        eprintln!("$ xtask {}\n{}", args.join(" "), text(&o));
        o
    };
    let dist_s = dist.display().to_string();
    let o = in_checkout(
        &a,
        &[
            "wheel",
            "llama-cpp-python",
            "--version",
            "0.3.99",
            "--dist",
            &dist_s,
        ],
        &index,
    );
    assert!(o.status.success(), "{}", text(&o));
    let manifest = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".whl.manifest.json"))
        .unwrap();
    assert!(
        manifest.starts_with("llama_cpp_python-0.3.99+cpu-"),
        "{manifest}"
    );
    let manifest = dist.join(manifest).display().to_string();
    // The index is not asked: it points nowhere now.
    let o = in_checkout(
        &b,
        &["reproduce", &manifest, "--strict"],
        "http://127.0.0.1:9/simple/",
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("identical: "), "{}", text(&o));
}

/// A source that names no release needs --version, and the plan records it as given; a
/// directory whose PKG-INFO names one that --version contradicts is refused.
#[test]
fn a_source_says_which_release_it_is() {
    let mini = repo()
        .join("tests/fixtures/mini-llama")
        .display()
        .to_string();
    let o = run(
        &["plan", "llama.cpp", "--arch", "cpu", "--source", &mini],
        &[],
    );
    refused(&o, 2, "cannot tell which release --source");
    let plan = plan_json(
        &[
            "llama.cpp",
            "--arch",
            "cpu",
            "--source",
            &mini,
            "--version",
            "0.3.36",
        ],
        &[],
    );
    assert_eq!(plan["plan"]["source"]["version_from"], "given");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("py");
    copy_tree(&repo().join("tests/fixtures/mini-llama-python"), &dir);
    let pkg = dir.join("PKG-INFO");
    let info = std::fs::read_to_string(&pkg)
        .unwrap()
        .replace("Version: 0.3.36", "Version: 0.3.35");
    std::fs::write(&pkg, info).unwrap();
    let dir_s = dir.display().to_string();
    a_0_3_35_source_refuses_version_0_3_36(&dir_s);
    let plan = plan_json(
        &["llama-cpp-python", "--arch", "cpu", "--source", &dir_s],
        &[],
    );
    assert_eq!(plan["plan"]["version"], "0.3.35");
    assert_eq!(plan["plan"]["source"]["version_from"], "PKG-INFO");
    assert!(plan["artifacts"][0]["file"]
        .as_str()
        .unwrap()
        .starts_with("llama_cpp_python-0.3.35+cpu"));
}

/// `build llama.cpp --version b11541` from a tarball in upstream's tag form (a `git
/// archive`: the leading dir `llama.cpp-b11541`, the commit in its global pax header),
/// served on 127.0.0.1 through a copy of the recipes whose URL points there. The mini
/// llama.cpp tree is built where the recipe's source has llama.cpp (vendor/llama.cpp),
/// its patches checked; the archive is named by the tag, the manifest records the commit,
/// the build and the first download's hash, and the build reports them to llama.cpp.
#[test]
fn an_upstream_build_by_its_tag() {
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let mini = repo().join("tests/fixtures/mini-llama");
    let same = |_: &str, d: Vec<u8>| d;
    let mut files = BTreeMap::new();
    files.insert(
        "/ggml-org/llama.cpp/archive/refs/tags/b11541.tar.gz".to_string(),
        git_archive_of(&mini, "llama.cpp-b11541", Some(commit), &same),
    );
    files.insert(
        "/ggml-org/llama.cpp/archive/refs/tags/b11542.tar.gz".to_string(),
        git_archive_of(&mini, "llama.cpp-b11542", None, &same),
    );
    let server = FileServer::start(files);
    let d = tempfile::tempdir().unwrap();
    let base = format!("{}/", server.base);
    let recipes = recipes_copy(d.path(), &|t| t.replace("https://github.com/", &base));
    let dist = d.path().join("dist");
    let (recipes_s, dist_s, build_s) = (
        recipes.display().to_string(),
        dist.display().to_string(),
        d.path().join("work").display().to_string(),
    );
    let envs = [
        ("LLAMA_FORGE_RECIPES", recipes_s.as_str()),
        ("LLAMA_FORGE_BUILD_DIR", build_s.as_str()),
    ];
    let o = run(
        &[
            "build",
            "llama.cpp",
            "--version",
            "b11541",
            "--arch",
            "cpu",
            "--dist",
            &dist_s,
        ],
        &envs,
    );
    assert!(o.status.success(), "{}", text(&o));
    let archive = "llama.cpp-b11541-cpu-linux-x86_64.tar.gz";
    assert!(
        files_in(&dist).contains(&archive.to_string()),
        "{:?}",
        files_in(&dist)
    );
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dist.join(format!("{archive}.manifest.json"))).unwrap(),
    )
    .unwrap();
    let plan = &m["plan"];
    assert_eq!(plan["version"], "11541");
    assert_eq!(plan["upstream"]["commit"], commit);
    assert_eq!(plan["upstream"]["build"], 11541);
    assert_eq!(plan["source"]["kind"], "tarball");
    assert_eq!(plan["source"]["under"], "vendor/llama.cpp");
    assert!(
        plan["source"]["hash_from"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "the first download of {}/ggml-org/llama.cpp/archive/refs/tags/b11541.tar.gz",
                server.base
            )),
        "{:#}",
        plan["source"]
    );
    let defines: Vec<String> = plan["defines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}={}",
                d["name"].as_str().unwrap(),
                d["value"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        defines.contains(&"LLAMA_BUILD_NUMBER=11541".to_string()),
        "{defines:?}"
    );
    assert!(
        defines.contains(&"LLAMA_BUILD_COMMIT=012345678".to_string()),
        "{defines:?}"
    );
    // Planned again: the same plan, from the hash the first download recorded.
    let again = plan_json(
        &["llama.cpp", "--version", "b11541", "--arch", "cpu"],
        &envs,
    );
    assert_eq!(again["plan_hash"], m["plan_hash"], "{again:#}");

    // A tarball that names no commit is refused: the build number alone is not enough.
    let o = run(
        &["plan", "llama.cpp", "--version", "b11542", "--arch", "cpu"],
        &envs,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("names no commit"), "{}", text(&o));
    let o = run(&["plan", "llama.cpp", "--version", "b0"], &envs);
    assert!(
        text(&o).contains("is not a llama.cpp build tag"),
        "{}",
        text(&o)
    );
}

/// `wheel llama-cpp-python --llama-cpp`: the bindings (the mini-llama-python fixture) built
/// against another llama.cpp tree in place of their vendored one. Upstream's build by its
/// tag (a tarball in its tag form served on 127.0.0.1): the wheel's local version names it,
/// the manifest records the tree and the build, and the function llama_cpp.py binds is
/// found exported. The same tree with that function deleted is refused before packaging,
/// naming it, and nothing reaches dist/; a dir that is no llama.cpp tree, and a recipe with
/// no vendored tree, are refused at once.
#[test]
fn the_bindings_build_against_another_llama_cpp() {
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    let fixture = repo().join("tests/fixtures/mini-llama-python");
    let tree = fixture.join("vendor/llama.cpp");
    let same = |_: &str, d: Vec<u8>| d;
    let mut files = BTreeMap::new();
    files.insert(
        "/ggml-org/llama.cpp/archive/refs/tags/b11541.tar.gz".to_string(),
        git_archive_of(&tree, "llama.cpp-b11541", Some(commit), &same),
    );
    let server = FileServer::start(files);
    let d = tempfile::tempdir().unwrap();
    let base = format!("{}/", server.base);
    let recipes = recipes_copy(d.path(), &|t| t.replace("https://github.com/", &base));
    let dist = d.path().join("dist");
    let (recipes_s, dist_s, build_s, src_s) = (
        recipes.display().to_string(),
        dist.display().to_string(),
        d.path().join("work").display().to_string(),
        fixture.display().to_string(),
    );
    let envs = [
        ("LLAMA_FORGE_RECIPES", recipes_s.as_str()),
        ("LLAMA_FORGE_BUILD_DIR", build_s.as_str()),
    ];
    let with_tree = |command: &str, llama_cpp: &str| {
        run(
            &[
                command,
                "llama-cpp-python",
                "--source",
                &src_s,
                "--version",
                "0.3.36",
                "--llama-cpp",
                llama_cpp,
                "--arch",
                "cpu",
                "--dist",
                &dist_s,
            ],
            &envs,
        )
    };
    let o = with_tree("wheel", "b11541");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(
            "bindings: all 1 functions bound with ctypes are exported, 1 structs laid out as the headers"
        ),
        "{}",
        text(&o)
    );
    let built = files_in(&dist);
    let name = built
        .iter()
        .find(|f| f.ends_with(".whl"))
        .expect("a wheel")
        .clone();
    assert!(
        name.starts_with("llama_cpp_python-0.3.36+cpu.b11541-py3-none-"),
        "{built:?}"
    );
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join(format!("{name}.manifest.json"))).unwrap())
            .unwrap();
    let plan = &m["plan"];
    let overlay = &plan["source"]["overlay"];
    assert_eq!(
        overlay["location"],
        format!(
            "{}/ggml-org/llama.cpp/archive/refs/tags/b11541.tar.gz",
            server.base
        ),
        "{:#}",
        plan["source"]
    );
    assert_eq!(overlay["under"], "vendor/llama.cpp");
    assert_eq!(plan["upstream"]["build"], 11541);
    assert_eq!(plan["upstream"]["commit"], commit);

    // The same tree, the bound function deleted: refused before packaging, naming it.
    let edited = d.path().join("llama.cpp");
    copy_tree(&tree, &edited);
    let api = edited.join("src/llama-mini.cpp");
    let kept: String = std::fs::read_to_string(&api)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("llama_mini_version"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&api, kept).unwrap();
    let o = with_tree("wheel", &edited.display().to_string());
    refused(&o, 1, "exported by none of its libraries");
    assert!(
        text(&o).contains("llama_mini_version (llama_cpp/llama_cpp.py:"),
        "{}",
        text(&o)
    );
    assert_eq!(files_in(&dist), built, "nothing more in dist/");

    // The function back, and a member added to a struct the bindings lay out: refused,
    // naming the struct and the member.
    copy_tree(&tree, &edited);
    let header = edited.join("include/llama.h");
    let h = std::fs::read_to_string(&header).unwrap();
    assert!(h.contains("    int32_t n_ctx; // the context size\n"));
    std::fs::write(
        &header,
        h.replace(
            "    int32_t n_ctx; // the context size\n",
            "    int32_t n_ctx; // the context size\n    bool lazy_mode;\n",
        ),
    )
    .unwrap();
    let o = with_tree("wheel", &edited.display().to_string());
    refused(&o, 1, "struct llama_mini_params (llama_cpp/llama_cpp.py:");
    assert!(
        text(&o)
            .contains("the bindings lay out 1 fields, the header 2 (the header adds lazy_mode)"),
        "{}",
        text(&o)
    );
    assert_eq!(files_in(&dist), built, "nothing more in dist/");

    // No llama.cpp tree, and a recipe that vendors none.
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = with_tree("plan", &empty.display().to_string());
    refused(&o, 1, "has no include/llama.h: it is not a llama.cpp tree");
    let o = run(
        &[
            "plan",
            "llama.cpp",
            "--llama-cpp",
            "b11541",
            "--arch",
            "cpu",
        ],
        &envs,
    );
    refused(&o, 2, "vendors no llama.cpp tree to replace");
}

/// A cache that fills up during a download (a tmpfs half the sdist's size): the run fails
/// saying so and leaves nothing partial in the cache; once there is room, the same run
/// succeeds (issue 48: a rerun after ENOSPC once still failed).
#[test]
fn a_full_cache_recovers_once_there_is_room() {
    let sdist = mini_sdist("0.3.99", &Edit::None);
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    let Some(fs) = Tmpfs::mount(&cache, (sdist.len() as u64 / 2).max(4096)) else {
        return;
    };
    let server = mini_index(&[("0.3.99", Edit::None)]);
    let index = format!("{}/simple/", server.base);
    let cache_dir = cache.display().to_string();
    let envs = [
        ("LLAMA_FORGE_INDEX_URL", index.as_str()),
        ("LLAMA_FORGE_CACHE", cache_dir.as_str()),
    ];
    let args = [
        "plan",
        "llama-cpp-python",
        "--arch",
        "cpu",
        "--version",
        "0.3.99",
        "--json",
    ];
    let o = run(&args, &envs);
    assert!(!o.status.success(), "the cache is too small: {}", text(&o));
    assert!(
        text(&o).contains("No space left on device"),
        "says why: {}",
        text(&o)
    );
    let left: Vec<String> = walkdir::WalkDir::new(cache.join("downloads"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file() && !e.path().to_string_lossy().contains("/.locks/"))
        .map(|e| e.path().display().to_string())
        .collect();
    assert!(left.is_empty(), "nothing partial left: {left:?}");
    fs.grow(64 << 20);
    let o = run(&args, &envs);
    assert!(
        o.status.success(),
        "a rerun with room succeeds: {}",
        text(&o)
    );
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["plan"]["version"], "0.3.99");
}
