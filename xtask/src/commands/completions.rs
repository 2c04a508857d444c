//! `completions <shell>`: clap's completion script for `xtask`, given the values of
//! `--arch`, `--target` and the recipe argument, and a few lines that hand what follows
//! `cargo xtask` to it: users type `cargo xtask ...`, and the shell completes `cargo`.

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::CommandFactory;
use clap_complete::Shell;

/// The script for `shell`. `recipes`: the recipe names (recipes/*.toml) as they are now,
/// written into the script.
pub(super) fn script(shell: Shell, recipes: &[String]) -> String {
    let mut cmd = with_values(super::Cli::command().name("xtask"), recipes);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "xtask", &mut out);
    let generated = String::from_utf8_lossy(&out).into_owned();
    match shell {
        Shell::Bash => format!("{generated}{BASH}"),
        Shell::Zsh => format!("{generated}{ZSH}"),
        Shell::Fish => format!("{generated}{}{FISH}", fish_positionals(&cmd, &[])),
        Shell::Elvish => format!("{generated}{ELVISH}"),
        Shell::PowerShell => powershell(&generated),
        _ => generated,
    }
}

/// `cmd` with every `--arch`, `--target` and recipe argument (of `plan`, `wheel`, `build`,
/// `recipe update`) given the values a shell offers. Only the script is made from it:
/// parsing, its errors and `--help` stay those of the types themselves.
fn with_values(mut cmd: clap::Command, recipes: &[String]) -> clap::Command {
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for s in subs {
        cmd = cmd.mut_subcommand(s, |s| with_values(s, recipes));
    }
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    for id in ids {
        let values: Vec<PossibleValue> = match id.as_str() {
            "arch" => crate::request::ArchChoice::completions()
                .into_iter()
                .map(|(v, help)| PossibleValue::new(v).help(help))
                .collect(),
            "target" => crate::platform::Target::ALL
                .iter()
                .map(|t| PossibleValue::new(t.triple()).help(t.about()))
                .collect(),
            "recipe" => recipes.iter().map(PossibleValue::new).collect(),
            _ => continue,
        };
        cmd = cmd.mut_arg(id, |a| a.value_parser(PossibleValuesParser::new(values)));
    }
    cmd
}

/// fish: clap's script completes options only; these lines give the values of the
/// positional arguments that have them (the recipe of `wheel`, `build`, `plan`, `recipe
/// update`), where `path` is the subcommand's.
fn fish_positionals(cmd: &clap::Command, path: &[&str]) -> String {
    let mut out = String::new();
    if let [first, rest @ ..] = path {
        let mut when = format!("__fish_xtask_using_subcommand {first}");
        for r in rest {
            when.push_str(&format!("; and __fish_seen_subcommand_from {r}"));
        }
        for a in cmd.get_positionals() {
            if let Some(values) = a.get_value_parser().possible_values() {
                let values: Vec<String> = values.map(|v| v.get_name().to_string()).collect();
                out.push_str(&format!(
                    "complete -c xtask -n \"{when}\" -a \"{}\"\n",
                    values.join(" ")
                ));
            }
        }
    }
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut p = path.to_vec();
        p.push(sub.get_name());
        out.push_str(&fish_positionals(sub, &p));
    }
    out
}

