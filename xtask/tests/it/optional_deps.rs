//! Optional dependencies: a library installed on the build machine can neither be
//! picked up by a plan's CMake run nor reach an artifact undeclared. The mini fixture
//! gets a "system" prefix (standing for /usr: CMake searches it as it searches the
//! system dirs, first) holding a real shared library, its header and a find module
//! written like llama.cpp's FindNCCL.cmake.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// `system/lib/lib<name>.so` (SONAME `soname`, exporting `<name>_version`), its header
/// in `system/include`, and `cmake/Find<pkg>.cmake` that finds them with find_path and
/// find_library and makes the imported target `<pkg>::<pkg>`, as FindNCCL.cmake does.
fn system_package(src: &Path, pkg: &str, name: &str, soname: &str) {
    let sys = src.join("system");
    for d in ["include", "lib"] {
        std::fs::create_dir_all(sys.join(d)).unwrap();
    }
    std::fs::write(
        sys.join(format!("include/{name}.h")),
        format!("int {name}_version(void);\n"),
    )
    .unwrap();
    let c = sys.join(format!("{name}.c"));
    std::fs::write(&c, format!("int {name}_version(void) {{ return 2; }}\n")).unwrap();
    let out = sys.join(format!("lib/lib{name}.so"));
    let st = Command::new("gcc")
        .args(["-shared", "-fPIC", &format!("-Wl,-soname,{soname}"), "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .expect("gcc runs: these tests build a shared library");
    assert!(st.success(), "gcc built {}", out.display());
    std::fs::create_dir_all(src.join("cmake")).unwrap();
    let up = pkg.to_uppercase();
    std::fs::write(
        src.join(format!("cmake/Find{pkg}.cmake")),
        format!(
            r#"find_path({up}_INCLUDE_DIR NAMES {name}.h PATH_SUFFIXES include)
find_library({up}_LIBRARY NAMES {name} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args({pkg} DEFAULT_MSG {up}_LIBRARY {up}_INCLUDE_DIR)
if({pkg}_FOUND AND NOT TARGET {pkg}::{pkg})
    add_library({pkg}::{pkg} UNKNOWN IMPORTED)
    set_target_properties({pkg}::{pkg} PROPERTIES IMPORTED_LOCATION "${{{up}_LIBRARY}}" INTERFACE_INCLUDE_DIRECTORIES "${{{up}_INCLUDE_DIR}}")
endif()
"#
        ),
    )
    .unwrap();
    // A function of the fixture's libllama that calls into the library, so the linker
    // keeps the NEEDED entry (--as-needed drops unused libraries). Linked PUBLIC, so the
    // tools' link lines name the library too and ld finds it for libllama's NEEDED.
    std::fs::write(
        src.join(format!("use_{name}.c")),
        format!(
            "#include <{name}.h>\nint llama_uses_{name}(void) {{ return {name}_version(); }}\n"
        ),
    )
    .unwrap();
}

/// Appends to the fixture's CMakeLists.txt: the system prefix first, the find modules,
/// and `body`.
fn append_cmake(src: &Path, body: &str) {
    let cml = src.join("CMakeLists.txt");
    let mut t = std::fs::read_to_string(&cml).unwrap();
    t.push_str("\nlist(PREPEND CMAKE_PREFIX_PATH \"${CMAKE_CURRENT_SOURCE_DIR}/system\")\n");
    t.push_str("list(APPEND CMAKE_MODULE_PATH \"${CMAKE_CURRENT_SOURCE_DIR}/cmake\")\n");
    t.push_str(body);
    std::fs::write(&cml, t).unwrap();
}

fn build(src: &Path, dist: &Path, work: &Path) -> std::process::Output {
    let mut c = xtask(
        &[
            "build",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &src.display().to_string(),
            "--dist",
            &dist.display().to_string(),
        ],
        &[],
    );
    c.env("LLAMA_FORGE_BUILD_DIR", work);
    let o = c.output().unwrap();
    eprintln!("{}", text(&o));
    o
}

fn cmake_cache(work: &Path) -> String {
    let found: Vec<PathBuf> = walkdir::WalkDir::new(work)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "CMakeCache.txt")
        .map(|e| e.path().to_path_buf())
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one CMake cache under {}: {found:?}",
        work.display()
    );
    std::fs::read_to_string(&found[0]).unwrap()
}

/// llama.cpp's ggml-cuda: `GGML_CUDA_NCCL` defaults to ON and FindNCCL links whatever
/// libnccl the machine has. The plan's defines keep it out: the build succeeds, the
/// find module never ran, and nothing in the archive needs libnccl.
#[test]
fn a_system_nccl_is_not_picked_up_by_a_plan() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    system_package(&src, "NCCL", "nccl", "libnccl.so.2");
    append_cmake(
        &src,
        r#"option(GGML_CUDA_NCCL "ggml: use NVIDIA Collective Comm. Library" ON)
if (GGML_CUDA_NCCL)
    find_package(NCCL)
    if (NCCL_FOUND)
        target_sources(llama PRIVATE use_nccl.c)
        target_link_libraries(llama PUBLIC NCCL::NCCL)
    endif()
endif()
# Even an unconditional, optional find of the package finds nothing.
find_package(NCCL)
message(STATUS "mini: NCCL_FOUND=[${NCCL_FOUND}]")
"#,
    );
    let (dist, work) = (d.path().join("dist"), d.path().join("work"));
    let o = build(&src, &dist, &work);
    assert!(o.status.success(), "{}", text(&o));
    let cache = cmake_cache(&work);
    assert!(
        cache.contains("GGML_CUDA_NCCL:UNINITIALIZED=OFF")
            || cache.contains("GGML_CUDA_NCCL:BOOL=OFF"),
        "the plan decides GGML_CUDA_NCCL"
    );
    assert!(
        !cache.contains("NCCL_LIBRARY"),
        "FindNCCL never ran (CMAKE_DISABLE_FIND_PACKAGE_NCCL):\n{cache}"
    );
    let log = std::fs::read_to_string(
        walkdir::WalkDir::new(&work)
            .into_iter()
            .flatten()
            .find(|e| e.file_name() == "configure.log")
            .expect("a configure log")
            .path(),
    )
    .unwrap();
    assert!(log.contains("mini: NCCL_FOUND=[]"), "{log}");
    let manifest = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".manifest.json"))
        .expect("a manifest");
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join(manifest)).unwrap()).unwrap();
    let binaries = m["binaries"]
        .as_object()
        .expect("the manifest lists the binaries");
    assert!(binaries.contains_key("libggml.so"), "{binaries:?}");
    for (file, info) in binaries {
        let needed: Vec<&str> = info["needed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(
            !needed.iter().any(|n| n.starts_with("libnccl")),
            "{file} needs {needed:?}"
        );
    }
}

