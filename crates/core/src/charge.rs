//! The ledger line: [`Charge`] and the small types it is made of.
//!
//! A charge is one validated line of a bill, with its provenance. Money is
//! [`rust_decimal::Decimal`] throughout; instants are UTC; the platform's own zone is used
//! only to cut days and months, when the profile builds the charge.
//!
//! This module knows nothing of files, profiles or storage.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

pub use crate::month::YearMonth;
pub(crate) use crate::month::local_midnight;

/// The most decimal places a stored figure may carry. The store keeps every money and
/// quantity column as DECIMAL(38, 12): bills carry at most 8 decimals in unit prices, and a
/// figure with more is rejected at import rather than rounded.
pub const MAX_SCALE: u32 = 12;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value's name as stored and printed (snake_case).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!("{s:?} is not a {}", stringify!($name))),
                }
            }
        }
    };
}

string_enum! {
    /// What a charge paid for.
    Category {
        /// GPU/CPU instance time.
        Compute = "compute",
        /// The instance's system (boot) disk.
        SystemDisk = "system_disk",
        /// A data disk, attached or not.
        DataDisk = "data_disk",
        /// Snapshots and custom images.
        Snapshot = "snapshot",
        /// Public IP addresses and bandwidth caps.
        PublicIp = "public_ip",
        /// Data transfer billed per GB.
        Traffic = "traffic",
        /// File or object storage not tied to an instance.
        Storage = "storage",
        /// Anything else (taxes, support, payments).
        Other = "other",
    }
}

string_enum! {
    /// What sort of money movement a charge is.
    Kind {
        /// Consumption of a resource.
        Usage = "usage",
        /// A subscription order or renewal.
        Purchase = "purchase",
        /// Money given back (negative).
        Refund = "refund",
        /// A credit, voucher or gift (negative).
        Credit = "credit",
        /// A correction by the platform.
        Adjustment = "adjustment",
        /// Tax.
        Tax = "tax",
        /// A top-up of the account: never spend.
        Payment = "payment",
    }
}

string_enum! {
    /// How the resource was priced.
    Pricing {
        /// Pay as you go.
        OnDemand = "on_demand",
        /// Weekly, monthly or yearly plan.
        Subscription = "subscription",
        /// Spot / preemptible capacity.
        Spot = "spot",
        /// Reserved capacity or commitment discounts.
        Reserved = "reserved",
        /// The bill does not say.
        Unknown = "unknown",
    }
}

/// Unclassified charges are `other`.
impl Default for Category {
    fn default() -> Self {
        Category::Other
    }
}

/// A charge is `usage` unless a rule says otherwise.
impl Default for Kind {
    fn default() -> Self {
        Kind::Usage
    }
}

/// Pricing is `unknown` unless the bill says.
impl Default for Pricing {
    fn default() -> Self {
        Pricing::Unknown
    }
}

/// The money a unit price multiplies to (a profile's `unit_price_of`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitPriceOf {
    /// The list cost where the row has one, else the billed cost.
    #[default]
    ListCost,
    /// The billed cost.
    BilledCost,
}

/// A control total found in a footer row of a bill (合计/总计/小计/Total).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ControlTotal {
    /// 1-based line of the footer row.
    pub line: u64,
    /// The footer's label, such as `合计`.
    pub label: String,
    /// The figure in the footer's billed-cost column, if it has one.
    pub amount: Option<Decimal>,
}

/// The stable identity of a charge: 128 bits of XXH3 over the fields that identify it.
///
/// It is the hash of (platform, account, the row's native id) where the format has one
/// (流水号, RecordID …), else of every normalised field of the charge, the non-empty cells of
/// the columns the profile does not read (by header name), and the occurrence number of that
/// exact row in its file. Importing the same rows again gives the same ids, from one file or
/// from the parts of a split export, in any order; rows that differ in any cell of the bill
/// stay apart. A later export that adds a column with values gives its rows new identities
/// (they would be imported again beside the old ones: import such an export into a ledger of
/// its own, or remove the older batch first with `gpuaudit ledger --remove`); an added column
/// left empty changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChargeId(pub u128);

impl ChargeId {
    /// The identity of a row that has a native id in its format.
    pub fn from_native(platform: &str, account: Option<&str>, native: &str) -> Self {
        let mut h = IdHasher::new("native");
        h.field(platform);
        h.field(account.unwrap_or(""));
        h.field(native);
        h.finish()
    }

    /// The identity of a row without a native id: the hash of all its normalised fields
    /// ([`ChargeId::content_key`]) and the occurrence number of identical rows before it in
    /// the same file.
    pub fn from_content(content_key: u128, occurrence: u32) -> Self {
        let mut h = IdHasher::new("fields");
        h.bytes(&content_key.to_le_bytes());
        h.bytes(&occurrence.to_le_bytes());
        h.finish()
    }