/// bash: `cargo`'s completion. `cargo xtask ...` goes to `_xtask`, with the words from
/// `xtask` on; any other `cargo ...` to the completion `cargo` had before (rustup's or
/// Debian's `_cargo`), loaded first where bash-completion loads it only when asked.
const BASH: &str = r#"
# `cargo xtask ...`: the words from `xtask` on go to _xtask above; any other `cargo ...`
# to the completion cargo had (its `complete -p cargo`), or, where none was loaded yet,
# the one bash-completion's _completion_loader finds.
_cargo_xtask() {
    if [[ ${COMP_CWORD} -ge 2 && ${COMP_WORDS[1]} == xtask ]]; then
        local words=("${COMP_WORDS[@]:1}") cword=$((COMP_CWORD - 1))
        local COMP_WORDS=("${words[@]}") COMP_CWORD=${cword}
        _xtask xtask "$2" "$3"
        return
    fi
    if [[ -z ${_cargo_xtask_previous-} ]] && declare -F _completion_loader >/dev/null; then
        _completion_loader cargo
        _cargo_xtask_previous=$(complete -p cargo 2>/dev/null)
        [[ ${_cargo_xtask_previous} == *" _cargo_xtask "* ]] && _cargo_xtask_previous=
        complete -F _cargo_xtask -o bashdefault -o default cargo
    fi
    if [[ ${_cargo_xtask_previous-} == *"-F "* ]]; then
        local f=${_cargo_xtask_previous#*-F }
        "${f%% *}" "$@"
    fi
}
if [[ $(complete -p cargo 2>/dev/null) != *" _cargo_xtask "* ]]; then
    _cargo_xtask_previous=$(complete -p cargo 2>/dev/null)
fi
complete -F _cargo_xtask -o bashdefault -o default cargo
"#;

/// zsh: the same dispatch, through `compdef`.
const ZSH: &str = r#"
# `cargo xtask ...`: the words from `xtask` on go to _xtask above; any other `cargo ...`
# to the completion cargo had (rustup's `_cargo`). Source this after compinit.
if [[ ${_comps[cargo]-} != _cargo_xtask ]]; then
    _cargo_xtask_previous=${_comps[cargo]-}
fi
_cargo_xtask() {
    if (( CURRENT > 2 )) && [[ ${words[2]} == xtask ]]; then
        words=("${(@)words[2,-1]}")
        (( CURRENT-- ))
        _xtask "$@"
    elif [[ -n ${_cargo_xtask_previous} ]]; then
        "${_cargo_xtask_previous}" "$@"
    else
        _default "$@"
    fi
}
compdef _cargo_xtask cargo
"#;

/// fish: `cargo xtask ...` completed as `xtask ...` (fish's own cargo completion stays).
const FISH: &str = r#"
# `cargo xtask ...`: completed as the `xtask ...` above; fish's own cargo completion stays.
function __fish_cargo_xtask
    set -l words (commandline -opc)
    test (count $words) -ge 2; and test "$words[2]" = xtask
end
function __fish_cargo_xtask_complete
    set -l words (commandline -opc)
    complete -C (string join ' ' -- (string escape -- $words[2..-1]))' '(commandline -ct)
end
complete -c cargo -n __fish_cargo_xtask -f -a '(__fish_cargo_xtask_complete)'
"#;

/// elvish: `cargo`'s completer hands `cargo xtask ...` to `xtask`'s, anything else to
/// the one `cargo` had.
const ELVISH: &str = r#"
# `cargo xtask ...`: completed as the `xtask ...` above; any other `cargo ...` by the
# completer cargo had, or as file names.
var cargo-xtask-previous = $nil
if (has-key $edit:completion:arg-completer cargo) {
    set cargo-xtask-previous = $edit:completion:arg-completer[cargo]
}
set edit:completion:arg-completer[cargo] = {|@words|
    if (and (> (count $words) 2) (eq $words[1] xtask)) {
        $edit:completion:arg-completer[xtask] (all $words[1..])
    } elif (not-eq $cargo-xtask-previous $nil) {
        $cargo-xtask-previous $@words
    } else {
        edit:complete-filename $words[-1]
    }
}
"#;

/// PowerShell: the completer clap writes for `xtask` (commands and options, no values),
/// registered for `cargo` instead,
/// reading the words after `cargo xtask`; for any other `cargo ...` it gives nothing,
/// so PowerShell completes file names. PowerShell keeps one completer per command: one
/// registered for `cargo` before is replaced.
fn powershell(generated: &str) -> String {
    let edits = [
        (
            "-CommandName 'xtask' -ScriptBlock {\n    param($wordToComplete, $commandAst, $cursorPosition)\n",
            "-CommandName 'cargo' -ScriptBlock {\n    param($wordToComplete, $commandAst, $cursorPosition)\n\n    # `cargo xtask ...` only: the words from `xtask` on are completed.\n    $e = $commandAst.CommandElements\n    if ($e.Count -lt 2 -or $e[1].Extent.Text -ne 'xtask' -or ($e.Count -eq 2 -and $wordToComplete -ne '')) {\n        return\n    }\n",
        ),
        ("for ($i = 1; $i -lt $commandElements.Count", "for ($i = 2; $i -lt $commandElements.Count"),
    ];
    let mut out = generated.to_string();
    for (from, to) in edits {
        // clap_complete's text changed: the plain `xtask` script is still a script.
        if out.matches(from).count() != 1 {
            return generated.to_string();
        }
        out = out.replacen(from, to, 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipes() -> Vec<String> {
        vec!["llama-cpp-python".into(), "llama.cpp".into()]
    }

    /// bash's, zsh's and fish's scripts offer the values of --arch, --target and the
    /// recipes (as candidates, not only in an option's description); clap's PowerShell and
    /// elvish scripts have no values, only their `cargo` completer.
    #[test]
    fn the_scripts_offer_the_values() {
        let bash = script(Shell::Bash, &recipes());
        assert!(bash.contains("\"auto cpu 121 120 "), "{bash}");
        assert!(bash.contains("\"x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu "));
        assert!(bash.contains(" llama-cpp-python llama.cpp\""));
        let zsh = script(Shell::Zsh, &recipes());
        assert!(
            zsh.contains("rtx5090\\:\"compute capability 12.0\""),
            "{zsh}"
        );
        assert!(zsh.contains(":(llama-cpp-python llama.cpp)'"), "{zsh}");
        let fish = script(Shell::Fish, &recipes());
        assert!(
            fish.contains("\nrtx5090\\t'compute capability 12.0'"),
            "{fish}"
        );
        assert!(
            fish.contains("-n \"__fish_xtask_using_subcommand recipe; and __fish_seen_subcommand_from update\" -a \"llama-cpp-python llama.cpp\""),
            "{fish}"
        );
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            assert!(script(shell, &recipes()).contains("cargo"), "{shell}");
        }
    }

    /// The PowerShell script is registered for `cargo`, with its guard: both edits of
    /// clap's text took.
    #[test]
    fn the_powershell_script_completes_cargo_xtask() {
        let s = script(Shell::PowerShell, &recipes());
        assert!(s.contains("-CommandName 'cargo'"), "{s}");
        assert!(!s.contains("-CommandName 'xtask'"), "{s}");
        assert!(s.contains("$e[1].Extent.Text -ne 'xtask'"), "{s}");
        assert!(s.contains("for ($i = 2;"), "{s}");
        assert!(s.contains("'xtask;wheel'"), "{s}");
    }

    /// The values are the completion's only: the CLI parses and helps as before.
    #[test]
    fn help_and_parsing_keep_the_types_own() {
        let cmd = super::super::Cli::command();
        let wheel = cmd.find_subcommand("wheel").unwrap();
        let arch = wheel
            .get_arguments()
            .find(|a| a.get_id() == "arch")
            .unwrap();
        assert!(arch.get_value_parser().possible_values().is_none());
    }
}
