//! Substituters: artifacts built once, fetched everywhere, addressed by the plan.
//!
//! A plan's hash covers everything that decides an artifact's bytes, and two machines
//! that make one plan build the same bytes; so a plan someone already built (a release
//! pipeline, a colleague, a team's CI) need not be built again. A substituter is a
//! static tree, any HTTP server or directory:
//!
//! ```text
//! <base>/<plan hash>/artifacts          the signed listing (`listing.rs`)
//! <base>/<plan hash>/artifacts.minisig  its minisign signature
//! <base>/<plan hash>/<artifact>         each artifact
//! <base>/<plan hash>/<artifact>.manifest.json
//! ```
//!
//! A build with `--cache-from <place>=<key>` asks each place in turn before it builds
//! (`fetch.rs`). An entry is used only where its listing is signed by the key named
//! beside the place, is for this very plan, every file has the listed size and sha256,
//! every manifest is this plan's, and each artifact passes `verify` as a build's own;
//! then it goes into dist/ as if built here. Anything else is one line, and the build
//! runs here. `--cache-to <dir>` (and `release --cache-to`) writes entries
//! (`publish.rs`), signed with the publisher's key (`keys.rs`).

pub mod dir;
pub mod fetch;
pub mod keys;
pub mod listing;
pub mod page;
pub mod publish;
