//! The library's use cases over a ledger: auditing a month for waste and reconciling it, each
//! reading the months its rules need (chosen by the rules' own modules) and handing the rules
//! what the ledger knows of each platform. A program parses its arguments, calls one of these
//! and renders what comes back.

use std::sync::Arc;

use super::reader::Reading;
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
    /// ([`Store::platforms_over`]). Each finding's bill lines show where they were read
    /// ([`waste::Evidence`]: file and line).
    pub fn audit(
        &self,
        month: YearMonth,
        config: &Config,
        rules: &[&dyn Rule],
        platforms: &Platforms,
    ) -> Result<Vec<Finding>> {
        Ok(self.audit_judged(month, config, rules, platforms, true)?.findings)
    }

    /// [`Store::audit`] for an output that does not show where each bill line was read
    /// (the CLI's CSV, its tables without `--explain`): the same findings, of the same
    /// lines, ids, items and amounts, but the files and lines of the charges are not read,
    /// and each [`waste::Evidence`] has an empty `file` and `line` 0. No rule reads them:
    /// they are evidence only, which the ledger reads only for an output that shows it.
    pub fn audit_without_evidence(
        &self,
        month: YearMonth,
        config: &Config,
        rules: &[&dyn Rule],
        platforms: &Platforms,
    ) -> Result<Vec<Finding>> {
        Ok(self.audit_judged(month, config, rules, platforms, false)?.findings)
    }

    /// [`Store::audit`] (with `evidence`) or [`Store::audit_without_evidence`], with the
    /// money the rules could not judge ([`waste::Audit`]).
    pub fn audit_judged(
        &self,
        month: YearMonth,
        config: &Config,
        rules: &[&dyn Rule],
        platforms: &Platforms,
        evidence: bool,
    ) -> Result<waste::Audit> {
        let months = waste::months_to_read(month, config);
        let mut window = self.audit_window(month, months, evidence)?;
        // The ledger's inventory snapshots say what the bills do not: their links first.
        let inventory = crate::inventory::Inventory::of(&self.inventory_snapshots()?);
        inventory.link_rows(&mut window);
        waste::audit_inventory(rules, &Arc::new(window), month, config, platforms, &inventory)
    }

    /// The window an audit of `month` reads: `months`, of the look-back only compute.
    fn audit_window(
        &self,
        month: YearMonth,
        months: Vec<YearMonth>,
        evidence: bool,
    ) -> Result<crate::window::Window> {
        // Of the look-back, only compute is kept (as every window kept in part keeps it):
        // timelines and plan prices are made of it, and of the rest the rules need only the
        // time it covers and when each resource was first charged (the window's `left_out`).
        // Most of a window is the look-back's disks, IPs and traffic.
        let keep = |r: &crate::window::Row, _: Option<&_>| r.billing_period == month;
        // No rule reads a unit or a GPU count, and findings rest on the month's charges
        // only: of the look-back, ids, files and lines are not read (nor of the month its
        // files and lines, unless the evidence is shown).
        let only = Some(std::slice::from_ref(&month));
        let lines = if evidence { only } else { Some(&[][..]) };
        // Of the other months only compute is kept: their look-back files hold it.
        let look_back = Some(month);
        let reading = Reading { usage: false, ids: only, lines, look_back, ..Reading::all(false) };
        self.load_lean(&LoadFilter { months }, reading, &keep)
    }

    /// The cost report of `month` ([`crate::cost`]): reads the month, and for a comparison
    /// the months of [`crate::cost::months_to_read`], each platform cut in its zone from
    /// `platforms` ([`Store::platforms_over`]). The window it reports from holds no charge
    /// ids, files or lines, and of the amounts only the quantity (all the report reads).
    pub fn cost(
        &self,
        month: YearMonth,
        config: &Config,
        platforms: &Platforms,
        options: &crate::cost::CostOptions,
    ) -> Result<crate::cost::CostReport> {
        let months = crate::cost::months_to_read(month, options.compare);
        // The cost report reads no charge's id, file or line, and of its amounts only the
        // quantity.
        let none = Some(&[][..]);
        let reading = Reading { quantity_only: true, ids: none, lines: none, ..Reading::all(true) };
        let mut window = self.load_lean(&LoadFilter { months }, reading, &|_, _| true)?;
        // Disks, IPs and snapshots the inventory links to their instances are theirs.
        crate::inventory::Inventory::of(&self.inventory_snapshots()?).link_rows(&mut window);
        crate::cost::report_rows(&window, month, config, platforms, options)
    }

    /// The month's review (`gpuaudit report`): its waste findings by every rule, its
    /// discrepancies by every check, and its cost lines grouped by `by`, each exactly as
    /// [`Store::audit`], [`Store::reconcile`] and [`Store::cost`] give them, from one read
    /// of the months they need (each use gets the months it reads, linked as it would be).
    pub fn review(
        &self,
        month: YearMonth,
        config: &Config,
        platforms: &Platforms,
        by: &[crate::cost::CostKey],
    ) -> Result<Review> {
        let mut months = waste::months_to_read(month, config);
        months.extend(reconcile::months_to_read(month));
        months.sort();
        months.dedup();
        // Of the three uses only waste reads charge ids, of the month's charges.
        let reading = Reading { ids: Some(std::slice::from_ref(&month)), ..Reading::all(true) };
        let mut all = self.load_rows_unlinked(&LoadFilter { months }, reading, &|_, _| true)?;
        // The rows the whole window's linking links: a use reading fewer months gets its
        // rows with these unlinked again, linked among themselves, as its own read would.
        let unlinked: Vec<bool> = all.rows.iter().map(|r| r.instance_id.is_none()).collect();
        crate::window::link_rows(&mut all.rows);
        // The inventory's links too, as `audit` and `cost` make them.
        let inventory = crate::inventory::Inventory::of(&self.inventory_snapshots()?);
        inventory.link_rows(&mut all);
        let all = Arc::new(all);
        let window_for = |wanted: &[YearMonth]| {
            let read = |r: &crate::window::Row| wanted.contains(&r.billing_period);
            if all.rows.iter().all(read) {
                return Arc::clone(&all);
            }
            let mut w = all.subset(read);
            let kept = all.rows.iter().zip(&unlinked).filter(|(r, _)| read(r));
            for (row, (_, &was_unlinked)) in w.rows.iter_mut().zip(kept) {
                if was_unlinked {
                    row.instance_id = None;
                }
            }
            crate::window::link_rows(&mut w.rows);
            inventory.link_rows(&mut w);
            Arc::new(w)
        };
        // One use at a time, each window of its own dropped after it (but the findings',
        // whose bill lines are places in it).
        let options = crate::cost::CostOptions { by: by.to_vec(), compare: false };
        let cost =
            crate::cost::report_rows(&window_for(&[month]), month, config, platforms, &options)?;
        let input = self.reconcile_input(
            month,
            ReconcileInput {
                config: config.clone(),
                platforms: platforms.clone(),
                ..Default::default()
            },
        )?;
        let around = window_for(&reconcile::months_to_read(month));
        let discrepancies = reconcile::check_rows(reconcile::CHECKS, &around, month, &input)?;
        drop(around);
        let look_back = window_for(&waste::months_to_read(month, config));
        let findings =
            waste::audit_inventory(waste::RULES, &look_back, month, config, platforms, &inventory)?
                .findings;
        Ok(Review { findings, discrepancies, cost })
    }

    /// The discrepancies of `month` by `checks`: reads the months around it
    /// ([`reconcile::months_to_read`]) and the footer totals of every file that billed it
    /// (once per file, however often it was imported), with the platform facts of
    /// `input.platforms` ([`Store::platforms_over`]).
    pub fn reconcile(
        &self,
        month: YearMonth,
        checks: &[&dyn Check],
        input: ReconcileInput,
    ) -> Result<Vec<Discrepancy>> {
        let input = self.reconcile_input(month, input)?;
        // Of the months around, only what a check reads is kept: the rows with a balance
        // (R004 follows whole files), and compute (which rows link to their instances by).
        let keep = |r: &crate::window::Row, a: Option<&crate::window::Amounts>| {
            r.billing_period == month || a.is_some_and(|a| a.balance_after().is_some())
        };
        let months = LoadFilter { months: reconcile::months_to_read(month) };
        // No check reads a charge's id, unit or GPU count. Of the other months only compute
        // and rows with a balance are kept: their look-back files hold them.
        let look_back = Some(month);
        // Nor files and lines, when every check names charges through its context: those a
        // discrepancy names are read after the checks ran (`origins`).
        let later = checks.iter().all(|c| c.lines_through_context());
        let lines = if later { Some(&[][..]) } else { None };
        let reading = Reading {
            usage: false,
            ids: Some(&[]),
            lines,
            lines_later: later,
            look_back,
            ..Reading::all(true)
        };
        let window = self.load_lean(&months, reading, &keep)?;
        reconcile::check_rows(checks, &window, month, &input)
    }

    /// `input` with the footer totals of every file that billed `month` (once per file,
    /// however often it was imported).
    fn reconcile_input(
        &self,
        month: YearMonth,
        mut input: ReconcileInput,
    ) -> Result<ReconcileInput> {
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
        Ok(input)
    }
}

/// A month's review: what [`Store::review`] gives.
#[derive(Debug)]
pub struct Review {
    /// The waste findings, largest first.
    pub findings: Vec<Finding>,
    /// The discrepancies.
    pub discrepancies: Vec<Discrepancy>,
    /// The cost report.
    pub cost: crate::cost::CostReport,
}
