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
    /// The facts of each platform: those the ledger recorded when it imported it, over those
    /// of `profiles` (the profiles in use; a file imported before the facts were recorded says
    /// nothing). What [`Store::audit`] and [`Store::reconcile`] take.
    pub fn platforms_over(
        &self,
        profiles: &[&'static crate::import::Profile],
    ) -> Result<Platforms> {
        let mut platforms = Platforms::of_profiles(profiles);
        platforms.extend(&self.platforms()?);
        Ok(platforms)
    }

    /// The waste findings of `month` by `rules`: reads the month and its look-back
    /// ([`waste::months_to_read`]), each platform cut in its zone from `platforms`
    /// ([`Store::platforms_over`]).
    pub fn audit(
        &self,
        month: YearMonth,
        config: &Config,
        rules: &[&dyn Rule],
        platforms: &Platforms,
    ) -> Result<Vec<Finding>> {
        let window =
            self.load_rows(&LoadFilter { months: waste::months_to_read(month, config) })?;
        waste::audit_rows(rules, &window, month, config, platforms)
    }

    /// The cost report of `month` ([`crate::cost`]): reads the month, and for a comparison
    /// the months of [`crate::cost::months_to_read`], each platform cut in its zone from
    /// `platforms` ([`Store::platforms_over`]).
    pub fn cost(
        &self,
        month: YearMonth,
        config: &Config,
        platforms: &Platforms,
        options: &crate::cost::CostOptions,
    ) -> Result<crate::cost::CostReport> {
        let months = crate::cost::months_to_read(month, options.compare);
        let window = self.load_rows(&LoadFilter { months })?;
        crate::cost::report_rows(&window, month, config, platforms, options)
    }

    /// The discrepancies of `month` by `checks`: reads the months around it
    /// ([`reconcile::months_to_read`]) and the footer totals of every file that billed it
    /// (once per file, however often it was imported), with the platform facts of
    /// `input.platforms` ([`Store::platforms_over`]).
    pub fn reconcile(
        &self,
        month: YearMonth,
        checks: &[&dyn Check],
        mut input: ReconcileInput,
    ) -> Result<Vec<Discrepancy>> {
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
        let window = self.load_rows(&LoadFilter { months: reconcile::months_to_read(month) })?;
        reconcile::check_rows(checks, &window, month, &input)
    }
}
