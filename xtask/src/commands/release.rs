//! `cargo xtask release CONFIG`: the options; the run is [`crate::release::run`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::detect::Env;
use crate::release;

#[derive(Args)]
pub struct ReleaseArgs {
    /// The release file (TOML): recipe, versions, arch sets, CUDA releases, Pythons.
    pub config: PathBuf,
    /// Run only this cell (repeatable); the names are those `--github-matrix` prints.
    #[arg(long = "cell", conflicts_with = "index_only")]
    pub cells: Vec<String>,
    /// Cells to build at the same time. Each build already uses every core, so
    /// more than 1 helps only on large machines.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
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
    pub launcher: Option<crate::plan::launcher::LauncherKind>,
}

pub fn run(args: &ReleaseArgs, env: &Env) -> Result<ExitCode> {
    release::run::run(
        &release::run::Request {
            config: args.config.clone(),
            cells: args.cells.clone(),
            jobs: args.jobs,
            github_matrix: args.github_matrix,
            index_only: args.index_only,
            dist: args.dist.clone(),
            launcher: args.launcher,
        },
        env,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::{ArtifactKind, Recipe};
    use crate::release::Config;
    use clap::Parser;
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

    /// The child's command line parses back into the same options.
    #[test]
    fn child_argv_round_trips() {
        let cfg = Config::parse(
            "recipe = \"llama-cpp-python\"\narch = [\"cpu\", \"120,121\"]\ncuda = [\"13.1\"]\npython = [\"3.10\", \"313\"]\ncpu_baseline = \"x86-64-v3\"\nptx = true\nbundle_cuda_runtime = true\n",
            Path::new("x.toml"),
        )
        .unwrap();
        let env = env();
        let recipe = Recipe::find(&env.recipes, "llama-cpp-python").unwrap();
        let cells = release::expand(&cfg, &recipe).unwrap();
        let launcher = Some(crate::plan::launcher::LauncherKind::Ccache);
        let dist = Path::new("/d/dist");
        for cell in &cells {
            let a = release::cell_request(&cfg, cell, dist, launcher);
            let argv = release::child_argv(ArtifactKind::Wheel, &a);
            assert_eq!(argv[0], "wheel");
            let cli = super::super::Cli::try_parse_from(
                std::iter::once("xtask".to_string()).chain(argv.clone()),
            )
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let super::super::Command::Wheel(b) = cli.command else {
                panic!("not wheel")
            };
            assert_eq!(b.request(), a, "{argv:?}");
        }
        assert_eq!(
            release::command_line(ArtifactKind::Wheel, &release::cell_request(&cfg, &cells[1], dist, launcher)),
            "cargo xtask wheel llama-cpp-python --version 0.3.36 --arch 120,121 --ptx --cuda 13.1 --bundle-cuda-runtime --py 310,313 --cpu-baseline x86-64-v3 --dist /d/dist --launcher ccache"
        );
    }
}
