//! The zone each platform cuts its days and months in, as the profile that imported it says.
//!
//! A platform's zone is a fact of its bills, known to the profile that read them; the rules
//! get it from here rather than looking a profile up by name, so that a user profile's
//! platform is cut in the user profile's zone (`zone = "Asia/Shanghai"`), not in UTC. The
//! ledger records the zone of every file it imports ([`crate::ledger::Store::zones`]);
//! [`Zones::with_profiles`] gives the zones of a list of profiles; a platform no one names is
//! cut in UTC.

use std::collections::BTreeMap;

use chrono_tz::Tz;

use crate::import::Profile;

/// The zones of platforms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zones {
    by_platform: BTreeMap<String, Tz>,
}

impl Default for Zones {
    /// The zones of the built-in profiles.
    fn default() -> Self {
        Zones::with_profiles(crate::import::profiles())
    }
}

impl Zones {
    /// No platform known: every platform is cut in UTC.
    pub fn none() -> Self {
        Zones { by_platform: BTreeMap::new() }
    }

    /// The zones of `profiles`, a later one winning for a platform named twice.
    pub fn with_profiles(profiles: &[&'static dyn Profile]) -> Self {
        let mut zones = Zones::none();
        for p in profiles {
            zones.insert(p.platform(), p.zone());
        }
        zones
    }

    /// Says that `platform` is cut in `zone`.
    pub fn insert(&mut self, platform: &str, zone: Tz) {
        self.by_platform.insert(platform.to_owned(), zone);
    }

    /// Adds the zones of `other`, which win where both name a platform.
    pub fn extend(&mut self, other: &Zones) {
        for (platform, zone) in &other.by_platform {
            self.by_platform.insert(platform.clone(), *zone);
        }
    }

    /// The zone of `platform`: UTC when no one said.
    pub fn of(&self, platform: &str) -> Tz {
        self.by_platform.get(platform).copied().unwrap_or(chrono_tz::UTC)
    }
}
