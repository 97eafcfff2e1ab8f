//! The CLI's error: the library's errors, to which the CLI adds what to type next (a flag, a
//! command), which the library must not know about; and the CLI's own usage errors (a value
//! on the command line that is malformed). It picks the exit code.
//!
//! Exit codes: 0 when all is well; 1 when the command ran and found something (`waste` over
//! its threshold, `reconcile --strict` with discrepancies, `ledger --verify` with problems:
//! those are chosen by the commands, not errors); 2 for every error, usage or input.

use std::fmt;
use std::process::ExitCode;

use gpuaudit_core::{Error, ErrorKind};

/// Why a command did not run to its end.
#[derive(Debug)]
pub enum CliError {
    /// A value on the command line is malformed (a month, a key, a threshold, a name).
    Usage(String),
    /// The library refused: bad input, a damaged ledger, an I/O error.
    Library(Error),
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        CliError::Library(e)
    }
}

impl CliError {
    /// The process's exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) | CliError::Library(_) => ExitCode::from(2),
        }
    }

    /// What to type next, for the library's errors that have an answer on the command line.
    fn hint(&self) -> Option<String> {
        let CliError::Library(e) = self else { return None };
        Some(match e.kind() {
            ErrorKind::UnknownFormat { header, .. } => {
                let note = gpuaudit_core::import::export_advice(header)
                    .map(|advice| format!("\n  note: {advice}"))
                    .unwrap_or_default();
                format!("{note}\n  hint: name the format with --profile NAME, or write a profile file: `gpuaudit formats --show NAME` prints one to start from")
            }
            ErrorKind::InvalidRows { .. } => " (use --skip-invalid to import the valid rows)".to_owned(),
            // A rollup or look-back file is made from the batch's part files again.
            ErrorKind::Unreadable { path, .. } if gpuaudit_core::ledger::is_derived_file(path) => {
                ": it is made from the batch's part files: `gpuaudit ledger --repair` makes it again".to_owned()
            }
            ErrorKind::Unreadable { batch, .. } => format!(
                ": `gpuaudit ledger --remove {batch}` takes the batch out (import its bills again after), `gpuaudit ledger --verify` checks every file"
            ),
            _ => return None,
        })
    }
}

/// The error as the CLI prints it after `error: `, with its hint.
impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(message) => f.write_str(message)?,
            CliError::Library(e) => write!(f, "{e}")?,
        }
        match self.hint() {
            Some(hint) => f.write_str(&hint),
            None => Ok(()),
        }
    }
}

/// A usage error.
pub fn usage(message: impl Into<String>) -> CliError {
    CliError::Usage(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_read_as_given_and_library_errors_get_their_hint() {
        let e = usage("unknown rule \"W999\" (W001–W006)");
        assert_eq!(e.to_string(), "unknown rule \"W999\" (W001–W006)");
        assert_eq!(e.exit_code(), ExitCode::from(2));

        let rows = ErrorKind::InvalidRows { errors: vec![], total: 3 };
        let e = CliError::from(Error::from(rows));
        let text = e.to_string();
        assert!(text.ends_with(" (use --skip-invalid to import the valid rows)"), "{text}");
        assert_eq!(e.exit_code(), ExitCode::from(2));
    }
}
