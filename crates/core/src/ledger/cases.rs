//! The library's use cases over a ledger: auditing a month for waste and reconciling it, each
//! reading the months its rules need (chosen by the rules' own modules) and handing the rules
//! what the ledger knows of each platform. A program parses its arguments, calls one of these
//! and renders what comes back.

use super::{LoadFilter, Store};
use crate::charge::YearMonth;
use crate::config::Config;
use crate::error::Result;
use crate::platforms::Platforms;
use crate::reconcile::{self, Check, Discrepancy, ReconcileInput, footers_of};
use crate::waste::{self, Finding, Rule};

impl Store {
    /// The waste findings of `month` by `rules`: reads the month and its look-back
    /// ([`waste::months_to_read`]), each platform cut in the zone the ledger recorded for it,
    /// over `platforms` (the facts of the profiles in use).
    pub fn audit(
        &self,
        month: YearMonth,
        config: &Config,
        rules: &[&dyn Rule],
        platforms: &Platforms,
    ) -> Result<Vec<Finding>> {
        let charges = self.load(&LoadFilter { months: waste::months_to_read(month, config) })?;
        let mut platforms = platforms.clone();
        platforms.extend(&self.platforms()?);
        waste::audit_in(rules, &charges, month, config, &platforms)
    }

    /// The discrepancies of `month` by `checks`: reads the months around it
    /// ([`reconcile::months_to_read`]) and the footer totals of every file that billed it
    /// (once per file, however often it was imported), with the ledger's platform facts over
    /// `input.platforms`.
    pub fn reconcile(
        &self,
        month: YearMonth,
        checks: &[&dyn Check],
        mut input: ReconcileInput,
    ) -> Result<Vec<Discrepancy>> {
        input.platforms.extend(&self.platforms()?);
        let mut seen = std::collections::HashSet::new();
        for source in self.manifest()?.batches.iter().flat_map(|b| &b.sources) {
            if source.months.contains(&month.to_string()) && seen.insert(source.sha256.clone()) {
                let platform = source.platform.as_deref().unwrap_or(&source.profile);
                input.footers.extend(footers_of(
                    &source.path,
                    platform,
                    &source.control_totals,
                    &source.totals,
                ));
            }
        }
        let charges = self.load(&LoadFilter { months: reconcile::months_to_read(month) })?;
        reconcile::check_with(checks, &charges, month, &input)
    }
}