    /// The hash of a charge's platform, account and every normalised field (not its id nor
    /// where it was read): equal for identical rows.
    pub fn content_key(charge: &Charge) -> u128 {
        ChargeId::content_key_with(charge, None)
    }

    /// [`ChargeId::content_key`] with the hash of the row's cells that the charge does not
    /// carry ([`crate::import::Parsed::unmapped`]); `None` gives the plain content key.
    pub fn content_key_with(charge: &Charge, unmapped: Option<u128>) -> u128 {
        ChargeId::content_key_as(&charge.platform, charge, unmapped)
    }

    /// [`ChargeId::content_key_with`] hashed with `platform` in place of the charge's (the
    /// profile's own platform, for a row whose platform comes from the provider it names).
    pub fn content_key_as(platform: &str, charge: &Charge, unmapped: Option<u128>) -> u128 {
        let mut h = IdHasher::new("content");
        h.field(platform);
        h.field(charge.account.as_deref().unwrap_or(""));
        charge.hash_content(&mut h);
        if let Some(cells) = unmapped {
            h.field("unmapped");
            h.bytes(&cells.to_le_bytes());
        }
        h.finish().0
    }
}

#[path = "charge_hex.rs"]
mod hex;

/// A `HashMap`/`HashSet` hasher for keys that are already uniform hashes (charge ids and
/// content keys): it takes their low 64 bits instead of hashing them again.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdKeyHasher(u64);

impl std::hash::Hasher for IdKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64;
    }
}

/// The `BuildHasher` of [`IdKeyHasher`].
pub(crate) type IdKeys = std::hash::BuildHasherDefault<IdKeyHasher>;

thread_local! {
    /// The bytes an [`IdHasher`] collects, reused: one buffer per thread.
    static ID_BYTES: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Feeds fields into XXH3-128 with unambiguous separators.
///
/// The fields are collected into a buffer and hashed at once: XXH3 of the concatenation is
/// what the streaming hasher gave field by field (the ids of existing ledgers are unchanged,
/// see `charge_ids_never_change`), in a third of the time for rows of a hundred bytes.
pub(crate) struct IdHasher(Vec<u8>);

impl IdHasher {
    fn new(domain: &str) -> Self {
        let mut bytes = ID_BYTES.take();
        bytes.clear();
        bytes.extend_from_slice(domain.as_bytes());
        bytes.push(0x1e);
        IdHasher(bytes)
    }

    pub(crate) fn field(&mut self, s: &str) {
        self.0.extend_from_slice(&(s.len() as u64).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    fn opt_field(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.bytes(&[1]);
                self.field(s);
            }
            None => self.bytes(&[0]),
        }
    }

    /// A decimal by value: `1.20` and `1.2` hash alike.
    fn opt_decimal(&mut self, d: Option<Decimal>) {
        match d {
            Some(d) => {
                self.bytes(&[1]);
                self.bytes(&d.normalize().serialize());
            }
            None => self.bytes(&[0]),
        }
    }

    fn finish(self) -> ChargeId {
        let id = ChargeId(xxhash_rust::xxh3::xxh3_128(&self.0));
        ID_BYTES.set(self.0);
        id
    }
}

/// Where a charge came from: the file, the line and the bill's own words for the item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file as it was named on import.
    pub file: String,
    /// 1-based line of the row in that file.
    pub line: u64,
    /// The bill's text describing the item (备注, 计费项 …).
    pub item: String,
}

