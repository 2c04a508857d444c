//! `cargo xtask release CONFIG`: the options; the run is [`crate::release::run`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::detect::Env;
use crate::release;

#[derive(Args)]
pub(crate) struct ReleaseArgs {
    /// The release file (TOML): recipe, versions, arch sets, CUDA releases, Pythons.
    pub config: PathBuf,
    /// Run only this cell (repeatable); the names are those `--github-matrix` prints.
    #[arg(long = "cell", conflicts_with = "index_only")]
    pub cells: Vec<String>,
    /// Cells to build at the same time. Each build already uses every core, so
    /// more than 1 helps only on large machines.
    #[arg(short = 'j', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Print the cells as a GitHub Actions matrix (JSON) and exit; builds nothing.
    #[arg(long, conflicts_with = "index_only")]
    pub github_matrix: bool,
    /// Build nothing: (re)write SHA256SUMS, simple/ and release.json from the
    /// cells' records in dist/ (the last job of a CI release).
    #[arg(long)]
    pub index_only: bool,
    /// Where artifacts go (default dist/).
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Compile every cell through this cache (`ccache` or `sccache`): a CI
    /// setting, not part of the release (it changes no byte).
    #[arg(long)]
    pub launcher: Option<crate::request::LauncherKind>,
    /// Build a release of more than 32 cells here (without it, such a release stops
    /// before it builds anything and says how many cells it has).
    #[arg(long)]
    pub yes: bool,
    /// Also publish each cell's artifacts into this substituter dir (`<dir>/<plan>/`,
    /// signed, with an index.html of every entry): `--index-only --cache-to` in CI.
    #[arg(long, value_name = "DIR")]
    pub cache_to: Option<PathBuf>,
    /// The minisign secret key --cache-to signs with (else LLAMA_FORGE_SIGNING_KEY).
    #[arg(long, value_name = "FILE", requires = "cache_to")]
    pub sign_key: Option<PathBuf>,
    /// The URL --cache-to's dir is served at, for the page's install lines.
    #[arg(long, value_name = "URL", requires = "cache_to")]
    pub cache_url: Option<String>,
}

pub(crate) fn run(args: &ReleaseArgs, env: &Env) -> Result<ExitCode> {
    release::run::run(
        &release::run::Request {
            config: args.config.clone(),
            cells: args.cells.clone(),
            jobs: args.jobs,
            github_matrix: args.github_matrix,
            index_only: args.index_only,
            dist: args.dist.clone(),
            launcher: args.launcher,
            yes: args.yes,
            publish: super::publish_to(
                args.cache_to.as_deref(),
                args.sign_key.as_deref(),
                args.cache_url.as_deref(),
                env,
            )?,
        },
        env,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::Recipe;
    use crate::release::Config;
    use crate::request::BuildRequest;
    use std::path::Path;

    fn env() -> Env {
        let mut e = Env::from_process();
        e.root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        e.recipes = crate::recipe::fixture_dir();
        e
    }

    /// Each cell builds the request the release file says: its version, arch
    /// set and CUDA release, and the file's options, into the release's dist.
    #[test]
    fn a_cells_build_request_is_what_the_release_file_says() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("src.tar.gz"), b"").unwrap();
        let source = d.path().join("src.tar.gz").canonicalize().unwrap();
        let cfg = Config::parse(
            "recipe = \"llama-cpp-python\"\narch = [\"cpu\", \"120,121\"]\ncuda = [\"13.1\"]\npython = [\"3.10\", \"313\"]\ncpu_baseline = \"x86-64-v3\"\nptx = true\nbundle_cuda_runtime = true\nsource = \"src.tar.gz\"\n",
            &d.path().join("x.toml"),
        )
        .unwrap();
        let env = env();
        let recipe = Recipe::find(&env.recipes, "llama-cpp-python").unwrap();
        let cells = release::expand(&cfg, &recipe).unwrap();
        let launcher = Some(crate::request::LauncherKind::Ccache);
        let dist = Path::new("/d/dist");
        let names: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
        let newest = recipe.release(None).unwrap().version.clone();
        assert_eq!(
            names,
            [
                // PTX and the bundled runtime are not in a CPU cell's name: they change no byte of it.
                format!("llama-cpp-python-{newest}-cpu-v3-x86_64-linux"),
                format!("llama-cpp-python-{newest}-cu13.1-120_121-v3-ptx-rt-x86_64-linux")
            ]
        );
        let want = |arch: &str, cuda: Option<&str>| BuildRequest {
            recipe: "llama-cpp-python".into(),
            release: Some(crate::request::ReleaseChoice::Exact(newest.clone())),
            recorded_source: None,
            target: crate::platform::Target::host(),
            accelerator: arch.parse().unwrap(),
            ptx: true,
            cuda: cuda.map(|c| c.parse().unwrap()),
            cuda_path: None,
            bundle_cuda_runtime: true,
            pythons: vec!["310".parse().unwrap(), "313".parse().unwrap()],
            cpu_baseline: "x86-64-v3".parse().unwrap(),
            source: Some(source.clone()),
            llama_cpp: None,
            force: false,
            recorded_llama_cpp: None,
            dist: Some(dist.to_path_buf()),
            host_cc: None,
            defaults: Vec::new(),
            substituters: Vec::new(),
            launcher,
            jobs: None,
            defines: Vec::new(),
        };
        assert_eq!(
            release::cell_request(&cfg, &cells[0], dist, launcher),
            want("cpu", None)
        );
        assert_eq!(
            release::cell_request(&cfg, &cells[1], dist, launcher),
            want("120,121", Some("13.1"))
        );
        // No launcher when the release is run without one.
        assert_eq!(
            release::cell_request(&cfg, &cells[0], dist, None).launcher,
            None
        );
    }
}
