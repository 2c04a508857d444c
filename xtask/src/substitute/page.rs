//! The published tree's `index.html`, for people: one row per artifact (flavour and
//! platform), with the GPUs its code runs on natively and the driver it needs, its size
//! and sha256, and a line to copy. Plain HTML, no script, every value escaped; made from
//! the tree's entries and their manifests (`write`), its rows pure (`render`).

use std::path::Path;

use anyhow::Result;

/// One artifact's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub project: String,
    pub version: String,
    /// `CUDA 13.0` or `CPU`.
    pub flavour: String,
    /// The platform tag (`manylinux_2_28_x86_64`, `win_amd64`).
    pub platform: String,
    /// `sm_120a: RTX 50 series / RTX PRO 6000 Blackwell`; `any x86-64 CPU`.
    pub runs_on: Vec<String>,
    /// `580 or newer (Linux)`; empty for the CPU.
    pub driver: String,
    pub size: u64,
    pub sha256: String,
    /// The file's path in the tree, relative to the page (`<plan>/<file>`).
    pub href: String,
    /// What to type (pip, from the file's URL).
    pub install: String,
}

/// `&`, `<`, `>`, `"` and `'` as HTML's entities: any value may come from a manifest.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The page of `rows`.
pub fn render(rows: &[Row], key_note: &str) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>llama-forge builds</title>\n\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
         code{font-size:90%}</style>\n</head>\n<body>\n<h1>llama-forge builds</h1>\n",
    );
    s.push_str(&format!(
        "<p>Find your GPU in the column <em>runs natively on</em>, and your OS in <em>platform</em>; \
         install into a virtual environment (<code>python3 -m venv .venv</code>, then its pip). \
         Each row was built and signed by {}. With llama-forge, <code>--cache-from</code> fetches \
         and verifies the same files.</p>\n",
        esc(key_note)
    ));
    s.push_str(
        "<table>\n<thead><tr><th>package</th><th>flavour</th><th>platform</th>\
         <th>runs natively on</th><th>driver</th><th>size</th><th>sha256</th><th>install</th></tr></thead>\n<tbody>\n",
    );
    for r in rows {
        s.push_str(&format!(
            "<tr><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td><a href=\"{}\"><code>{}</code></a></td><td><code>{}</code></td></tr>\n",
            esc(&r.project),
            esc(&r.version),
            esc(&r.flavour),
            esc(&r.platform),
            r.runs_on
                .iter()
                .map(|g| esc(g))
                .collect::<Vec<_>>()
                .join("<br>"),
            esc(&r.driver),
            esc(&crate::provision::cache::human(r.size)),
            esc(&r.href),
            esc(&r.sha256),
            esc(&r.install),
        ));
    }
    s.push_str("</tbody>\n</table>\n</body>\n</html>\n");
    s
}

/// The row of one artifact of an entry, from its manifest.
fn row(
    m: &crate::manifest::Manifest,
    plan: &str,
    file: &super::listing::File,
    base_url: Option<&str>,
) -> Row {
    let plan_ = &m.plan;
    let (flavour, runs_on, driver) = match &plan_.cuda {
        Some(c) => {
            let mut gpus: Vec<String> = c
                .architectures
                .sass()
                .map(|a| match crate::cuda::describe_cc(a) {
                    Some(d) => format!("{}: {d}", a.sm_name()),
                    None => a.sm_name(),
                })
                .collect();
            gpus.extend(c.architectures.ptx().map(|a| {
                format!(
                    "newer than {} through PTX (compiled at first use)",
                    a.sm_name()
                )
            }));
            let driver = match &c.min_driver {
                Some(d) => format!("{d} or newer ({})", plan_.target.os()),
                None => String::new(),
            };
            (format!("CUDA {}", c.release), gpus, driver)
        }
        None => (
            "CPU".to_string(),
            vec![format!("the CPU only ({})", plan_.target.arch())],
            String::new(),
        ),
    };
    let href = format!("{plan}/{}", file.name);
    let install = match base_url {
        Some(b) => format!("pip install {}/{href}", b.trim_end_matches('/')),
        None => format!("pip install ./{}", file.name),
    };
    Row {
        project: plan_.recipe.clone(),
        version: plan_.version.to_string(),
        flavour,
        platform: m.target.platform.to_string(),
        runs_on,
        driver,
        size: file.size,
        sha256: file.sha256.to_string(),
        href,
        install,
    }
}

/// Writes `dir/index.html` from the entries in `dir` (their manifests), newest release
/// first; `base_url`: where the tree is served, for install lines that work as copied.
pub fn write(
    dir: &Path,
    base_url: Option<&str>,
    key: &minisign::PublicKey,
    key_note: &str,
) -> Result<()> {
    let (entries, _) = super::dir::entries(dir)?;
    let mut rows = Vec::new();
    // Only entries this key signed, each manifest the one listed: the page vouches for
    // nothing someone else put in the tree.
    for e in entries.iter().filter(|e| e.signed_by(key)) {
        for p in &e.listing.pairs {
            let path = e.dir.join(&p.manifest.name);
            let Ok(data) = crate::manifest::read_bytes(&path) else {
                continue;
            };
            if crate::digest::sha256_bytes(&data) != p.manifest.sha256 {
                continue;
            }
            let Ok(m) = crate::manifest::Manifest::parse(&data) else {
                continue;
            };
            rows.push(row(&m, e.listing.plan.as_str(), &p.artifact, base_url));
        }
    }
    rows.sort_by(|a, b| {
        (&b.version, &a.project, &a.flavour, &a.platform).cmp(&(
            &a.version,
            &b.project,
            &b.flavour,
            &b.platform,
        ))
    });
    // A temporary file of its own (made new, never through a name someone planted),
    // renamed over the page.
    let mut tmp = tempfile::Builder::new()
        .prefix(".index-")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, render(&rows, key_note).as_bytes())?;
    tmp.persist(dir.join("index.html"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_escaped() {
        let r = Row {
            project: "llama-cpp-python".into(),
            version: "0.3.36<script>alert(1)</script>".into(),
            flavour: "CUDA 13.0".into(),
            platform: "manylinux_2_28_x86_64".into(),
            runs_on: vec!["sm_120a: RTX 50 series".into()],
            driver: "580 or newer (linux)".into(),
            size: 26_400_000,
            sha256: "a".repeat(64),
            href: "p/x\".whl".into(),
            install: "pip install 'x'".into(),
        };
        let html = render(&[r], "key <ABC>");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("0.3.36&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("href=\"p/x&quot;.whl\""));
        assert!(html.contains("pip install &#39;x&#39;"));
        assert!(html.contains("key &lt;ABC&gt;"));
    }
}
