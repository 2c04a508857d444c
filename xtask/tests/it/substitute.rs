//! Substituters: a mini wheel built and published (`--cache-to`, signed) by one checkout
//! is fetched by another at another path, with another build dir and cache, instead of
//! being built; and every entry that is not exactly this plan's, signed by the key named
//! beside the substituter, is refused with its reason, and the wheel built here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::common::*;

/// The publisher's side, built once for this module's tests.
struct Published {
    /// The secret key and its public base64 line.
    key: PathBuf,
    public: String,
    /// The substituter dir `--cache-to` wrote.
    dir: PathBuf,
    plan: String,
    wheel: String,
    sha: String,
}

fn published() -> &'static Published {
    static P: OnceLock<Published> = OnceLock::new();
    P.get_or_init(|| {
        let root = repo().join("target/substitute");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let key = root.join("team.key");
        let o = run(&["cache", "keygen", &key.display().to_string()], &[]);
        assert!(o.status.success(), "{}", text(&o));
        let public = std::fs::read_to_string(root.join("team.key.pub"))
            .unwrap()
            .lines()
            .nth(1)
            .unwrap()
            .to_string();
        let dir = root.join("substituter");
        let (dist, o) = wheel_in(
            &root.join("publisher"),
            &cache(),
            &[
                "--cache-to",
                &dir.display().to_string(),
                "--sign-key",
                &key.display().to_string(),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("published plan "), "{}", text(&o));
        let wheel = files_in(&dist)
            .into_iter()
            .find(|f| f.ends_with(".whl"))
            .unwrap();
        let sha = sha256(&dist.join(&wheel));
        let plan = files_in(&dir).into_iter().next().unwrap();
        Published {
            key,
            public,
            dir,
            plan,
            wheel,
            sha,
        }
    })
}

/// The mini fixture's build: the recipe, the release it says it is, for the CPU.
const MINI: [&str; 5] = ["llama-cpp-python", "--version", "0.3.36", "--arch", "cpu"];

/// `wheel llama-cpp-python` of the mini fixture on a machine of its own under `side`: a
/// checkout at `side/repo`, its build dir `side/work`, the source copied to
/// `side/elsewhere/src`, the cache `cache`. Returns dist/ and the output.
fn wheel_in(side: &Path, cache: &Path, extra: &[&str]) -> (PathBuf, Output) {
    let root = side.join("repo");
    if !root.is_dir() {
        checkout(&root);
        copy_tree(
            &repo().join("tests/fixtures/mini-llama-python"),
            &side.join("elsewhere/src"),
        );
    }
    let dist = root.join("dist");
    let (src, dist_s) = (
        side.join("elsewhere/src").display().to_string(),
        dist.display().to_string(),
    );
    let mut args = vec!["wheel"];
    args.extend(MINI);
    args.extend(["--source", &src, "--dist", &dist_s]);
    args.extend_from_slice(extra);
    let o = xtask(&args, &[])
        .env("LLAMA_FORGE_ROOT", &root)
        .env("LLAMA_FORGE_BUILD_DIR", side.join("work"))
        .env("LLAMA_FORGE_CACHE", cache)
        .output()
        .unwrap();
    (dist, o)
}

fn sha256(p: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(p).unwrap()))
}

/// What CMake and Ninja print when a build runs.
fn compiled(out: &str) -> bool {
    out.contains("configure: log") || out.contains("build: log")
}

type Served = BTreeMap<String, Vec<u8>>;

/// The published entry's files, by URL path (`/<plan>/<file>`), for a [`FileServer`].
fn served(p: &Published) -> BTreeMap<String, Vec<u8>> {
    files_in(&p.dir.join(&p.plan))
        .into_iter()
        .map(|f| {
            (
                format!("/{}/{f}", p.plan),
                std::fs::read(p.dir.join(&p.plan).join(&f)).unwrap(),
            )
        })
        .collect()
}

