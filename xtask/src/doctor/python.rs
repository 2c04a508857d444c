//! What a Python environment has: asked of that Python, through the process seam, by a
//! small script that prints one JSON line. `llama_cpp` and `bitsandbytes` are found
//! without importing them (`importlib.util.find_spec`: importing llama_cpp loads its
//! libraries and can crash the process); their package dirs are then read by
//! [`crate::inspect`]. torch is imported, and asked its version, CUDA and arch list.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::process::{Command, Processes};

/// The probe. Its last stdout line starts with [`MARK`].
pub const SCRIPT: &str = r#"
import json, sys, platform, importlib.util
try:
    import importlib.metadata as md
except Exception:
    md = None
def version(dist):
    try:
        return md.version(dist)
    except Exception:
        return None
def files(dist, name):
    try:
        return [str(f.locate()) for f in md.distribution(dist).files or [] if f.name == name]
    except Exception:
        return []
def package(name, dist):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    manifest = files(dist, "llama-forge.json")
    return {"dir": list(spec.submodule_search_locations)[0], "version": version(dist),
            "manifest": manifest[0] if manifest else None}
out = {"version": list(sys.version_info[:2]), "executable": sys.executable,
       "platform": platform.platform(), "machine": platform.machine(),
       "llama_cpp": package("llama_cpp", "llama_cpp_python"),
       "bitsandbytes": package("bitsandbytes", "bitsandbytes"), "torch": None}
try:
    has_torch = importlib.util.find_spec("torch") is not None
except Exception:
    has_torch = False
if has_torch:
    t = {"version": version("torch"), "cuda": None, "arch_list": [], "error": None}
    try:
        import torch
        t["version"] = str(torch.__version__)
        t["cuda"] = torch.version.cuda
        flags = None
        try:
            # What the build carries, with or without a GPU here (get_arch_list() is
            # empty when CUDA is not available).
            flags = torch._C._cuda_getArchFlags()
        except Exception:
            pass
        t["arch_list"] = flags.split() if flags else list(torch.cuda.get_arch_list())
    except BaseException as e:
        t["error"] = f"{type(e).__name__}: {e}"
    out["torch"] = t
sys.stdout.flush()
print("LLAMA_FORGE_DOCTOR " + json.dumps(out))
"#;

pub const MARK: &str = "LLAMA_FORGE_DOCTOR ";

/// A package found by `find_spec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    pub dir: PathBuf,
    pub version: Option<String>,
    /// Our manifest in its dist-info (`llama-forge.json`), when it has one.
    #[serde(default)]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Torch {
    pub version: Option<String>,
    /// `torch.version.cuda`: `12.8`, or `None` for a CPU-only build.
    pub cuda: Option<String>,
    /// `sm_90`, `compute_90`.
    pub arch_list: Vec<String>,
    /// The import or the questions failed: the exception.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonEnv {
    /// `[3, 12]`
    pub version: [u32; 2],
    pub executable: String,
    pub platform: String,
    /// `platform.machine()`: `x86_64`, `aarch64` (`AMD64`, `ARM64` on Windows).
    #[serde(default)]
    pub machine: Option<String>,
    pub llama_cpp: Option<Package>,
    pub bitsandbytes: Option<Package>,
    pub torch: Option<Torch>,
}

impl PythonEnv {
    /// `312`, as `--py` takes it.
    pub fn py_tag(&self) -> String {
        format!("{}{}", self.version[0], self.version[1])
    }
}

/// The Python to check: `--python`, else the active venv's, else `python3`
/// (`python` on Windows).
pub fn default_python(virtual_env: Option<&Path>, windows: bool) -> PathBuf {
    match (virtual_env, windows) {
        (Some(v), false) => v.join("bin/python"),
        (Some(v), true) => v.join("Scripts").join("python.exe"),
        (None, false) => PathBuf::from("python3"),
        (None, true) => PathBuf::from("python"),
    }
}

/// Reads the probe's output.
pub fn parse(stdout: &str) -> Result<PythonEnv> {
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(MARK))
        .context("the probe printed no result line")?;
    serde_json::from_str(line)
        .with_context(|| format!("the probe's result is not as expected: {line}"))
}

/// How long the probe may run.
pub const PROBE_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// How much the probe may print, on stdout and on stderr each: its result is one line
/// of a few kB; torch's warnings add some.
pub const PROBE_OUTPUT_LIMIT: u64 = 1 << 20;

/// Runs the probe with `python`.
pub fn probe(python: &Path, procs: &dyn Processes) -> Result<PythonEnv> {
    // Importing torch can take tens of seconds on a cold disk; a Python that hangs (an
    // import waiting on a lock, a broken site hook) must not hang the doctor, nor one
    // that prints without end fill its memory.
    let cmd = Command::new(python)
        .args(["-c", SCRIPT])
        .timeout(PROBE_LIMIT)
        .max_output(PROBE_OUTPUT_LIMIT);
    let out = procs.output(&cmd).map_err(|e| {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            anyhow::anyhow!(
                "{} printed too much on the doctor's probe ({}): something it runs at startup (a sitecustomize, a .pth file, PYTHONSTARTUP) prints without end; run `{} -c pass` to see it, or give another Python with --python PATH",
                python.display(),
                e.io,
                python.display()
            )
        } else {
            anyhow::anyhow!(
                "cannot run {} ({}): give the Python to check with --python PATH",
                python.display(),
                e.io
            )
        }
    })?;
    if !out.success() {
        bail!(
            "{} failed on the doctor's probe ({}): {}",
            python.display(),
            out.status,
            out.stderr.trim()
        );
    }
    parse(&out.stdout).with_context(|| format!("asking {}", python.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_probe_line_and_the_default_python() {
        let out = "torch warns here\nLLAMA_FORGE_DOCTOR {\"version\": [3, 12], \"executable\": \"/v/bin/python\", \"platform\": \"Linux\", \"llama_cpp\": {\"dir\": \"/v/lib/llama_cpp\", \"version\": \"0.3.16\"}, \"bitsandbytes\": null, \"torch\": {\"version\": \"2.7.0+cu126\", \"cuda\": \"12.6\", \"arch_list\": [\"sm_90\"], \"error\": null}}\n";
        let p = parse(out).unwrap();
        assert_eq!(p.py_tag(), "312");
        assert_eq!(p.llama_cpp.unwrap().manifest, None);
        assert_eq!(p.torch.unwrap().arch_list, ["sm_90"]);
        let e = format!("{:#}", parse("Traceback ...").unwrap_err());
        assert!(e.contains("no result line"), "{e}");
        assert_eq!(
            default_python(Some(Path::new("/v")), false),
            PathBuf::from("/v/bin/python")
        );
        assert_eq!(
            default_python(Some(Path::new("C:/v")), true),
            Path::new("C:/v").join("Scripts").join("python.exe")
        );
        assert_eq!(default_python(None, false), PathBuf::from("python3"));
        assert_eq!(default_python(None, true), PathBuf::from("python"));
    }
}
