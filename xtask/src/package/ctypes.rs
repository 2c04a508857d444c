//! What a Python package binds with ctypes, read from its own modules, against what the
//! wheel's libraries export: a bound function that no library exports makes the import
//! fail (`AttributeError` from `getattr(lib, name)`), so such a wheel is refused before
//! it is packaged. This is what makes another llama.cpp tree inside the bindings safe
//! (`--llama-cpp`): a function renamed or removed upstream is named, not found by users.
//!
//! The declarations are found by the recipe's `[wheel.ctypes]` (pure, no I/O here):
//! decorator lines `@<decorator>("name", ...)` or `@<decorator>(("a", "b"), ...)`, the
//! handle attributes `<handle>.name`, and the library a module loads,
//! `<loader>("llama", ...)` or `<loader>(_lib_base_name, ...)` with
//! `_lib_base_name = "llama"` above it.

use std::collections::{BTreeMap, BTreeSet};

use crate::recipe::CtypesSpec;

/// One function a module binds: one of `names` must be exported (the first that is, is
/// taken: llama_cpp_ext.py's mangled alternatives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub names: Vec<String>,
    /// 1-based line of the declaration.
    pub line: usize,
}

/// What one module binds, and the library it loads (none: it binds through another
/// module's handle, as llama_cpp_ext.py does through `llama_cpp._lib`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModuleBindings {
    pub library: Option<String>,
    pub bound: Vec<Bound>,
}

/// The bindings `text` (one module's source) declares.
pub fn bindings(text: &str, spec: &CtypesSpec) -> ModuleBindings {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = ModuleBindings::default();
    let mut assigned: BTreeMap<&str, String> = BTreeMap::new();
    for (i, raw) in lines.iter().enumerate() {
        let line = code_of(raw);
        let trimmed = line.trim_start();
        // `_lib_base_name = "llama"`: what a loader call may name.
        if let Some((lhs, rhs)) = trimmed.split_once('=') {
            let lhs = lhs.trim();
            if is_ident(lhs) && !rhs.starts_with('=') {
                if let Some((s, _)) = string_at(rhs.trim_start()) {
                    assigned.insert(lhs, s);
                }
            }
        }
        if out.library.is_none() {
            if let Some(arg) = call_arg(line, &spec.loader) {
                out.library = match string_at(arg) {
                    Some((s, _)) => Some(s),
                    None => assigned.get(ident_at(arg)).cloned(),
                };
            }
        }
        if let Some(rest) = trimmed.strip_prefix('@') {
            if let Some(d) = spec.decorators.iter().find(|d| {
                rest.strip_prefix(d.as_str())
                    .is_some_and(|r| r.trim_start().starts_with('('))
            }) {
                let after = &rest[d.len()..];
                let after = &after[after.find('(').expect("checked") + 1..];
                // The first argument may be on the next lines.
                let joined: String = std::iter::once(after)
                    .chain(lines[i + 1..].iter().take(8).map(|l| code_of(l)))
                    .collect::<Vec<_>>()
                    .join("\n");
                let names = first_argument(&joined);
                if !names.is_empty() {
                    out.bound.push(Bound { names, line: i + 1 });
                }
                continue;
            }
        }
        for h in &spec.handles {
            for name in attributes(line, h) {
                out.bound.push(Bound {
                    names: vec![name],
                    line: i + 1,
                });
            }
        }
    }
    out
}

/// What a wheel's package binds that its libraries do not export.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Check {
    /// Functions bound, checked.
    pub checked: usize,
    /// `(module, line, names)` of each bound function no library exports.
    pub missing: Vec<(String, usize, Vec<String>)>,
    /// Modules left out, with why (`llama_cpp/llava_cpp.py: loads libllava, which the
    /// wheel does not ship`).
    pub left_out: Vec<String>,
}

/// Checks each module's bindings against `exported` (every name the wheel's libraries
/// export). A module that loads a library the wheel does not ship (`shipped`: base
/// names) cannot be imported whatever it binds: it is left out, and said.
pub fn check(
    modules: &BTreeMap<String, ModuleBindings>,
    shipped: &BTreeSet<String>,
    exported: &BTreeSet<String>,
) -> Check {
    let mut out = Check::default();
    for (path, m) in modules {
        if let Some(lib) = &m.library {
            if !shipped.contains(lib) {
                out.left_out.push(format!(
                    "{path}: loads lib{lib}, which the wheel does not ship"
                ));
                continue;
            }
        }
        for b in &m.bound {
            out.checked += 1;
            if !b.names.iter().any(|n| exported.contains(n)) {
                out.missing.push((path.clone(), b.line, b.names.clone()));
            }
        }
    }
    out
}

/// Reads what the payload's Python modules under `packages` bind, and what its libraries
/// under `lib_dir` export (ELF or PE), and checks the one against the other.
pub fn check_payload(
    payload: &crate::package::payload::Payload,
    packages: &[String],
    lib_dir: &str,
    spec: &CtypesSpec,
) -> anyhow::Result<Check> {
    let mut modules = BTreeMap::new();
    let mut shipped = BTreeSet::new();
    let mut exported = BTreeSet::new();
    for (path, e) in &payload.files {
        if let Some(file) = path.strip_prefix(&format!("{lib_dir}/")) {
            let base = library_base(file);
            if crate::binary::elf::is_elf(&e.data) {
                exported
                    .extend(crate::binary::elf::exports(&e.data).map_err(|err| {
                        anyhow::anyhow!("{path}: cannot read its exports: {err}")
                    })?);
            } else if crate::binary::pe::is_pe(&e.data) {
                exported.extend(
                    crate::binary::pe::exports(&e.data)
                        .map_err(|err| anyhow::anyhow!("{path}: cannot read its exports: {err}"))?
                        .into_iter()
                        .map(|x| x.name),
                );
            } else {
                continue;
            }
            shipped.insert(base);
        } else if path.ends_with(".py")
            && packages.iter().any(|p| path.starts_with(&format!("{p}/")))
        {
            let text = String::from_utf8_lossy(&e.data);
            let m = bindings(&text, spec);
            if !m.bound.is_empty() {
                modules.insert(path.clone(), m);
            }
        }
    }
    Ok(check(&modules, &shipped, &exported))
}

