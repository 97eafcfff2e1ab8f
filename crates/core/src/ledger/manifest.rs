//! The list of committed batches, as the commits make it (see `log`; a ledger of before
//! commits holds it as `manifest.json`).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::charge::ControlTotal;

/// The list of committed batches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of the manifest (1).
    pub version: u32,
    /// Batches, oldest first.
    pub batches: Vec<Batch>,
}

/// One committed import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// Unique id: UTC time and a random suffix.
    pub id: String,
    /// When it was committed (RFC 3339, UTC).
    pub created: String,
    /// The files read.
    pub sources: Vec<SourceFile>,
    /// Charges added.
    pub rows: u64,
    /// Billing months the batch added charges to.
    pub months: Vec<String>,
    /// Parquet files written, relative to the ledger folder.
    pub files: Vec<PartFile>,
    /// Reject files written, relative to the ledger folder.
    pub rejects: Vec<String>,
    /// The batch's rollup (its spend summed by every key a summary asks for), relative to
    /// the ledger folder; absent for a batch written before rollups, or with too many groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollup: Option<String>,
    /// The batch's spend by month, platform and currency (payments left out); absent for a
    /// batch written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<Vec<Spend>>,
    /// The batch's look-back files, a pair per partition that has them (see `look_back`):
    /// what `waste` and `reconcile` read of the partition when its month is not the one
    /// audited. None for a batch written before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub look_back: Vec<LookBack>,
    /// The inventory snapshots the batch added (`gpuaudit inventory import`), one file each,
    /// relative to the ledger folder; a batch of bills has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<String>,
}

impl Batch {
    /// Every file the batch names, relative to the ledger folder: its part files, rejects,
    /// rollup, look-back and inventory files.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        let look_back = self.look_back.iter().flat_map(LookBack::names);
        let files = self.files.iter().map(|p| &p.path).chain(&self.rejects);
        files.chain(&self.rollup).chain(look_back).chain(&self.inventory)
    }
}

/// What a window reads of a partition of a batch (a month and platform) when the month is
/// not the one audited: the rows every look-back keeps, and what the others tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookBack {
    /// Billing month of the partition.
    pub month: String,
    /// Platform of the partition.
    pub platform: String,
    /// The partition's compute charges and charges with a balance, in the order of its part
    /// files, with every column of a part file, in files of a few part files' shares each.
    pub files: Vec<LookBackFile>,
    /// What the partition's other charges tell (per resource, its first start and last
    /// end; and the earliest start and latest end of them all), relative to the ledger
    /// folder.
    pub facts: String,
    /// How many other charges the partition holds.
    pub left_out: u64,
}

impl LookBack {
    /// Its files, relative to the ledger folder.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.files.iter().map(|f| &f.path).chain(std::iter::once(&self.facts))
    }

    /// How many part files' shares its files hold.
    pub fn parts(&self) -> usize {
        self.files.iter().map(|f| f.rows.len()).sum()
    }
}

/// A file of a [`LookBack`]'s kept charges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookBackFile {
    /// Relative to the ledger folder.
    pub path: String,
    /// How many charges of each part file it holds (the part files after those of the
    /// files before it), one row group each.
    pub rows: Vec<u64>,
}

impl LookBackFile {
    /// How many charges it holds.
    pub fn charges(&self) -> u64 {
        self.rows.iter().sum()
    }
}

/// The spend of a batch in one month, platform and currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spend {
    /// Billing month.
    pub month: String,
    /// Platform.
    pub platform: String,
    /// Currency.
    pub currency: String,
    /// Sum of billed cost.
    pub billed_cost: Decimal,
    /// Sum of list cost (billed cost where the bill gives none).
    pub list_cost: Decimal,
    /// Number of charges.
    pub charges: u64,
}

/// A bill file read by a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// The path as given on the command line.
    pub path: String,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// The profile that read it.
    pub profile: String,
    /// The platform of its charges (absent in ledgers made before it was recorded: the
    /// profile's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The zone the profile cut its days and months in (IANA name; absent in ledgers made
    /// before it was recorded: a built-in profile's zone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Data rows read.
    pub rows_read: u64,
    /// Charges new to the ledger.
    pub new: u64,
    /// Charges already in the ledger.
    pub duplicates: u64,
    /// Rows rejected.
    pub rejected: u64,
    /// Footer control totals.
    pub control_totals: Vec<ControlTotal>,
    /// What the file's spend rows add up to, per currency (all rows read, new or not).
    #[serde(default)]
    pub totals: BTreeMap<String, Decimal>,
    /// Billing months of the file's rows.
    #[serde(default)]
    pub months: Vec<String>,
}

/// One Parquet part file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFile {
    /// Path relative to the ledger folder.
    pub path: String,
    /// Billing month of its charges.
    pub month: String,
    /// Platform of its charges.
    pub platform: String,
    /// Number of charges.
    pub rows: u64,
}