/// A hit, from a directory and over HTTP, with a cache that holds nothing: the same bytes
/// in dist/, no compile, no tool fetched; `verify` passes, a rerun is a no-op, and pip
/// installs the wheel into a new venv, whose library loads and answers.
#[test]
fn a_plan_built_elsewhere_is_fetched_not_built() {
    let p = published();
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty-cache");
    std::fs::create_dir_all(&empty).unwrap();
    let server = FileServer::start(served(p));
    for (i, place) in [p.dir.display().to_string(), server.base.clone()]
        .iter()
        .enumerate()
    {
        let side = d.path().join(format!("machine-{i}"));
        let from = format!("{place}={}", p.public);
        let (dist, o) = wheel_in(&side, &empty, &["--cache-from", &from]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            t.contains(&format!("fetched from {place} (signed by key ")),
            "{t}"
        );
        assert!(t.contains("), verified"), "{t}");
        assert!(!compiled(&t), "nothing is compiled: {t}");
        assert!(
            !side.join("work").exists()
                || files_in(&side.join("work")).iter().all(|w| !side
                    .join("work")
                    .join(w)
                    .join("build")
                    .exists()),
            "no build dir: {t}"
        );
        assert_eq!(sha256(&dist.join(&p.wheel)), p.sha, "the same bytes");
        assert!(dist.join(format!("{}.manifest.json", p.wheel)).is_file());
        assert!(
            files_in(&empty)
                .iter()
                .all(|f| f.starts_with('.') || f == "downloads"),
            "no tool fetched into the cache: {:?}",
            files_in(&empty)
        );
        let (_, again) = wheel_in(&side, &empty, &["--cache-from", &from]);
        assert!(text(&again).contains("up to date:"), "{}", text(&again));
    }

    let dist = d.path().join("machine-0/repo/dist");
    let o = xtask(&["verify", &dist.join(&p.wheel).display().to_string()], &[])
        .env("LLAMA_FORGE_ROOT", d.path().join("machine-0/repo"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let python = venv(&d.path().join("venv"));
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "--no-deps", "--no-index", "--quiet"])
        .arg(dist.join(&p.wheel)));
    let out = sh(Command::new(&python).args([
        "-c",
        "import ctypes, os, llama_cpp; \
         d = os.path.join(os.path.dirname(llama_cpp.__file__), 'lib'); \
         lib = ctypes.CDLL(os.path.join(d, 'libllama.so')); \
         print(llama_cpp.__version__, lib.llama_mini_version())",
    ]));
    assert!(out.starts_with("0.3.36 "), "{out}");
}

/// `plan` says which substituter would serve the plan, and one without it.
#[test]
fn plan_says_which_substituter_serves_it() {
    let p = published();
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("repo");
    checkout(&root);
    let src = d.path().join("src");
    copy_tree(&repo().join("tests/fixtures/mini-llama-python"), &src);
    let src = src.display().to_string();
    let mut args = vec!["plan"];
    args.extend(MINI);
    let o = xtask(
        &[
            &args[..],
            &[
                "--source",
                &src,
                "--cache-from",
                &format!("{}={}", d.path().join("none").display(), p.public),
                "--cache-from",
                &format!("{}={}", p.dir.display(), p.public),
            ],
        ]
        .concat(),
        &[],
    )
    .env("LLAMA_FORGE_ROOT", &root)
    .output()
    .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("does not have it"), "{t}");
    assert!(
        t.contains(&format!(
            "serves    {}: has it (signed by key",
            p.dir.display()
        )),
        "{t}"
    );
}