/// `libllama.so`, `libllama.so.0`, `llama.dll` -> `llama`.
fn library_base(file: &str) -> String {
    let stem = file.split(".so").next().unwrap_or(file);
    let stem = stem.strip_suffix(".dll").unwrap_or(stem);
    stem.strip_prefix("lib").unwrap_or(stem).to_string()
}

/// The line without its comment (a `#` outside a string).
fn code_of(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_ident_char) && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident_char(c)).unwrap_or(s.len());
    &s[..end]
}

/// A plain string literal at the start of `s` (`"name"` or `'name'`), and what follows.
fn string_at(s: &str) -> Option<(String, &str)> {
    let q = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &s[1..];
    let end = body.find(q)?;
    let lit = &body[..end];
    (!lit.contains('\\')).then(|| (lit.to_string(), &body[end + 1..]))
}

/// The text after `name(` where `name` is called on this line (not as part of a longer
/// identifier, nor as a definition).
fn call_arg<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = line[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        let word = line[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident_char(c));
        let defined = line[..start].trim_end().ends_with("def");
        if word && !defined && line[end..].trim_start().starts_with('(') {
            let rest = &line[end..];
            return Some(rest[rest.find('(').expect("checked") + 1..].trim_start());
        }
        from = end;
    }
    None
}

/// The first argument's names: one string, or a tuple or list of strings.
fn first_argument(s: &str) -> Vec<String> {
    let s = s.trim_start();
    if let Some((name, _)) = string_at(s) {
        return vec![name];
    }
    let Some(mut rest) = s.strip_prefix(['(', '[']) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    loop {
        rest = rest.trim_start();
        match string_at(rest) {
            Some((name, after)) => {
                names.push(name);
                rest = after.trim_start();
                rest = rest.strip_prefix(',').unwrap_or(rest);
            }
            None => return names,
        }
    }
}

/// The attributes taken from `handle` on this line (`_lib.llama_max_devices`), not where
/// `handle` ends a longer name (`self._lib`) or an attribute is assigned to it.
fn attributes(line: &str, handle: &str) -> Vec<String> {
    let pat = format!("{handle}.");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find(&pat) {
        let start = from + at;
        let end = start + pat.len();
        from = end;
        if line[..start]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident_char(c) || c == '.')
        {
            continue;
        }
        let name = ident_at(&line[end..]);
        if is_ident(name) && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CtypesSpec {
        CtypesSpec {
            loader: "load_shared_library".into(),
            decorators: vec![
                "ctypes_function".into(),
                "_ctypes_function_from_names".into(),
            ],
            handles: vec!["_lib".into()],
        }
    }

    const MODULE: &str = r#"
_lib_base_name = "llama"
_lib = load_shared_library(_lib_base_name, _base_path)
ctypes_function = ctypes_function_for_shared_library(_lib)
_lib.llama_max_devices.argtypes = []  # the count
# @ctypes_function("commented_out", [], None)
@ctypes_function("llama_version", [], ctypes.c_char_p)
def llama_version() -> bytes: ...
@ctypes_function(
    "llama_model_default_params",
    [],
    llama_model_params,
)
def llama_model_default_params(): ...
@_ctypes_function_from_names(
    (
        "llama_set_embeddings_nextn",
        "_Z26llama_set_embeddings_nextnP13llama_contextbb",
    ),
    [],
    None,
)
def f(): """self._lib.not_this"""
"#;

    #[test]
    fn reads_decorators_handles_and_the_library_a_module_loads() {
        let m = bindings(MODULE, &spec());
        assert_eq!(m.library.as_deref(), Some("llama"));
        let names: Vec<Vec<&str>> = m
            .bound
            .iter()
            .map(|b| b.names.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["llama_max_devices"],
                vec!["llama_version"],
                vec!["llama_model_default_params"],
                vec![
                    "llama_set_embeddings_nextn",
                    "_Z26llama_set_embeddings_nextnP13llama_contextbb"
                ],
            ]
        );
        assert_eq!(m.bound[1].line, 7);
    }

    #[test]
    fn a_missing_function_is_named_and_a_module_of_an_unshipped_library_left_out() {
        let mut modules = BTreeMap::new();
        modules.insert(
            "llama_cpp/llama_cpp.py".to_string(),
            bindings(MODULE, &spec()),
        );
        modules.insert(
            "llama_cpp/llava_cpp.py".to_string(),
            bindings(
                "_libllava = load_shared_library(\"llava\", p)\n@ctypes_function(\"llava_x\", [], None)\n",
                &spec(),
            ),
        );
        let shipped: BTreeSet<String> = ["llama".to_string()].into();
        let exported: BTreeSet<String> = [
            "llama_max_devices",
            "llama_version",
            "_Z26llama_set_embeddings_nextnP13llama_contextbb",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let c = check(&modules, &shipped, &exported);
        assert_eq!(c.checked, 4);
        assert_eq!(
            c.missing,
            vec![(
                "llama_cpp/llama_cpp.py".to_string(),
                9,
                vec!["llama_model_default_params".to_string()]
            )]
        );
        assert_eq!(
            c.left_out,
            vec!["llama_cpp/llava_cpp.py: loads libllava, which the wheel does not ship"]
        );
    }
}
