//! Questions answered without loading the charges: `summary` from the batches' rollups, the
//! ledger's overview from the manifest. A batch written before rollups (or with too many
//! groups for one) is answered from the columns of its part files that the answer needs,
//! a part file at a time, with the same result.

use std::collections::{BTreeMap, HashSet};

use rust_decimal::Decimal;

use super::rollup::Rollup;
use super::{Batch, LoadFilter, Manifest, Store, reader};
use crate::charge::YearMonth;
use crate::error::{Error, ErrorKind, Result};
use crate::report::{GroupKey, SummaryRow};

/// The columns of a part file a rollup is made from.
const ROLLUP_COLUMNS: [&str; 9] = [
    "account",
    "sub_account",
    "category",
    "kind",
    "currency",
    "instance_id",
    "resource_id",
    "billed_cost",
    "list_cost",
];

/// The ledger at a glance, from its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// The committed batches.
    pub manifest: Manifest,
    /// Charges in the ledger, payments included.
    pub charges: u64,
    /// Spend by month and platform (and currency), as [`crate::report::summarize`] by
    /// [`GroupKey::Month`] and [`GroupKey::Platform`] gives it.
    pub spend: Vec<SummaryRow>,
}

impl Store {
    /// The spend of the charges that pass `filter`, grouped by `keys` (and currency): what
    /// [`crate::report::summarize`] gives for [`Store::load`]'s charges, read from the batches'
    /// rollups instead of the charges.
    pub fn summary(&self, filter: &LoadFilter, keys: &[GroupKey]) -> Result<Vec<SummaryRow>> {
        let months: HashSet<YearMonth> = filter.months.iter().copied().collect();
        // Only a summary by instance needs the groups by instance and resource.
        let mut window = Rollup::unlimited(keys.contains(&GroupKey::Instance));
        for batch in self.manifest()?.batches {
            match &batch.rollup {
                Some(rel) => {
                    let unreadable = |e| reader::unreadable(e, &batch.id);
                    let path = self.backend.local(rel).map_err(unreadable)?;
                    window.read(&path, &months).map_err(unreadable)?;
                }
                None => self.rollup_of_parts(&batch, &months, &mut window)?,
            }
        }
        window.summarize(keys)
    }

    /// The batches, the number of charges and the spend by month and platform: from the
    /// manifest, and for a batch that did not record its spend, from its part files.
    pub fn overview(&self) -> Result<Overview> {
        let manifest = self.manifest()?;
        let mut by: BTreeMap<(String, String, String), (Decimal, Decimal, u64)> = BTreeMap::new();
        for batch in &manifest.batches {
            let spend = match &batch.spend {
                Some(spend) => spend.clone(),
                None => {
                    let mut rollup = Rollup::unlimited(false);
                    self.rollup_of_parts(batch, &HashSet::new(), &mut rollup)?;
                    rollup.spend().ok_or_else(|| overflow("the ledger's spend"))?
                }
            };
            for s in spend {
                let entry = by.entry((s.month, s.platform, s.currency)).or_default();
                entry.0 = crate::money::add(entry.0, s.billed_cost, "the ledger's spend")?;
                entry.1 = crate::money::add(entry.1, s.list_cost, "the ledger's spend")?;
                entry.2 += s.charges;
            }
        }
        let spend = by
            .into_iter()
            .map(|((month, platform, currency), (billed, list, charges))| SummaryRow {
                keys: vec![Some(month), Some(platform)],
                currency,
                billed_cost: billed,
                list_cost: list,
                charges,
            })
            .collect();
        let charges = manifest.batches.iter().map(|b| b.rows).sum();
        Ok(Overview { manifest, charges, spend: crate::report::sorted(spend) })
    }

    /// Upgrades the batches of `manifest` written before rollups (they record no spend): each
    /// gets its spend and, when it is small enough, a rollup, written and published. Run by
    /// the first commit of a ledger of before commits (see `log`), so that an older ledger is
    /// summed from its part files once, not at every summary.
    pub(super) fn upgrade_batches(&self, manifest: &mut Manifest) -> Result<()> {
        for batch in manifest.batches.iter_mut().filter(|b| b.spend.is_none()) {
            let mut rollup = Rollup::new();
            self.rollup_of_parts(batch, &HashSet::new(), &mut rollup)?;
            batch.spend = rollup.spend();
            if rollup.is_whole() && !batch.files.is_empty() {
                let name = format!("{}/{}.parquet", super::ROLLUPS, batch.id);
                let staged = self.backend.stage(&name);
                super::backend::make_parent(&staged)?;
                rollup.write(&staged)?;
                self.backend.publish(&name)?;
                self.backend.settle(std::iter::once(name.as_str()))?;
                batch.rollup = Some(name);
            }
        }
        Ok(())
    }

    /// Adds to `into` the spend of `batch`'s part files of `months` (all when empty), read
    /// a part file at a time.
    fn rollup_of_parts(
        &self,
        batch: &Batch,
        months: &HashSet<YearMonth>,
        into: &mut Rollup,
    ) -> Result<()> {
        for part in &batch.files {
            let shown = self.backend.shown(&part.path);
            let bad = |m: String| reader::unreadable(Error::ledger(&shown, m), &batch.id);
            let month: YearMonth = part.month.parse().map_err(bad)?;
            if !months.is_empty() && !months.contains(&month) {
                continue;
            }
            let path =
                self.backend.local(&part.path).map_err(|e| reader::unreadable(e, &batch.id))?;
            let columns = ROLLUP_COLUMNS.iter().map(|c| (*c).to_owned()).collect();
            let frame = reader::read_parquet(&path, Some(columns))
                .map_err(|e| reader::unreadable(e, &batch.id))?;
            into.add_frame(month, &part.platform, &frame).map_err(|e| bad(e.to_string()))?;
        }
        Ok(())
    }
}

fn overflow(what: &str) -> Error {
    ErrorKind::Overflow { what: what.to_owned() }.into()
}