/// One validated line of the ledger. Field meanings are DESIGN.md's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Stable identity.
    pub id: ChargeId,
    /// Profile name: autodl, aliyun, …
    pub platform: String,
    /// Billing account (who pays: FOCUS `BillingAccountId`, an AWS payer, an Azure billing
    /// account, an OCI tenancy), when the bill names one.
    pub account: Option<String>,
    /// Sub account (FOCUS `SubAccountId`: an AWS linked account, an Azure subscription, a GCP
    /// project, an OCI compartment), when the bill names one.
    pub sub_account: Option<String>,
    /// The billing account's name, when the bill gives one.
    pub account_name: Option<String>,
    /// The sub account's name, when the bill gives one.
    pub sub_account_name: Option<String>,
    /// The platform's 账期, else the local month of `charge_start`.
    pub billing_period: YearMonth,
    /// Start of the time paid for (UTC, inclusive).
    pub charge_start: DateTime<Utc>,
    /// End of the time paid for (UTC, exclusive).
    pub charge_end: DateTime<Utc>,
    /// Instance, disk, snapshot, IP … charged.
    pub resource_id: Option<String>,
    /// Its human name.
    pub resource_name: Option<String>,
    /// The compute instance the charge belongs to (itself for compute).
    pub instance_id: Option<String>,
    /// Region.
    pub region: Option<String>,
    /// What the charge paid for.
    pub category: Category,
    /// What sort of money movement it is.
    pub kind: Kind,
    /// How it was priced.
    pub pricing: Pricing,
    /// GPU model, for compute, when known.
    pub gpu_model: Option<String>,
    /// Number of GPUs, when known.
    pub gpu_count: Option<u16>,
    /// Quantity as billed.
    pub quantity: Option<Decimal>,
    /// Unit of the quantity.
    pub unit: Option<String>,
    /// Price per unit.
    pub unit_price: Option<Decimal>,
    /// Cost before discounts.
    pub list_cost: Option<Decimal>,
    /// What the account was charged: the figure every total uses. For a payment (top-up) it
    /// is the money that came in, negative.
    pub billed_cost: Decimal,
    /// ISO 4217 currency.
    pub currency: String,
    /// Running account balance after this row, when the export has one.
    pub balance_after: Option<Decimal>,
    /// Provenance.
    pub origin: Origin,
    /// The service the bill names (AWS product code, FOCUS `ServiceName`, Azure meter
    /// category, GCP service, OCI service), when it names one.
    pub service: Option<String>,
    /// The bill's words for what was used, as its rates are keyed (AWS usage type and
    /// operation, a FOCUS or GCP SKU, an Azure meter), when it gives them: two lines of one
    /// resource and span that differ in it bill different usage.
    pub usage_type: Option<String>,
}

impl Charge {
    /// Whether the charge counts as spend (everything except payments).
    pub fn is_spend(&self) -> bool {
        self.kind != Kind::Payment
    }

    /// A charge with every field empty or zero (a parser fills it in place; a program
    /// building charges names the fields it has and takes the rest from it).
    pub fn blank() -> Self {
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        Charge {
            id: ChargeId(0),
            platform: String::new(),
            account: None,
            sub_account: None,
            account_name: None,
            sub_account_name: None,
            billing_period: YearMonth::EPOCH,
            charge_start: epoch,
            charge_end: epoch,
            resource_id: None,
            resource_name: None,
            instance_id: None,
            region: None,
            category: Category::Other,
            kind: Kind::Usage,
            pricing: Pricing::Unknown,
            gpu_model: None,
            gpu_count: None,
            quantity: None,
            unit: None,
            unit_price: None,
            list_cost: None,
            billed_cost: Decimal::ZERO,
            currency: String::new(),
            balance_after: None,
            origin: Origin { file: String::new(), line: 0, item: String::new() },
            service: None,
            usage_type: None,
        }
    }

    /// Hashes every field that describes the charge (not its id nor where it was read).
    fn hash_content(&self, h: &mut IdHasher) {
        h.bytes(&[self.billing_period.month() as u8]);
        h.bytes(&self.billing_period.year().to_le_bytes());
        h.bytes(&self.charge_start.timestamp_micros().to_le_bytes());
        h.bytes(&self.charge_end.timestamp_micros().to_le_bytes());
        for s in [&self.resource_id, &self.resource_name, &self.instance_id, &self.region] {
            h.opt_field(s.as_deref());
        }
        h.field(self.category.as_str());
        h.field(self.kind.as_str());
        h.field(self.pricing.as_str());
        h.opt_field(self.gpu_model.as_deref());
        h.bytes(&self.gpu_count.map_or(u32::MAX, u32::from).to_le_bytes());
        h.opt_decimal(self.quantity);
        h.opt_field(self.unit.as_deref());
        h.opt_decimal(self.unit_price);
        h.opt_decimal(self.list_cost);
        h.opt_decimal(Some(self.billed_cost));
        h.field(&self.currency);
        h.opt_decimal(self.balance_after);
        h.field(&self.origin.item);
    }
}

/// Links to their instance the charges whose resource is a known compute instance.
///
/// A bill often says which instance a disk, an IP or a transfer belongs to only by giving the
/// instance's own id as the row's resource: GCP-style FOCUS exports put the VM's `ResourceId`
/// on its egress rows, whose category is traffic. A charge with no instance whose resource
/// id is the instance id of a compute charge of the same platform (and account) among
/// `charges` belongs to that instance, whatever its category. Links that only other rows
/// could tell (an IP billed under its own id, a disk under its own) stay as the bill has them.
/// Returns how many charges were linked.
pub fn link_to_instances(charges: &mut [Charge]) -> usize {
    use std::collections::HashSet;
    // The instances are borrowed, not copied: this runs on every load of the ledger.
    let instances: HashSet<(&str, Option<&str>, &str)> = charges
        .iter()
        .filter(|c| c.category == Category::Compute)
        .filter_map(|c| {
            Some((c.platform.as_str(), c.account.as_deref(), c.instance_id.as_deref()?))
        })
        .collect();
    if instances.is_empty() {
        return 0;
    }
    let linked: Vec<usize> = charges
        .iter()
        .enumerate()
        .filter(|(_, c)| c.instance_id.is_none())
        .filter(|(_, c)| {
            c.resource_id.as_deref().is_some_and(|r| {
                instances.contains(&(c.platform.as_str(), c.account.as_deref(), r))
            })
        })
        .map(|(i, _)| i)
        .collect();
    drop(instances);
    for &i in &linked {
        charges[i].instance_id = charges[i].resource_id.clone();
    }
    linked.len()
}

