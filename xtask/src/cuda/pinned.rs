//! The CUDA releases the tool can assemble from the package index, and the order plans
//! take them in: facts the planner, detection and provisioning all read.

/// The CUDA releases assembled from pinned wheels of the package index
/// (`toolchains/cuda-*.toml`), newest first; plans take them in [`offer_order`].
pub const PINNED_RELEASES: [&str; 6] = ["13.5", "13.4", "13.3", "13.2", "13.1", "13.0"];

/// The pinned releases that passed the device token check: a llama-cpp-python
/// wheel built with the release, run on a GPU, gave the CPU's greedy tokens at the
/// tok/s of a pip-built wheel (13.0, BENCHMARKS.md "Device token check") or of the
/// 13.0 wheel in the same run (13.5, "CUDA 13.5 on the GPU"). A release joins this
/// list only with such a run recorded there.
pub const GPU_CHECKED: &[&str] = &["13.5", "13.0"];

/// The release a plan takes from the package index when no installed toolkit can
/// build it, and the one messages suggest: the newest that passed the GPU check.
pub fn default_release() -> &'static str {
    offer_order().next().expect("GPU_CHECKED is not empty")
}

/// The order the pinned releases are offered in, after every toolkit installed
/// here (`detect::toolkits::hermetic_offers`): those that passed the GPU check,
/// newest first, then the others, newest first, which a plan takes only for
/// targets no checked release can emit (with a warning), or when `--cuda` names one.
pub fn offer_order() -> impl Iterator<Item = &'static str> {
    let checked = |r: &&str| GPU_CHECKED.contains(r);
    let first = PINNED_RELEASES.into_iter().filter(checked);
    first.chain(PINNED_RELEASES.into_iter().filter(move |r| !checked(r)))
}
