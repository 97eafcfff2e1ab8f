//! The CLI's words about the library's errors: the library says what went wrong, in its own
//! terms; the CLI adds what to type next (a flag, a command), which the library must not
//! know about.

use gpuaudit_core::{Error, ErrorKind};

/// The error as the CLI prints it after `error: `, with the hint for its kind.
pub fn with_hint(e: &Error) -> String {
    let hint = match e.kind() {
        ErrorKind::UnknownFormat { .. } => "\n  hint: name the format with --profile NAME, or write a profile file: `gpuaudit formats --show NAME` prints one to start from".to_owned(),
        ErrorKind::InvalidRows { .. } => " (use --skip-invalid to import the valid rows)".to_owned(),
        ErrorKind::Unreadable { batch, .. } => format!(
            ": `gpuaudit ledger --remove {batch}` takes the batch out (import its bills again after), `gpuaudit ledger --verify` checks every file"
        ),
        _ => String::new(),
    };
    format!("{e}{hint}")
}
