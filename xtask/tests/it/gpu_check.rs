//! The wheel's GPU code check at import (the llama-cpp-python recipe's `gpu-code-check`
//! patch), run by Python on its own text: the functions the patch adds to llama_cpp.py,
//! with the driver's answers given (a GPU it has no code for, its own GPU, an old driver,
//! no GPU) and, once, asked of this machine's real driver through ctypes (CI has none).
//! On the GPU machine (BENCHMARKS.md), the `--arch 120` wheel on a 9.0 GPU ran on the CPU
//! with the patch's line instead of aborting at its first kernel.

use crate::common::repo;

/// The patch's Python, less its last line (the call), and the harness around it.
fn harness() -> String {
    let recipe: toml::Value = toml::from_str(
        &std::fs::read_to_string(repo().join("recipes/llama-cpp-python.toml")).unwrap(),
    )
    .unwrap();
    let patch = recipe["patch"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some("gpu-code-check"))
        .expect("the recipe has the gpu-code-check patch");
    let code = patch["replace"].as_str().unwrap();
    let code = code
        .strip_suffix("_check_gpu_code(_base_path)\n")
        .expect("the patch ends with the call");
    format!(
        r#"
import ctypes, json, os, pathlib, sys, tempfile

unloaded = []
def _reg_by_name(name):
    return 1234 if name == b"CUDA" else None
def _unload(reg):
    unloaded.append(reg)
class _Ggml:
    pass
_ggml = _Ggml()
_ggml.ggml_backend_reg_by_name = _reg_by_name
_ggml.ggml_backend_unload = _unload
def load_shared_library(name, path):
    assert name == "ggml"
    return _ggml
def _load_ggml_backends(path):
    pass
site = pathlib.Path(tempfile.mkdtemp())
_base_path = site / "llama_cpp" / "lib"
_base_path.mkdir(parents=True)
{code}
real_visible_gpus = _visible_gpus

def case(name, codes, gpus, env=None, release="13.0"):
    global _visible_gpus
    info = site / "llama_cpp_python-0.3.36+x.dist-info"
    info.mkdir(exist_ok=True)
    manifest = {{"plan": {{"cuda": {{"release": release, "min_driver": "580"}}}}}}
    if codes:
        manifest["cuda_code"] = {{"llama_cpp/lib/libggml-cuda.so": codes}}
    (info / "llama-forge.json").write_text(json.dumps(manifest))
    asked = []
    def fake():
        asked.append(1)
        return gpus
    _visible_gpus = real_visible_gpus if gpus == "real" else fake
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    if env is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = env
    unloaded.clear()
    import io, contextlib
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        _check_gpu_code(_base_path)
    print(f"{{name}}|unloaded={{bool(unloaded)}}|asked={{bool(asked)}}|{{err.getvalue().strip()}}")

case("other-gpu", ["SASS sm_120a"], (13000, 0, [(9, 0)]))
case("own-gpu", ["SASS sm_120a"], (13000, 0, [(12, 0)]))
case("no-driver", ["SASS sm_120a"], None)
case("old-driver", ["SASS sm_120a"], (12080, 0, [(12, 0)]))
case("no-gpu", ["SASS sm_120a"], (13000, 100, []))
case("cpu-wheel", [], (13000, 0, [(9, 0)]))
case("hidden", ["SASS sm_120a"], (13000, 0, [(9, 0)]), env="")
case("family", ["SASS sm_100f"], (13000, 0, [(10, 3)]))
case("family-other", ["SASS sm_100f"], (13000, 0, [(12, 0)]))
case("ptx", ["SASS sm_90", "PTX compute_90"], (13000, 0, [(12, 0)]))
case("two-gpus", ["SASS sm_120a"], (13000, 0, [(9, 0), (12, 0)]))
case("real-driver", ["SASS sm_120a"], "real")
"#
    )
}

fn results() -> std::collections::BTreeMap<String, String> {
    let d = tempfile::tempdir().unwrap();
    let script = d.path().join("check.py");
    std::fs::write(&script, harness()).unwrap();
    let o = std::process::Command::new("python3")
        .arg(&script)
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out.lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_gpu_wheel_runs_on_the_cpu_and_says_why_where_no_gpu_runs_its_code() {
    let r = results();
    let other = &r["other-gpu"];
    assert!(other.starts_with("unloaded=True|asked=True|llama_cpp: running on the CPU: this wheel has GPU code for sm_120a only, and this machine's GPU is compute capability 9.0"), "{other}");
    assert!(
        other.contains("`cargo xtask wheel llama-cpp-python --arch 90`"),
        "{other}"
    );
    assert_eq!(r["own-gpu"], "unloaded=False|asked=True|");
    assert_eq!(r["two-gpus"], "unloaded=False|asked=True|");
    assert!(
        r["no-driver"].ends_with("this wheel's GPU code (sm_120a) needs the NVIDIA driver, and none is installed (no libcuda): install the NVIDIA driver 580 or newer"),
        "{}",
        r["no-driver"]
    );
    assert!(
        r["old-driver"].contains("the NVIDIA driver runs CUDA 12.8 and older, and this wheel is built with CUDA 13.0: install the NVIDIA driver 580 or newer"),
        "{}",
        r["old-driver"]
    );
    assert!(
        r["no-gpu"].starts_with(
            "unloaded=True|asked=True|llama_cpp: running on the CPU: no NVIDIA GPU is visible"
        ),
        "{}",
        r["no-gpu"]
    );
    // A CPU wheel asks nothing, and GPUs hidden on purpose are not talked about.
    assert_eq!(r["cpu-wheel"], "unloaded=False|asked=False|");
    assert_eq!(r["hidden"], "unloaded=False|asked=False|");
    // NVIDIA's rules: a family cubin runs on later minors of its major; PTX on any newer GPU.
    assert_eq!(r["family"], "unloaded=False|asked=True|");
    assert!(
        r["family-other"].starts_with("unloaded=True"),
        "{}",
        r["family-other"]
    );
    assert_eq!(r["ptx"], "unloaded=False|asked=True|");
    // This machine's own driver, through ctypes: CI has none (no libcuda), and says so.
    let real = &r["real-driver"];
    if std::path::Path::new("/dev/nvidiactl").exists() {
        assert!(real.contains("asked=True"), "{real}");
    } else {
        assert!(
            real.contains("none is installed (no libcuda)")
                || real.contains("no NVIDIA GPU is visible")
                || real.contains("did not start"),
            "{real}"
        );
    }
}