/// One way an entry can be wrong: what the server answers instead, and the reason the
/// tool must give.
struct Case {
    name: &'static str,
    files: BTreeMap<String, Vec<u8>>,
    /// Answers that are not a file: (path, status, headers, body), or a stall.
    answer: Option<(String, &'static str, Vec<String>, Vec<u8>)>,
    stall: Option<String>,
    says: &'static str,
}

/// Every hostile entry is refused with its reason, and the wheel is built here instead
/// (the same bytes): a tampered artifact, a wrong signature, no signature, a listing of
/// another plan, a manifest of another plan, a truncated download, a stalled server, a
/// redirect to file://, a 5 GB answer, and a listing larger than a listing can be.
#[test]
fn an_entry_that_is_not_exactly_this_plans_is_refused_and_built_here() {
    use xtask::substitute::keys::Signer;
    use xtask::substitute::listing::Listing;
    let p = published();
    let d = tempfile::tempdir().unwrap();
    let side = d.path().join("machine");
    let plan = &p.plan;
    let good = served(p);
    let wheel_path = format!("/{plan}/{}", p.wheel);
    let manifest_path = format!("{wheel_path}.manifest.json");
    let listing_path = format!("/{plan}/artifacts");
    let signer = Signer::from_text(&std::fs::read_to_string(&p.key).unwrap(), None, "key").unwrap();
    let listing = Listing::parse(std::str::from_utf8(&good[&listing_path]).unwrap()).unwrap();
    // A listing the trusted key signs, over files changed by `edit`.
    let resigned = |edit: &dyn Fn(&mut Listing, &mut Served)| {
        let mut files = good.clone();
        let mut l = listing.clone();
        edit(&mut l, &mut files);
        let text = l.render();
        files.insert(
            format!("{listing_path}.minisig"),
            signer.sign(text.as_bytes(), "x").unwrap().into_bytes(),
        );
        files.insert(listing_path.clone(), text.into_bytes());
        files
    };
    let with = |path: &str, body: Vec<u8>| {
        let mut f = good.clone();
        f.insert(path.to_string(), body);
        f
    };
    let mut flipped = good[&wheel_path].clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 1;
    let (other_secret, _) = Signer::generate().unwrap();
    let other = Signer::from_text(&other_secret, None, "other").unwrap();
    let other_plan = "0".repeat(64);

    let cases = vec![
        Case {
            name: "tampered artifact",
            files: with(&wheel_path, flipped),
            answer: None,
            stall: None,
            says: "but its signed listing says",
        },
        Case {
            name: "signed by another key",
            files: with(
                &format!("{listing_path}.minisig"),
                other.sign(&good[&listing_path], "x").unwrap().into_bytes(),
            ),
            answer: None,
            stall: None,
            says: "not one of key",
        },
        Case {
            name: "no signature",
            files: {
                let mut f = good.clone();
                f.remove(&format!("{listing_path}.minisig"));
                f
            },
            answer: None,
            stall: None,
            says: "an unsigned entry is never used",
        },
        Case {
            name: "the trusted key, but another plan's listing",
            files: resigned(&|l, _| l.plan = other_plan.parse().unwrap()),
            answer: None,
            stall: None,
            says: "is signed for plan 0000000000000000",
        },
        Case {
            name: "the trusted key, but another plan's manifest",
            files: resigned(&|l, files| {
                let m = String::from_utf8(files[&manifest_path].clone()).unwrap();
                let m = m.replacen(plan.as_str(), &other_plan, 1).into_bytes();
                l.pairs[0].manifest.sha256 = xtask::digest::sha256_bytes(&m);
                l.pairs[0].manifest.size = m.len() as u64;
                files.insert(manifest_path.clone(), m);
            }),
            answer: None,
            stall: None,
            says: "manifest is of plan 0000000000000000",
        },
        Case {
            name: "truncated",
            files: with(&wheel_path, good[&wheel_path][..1000].to_vec()),
            answer: None,
            stall: None,
            says: "but its signed listing says",
        },
        Case {
            name: "stalled",
            files: good.clone(),
            answer: None,
            stall: Some(wheel_path.clone()),
            says: "no complete answer within 10 s",
        },
        Case {
            name: "redirect to file://",
            files: good.clone(),
            answer: Some((
                wheel_path.clone(),
                "302 Found",
                vec!["Location: file:///etc/passwd".into()],
                vec![],
            )),
            stall: None,
            says: "only http and https URLs are downloaded",
        },
        Case {
            name: "a 5 GB answer",
            files: good.clone(),
            answer: Some((
                wheel_path.clone(),
                "200 OK",
                vec!["Content-Length: 5000000000".into()],
                vec![0; 4096],
            )),
            stall: None,
            says: "is 5000000000 bytes, but its signed listing says",
        },
        Case {
            name: "a listing larger than one can be",
            files: with(&listing_path, vec![b'a'; 70_000]),
            answer: None,
            stall: None,
            says: "more than the 65536",
        },
    ];
    // The first run builds here (a miss: nothing at all is served), so each case after it
    // reuses the work dir's objects and costs seconds.
    let nothing = FileServer::start(BTreeMap::new());
    let (dist, o) = wheel_in(
        &side,
        &cache(),
        &["--cache-from", &format!("{}={}", nothing.base, p.public)],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!("no artifacts of plan {}", &plan[..16])),
        "{t}"
    );
    assert!(t.contains("building it here"), "{t}");
    assert_eq!(
        sha256(&dist.join(&p.wheel)),
        p.sha,
        "the same plan builds the same bytes"
    );
    for c in cases {
        let Case {
            name,
            files,
            answer,
            stall,
            says,
        } = c;
        let server = FileServer::answering(move |path| {
            if stall.as_deref() == Some(path) {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
            if let Some((at, status, headers, body)) = &answer {
                if at == path {
                    return (status, headers.clone(), body.clone());
                }
            }
            match files.get(path) {
                Some(b) => ("200 OK", vec![], b.clone()),
                None => ("404 Not Found", vec![], b"not here".to_vec()),
            }
        });
        std::fs::remove_dir_all(&dist).unwrap();
        let from = format!("{}={}", server.base, p.public);
        let (_, o) = wheel_in(&side, &cache(), &["--cache-from", &from]);
        let t = text(&o);
        assert!(o.status.success(), "{name}: {t}");
        assert!(
            t.contains(&format!("substituter {} not used", server.base)),
            "{name}: {t}"
        );
        assert!(t.contains(says), "{name}: wants `{says}`: {t}");
        assert!(t.contains("building it here"), "{name}: {t}");
        assert!(!t.contains("fetched from"), "{name}: {t}");
        assert_eq!(sha256(&dist.join(&p.wheel)), p.sha, "{name}: built here");
    }

    // A directory substituter whose listing is a FIFO: refused, not waited on.
    let fifo_tree = d.path().join("fifo-tree");
    std::fs::create_dir_all(fifo_tree.join(plan)).unwrap();
    nix::unistd::mkfifo(
        &fifo_tree.join(plan).join("artifacts"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    std::fs::remove_dir_all(&dist).unwrap();
    let from = format!("{}={}", fifo_tree.display(), p.public);
    let (_, o) = wheel_in(&side, &cache(), &["--cache-from", &from]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("FIFO"), "{t}");
    assert!(t.contains("building it here"), "{t}");

    // The trusted key's entry whose wheel fails verify, then a good one: the second is used.
    let bad_tree = d.path().join("bad-tree");
    let garbage = b"not a wheel".to_vec();
    let files = resigned(&|l, files| {
        let garbage_sha = xtask::digest::sha256_bytes(&garbage);
        // Its manifest names the garbage too, so only verify can refuse it.
        let mut m: serde_json::Value = serde_json::from_slice(&files[&manifest_path]).unwrap();
        m["artifact"]["sha256"] = garbage_sha.to_string().into();
        m["artifact"]["size"] = garbage.len().into();
        let m = serde_json::to_vec_pretty(&m).unwrap();
        l.pairs[0].artifact.sha256 = garbage_sha;
        l.pairs[0].artifact.size = garbage.len() as u64;
        l.pairs[0].manifest.sha256 = xtask::digest::sha256_bytes(&m);
        l.pairs[0].manifest.size = m.len() as u64;
        files.insert(wheel_path.clone(), garbage.clone());
        files.insert(manifest_path.clone(), m);
    });
    for (path, body) in &files {
        let at = bad_tree.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, body).unwrap();
    }
    std::fs::remove_dir_all(&dist).unwrap();
    let (_, o) = wheel_in(
        &side,
        &cache(),
        &[
            "--cache-from",
            &format!("{}={}", bad_tree.display(), p.public),
            "--cache-from",
            &format!("{}={}", p.dir.display(), p.public),
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!(
            "substituter {} not used: its {} failed verification",
            bad_tree.display(),
            p.wheel
        )),
        "{t}"
    );
    assert!(
        t.contains(&format!("fetched from {}", p.dir.display())),
        "{t}"
    );
    assert_eq!(sha256(&dist.join(&p.wheel)), p.sha);
}

/// The same plan id from two differently set-up machines, on the real recipe (plan
/// only): another checkout path, cache dir, build dir, home, user and core count.
#[test]
fn two_machines_plan_one_id() {
    let d = tempfile::tempdir().unwrap();
    let plan_on = |side: &Path, cache: &Path, prefix: &[&str]| -> String {
        let root = side.join("checkout");
        checkout(&root);
        let base = xtask(
            &["plan", "llama-cpp-python", "--arch", "120", "--json"],
            &[],
        );
        let mut c = Command::new(
            prefix
                .first()
                .copied()
                .unwrap_or(env!("CARGO_BIN_EXE_xtask")),
        );
        if !prefix.is_empty() {
            c.args(&prefix[1..]).arg(env!("CARGO_BIN_EXE_xtask"));
        }
        c.args(base.get_args());
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let home = side.join("home/Jane Doe");
        std::fs::create_dir_all(&home).unwrap();
        c.env("LLAMA_FORGE_ROOT", &root)
            .env("LLAMA_FORGE_CACHE", cache)
            .env("LLAMA_FORGE_BUILD_DIR", side.join("build"))
            .env("HOME", &home)
            .env("USER", side.file_name().unwrap())
            .env("LOGNAME", side.file_name().unwrap());
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["plan_hash"].as_str().unwrap().to_string()
    };
    let empty = d.path().join("fresh-cache");
    std::fs::create_dir_all(&empty).unwrap();
    let a = plan_on(&d.path().join("alice"), &cache(), &[]);
    // One core (taskset), a cache that holds nothing.
    let b = plan_on(&d.path().join("bob"), &empty, &["taskset", "-c", "0"]);
    assert_eq!(a, b);
}

/// The page of a published tree as headless Chromium builds it (`--dump-dom`).
fn rendered(page: &Path) -> String {
    let o = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (.ci/run installs Debian's chromium)");
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// `release --cache-to` publishes every cell into a tree served on 127.0.0.1; a fresh
/// checkout with an empty cache fetches the wheel from it (dist/ holds it and its
/// manifest, `verify` passes), and the install line the tree's page prints installs it.
/// The page, rendered by Chromium, shows every artifact of release.json; a hostile value
/// in a manifest is shown as text, never made an element.
#[test]
fn a_release_publishes_a_tree_a_fresh_checkout_fetches_from() {
    let p = published();
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("tree");
    let served_from = tree.clone();
    let server = FileServer::answering(move |path| {
        match std::fs::read(served_from.join(path.trim_start_matches('/'))) {
            Ok(b) => ("200 OK", vec![], b),
            Err(_) => ("404 Not Found", vec![], b"not here".to_vec()),
        }
    });
    copy_tree(
        &repo().join("tests/fixtures/mini-llama-python"),
        &d.path().join("mini-llama-python"),
    );
    let file = d.path().join("wheels.toml");
    std::fs::write(
        &file,
        "recipe = \"llama-cpp-python\"\nversions = [\"0.3.36\"]\narch = [\"cpu\"]\nsource = \"mini-llama-python\"\n",
    )
    .unwrap();
    let dist = d.path().join("dist");
    let o = xtask(
        &[
            "release",
            &file.display().to_string(),
            "--dist",
            &dist.display().to_string(),
            "--cache-to",
            &tree.display().to_string(),
            "--cache-url",
            &server.base,
        ],
        &[],
    )
    .env("LLAMA_FORGE_BUILD_DIR", d.path().join("build"))
    .env(
        "LLAMA_FORGE_SIGNING_KEY",
        std::fs::read_to_string(&p.key).unwrap(),
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("published plan "), "{}", text(&o));

    let side = d.path().join("fresh");
    let empty = d.path().join("empty-cache");
    std::fs::create_dir_all(&empty).unwrap();
    let (got, o) = wheel_in(
        &side,
        &empty,
        &["--cache-from", &format!("{}={}", server.base, p.public)],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("fetched from"), "{t}");
    let wheel = got.join(&p.wheel);
    assert_eq!(sha256(&wheel), p.sha);
    assert!(got.join(format!("{}.manifest.json", p.wheel)).is_file());
    let o = xtask(&["verify", &wheel.display().to_string()], &[])
        .env("LLAMA_FORGE_ROOT", side.join("repo"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));

    // The page: every artifact of release.json, with its sha256 and link.
    let dom = rendered(&tree.join("index.html"));
    let release: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join("release.json")).unwrap()).unwrap();
    let artifacts = release["artifacts"].as_array().unwrap();
    assert!(!artifacts.is_empty());
    for a in artifacts {
        let (f, sha, plan) = (
            a["filename"].as_str().unwrap(),
            a["sha256"].as_str().unwrap(),
            a["plan_hash"].as_str().unwrap(),
        );
        assert!(dom.contains(&format!("href=\"{plan}/{f}\"")), "{f}: {dom}");
        assert!(dom.contains(sha), "{sha}: {dom}");
    }
    assert!(dom.contains("the CPU only"), "{dom}");
    // Its install line, as copied, installs the wheel into a new venv.
    let line = dom
        .split("<code>pip install ")
        .nth(1)
        .and_then(|s| s.split("</code>").next())
        .expect("an install line")
        .replace("&amp;", "&");
    let python = venv(&d.path().join("venv"));
    sh(Command::new(&python).args(["-m", "pip", "install", "--no-deps", "--quiet", &line]));
    let out =
        sh(Command::new(&python).args(["-c", "import llama_cpp; print(llama_cpp.__version__)"]));
    assert_eq!(out.trim(), "0.3.36");

    // A manifest's value that is markup is shown as text.
    let entry = tree.join(&p.plan);
    let m = entry.join(format!("{}.manifest.json", p.wheel));
    let json = std::fs::read_to_string(&m).unwrap().replacen(
        "\"recipe\": \"llama-cpp-python\"",
        "\"recipe\": \"<img src=x onerror=alert(1)>llama\"",
        1,
    );
    assert!(json.contains("<img"), "the recipe is in the manifest");
    std::fs::write(&m, &json).unwrap();
    // Listed and signed again: the page shows only what the key signed.
    let signer = xtask::substitute::keys::Signer::from_text(
        &std::fs::read_to_string(&p.key).unwrap(),
        None,
        "key",
    )
    .unwrap();
    let mut l = xtask::substitute::listing::Listing::parse(
        &std::fs::read_to_string(entry.join("artifacts")).unwrap(),
    )
    .unwrap();
    l.pairs[0].manifest.sha256 = xtask::digest::sha256_bytes(json.as_bytes());
    l.pairs[0].manifest.size = json.len() as u64;
    std::fs::write(entry.join("artifacts"), l.render()).unwrap();
    std::fs::write(
        entry.join("artifacts.minisig"),
        signer.sign(l.render().as_bytes(), "x").unwrap(),
    )
    .unwrap();
    xtask::substitute::page::write(&tree, None, &signer.public, "key <b>x</b>").unwrap();
    let dom = rendered(&tree.join("index.html"));
    assert!(!dom.contains("<img") && !dom.contains("<b>x"), "{dom}");
    assert!(
        dom.contains("&lt;img src=x onerror=alert(1)&gt;llama"),
        "{dom}"
    );
}
