//! One file per subcommand: its arguments and its `run`.

pub mod config;
pub mod formats;
pub mod import;
pub mod ledger;
pub mod reconcile;
pub mod summary;
pub mod waste;

use gpuaudit_core::{Error, ErrorKind};

/// A usage error (exit code 2).
pub fn usage(message: impl Into<String>) -> Error {
    ErrorKind::Usage(message.into()).into()
}
