//! Profiles as data: a TOML file describes a bill format, and one engine reads every format.
//!
//! The built-in profiles are TOML files compiled into the binary (`crates/core/profiles/`);
//! `gpuaudit formats --show NAME` prints one, and a user passes their own with
//! `--profile FILE` or drops it in a `profiles/` folder. The format, field by field, is
//! documented in the built-in files' comments and in the README.
//!
//! How a row becomes a charge, in order:
//! 1. `billed_cost` (required) and the other money columns are parsed; `[sign]` turns a
//!    direction column (支出/收入) into signs: expense positive, income negative.
//! 2. `[kind]`, then `[category]`, then `[pricing]`: the first rule whose conditions hold
//!    gives the value. A rule's `words` are looked for (ASCII case ignored) in its `columns`;
//!    with `by_column`, the columns are tried one at a time, in order, and the first column a
//!    rule matches decides. `[sign] negative_kinds` makes those kinds negative.
//! 3. `[[instance]]`: the first capture group of the first regex that matches its column.
//!    `[[resource]]`: a column, or a template such as `{instance}/data_disk`, by category.
//! 4. `[times]`: start is the first non-empty of its columns, end likewise (else the start);
//!    `[[times.rules]]` can make a row cover the local day of its posting time, or the time
//!    since the previous row of its instance (at most `max_hours`) — those rows are kept until
//!    the file is read.
//! 5. `[period]`: a billing-period column, or the local month of the posting time (`from =
//!    "posted"`), else of the start.
//! 6. The platform: a `platform` column's (gpuaudit's own export), else `[[providers]]`' for
//!    the provider a `provider` column names (a FOCUS file holding several clouds), else the
//!    profile's.
//!
//! Amounts with more decimals than the ledger keeps (12) are rounded half to even and counted
//! (`amounts.rs`); dates with the year last are read in the profile's `date_order`, and
//! refused without one.
//!
//! Profiles live as long as the program: a loaded profile is leaked on purpose (a few KB),
//! which lets every profile, built-in or not, be a `&'static Profile`.

mod amounts;
mod compile;
mod fields;
mod parser;
mod registry;
mod schema;

pub use crate::charge::{NoGpu, UnitPriceOf};
pub use compile::Profile;
use compile::*;
pub use parser::Parsed;
pub(crate) use parser::Parser;
pub use registry::{builtin, load_dir, with_extra};
pub use schema::{
    ClassRule, Classifier, ColumnSpec, Direction, Extract, GpuModel, OneOrMany, PeriodSpec,
    ProfileSpec, ProviderSpec, RefusedColumn, ResourceRule, SignSpec, SpanRule, TimeRule,
    TimesSpec,
};
