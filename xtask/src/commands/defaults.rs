//! Defaults for the build options, as uv's `uv.toml` and cibuildwheel's `CIBW_*` give
//! them: from the command line first, then a `LLAMA_FORGE_<OPTION>` variable, then the
//! checkout's `llama-forge.toml` (beside `recipes/`), then the user's
//! (`$XDG_CONFIG_HOME/llama-forge/llama-forge.toml`, `~/.config/...`,
//! `%APPDATA%\llama-forge\llama-forge.toml`). Each value is parsed exactly as the option
//! on the command line is (the same parser, the same errors), and the plan says where
//! each one came from ([`crate::request::DefaultFrom`]); where it came from is not
//! hashed, the value is, as if given on the command line.
//!
//! ```toml
//! [defaults]
//! arch = "120"
//! launcher = "sccache"
//! jobs = 8
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser as _;

use super::BuildArgs;
use crate::detect::Env;
use crate::request::DefaultFrom;

/// The options a default may be given for: the config key (the option's name without
/// `--`), and the field it sets.
pub(super) const KEYS: &[&str] = &[
    "arch",
    "target",
    "cuda",
    "cpu-baseline",
    "py",
    "dist",
    "launcher",
    "jobs",
    "cache-from",
];

/// The config file's name, in the checkout (beside `recipes/`) and in the user config dir.
pub(super) const FILE: &str = "llama-forge.toml";

/// The variable that gives `key`'s default: `LLAMA_FORGE_CPU_BASELINE` for `cpu-baseline`.
/// `cache-from`'s is `LLAMA_FORGE_SUBSTITUTERS` (its places separated by spaces).
pub(super) fn var(key: &str) -> String {
    if key == "cache-from" {
        return "LLAMA_FORGE_SUBSTITUTERS".into();
    }
    format!("LLAMA_FORGE_{}", key.to_uppercase().replace('-', "_"))
}

/// The config files read, first found first used: the checkout's, then the user's.
pub(super) fn files(env: &Env) -> Vec<PathBuf> {
    let mut out = vec![env.root.join(FILE)];
    if let Some(d) = &env.config_dir {
        out.push(d.join("llama-forge").join(FILE));
    }
    out
}

/// One config file's `[defaults]`: key -> value as text. A key not in [`KEYS`], or a
/// table other than `[defaults]`, is refused naming the file.
fn read(path: &Path) -> Result<Vec<(String, String)>> {
    let text = match fs_err::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e.into()),
    };
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not valid TOML", path.display()))?;
    let mut out = Vec::new();
    for (k, v) in doc {
        let Some(table) = v.as_table().filter(|_| k == "defaults") else {
            return Err(crate::usage!(
                "{}: `{k}` is not a table this file has: only [defaults] ({})",
                path.display(),
                KEYS.join(", ")
            ));
        };
        for (key, value) in table {
            if !KEYS.contains(&key.as_str()) {
                return Err(crate::usage!(
                    "{}: [defaults] `{key}` is not an option a default can be given for: {}",
                    path.display(),
                    KEYS.join(", ")
                ));
            }
            let value = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Array(a) => a
                    .iter()
                    .map(|x| match x {
                        toml::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    // `cache-from`'s places may hold commas (URLs); none holds a space.
                    .join(if key == "cache-from" { " " } else { "," }),
                other => other.to_string(),
            };
            out.push((key.clone(), value));
        }
    }
    Ok(out)
}

/// Fills in `args` what the command line did not give (`given`: the options it did, by
/// key) from the variables and config files, and returns where each came from.
pub(super) fn apply(
    args: &mut BuildArgs,
    given: &BTreeSet<String>,
    env: &Env,
) -> Result<Vec<DefaultFrom>> {
    let mut sources: Vec<(String, Vec<(String, String)>)> = vec![(
        "environment".into(),
        KEYS.iter()
            .filter_map(|k| {
                env.option_defaults
                    .get(&var(k))
                    .map(|v| (k.to_string(), v.clone()))
            })
            .collect(),
    )];
    for f in files(env) {
        sources.push((f.display().to_string(), read(&f)?));
    }
    let mut out = Vec::new();
    for key in KEYS {
        if given.contains(*key) || (*key == "cache-from" && args.no_cache_from) {
            continue;
        }
        let Some((from, value)) = sources.iter().find_map(|(src, kv)| {
            kv.iter().find(|(k, _)| k == key).map(|(_, v)| {
                let from = if src == "environment" {
                    var(key)
                } else {
                    src.clone()
                };
                (from, v.clone())
            })
        }) else {
            continue;
        };
        set(args, key, &value)
            .with_context(|| format!("the default --{key} {value} from {from}"))?;
        out.push(DefaultFrom {
            option: format!("--{key}"),
            value,
            from,
        });
    }
    Ok(out)
}

/// Sets `key` in `args` from `value`, parsed by the option's own parser (`cache-from`:
/// each of its places separated by spaces).
fn set(args: &mut BuildArgs, key: &str, value: &str) -> Result<()> {
    if key == "cache-from" {
        for one in value.split_whitespace() {
            let mut b = parse(key, one)?;
            args.cache_from.append(&mut b.cache_from);
        }
        return Ok(());
    }
    let b = parse(key, value)?;
    match key {
        "arch" => args.arch = b.arch,
        "target" => args.target = b.target,
        "cuda" => args.cuda = b.cuda,
        "cpu-baseline" => args.cpu_baseline = b.cpu_baseline,
        "py" => args.py = b.py,
        "dist" => args.dist = b.dist,
        "launcher" => args.launcher = b.launcher,
        "jobs" => args.jobs = b.jobs,
        _ => unreachable!("a key of KEYS"),
    }
    Ok(())
}

/// `--key value` parsed as the command line would be.
fn parse(key: &str, value: &str) -> Result<BuildArgs> {
    let flag = format!("--{key}");
    let parsed = match super::Cli::try_parse_from(["cargo-xtask", "plan", "x", &flag, value]) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            return Err(crate::usage!("{first}"));
        }
    };
    let super::Command::Plan(p) = parsed.command else {
        unreachable!("parsed as plan")
    };
    Ok(p.build)
}
