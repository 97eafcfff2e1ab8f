//! The registry of built-in profiles.
//!
//! A profile ([`crate::import::spec::Profile`]) knows one bill format: the aliases of its
//! columns (never positions), its time zone, and how a row becomes a charge. Detection
//! scores every profile against the first rows of a file (see `header`).

use crate::import::spec::Profile;

/// Every built-in profile, in detection order (compiled from `crates/core/profiles/*.toml`).
pub fn profiles() -> &'static [&'static Profile] {
    crate::import::spec::builtin()
}

/// The built-in profile called `name`.
pub fn profile_by_name(name: &str) -> Option<&'static Profile> {
    profiles().iter().copied().find(|p| p.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_are_unique_and_found_by_name() {
        for p in profiles() {
            assert_eq!(profile_by_name(p.name()).map(|q| q.name()), Some(p.name()));
            assert!(p.columns().iter().any(|c| c.required), "{} has a required column", p.name());
        }
        assert!(profile_by_name("nope").is_none());
    }
}
