//! `completions <shell>`: each script, sourced in the real shell, completes what the user
//! types, `cargo xtask ...`: the subcommands, the values of `--arch`, `--target` and the
//! recipes (not file names), and leaves plain `cargo ...` to the completion cargo had.
//! bash, zsh and fish must be installed (`.ci/run` installs them); under CI=true a
//! missing one fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{cannot_run_here, run, text};

/// A directory to complete in, with a file a file-name completion would offer, and the
/// script for `shell` in it.
fn setup(shell: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a-file.txt"), "").unwrap();
    let o = run(&["completions", shell], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let script = d.path().join(format!("script.{shell}"));
    std::fs::write(&script, &o.stdout).unwrap();
    (d, script)
}

/// Whether `shell` runs here; where it does not, the test says so (a failure under CI).
fn have(shell: &str) -> bool {
    let ok = Command::new(shell)
        .args(["-c", "exit 0"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        cannot_run_here(&format!("no `{shell}` on PATH (apt-get install {shell})"));
    }
    ok
}

/// `shell` run in `dir` with a home of its own, so the user's configuration is not read.
fn shell(name: &str, dir: &Path) -> Command {
    let mut c = Command::new(name);
    c.current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env("XDG_DATA_HOME", dir.join(".local/share"));
    c
}

fn stdout(mut c: Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn has<S: AsRef<str>>(words: &[S], want: &[&str], not: &[&str], what: &str) {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    for w in want {
        assert!(words.contains(w), "{what}: no `{w}` in {words:?}");
    }
    for w in not {
        assert!(!words.contains(w), "{what}: `{w}` in {words:?}");
    }
}

/// One completion a shell must give: what runs before the script is sourced, the line
/// typed, the words it must offer and those it must not, and what the check is about.
type Case<'a> = (&'a str, &'a str, &'a [&'a str], &'a [&'a str], &'a str);

/// Each case through `complete` (the shell's: `before`, `line` -> the words offered).
fn offers(complete: impl Fn(&str, &str) -> Vec<String>, cases: &[Case]) {
    for (before, line, want, not, what) in cases {
        has(&complete(before, line), want, not, what);
    }
}

// ---------------------------------------------------------------------------------------
// bash

/// `before`, the script sourced, then `code`, in a non-interactive bash that has
/// `__complete WORD...`: what the function `complete -p cargo` names puts in COMPREPLY
/// for those words (the last the one completed), one per line, as bash calls it on TAB.
fn bash(dir: &Path, script: &Path, before: &str, code: &str) -> String {
    let program = format!(
        r#"{before}
source "$1"
__complete() {{
    local spec f
    spec=$(complete -p cargo) || return 3
    f=${{spec#*-F }}; f=${{f%% *}}
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    COMP_LINE="$*"; COMP_POINT=${{#COMP_LINE}}
    COMPREPLY=()
    "$f" cargo "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
    printf '%s\n' "${{COMPREPLY[@]}}"
}}
{code}
"#
    );
    let mut c = shell("bash", dir);
    c.args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(script);
    stdout(c)
}

#[test]
fn bash_completes_cargo_xtask_with_the_values() {
    if !have("bash") {
        return;
    }
    let (d, script) = setup("bash");
    let out = bash(
        d.path(),
        &script,
        "",
        "__complete cargo xtask wheel llama-cpp-python --arch ''",
    );
    let words: Vec<&str> = out.lines().collect();
    has(
        &words,
        &["120", "121", "cpu", "auto", "rtx5090", "gb10"],
        &["a-file.txt"],
        "--arch",
    );

    let out = bash(
        d.path(),
        &script,
        "",
        "__complete cargo xtask wheel llama-cpp-python --arch rtx50",
    );
    let words: Vec<&str> = out.lines().collect();
    has(
        &words,
        &["rtx5090", "rtx5060ti"],
        &["120", "h100"],
        "--arch rtx50",
    );

    let out = bash(
        d.path(),
        &script,
        "",
        "__complete cargo xtask plan llama.cpp --target ''",
    );
    let words: Vec<&str> = out.lines().collect();
    has(
        &words,
        &[
            "x86_64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
            "x86_64-pc-windows-msvc",
            "x86_64-pc-windows-gnu",
        ],
        &["a-file.txt"],
        "--target",
    );

    let out = bash(d.path(), &script, "", "__complete cargo xtask ''");
    let words: Vec<&str> = out.lines().collect();
    has(
        &words,
        &["wheel", "build", "plan", "doctor", "completions"],
        &["a-file.txt", "xtask"],
        "subcommands",
    );

    // The recipes, from recipes/: after `wheel`, and after `recipe update`.
    let out = bash(d.path(), &script, "", "__complete cargo xtask wheel ''");
    let words: Vec<&str> = out.lines().collect();
    has(
        &words,
        &["llama-cpp-python", "llama.cpp"],
        &["a-file.txt"],
        "wheel's recipe",
    );
    let out = bash(
        d.path(),
        &script,
        "",
        "__complete cargo xtask recipe update ll",
    );
    let words: Vec<&str> = out.lines().collect();
    has(
        &words,
        &["llama-cpp-python", "llama.cpp"],
        &[],
        "recipe update",
    );
}

/// Plain `cargo ...` still reaches the completion cargo had: one loaded before the
/// script, and one bash-completion's `_completion_loader` loads only when first asked
/// (after which `cargo xtask ...` is still the script's).
#[test]
fn bash_leaves_plain_cargo_to_its_own_completion() {
    if !have("bash") {
        return;
    }
    let (d, script) = setup("bash");
    let before = "_cargo() { COMPREPLY=(stand-in-cargo \"$2\"); }; complete -F _cargo cargo";
    let out = bash(d.path(), &script, before, "__complete cargo bu");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["stand-in-cargo", "bu"]);
    // Sourced twice (a second ~/.bashrc), it still reaches it, not itself.
    let out = bash(
        d.path(),
        &script,
        before,
        "source \"$1\"; __complete cargo ''; echo ==; __complete cargo xtask ''",
    );
    let (plain, xtask) = out.split_once("==\n").unwrap();
    assert_eq!(plain.lines().collect::<Vec<_>>(), ["stand-in-cargo", ""]);
    assert!(xtask.lines().any(|l| l == "doctor"), "{xtask}");

    let lazy = "_completion_loader() { _cargo() { COMPREPLY=(lazy-cargo); }; \
                complete -F _cargo cargo; return 124; }; complete -D -F _completion_loader";
    let out = bash(
        d.path(),
        &script,
        lazy,
        "__complete cargo ''; echo ==; __complete cargo xtask ''; echo ==; __complete cargo b",
    );
    let parts: Vec<&str> = out.split("==\n").collect();
    assert_eq!(parts.len(), 3, "{out}");
    assert_eq!(parts[0], "lazy-cargo\n");
    assert!(parts[1].lines().any(|l| l == "wheel"), "{out}");
    assert_eq!(parts[2], "lazy-cargo\n");
}

// ---------------------------------------------------------------------------------------
// fish

/// What fish offers for `line`: the candidates of `complete -C`, without descriptions.
fn fish(dir: &Path, script: &Path, before: &str, line: &str) -> Vec<String> {
    let program = format!("{before}\nsource $argv[1]\ncomplete -C $argv[2]");
    let mut c = shell("fish", dir);
    c.args(["-c", &program]).arg(script).arg(line);
    stdout(c)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

#[test]
fn fish_completes_cargo_xtask_with_the_values() {
    if !have("fish") {
        return;
    }
    let (d, script) = setup("fish");
    // Plain `cargo ...` keeps the completion cargo had.
    let stand_in = "complete -c cargo -f -n __fish_use_subcommand -a stand-in-cargo";
    offers(
        |before, line| fish(d.path(), &script, before, line),
        &[
            (
                "",
                "cargo xtask wheel llama-cpp-python --arch ",
                &["120", "cpu", "auto", "gb10"],
                &["a-file.txt"],
                "--arch",
            ),
            (
                "",
                "cargo xtask build llama.cpp --target ",
                &["aarch64-unknown-linux-gnu", "x86_64-pc-windows-gnu"],
                &["a-file.txt"],
                "--target",
            ),
            (
                "",
                "cargo xtask ",
                &["wheel", "doctor", "completions"],
                &["a-file.txt"],
                "subcommands",
            ),
            (
                "",
                "cargo xtask wheel ",
                &["llama-cpp-python", "llama.cpp"],
                &[],
                "wheel's recipe",
            ),
            (
                stand_in,
                "cargo ",
                &["stand-in-cargo"],
                &["doctor"],
                "plain cargo",
            ),
        ],
    );
}

// ---------------------------------------------------------------------------------------
// zsh

/// zsh completes only in an interactive shell: this drives one on a pseudo-terminal
/// (zsh/zpty), types `$3` and TAB, and writes every match the completion functions add
/// (`compadd`) to `$2`. `$4` runs before the script is sourced.
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1=''; autoload -U compinit; compinit -u -d ${(q)2}.zcompdump"
zpty -w z "$4"
zpty -w z "source ${(q)1}"
zpty -w z "compadd() { local -a __hits; builtin compadd -A __hits \"\$@\"; print -rl -- \$__hits >> ${(q)2}; builtin compadd \"\$@\" }"
zpty -w z "__done() { : >> ${(q)2}; print > ${(q)2}.done; exit }; comppostfuncs=(__done)"
zpty -w z "bindkey '^I' complete-word"
zpty -w -n z "$3"$'\t'
for i in {1..400}; do
  [[ -e $2.done ]] && break
  zpty -r -t z junk >/dev/null 2>&1
  sleep 0.05
done
zpty -d z
[[ -e $2.done ]]
"#;

fn zsh(dir: &Path, script: &Path, before: &str, line: &str) -> Vec<String> {
    let driver = dir.join("driver.zsh");
    std::fs::write(&driver, ZSH_DRIVER).unwrap();
    let out = dir.join("matches");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(dir.join("matches.done"));
    let mut c = shell("zsh", dir);
    c.arg("-f")
        .arg(&driver)
        .arg(script)
        .arg(&out)
        .arg(line)
        .arg(before);
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "zsh did not complete `{line}`: {}",
        text(&o)
    );
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn zsh_completes_cargo_xtask_with_the_values() {
    if !have("zsh") {
        return;
    }
    let (d, script) = setup("zsh");
    // Plain `cargo ...` reaches the completion cargo had.
    let stand_in = "_cargo() { compadd stand-in-cargo }; compdef _cargo cargo";
    offers(
        |before, line| zsh(d.path(), &script, before, line),
        &[
            (
                "",
                "cargo xtask wheel llama-cpp-python --arch ",
                &["120", "cpu", "auto", "rtx5090"],
                &["a-file.txt"],
                "--arch",
            ),
            (
                "",
                "cargo xtask build llama.cpp --target ",
                &["aarch64-unknown-linux-gnu", "x86_64-pc-windows-msvc"],
                &["a-file.txt"],
                "--target",
            ),
            (
                "",
                "cargo xtask ",
                &["wheel", "doctor"],
                &["a-file.txt"],
                "subcommands",
            ),
            (
                "",
                "cargo xtask wheel ",
                &["llama-cpp-python", "llama.cpp"],
                &["a-file.txt"],
                "wheel's recipe",
            ),
            (
                stand_in,
                "cargo ",
                &["stand-in-cargo"],
                &["doctor"],
                "plain cargo",
            ),
        ],
    );
}