/// The control, and the packaging gate end to end: a package from the same prefix that
/// no plan decides is found and linked, and the build then fails at packaging, naming
/// the library, what needs it and what to do, with nothing in dist/.
#[test]
fn an_undeclared_system_library_fails_the_build_and_leaves_dist_empty() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    system_package(&src, "FakeSys", "fakesys", "libfakesys.so.1");
    append_cmake(
        &src,
        r#"find_package(FakeSys REQUIRED)
target_sources(llama PRIVATE use_fakesys.c)
target_link_libraries(llama PUBLIC FakeSys::FakeSys)
"#,
    );
    let (dist, work) = (d.path().join("dist"), d.path().join("work"));
    let o = build(&src, &dist, &work);
    assert!(!o.status.success());
    let t = text(&o);
    let line = t
        .lines()
        .find(|l| l.trim_start().starts_with("libfakesys.so.1 needed by "))
        .unwrap_or_else(|| panic!("no line names libfakesys.so.1:\n{t}"));
    let (who, why) = line.split_once(": ").unwrap();
    assert!(who.contains("libllama.so"), "{line}");
    assert!(
        why.starts_with("not in the artifact, not declared, not in the manylinux allow-list"),
        "{line}"
    );
    assert!(
        why.contains("decide the CMake option that links it in the plan"),
        "{line}"
    );
    assert!(t.contains("nothing was written to dist/"), "{t}");
    assert!(
        files_in(&dist).is_empty(),
        "nothing in dist: {:?}",
        files_in(&dist)
    );
}
