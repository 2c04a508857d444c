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
    /// Structs laid out with members other than the headers' ([`layout_problems`]).
    pub layouts: Vec<(String, String)>,
    /// Structs compared with a header.
    pub structs: usize,
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
    headers: &BTreeMap<String, Vec<Option<String>>>,
) -> anyhow::Result<Check> {
    let mut modules = BTreeMap::new();
    let mut structs = BTreeMap::new();
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
                structs.insert(path.clone(), py_structs(&text));
                modules.insert(path.clone(), m);
            }
        }
    }
    let mut c = check(&modules, &shipped, &exported);
    c.structs = structs
        .values()
        .flatten()
        .filter(|s| headers.contains_key(&s.name))
        .count();
    c.layouts = layout_problems(&structs, headers);
    Ok(c)
}

/// `libllama.so`, `libllama.so.0`, `llama.dll` -> `llama`.
fn library_base(file: &str) -> String {
    let stem = file.split(".so").next().unwrap_or(file);
    let stem = stem.strip_suffix(".dll").unwrap_or(stem);
    stem.strip_prefix("lib").unwrap_or(stem).to_string()
}

/// A structure a module lays out with ctypes (`class llama_context_params(ctypes.Structure)`
/// with its `_fields_`), by its field names, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyStruct {
    pub name: String,
    pub fields: Vec<String>,
    /// 1-based line of its `_fields_`.
    pub line: usize,
}

/// Every `_fields_ = [...]` of `text`: in a class body (the class's name) or assigned to
/// one (`llama_sampler_i._fields_ = [...]`).
pub fn py_structs(text: &str) -> Vec<PyStruct> {
    let code: String = text.lines().map(|l| format!("{}\n", code_of(l))).collect();
    let mut out = Vec::new();
    let mut class: Option<String> = None;
    let mut offset = 0;
    for (i, line) in code.lines().enumerate() {
        let start = offset;
        offset += line.len() + 1;
        if let Some(rest) = line.strip_prefix("class ") {
            class = Some(ident_at(rest).to_string());
            continue;
        }
        let t = line.trim_start();
        let owner = if let Some(rest) = t.strip_prefix("_fields_") {
            (line.starts_with(' ') && rest.trim_start().starts_with('='))
                .then(|| class.clone())
                .flatten()
        } else {
            let name = ident_at(t);
            (!name.is_empty() && line == t)
                .then(|| t[name.len()..].strip_prefix("._fields_"))
                .flatten()
                .filter(|r| r.trim_start().starts_with('='))
                .map(|_| name.to_string())
        };
        let Some(owner) = owner else {
            if !line.starts_with(' ') && !line.is_empty() && !line.starts_with("class ") {
                class = None;
            }
            continue;
        };
        let Some(open) = code[start..].find('[').map(|o| start + o) else {
            continue;
        };
        out.push(PyStruct {
            name: owner,
            fields: list_names(&code[open + 1..]),
            line: i + 1,
        });
    }
    out
}

/// The first string of each tuple of a list, up to its closing `]`.
fn list_names(s: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut want = false;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' | '\'' => {
                let Some((lit, _)) = string_at(&s[i..]) else {
                    return names;
                };
                if want && depth == 1 {
                    names.push(lit.clone());
                    want = false;
                }
                for _ in 0..lit.chars().count() + 1 {
                    chars.next();
                }
            }
            '(' | '[' | '{' => {
                depth += 1;
                want = depth == 1 && c == '(';
            }
            ')' | '}' => depth = depth.saturating_sub(1),
            ']' if depth == 0 => return names,
            ']' => depth -= 1,
            _ => {}
        }
    }
    names
}

/// The members of each C struct `text` defines (`struct llama_context_params { ... };`),
/// by name, in order; an unnamed union or struct member is `None`.
pub fn c_structs(text: &str) -> BTreeMap<String, Vec<Option<String>>> {
    let mut clean = String::new();
    // Comments and preprocessor lines out.
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |e| &r[e + 2..]);
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |e| &r[e..]);
        } else {
            let c = rest.chars().next().expect("not empty");
            clean.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    let clean: String = clean
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut out = BTreeMap::new();
    let mut from = 0;
    while let Some(at) = clean[from..].find("struct ") {
        let start = from + at + "struct ".len();
        from = start;
        if clean[..start - "struct ".len()]
            .chars()
            .next_back()
            .is_some_and(is_ident_char)
        {
            continue;
        }
        let name = ident_at(&clean[start..]);
        let after = clean[start + name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let body_start = clean.len() - after.len() + 1;
        let mut depth = 1;
        let mut end = body_start;
        for (i, c) in clean[body_start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_start + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.insert(name.to_string(), members(&clean[body_start..end]));
        from = end.max(from);
    }
    out
}

/// A struct body's members: each declaration at the top level, each of its declarators.
fn members(body: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut decl = String::new();
    for c in body.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ';' if depth == 0 => {
                let d = std::mem::take(&mut decl);
                let d = d.trim();
                match d.rsplit_once('}') {
                    // A nested union or struct: named after its braces, or unnamed.
                    Some((_, name)) => {
                        let name = name.trim();
                        out.push(is_ident(name).then(|| name.to_string()));
                    }
                    None if d.is_empty() => {}
                    None => out.extend(split_top(d).into_iter().map(declarator_name)),
                }
                continue;
            }
            _ => {}
        }
        decl.push(c);
    }
    out
}

