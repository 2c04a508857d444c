//! The plan's environment: the whole environment of every command, nothing inherited.

use crate::plan::setting::{policy, Setting};
use crate::platform::host::Compiler;
use crate::platform::msvc::env::MsvcToolsetEnv;
use crate::platform::msvc::plan::msvc_env;

/// PATH (the compiler's dir and the system dirs, or the MSVC toolset's), the locale,
/// the time zone and SOURCE_DATE_EPOCH (`date`).
pub fn env(compiler: &Compiler, msvc: Option<&MsvcToolsetEnv>, date: u64) -> Vec<Setting> {
    let sde = policy(
        "SOURCE_DATE_EPOCH",
        date.to_string(),
        "the source's own date: tools that stamp times use it instead of the clock",
    );
    let tz = policy(
        "TZ",
        "UTC",
        "no local time zone in anything the build writes",
    );
    match msvc {
        None => {
            let mut path_dirs: Vec<String> = Vec::new();
            for d in [
                compiler.cxx.parent(),
                Some(std::path::Path::new("/usr/bin")),
                Some(std::path::Path::new("/bin")),
            ]
            .into_iter()
            .flatten()
            {
                let d = d.display().to_string();
                if !d.is_empty() && !path_dirs.contains(&d) {
                    path_dirs.push(d);
                }
            }
            vec![
                policy(
                    "PATH",
                    path_dirs.join(":"),
                    "the build sees no user PATH: the compiler's dir (for its assembler and linker) and the system dirs",
                ),
                policy("LC_ALL", "C", "compiler messages and sorting independent of the user's locale"),
                tz,
                sde,
            ]
        }
        Some(t) => {
            let mut env: Vec<Setting> = msvc_env(t)
                .into_iter()
                .map(|(name, value, reason)| policy(name, value, reason))
                .collect();
            env.push(tz);
            env.push(sde);
            env
        }
    }
}
