//! The shared stable build path (`/tmp/llama-forge`) against another local user.
//!
//! A second, unprivileged user (created here: CI runs as root) plants what it can in a
//! world-writable dir standing in for /tmp: a symlinked base, a base it owns, planted
//! sources in a root-owned 1777 base, and links in place of every file and dir the tool
//! makes there. Real builds of the mini fixture must refuse each, naming the path, or
//! neutralise it; nothing planted may reach a build, and nothing is written where a
//! planted link points.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use crate::common;

use std::os::unix::fs::{lchown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const ATTACKER: &str = "forge-attacker";

/// The attacker's uid and gid, creating the user when missing. Needs root: CI runs as
/// root; elsewhere, without root, the test says so and stops (never under CI=true).
fn attacker() -> Option<(u32, u32)> {
    if !nix::unistd::Uid::effective().is_root() {
        cannot_run_here("needs root to add a second user (CI runs as root)");
        return None;
    }
    static CREATE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = CREATE.lock().unwrap();
    let id = |flag: &str| {
        Command::new("id")
            .args([flag, ATTACKER])
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    if id("-u").is_none() {
        let o = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                ATTACKER,
            ])
            .output()
            .expect("useradd runs");
        assert!(
            o.status.success() || id("-u").is_some(),
            "useradd failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let num = |flag: &str| {
        String::from_utf8(id(flag).unwrap().stdout)
            .unwrap()
            .trim()
            .parse::<u32>()
            .unwrap()
    };
    Some((num("-u"), num("-g")))
}

/// Runs a shell script as the attacker.
fn as_attacker(ids: (u32, u32), script: &str) {
    let o = Command::new("sh")
        .args(["-c", script])
        .uid(ids.0)
        .gid(ids.1)
        .current_dir("/")
        .env_clear()
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "attacker script failed: {script}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A dir like /tmp: everyone may create entries in it.
fn world_writable(parent: &Path) -> PathBuf {
    let d = parent.join("tmp");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

struct Setup {
    _tmp: tempfile::TempDir,
    src: PathBuf,
    build: PathBuf,
    dist: PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let src = mini_source(tmp.path());
    Setup {
        src,
        build: tmp.path().join("build"),
        dist: tmp.path().join("dist"),
        _tmp: tmp,
    }
}

fn build(s: &Setup, stable: &Path) -> Output {
    build_with(s, &cache(), &s.build, stable)
}

/// `build` of `s` with the cache, build root and stable dir given.
fn build_with(s: &Setup, cache: &Path, build_root: &Path, stable: &Path) -> Output {
    let mut c = xtask(
        &[
            "build",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &s.src.display().to_string(),
            "--dist",
            &s.dist.display().to_string(),
        ],
        &[],
    );
    c.env("LLAMA_FORGE_CACHE", cache)
        .env("LLAMA_FORGE_BUILD_DIR", build_root)
        .env("LLAMA_FORGE_STABLE_DIR", stable);
    let o = c.output().unwrap();
    eprintln!("{}", text(&o));
    o
}

fn refused(o: &Output, needles: &[&str]) {
    let t = text(o);
    assert!(!o.status.success(), "expected a refusal:\n{t}");
    for n in needles {
        assert!(t.contains(n), "`{n}` not in:\n{t}");
    }
}

/// The id dir a build of `s` uses, learnt from a clean build in a private stable dir.
fn stable_id(s: &Setup, private: &Path) -> String {
    let o = build(s, private);
    assert!(o.status.success(), "clean build");
    let id = files_in(private)
        .into_iter()
        .find(|n| !n.ends_with(".lock"))
        .expect("an id dir");
    std::fs::remove_dir_all(&s.dist).unwrap();
    id
}

#[test]
fn a_planted_base_is_refused_with_its_owner() {
    let Some(ids) = attacker() else { return };
    let s = setup();
    let tmp = world_writable(s._tmp.path());
    let base = tmp.join("llama-forge");
    let theirs = tmp.join("theirs");

    // A symlinked base, pointing at the attacker's own dir.
    as_attacker(
        ids,
        &format!(
            "mkdir -m 777 {0} && ln -s {0} {1}",
            theirs.display(),
            base.display()
        ),
    );
    refused(
        &build(&s, &base),
        &["symbolic link", &base.display().to_string(), ATTACKER],
    );
    assert!(
        files_in(&theirs).is_empty(),
        "nothing written where the link points: {:?}",
        files_in(&theirs)
    );
    std::fs::remove_file(&base).unwrap();

    // A base the attacker owns, with a planted source and marker under every id.
    as_attacker(ids, &format!("mkdir -m 777 {0} && mkdir -p {0}/x/src && echo 'message(FATAL_ERROR planted)' > {0}/x/src/CMakeLists.txt && touch {0}/x/src.done", base.display()));
    refused(
        &build(&s, &base),
        &["owned by", ATTACKER, &base.display().to_string()],
    );
    assert!(files_in(&s.dist).is_empty());
}

#[test]
fn a_shared_1777_base_with_planted_sources_is_refused() {
    let Some(ids) = attacker() else { return };
    let s = setup();
    let id = stable_id(&s, &s._tmp.path().join("private"));
    let tmp = world_writable(s._tmp.path());
    let base = tmp.join("llama-forge");
    std::fs::create_dir(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = base.join(&id);
    as_attacker(ids, &format!(
        "mkdir -p {0}/src/vendor/llama.cpp && cp -r {1}/. {0}/src/vendor/llama.cpp/ && echo 'message(FATAL_ERROR planted)' >> {0}/src/vendor/llama.cpp/CMakeLists.txt && touch {0}/src.done && ln -s /root/planted-by-link {2}.lock",
        planted.display(),
        s.src.display(),
        planted.display()
    ));
    refused(
        &build(&s, &base),
        &["mode 1777", &base.display().to_string()],
    );
    assert!(!Path::new("/root/planted-by-link").exists());
}

/// Replaces `path` (something the tool made) with a link to `to`, owned by the attacker,
/// as if planted while the dir was open to others.
fn plant_link(ids: (u32, u32), path: &Path, to: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(path).unwrap();
    } else if std::fs::symlink_metadata(path).is_ok() {
        std::fs::remove_file(path).unwrap();
    }
    std::os::unix::fs::symlink(to, path).unwrap();
    lchown(path, Some(ids.0), Some(ids.1)).unwrap();
}

#[test]
fn planted_links_for_every_file_the_tool_makes_are_refused() {
    let Some(ids) = attacker() else { return };
    let s = setup();
    let base = s._tmp.path().join("stable");
    let id = stable_id(&s, &base);
    let alias = base.join(&id);
    let victim = s._tmp.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(
        victim.join("CMakeLists.txt"),
        "message(FATAL_ERROR planted)\n",
    )
    .unwrap();
    let lock = base.join(format!("{id}.lock"));
    for (what, path, to) in [
        ("the lock", lock.clone(), victim.join("lock")),
        ("the stable dir", alias.clone(), victim.clone()),
        ("the source", alias.join("src"), victim.clone()),
        (
            "the source marker",
            alias.join("src.done"),
            victim.join("marker"),
        ),
        ("the build link", alias.join("build"), victim.clone()),
        ("the stage link", alias.join("stage"), victim.clone()),
    ] {
        let o = build(&s, &base);
        assert!(o.status.success(), "a clean build before planting {what}");
        std::fs::remove_dir_all(&s.dist).unwrap();
        plant_link(ids, &path, &to);
        refused(
            &build(&s, &base),
            &["symbolic link", &path.display().to_string(), ATTACKER],
        );
        assert_eq!(
            files_in(&victim),
            ["CMakeLists.txt"],
            "{what}: nothing created where the link points"
        );
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_planted_or_edited_source_file_is_never_built() {
    let Some(ids) = attacker() else { return };
    let s = setup();
    let base = s._tmp.path().join("stable");
    let id = stable_id(&s, &base);
    // A `--source` dir is the recipe's project: copied to vendor/llama.cpp.
    let cmake = base.join(&id).join("src/vendor/llama.cpp/CMakeLists.txt");

    // A file of the unpacked source, replaced by one the attacker owns.
    std::fs::write(&cmake, "message(FATAL_ERROR planted)\n").unwrap();
    lchown(&cmake, Some(ids.0), Some(ids.1)).unwrap();
    let o = build(&s, &base);
    assert!(
        o.status.success(),
        "neutralised: the source is unpacked afresh"
    );
    assert!(
        text(&o).contains("unpacking afresh") && text(&o).contains("not written by this tool"),
        "{}",
        text(&o)
    );
    std::fs::remove_dir_all(&s.dist).unwrap();

    // The same file edited by this user: the content hash no longer matches.
    let good = std::fs::read_to_string(&cmake).unwrap();
    std::fs::write(&cmake, format!("{good}\nmessage(FATAL_ERROR edited)\n")).unwrap();
    let o = build(&s, &base);
    assert!(
        o.status.success() && text(&o).contains("is not the tree that was unpacked"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(&cmake).unwrap(), good);
    std::fs::remove_dir_all(&s.dist).unwrap();

    // Unchanged: reused after the check.
    let o = build(&s, &base);
    assert!(
        o.status.success() && text(&o).contains("source: reusing"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_edited_source_dir_is_another_source() {
    let s = setup();
    let base = s._tmp.path().join("stable");
    let o = build(&s, &base);
    assert!(o.status.success());
    let first = files_in(&s.dist);
    let tool = s.src.join("tool.cpp");
    let text_before = std::fs::read_to_string(&tool).unwrap();
    std::fs::write(&tool, format!("{text_before}\n// edited\nstatic const char* edited_marker = \"EDITED-SOURCE-MARKER\";\n")).unwrap();
    let plan = run(
        &[
            "plan",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &s.src.display().to_string(),
            "--json",
        ],
        &[],
    );
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&plan.stdout).unwrap()["plan"].clone();
    let tree = plan["source"]["tree_sha256"]
        .as_str()
        .expect("a dir source has a content hash")
        .to_string();
    let o = build(&s, &base);
    assert!(o.status.success());
    assert!(
        !text(&o).contains("up to date"),
        "an edit is a new build:\n{}",
        text(&o)
    );
    let ids: Vec<String> = files_in(&base)
        .into_iter()
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert_eq!(
        ids.len(),
        2,
        "the edited tree has its own stable dir: {ids:?}"
    );
    let copied = std::fs::read_to_string(
        base.join(
            ids.iter()
                .find(|i| {
                    std::fs::read_to_string(base.join(i).join("src/vendor/llama.cpp/tool.cpp"))
                        .unwrap()
                        .contains("EDITED")
                })
                .unwrap(),
        )
        .join("src/vendor/llama.cpp/tool.cpp"),
    )
    .unwrap();
    assert!(copied.contains("EDITED-SOURCE-MARKER"));
    let manifests: Vec<String> = files_in(&s.dist)
        .into_iter()
        .filter(|n| n.ends_with(".manifest.json"))
        .collect();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.dist.join(&manifests[0])).unwrap()).unwrap();
    assert_eq!(
        m["plan"]["source"]["tree_sha256"],
        tree.as_str(),
        "the manifest names the content built"
    );
    assert_eq!(first.len(), files_in(&s.dist).len());
}

/// llama-cpp-python's CMake install writes the libraries into its own source tree
/// (`llama_cpp/lib`), as the mini-llama-python fixture does: that is the build's own
/// doing, so the next build reuses the source instead of unpacking it afresh (which
/// would recompile everything).
#[test]
fn what_the_build_writes_into_its_source_does_not_force_a_fresh_unpack() {
    let d = tempfile::tempdir().unwrap();
    let (stable, dist) = (d.path().join("stable"), d.path().join("dist"));
    let src = repo()
        .join("tests/fixtures/mini-llama-python")
        .display()
        .to_string();
    let wheel = || {
        let mut c = xtask(
            &[
                "wheel",
                "llama-cpp-python",
                "--py",
                "311",
                "--version",
                "0.3.36",
                "--source",
                &src,
                "--dist",
                &dist.display().to_string(),
            ],
            &[],
        );
        c.env("LLAMA_FORGE_BUILD_DIR", d.path().join("build"))
            .env("LLAMA_FORGE_STABLE_DIR", &stable);
        let o = c.output().unwrap();
        eprintln!("{}", text(&o));
        o
    };
    assert!(wheel().status.success());
    let id = files_in(&stable)
        .into_iter()
        .find(|n| !n.ends_with(".lock"))
        .unwrap();
    assert!(
        stable
            .join(&id)
            .join("src/llama_cpp/lib/libllama.so")
            .is_file(),
        "the install wrote into the source"
    );
    std::fs::remove_dir_all(&dist).unwrap();
    let o = wheel();
    assert!(
        o.status.success() && text(&o).contains("source: reusing"),
        "{}",
        text(&o)
    );
}

/// `LLAMA_FORGE_STABLE_DIR` inside a dir others can write (0777, not sticky): another
/// user could move the private stable dir away and put theirs in its place, so the build
/// is refused naming that dir, and nothing is created in it. With the sticky bit (as
/// /tmp has, 1777, also above it here) the same dir is fine.
#[test]
fn a_stable_dir_below_a_writable_parent_is_refused() {
    let s = setup();
    let open = s._tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let stable = open.join("stable");
    refused(
        &build(&s, &stable),
        &[
            &format!("{}, above the stable build dir", open.display()),
            "has mode 777",
            &format!("chmod go-w {}", open.display()),
        ],
    );
    assert!(!stable.exists(), "nothing created below it");
    assert!(files_in(&s.dist).is_empty());
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let o = build(&s, &stable);
    assert!(o.status.success(), "a sticky parent is fine:\n{}", text(&o));
}

/// `build` of `s` with a cache and a build root of the test's choosing.
fn build_in(s: &Setup, cache: &Path, build_root: &Path) -> Output {
    build_with(s, cache, build_root, &s._tmp.path().join("stable"))
}

/// A cache another user owns, or one others can write, is refused before anything in it
/// is used (a team's shared `/tmp/llama-cache`, where another user had put their ninja),
/// naming it, its owner or mode, and LLAMA_FORGE_CACHE; nothing is built.
#[test]
fn a_cache_another_user_controls_is_refused() {
    let Some(ids) = attacker() else { return };
    let s = setup();
    let tmp = world_writable(s._tmp.path());
    let theirs = tmp.join("llama-cache");
    let marker = s._tmp.path().join("planted-ran");
    as_attacker(
        ids,
        &format!(
            "mkdir -m 777 -p {0}/tools && printf '#!/bin/sh\\ntouch {1}\\n' > {0}/tools/ninja && chmod 755 {0}/tools/ninja",
            theirs.display(),
            marker.display()
        ),
    );
    refused(
        &build_in(&s, &theirs, &s.build),
        &[
            &theirs.display().to_string(),
            "the cache",
            "owned by",
            ATTACKER,
            "LLAMA_FORGE_CACHE",
        ],
    );
    // Ours, but open to everyone (1777, as a shared dir is made).
    let open = tmp.join("open-cache");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    refused(
        &build_in(&s, &open, &s.build),
        &[
            &open.display().to_string(),
            "has mode 1777",
            "LLAMA_FORGE_CACHE",
        ],
    );
    assert!(!marker.exists(), "nothing of the attacker's ran");
    assert!(files_in(&s.dist).is_empty());
    assert!(!s.build.exists(), "nothing built: {:?}", files_in(&s.build));
}

/// A build root others can write lets them pre-make the work dir of a build (its name is
/// in the plan) with a CMake cache naming their make program: such a root is refused,
/// and so is a work dir another user owns in a root of ours; their program never runs.
#[test]
fn a_work_dir_another_user_made_is_refused() {
    let Some(ids) = attacker() else { return };
    let s = setup();
    let cache = cache();
    // The work dir's name, from a clean build in a private root.
    let o = build_in(&s, &cache, &s.build);
    assert!(o.status.success(), "clean build");
    std::fs::remove_dir_all(&s.dist).unwrap();
    let work = files_in(&s.build)
        .into_iter()
        .find(|n| n.starts_with("llama.cpp-0.3.36-"))
        .expect("a work dir");
    let marker = s._tmp.path().join("planted-ran");
    // What a build of this plan writes there (readable from `plan`; our dir is private).
    let configured = std::fs::read_to_string(s.build.join(&work).join("configure.done")).unwrap();
    let plant = |root: &Path| {
        as_attacker(
            ids,
            &format!(
                "mkdir -p {0}/build && printf '#!/bin/sh\\ntouch {1}\\n' > {0}/evil-make && chmod 755 {0}/evil-make && printf 'CMAKE_MAKE_PROGRAM:FILEPATH={0}/evil-make\\n' > {0}/build/CMakeCache.txt && printf '%s' '{2}' > {0}/configure.done",
                root.join(&work).display(),
                marker.display(),
                configured,
            ),
        )
    };
    // A shared root (1777), and the attacker's work dir in it.
    let tmp = world_writable(s._tmp.path());
    let shared = tmp.join("llama-build");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    plant(&shared);
    refused(
        &build_in(&s, &cache, &shared),
        &[
            &shared.display().to_string(),
            "has mode 1777",
            "LLAMA_FORGE_BUILD_DIR",
        ],
    );
    // The root made private since, the attacker's work dir still in it.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let planted = shared.join(&work);
    refused(
        &build_in(&s, &cache, &shared),
        &[&planted.display().to_string(), "owned by", ATTACKER],
    );
    assert!(!marker.exists(), "the planted make program never ran");
    assert!(files_in(&s.dist).is_empty());
}
