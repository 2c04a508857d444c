use super::*;
use std::fs;

fn touch(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "#!/bin/sh\n").unwrap();
}

/// Short form: (first path relative to root, sources).
fn summary(root: &Path, found: &[NvccCandidate]) -> Vec<(String, Vec<String>)> {
    found
        .iter()
        .map(|c| {
            let rel = c
                .nvcc
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let sources = c
                .sources
                .iter()
                .map(|s| s.to_string().replace(&root.display().to_string(), ""))
                .collect();
            (rel, sources)
        })
        .collect()
}

#[cfg(unix)]
#[test]
fn finds_in_priority_order_and_merges_symlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    touch(&r.join("usr/local/cuda-12.8/bin/nvcc"));
    touch(&r.join("usr/local/cuda-13.0/bin/nvcc"));
    touch(&r.join("usr/local/cuda-12.10/bin/nvcc"));
    fs::create_dir_all(r.join("usr/local/cuda-11.8/bin")).unwrap(); // no nvcc
    fs::create_dir_all(r.join("usr/local/cuda-extras")).unwrap();
    std::os::unix::fs::symlink(r.join("usr/local/cuda-13.0"), r.join("usr/local/cuda")).unwrap();
    touch(&r.join("custom/bin/nvcc"));

    let inputs = DiscoveryInputs {
        cuda_path_flag: None,
        cudacxx: Some(r.join("custom/bin/nvcc")),
        cuda_path: Some(r.join("missing")),
        cuda_home: Some(r.join("usr/local/cuda-12.8")),
        path: vec![r.join("usr/bin"), r.join("usr/local/cuda-13.0/bin")],
        os: Os::Linux,
        system: vec![
            SystemLocation::Root(r.join("usr/local/cuda")),
            SystemLocation::Versioned {
                parent: r.join("usr/local"),
                prefix: "cuda-".into(),
            },
            SystemLocation::Root(r.join("opt/cuda")),
        ],
    };
    let found = discover_nvcc(&inputs);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        summary(r, &found),
        vec![
            ("custom/bin/nvcc".into(), s(&["CUDACXX"])),
            (
                "usr/local/cuda-12.8/bin/nvcc".into(),
                s(&["CUDA_HOME", "install location /usr/local/cuda-12.8"])
            ),
            (
                "usr/local/cuda-13.0/bin/nvcc".into(),
                s(&[
                    "PATH entry /usr/local/cuda-13.0/bin",
                    "install location /usr/local/cuda",
                    "install location /usr/local/cuda-13.0"
                ])
            ),
            (
                "usr/local/cuda-12.10/bin/nvcc".into(),
                s(&["install location /usr/local/cuda-12.10"])
            ),
        ]
    );
    assert_eq!(found[2].root, r.join("usr/local/cuda-13.0"));
    assert_eq!(
        found[2].canonical,
        r.join("usr/local/cuda-13.0/bin/nvcc")
            .canonicalize()
            .unwrap()
    );

    let missing = unresolved_inputs(&inputs);
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].source_name, "CUDA_PATH");
    let msg = missing[0].to_string();
    assert!(
        msg.starts_with("CUDA_PATH is ") && msg.contains("missing/bin/nvcc: fix or remove it"),
        "{msg}"
    );
}

#[test]
fn explicit_flag_comes_first_and_bad_cudacxx_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    touch(&r.join("tk/bin/nvcc"));
    let mut inputs = DiscoveryInputs::new(Os::Linux);
    inputs.system.clear();
    inputs.cuda_path_flag = Some(r.join("tk"));
    inputs.cudacxx = Some(r.join("nope/nvcc"));
    inputs.cuda_path = Some(r.join("tk"));
    let found = discover_nvcc(&inputs);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].sources,
        vec![NvccSource::CudaPathFlag, NvccSource::CudaPath]
    );
    let missing = unresolved_inputs(&inputs);
    assert_eq!(missing.len(), 1);
    assert!(
        missing[0]
            .to_string()
            .ends_with("but there is no such file: fix or remove it"),
        "{}",
        missing[0]
    );
}

#[test]
fn windows_looks_for_nvcc_exe_under_versioned_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("NVIDIA GPU Computing Toolkit/CUDA");
    touch(&base.join("v12.9/bin/nvcc.exe"));
    touch(&base.join("v13.1/bin/nvcc.exe"));
    touch(&base.join("v13.0/bin/nvcc")); // not a Windows nvcc
    let inputs = DiscoveryInputs {
        system: vec![SystemLocation::Versioned {
            parent: base.clone(),
            prefix: "v".into(),
        }],
        ..DiscoveryInputs::new(Os::Windows)
    };
    let roots: Vec<PathBuf> = discover_nvcc(&inputs).into_iter().map(|c| c.root).collect();
    assert_eq!(roots, vec![base.join("v13.1"), base.join("v12.9")]);
}

#[test]
fn defaults_and_os_names() {
    let linux = SystemLocation::defaults(Os::Linux);
    assert_eq!(linux[0], SystemLocation::Root("/usr/local/cuda".into()));
    assert_eq!(linux.len(), 3);
    let win = SystemLocation::defaults(Os::Windows);
    assert!(
        matches!(&win[0], SystemLocation::Versioned { parent, prefix } if prefix == "v" && parent.to_string_lossy().contains("NVIDIA GPU Computing Toolkit"))
    );
    assert_eq!("Windows".parse::<Os>().unwrap(), Os::Windows);
    assert_eq!(Os::Linux.to_string(), "linux");
    assert!("macos"
        .parse::<Os>()
        .unwrap_err()
        .to_string()
        .contains("`macos`"));
    assert_eq!(nvcc_name(Os::Windows), "nvcc.exe");
}