/// Which compute rows carry no GPU (a profile's `[no_gpu]`: AutoDL's 无卡模式).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoGpu {
    /// Words of the row's item (ASCII case ignored) that say so (`无卡`).
    #[serde(default)]
    pub words: Vec<String>,
    /// The most an hour of it costs (`"0.10"`): a compute row billed at this hourly rate or
    /// less is of no GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hourly: Option<rust_decimal::Decimal>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn hex_ids_are_what_display_writes() {
        let mut next = crate::xorshift(7);
        let random = (0..1000).map(|_| u128::from(next()) << 64 | u128::from(next()));
        let some = [0u128, 1, 0xabc, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210];
        for id in some.into_iter().chain(random) {
            let mut text = String::new();
            ChargeId(id).push_hex(&mut text);
            assert_eq!(text, format!("{id:032x}"));
            assert_eq!(ChargeId(id).to_string(), text);
        }
    }

    #[test]
    fn charge_ids_print_as_32_hex_digits_and_parse_back() {
        let id = ChargeId::from_native("autodl", None, "202405010001");
        let text = id.to_string();
        assert_eq!(text.len(), 32);
        assert_eq!(text.parse::<ChargeId>(), Ok(id));
        assert_eq!(text.to_uppercase().parse::<ChargeId>(), Ok(id));
        for bad in [&text[1..], &format!("{text}0"), &format!("+{}", &text[1..]), ""] {
            assert!(bad.parse::<ChargeId>().is_err(), "{bad:?}");
        }
        for (i, c) in [(0, 'g'), (15, ' '), (16, '-'), (31, 'é')] {
            let mut bad: Vec<char> = text.chars().collect();
            bad[i] = c;
            let bad: String = bad.into_iter().collect();
            assert!(bad.parse::<ChargeId>().is_err(), "{bad:?}");
        }
        for id in [0, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210] {
            assert_eq!(format!("{id:032x}").parse::<ChargeId>(), Ok(ChargeId(id)));
        }
        assert_ne!(id, ChargeId::from_native("autodl", Some("a"), "202405010001"));
        assert_ne!(id, ChargeId::from_native("aliyun", None, "202405010001"));
    }

    /// Ids are stored in every ledger: a change of how they are computed would make every
    /// re-import add its rows again. These values were printed by the first implementation.
    #[test]
    fn charge_ids_never_change() {
        let native = ChargeId::from_native("autodl", Some("acct"), "202405010001");
        let t = Utc.with_ymd_and_hms(2024, 5, 1, 0, 0, 0).unwrap();
        let charge = Charge {
            id: ChargeId(0),
            platform: "focus".into(),
            account: Some("012345678901".into()),
            sub_account: None,
            account_name: None,
            sub_account_name: None,
            billing_period: YearMonth::new(2024, 5).unwrap(),
            charge_start: t,
            charge_end: t + chrono::Duration::hours(1),
            resource_id: Some("/subscriptions/s0/res-0-0".into()),
            resource_name: None,
            instance_id: None,
            region: Some("eastus".into()),
            category: Category::Compute,
            kind: Kind::Usage,
            pricing: Pricing::OnDemand,
            gpu_model: Some("A100".into()),
            gpu_count: Some(1),
            quantity: Some(Decimal::new(1, 0)),
            unit: Some("Hours".into()),
            unit_price: Some(Decimal::new(3675, 3)),
            list_cost: Some(Decimal::new(36750, 4)),
            billed_cost: Decimal::new(3675, 3),
            currency: "USD".into(),
            balance_after: None,
            origin: Origin { file: "a.csv".into(), line: 2, item: "NC24ads_A100_v4 hours".into() },
            service: None,
            usage_type: None,
        };
        let key = ChargeId::content_key(&charge);
        let content = ChargeId::from_content(key, 1);
        let got = [native.to_string(), format!("{key:032x}"), content.to_string()];
        assert_eq!(
            got,
            [
                "1b6592363be7f052cfd0a7d416b8c34b",
                "41470d6fd1acb880c341bf1308fc3ab0",
                "465ffef2903e5e1bd1d5d41b90b72d77"
            ]
        );
    }
}
