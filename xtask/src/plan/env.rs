//! The plan's environment: the whole environment of every command, nothing inherited.

use crate::plan::setting::{decided, policy, Setting};
use crate::platform::Platform;

/// The platform's variables (PATH and the locale, or the MSVC toolset's
/// environment), the time zone and SOURCE_DATE_EPOCH (`date`).
pub fn env(platform: &Platform, date: u64) -> Vec<Setting> {
    let sde = policy(
        "SOURCE_DATE_EPOCH",
        date.to_string(),
        "the release's date (the recipe's `date`: when its source was published): tools that stamp times use it instead of the clock",
    );
    let tz = policy(
        "TZ",
        "UTC",
        "no local time zone in anything the build writes",
    );
    let mut env = decided(platform.base_env());
    env.push(tz);
    env.push(sde);
    env
}