/// A declaration split at its top-level commas (`int a, b` -> `int a`, ` b`); a function
/// pointer's parameters are not split.
fn split_top(d: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in d.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&d[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&d[start..]);
    parts
}

/// `float * embd` -> `embd`, `char key[128]` -> `key`, `void (*cb)(void *)` -> `cb`,
/// `uint32_t n : 4` -> `n`.
fn declarator_name(part: &str) -> Option<String> {
    let part = part.split(':').next().unwrap_or(part);
    if let Some(at) = part.find("(*") {
        let n = ident_at(part[at + 2..].trim_start());
        return (!n.is_empty()).then(|| n.to_string());
    }
    let part = part.split('[').next().unwrap_or(part).trim_end();
    let start = part.rfind(|c: char| !is_ident_char(c)).map_or(0, |i| i + 1);
    let n = &part[start..];
    is_ident(n).then(|| n.to_string())
}

/// Each structure the bindings lay out that the headers define too, whose members differ
/// (by name and count, in order; an unnamed union matches any name): the bindings would
/// read and write the wrong bytes (a field added upstream shifts every one after it).
pub fn layout_problems(
    modules: &BTreeMap<String, Vec<PyStruct>>,
    headers: &BTreeMap<String, Vec<Option<String>>>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, structs) in modules {
        for st in structs {
            let Some(c) = headers.get(&st.name) else {
                continue;
            };
            let same = c.len() == st.fields.len()
                && c.iter()
                    .zip(&st.fields)
                    .all(|(c, p)| c.as_ref().is_none_or(|c| c == p));
            if same {
                continue;
            }
            let named: Vec<&str> = c.iter().filter_map(|n| n.as_deref()).collect();
            let not_bound: Vec<&str> = named
                .iter()
                .copied()
                .filter(|n| !st.fields.iter().any(|f| f == n))
                .collect();
            let gone: Vec<&str> = st
                .fields
                .iter()
                .map(String::as_str)
                .filter(|f| !named.contains(f) && c.iter().all(Option::is_some))
                .collect();
            let mut why = Vec::new();
            if !not_bound.is_empty() {
                why.push(format!("the header adds {}", not_bound.join(", ")));
            }
            if !gone.is_empty() {
                why.push(format!("the header has no {}", gone.join(", ")));
            }
            if why.is_empty() {
                why.push("the same fields in another order".to_string());
            }
            out.push((
                st.name.clone(),
                format!(
                    "struct {} ({path}:{}): the bindings lay out {} fields, the header {} ({})",
                    st.name,
                    st.line,
                    st.fields.len(),
                    c.len(),
                    why.join("; ")
                ),
            ));
        }
    }
    out
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
            headers: vec![],
            known_layouts: BTreeMap::new(),
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
    fn a_field_the_header_adds_is_named() {
        let py = r#"
class llama_model_params(ctypes.Structure):
    """doc"""
    _fields_ = [
        ("devices", ctypes.c_void_p),  # a comment ("not", this)
        ("n_gpu_layers", ctypes.c_int32),
        ("use_mmap", ctypes.c_bool),
    ]

class llama_sampler_i(ctypes.Structure): ...
llama_sampler_i._fields_ = [("apply", ctypes.c_void_p)]
"#;
        let h = r#"
    // a comment: struct not_this { int x; };
    struct llama_model_params {
        ggml_backend_dev_t * devices; // NULL-terminated
        int32_t n_gpu_layers;
        enum llama_lazy_mode lazy_mode;
        bool use_mmap, use_mlock;
    };
    struct llama_sampler_i {
        void (*apply)(struct llama_sampler * smpl, llama_token_data_array * cur_p);
    };
    struct llama_model_kv_override {
        char key[128];
        union { int64_t val_i64; double val_f64; };
    };
"#;
        let py = py_structs(py);
        assert_eq!(py[0].fields, vec!["devices", "n_gpu_layers", "use_mmap"]);
        assert_eq!(py[1].name, "llama_sampler_i");
        let c = c_structs(h);
        assert_eq!(
            c["llama_model_kv_override"],
            vec![Some("key".to_string()), None]
        );
        let mut m = BTreeMap::new();
        m.insert("llama_cpp/llama_cpp.py".to_string(), py);
        assert_eq!(
            layout_problems(&m, &c),
            vec![(
                "llama_model_params".to_string(),
                "struct llama_model_params (llama_cpp/llama_cpp.py:4): the bindings lay out 3 fields, the header 5 (the header adds lazy_mode, use_mlock)".to_string()
            )]
        );
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
