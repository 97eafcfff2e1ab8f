//! One file per subcommand: its arguments and its `run`.

pub mod config;
pub mod cost;
pub mod cost_more;
pub mod export;
pub mod formats;
pub mod import;
pub mod inventory;
pub mod ledger;
pub mod reconcile;
pub mod report;
pub mod report_html;
pub mod shell;
pub mod sql;
pub mod summary;
pub mod waste;

use crate::error::CliError;
pub use crate::error::usage;

/// The registry entries named by `codes` (all of `all` when none is named); an unknown code
/// is a usage error naming `what` and the valid range.
pub fn select<T: ?Sized>(
    codes: &[String],
    all: &[&'static T],
    find: fn(&str) -> Option<&'static T>,
    what: &str,
    range: &str,
) -> Result<Vec<&'static T>, CliError> {
    if codes.is_empty() {
        return Ok(all.to_vec());
    }
    codes
        .iter()
        .map(|code| {
            find(code.trim()).ok_or_else(|| usage(format!("unknown {what} {code:?} ({range})")))
        })
        .collect()
}
