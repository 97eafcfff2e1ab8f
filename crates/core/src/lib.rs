//! gpuaudit-core: GPU and cloud bills in, one exact, deduplicated ledger out.
//!
//! - [`import`] reads bill files (AutoDL, Alibaba Cloud …) into [`Charge`]s, streaming, with
//!   every problem reported as `file:line: column X: what was wrong`.
//! - [`ledger`] (feature `store`, on by default) keeps charges in a folder of Parquet files
//!   with atomic batches and deduplication by [`ChargeId`].
//! - [`report`] aggregates charges into summaries.
//! - [`reconcile`] checks that bills add up (R001–R008).
//! - [`cost`] answers what the work cost, all in, per GPU-hour, and on the other platforms.
//! - [`waste`] finds money that bought nothing; [`config`] holds its thresholds and rate
//!   cards (`gpuaudit.toml`).
//!
//! The library never prints; money is [`rust_decimal::Decimal`] from parsing to printing.
//!
//! ```no_run
//! use gpuaudit_core::{parse_bill, report::{summarize, GroupKey}};
//!
//! let bill = parse_bill("bills/aliyun-2024-05.csv".as_ref(), None)?;
//! for row in summarize(&bill.charges, &[GroupKey::Category])? {
//!     let _ = (row.keys, row.currency, row.billed_cost);
//! }
//! # Ok::<(), gpuaudit_core::Error>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod charge;
pub mod config;
pub mod cost;
mod direct;
mod error;
pub mod export;
pub mod ids;
pub mod import;
pub mod inventory;
#[cfg(feature = "store")]
pub mod ledger;
pub mod money;
mod month;
mod par;
mod parse;
pub mod platforms;
pub mod reconcile;
pub mod report;
mod slots;
pub mod waste;
pub mod window;

pub use charge::{
    Category, Charge, ChargeId, Kind, MAX_SCALE, Origin, Pricing, YearMonth, link_to_instances,
};
pub use error::{
    Error, ErrorKind, Location, MAX_LISTED_ROW_ERRORS, NearMiss, Result, RowError, RowProblem,
    catching_panic, place,
};
pub use import::{Bill, FileReport, Rounding, parse_bill, read_bill};
pub use parse::{
    DateOrder, DecimalSeparator, MAX_AMOUNT, NumberFormat, ReadAmount, parse_amount,
    parse_amount_with, parse_time, parse_time_in, read_amount,
};

/// Numbers for generated test inputs: xorshift64 from `seed` (not zero), the same sequence on
/// every run.
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
