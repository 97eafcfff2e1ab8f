//! Errors of the library: one [`Error`] type whose [`ErrorKind`] callers can match on.
//!
//! Every error about input names where it happened with a [`Location`], displayed as
//! `path:line: column X: what was wrong`. Each message speaks only for its own layer; causes
//! are kept as sources, never flattened into strings.

use std::fmt;
use std::path::PathBuf;

/// Where in an input file something was found: file, line (as a text editor counts it,
/// starting at 1) and the column's header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as the user named it.
    pub path: PathBuf,
    /// 1-based line of the row's first character; 0 when the whole file is meant.
    pub line: u64,
    /// The header name of the column, when one column is at fault.
    pub column: Option<String>,
    /// The lines are a Parquet bill's rows as its CSV text has them (the header is line 1):
    /// shown as `file: row N`, N counted from 1 (line N + 1).
    pub rows: bool,
}

impl Location {
    /// A location naming a whole file.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Location { path: path.into(), line: 0, column: None, rows: false }
    }

    /// A location naming one line of a file.
    pub fn line(path: impl Into<PathBuf>, line: u64) -> Self {
        Location { path: path.into(), line, column: None, rows: false }
    }

    /// The same location, its line shown as a Parquet row when `rows` (see [`Location::rows`]).
    pub fn as_rows(mut self, rows: bool) -> Self {
        self.rows = rows;
        self
    }

    /// The same location, narrowed to one column.
    pub fn with_column(mut self, column: impl Into<String>) -> Self {
        self.column = Some(column.into());
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if self.rows && self.line > 1 {
            write!(f, ": row {}", self.line - 1)?;
        } else if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if let Some(column) = &self.column {
            write!(f, ": column {column}")?;
        }
        Ok(())
    }
}

/// A bill line as evidence shows it, as an import error names the same line: `file:line`, or
/// `file: row N` (N counted from 1, the header not counted) for a Parquet bill, known by its
/// name (`.parquet`); `line` counts the header as line 1, as the CSV form of the same export.
pub fn place(file: &str, line: u64) -> String {
    let parquet = file.len() > 8
        && file.get(file.len() - 8..).is_some_and(|end| end.eq_ignore_ascii_case(".parquet"));
    match (parquet, line) {
        (true, 2..) => format!("{file}: row {}", line - 1),
        _ => format!("{file}:{line}"),
    }
}

/// One row that could not be turned into a charge, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// Where the row is (and the column, when one cell is wrong).
    pub location: Location,
    /// What was wrong.
    pub problem: RowProblem,
}

impl RowError {
    /// A row error at `location`.
    pub fn new(location: Location, problem: RowProblem) -> Self {
        RowError { location, problem }
    }
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.problem)
    }
}

/// What was wrong with a row (or the cell its [`RowError::location`] names), in the user's
/// terms: each message follows the column name, as in `bill.csv:7: column 金额: is empty`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RowProblem {
    /// A cell the charge needs holds nothing.
    #[error("is empty")]
    Empty,
    /// The cost cell (or every cost cell) holds no amount.
    #[error("has no amount")]
    NoAmount,
    /// The row is shorter than the header and lacks the column.
    #[error("missing (the row has {found} fields, the header {width})")]
    Missing {
        /// Fields in the row.
        found: usize,
        /// Fields in the header.
        width: usize,
    },
    /// The cell's bytes are neither UTF-8 nor GB18030.
    #[error("bytes at offset {offset} are neither UTF-8 nor GB18030")]
    Encoding {
        /// The offset in the file of the first bad byte.
        offset: u64,
    },
    /// The cell is not an amount (the message says why: a decimal comma, too many decimals,
    /// too large …).
    #[error("{0}")]
    Amount(String),
    /// The cell is not a time or a date.
    #[error("{0}")]
    Time(String),
    /// The cell is not a month (`YYYY-MM`).
    #[error("{0}")]
    Month(String),
    /// A date outside the years a bill may have (the import window).
    #[error(
        "{text:?} is outside the years {first_year}–{last_year} a bill may have (the import window)"
    )]
    OutsideWindow {
        /// The cell.
        text: String,
        /// The first year of the window.
        first_year: i32,
        /// The last year of the window.
        last_year: i32,
    },
    /// The end of the charge is before its start.
    #[error("is before the start of the charge")]
    EndBeforeStart,
    /// The cell is not a GPU count.
    #[error("is not a GPU count")]
    NotGpuCount,
    /// The cell is not a platform name.
    #[error("{0:?} is not a platform name (1 to 40 lower-case letters, digits, '-' or '_')")]
    NotPlatform(String),
    /// The income/expense cell holds neither of the profile's two words.
    #[error("{text:?} is neither {} nor {}", words[0], words[1])]
    NotDirection {
        /// The cell.
        text: String,
        /// The profile's words for income and for expense.
        words: Box<[String; 2]>,
    },
    /// A statement file's header is not the one a statement has.
    #[error("the header must be {want}, not {found}")]
    StatementHeader {
        /// The header a statement has.
        want: Box<str>,
        /// The header found.
        found: Box<str>,
    },
    /// The row could not be read at all (the message says why).
    #[error("{0}")]
    Unreadable(String),
}

/// A profile that came close to matching a file's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearMiss {
    /// The profile's name.
    pub profile: String,
    /// The ledger fields whose columns the header lacked, each with its first alias.
    pub missing: Vec<String>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are neither UTF-8 nor GB18030.
    #[error("{location}: bytes at offset {offset} are neither UTF-8 nor GB18030")]
    Encoding {
        /// The row and column holding the bytes.
        location: Location,
        /// Byte offset of the field in the file.
        offset: u64,
    },
    /// A profile file is malformed.
    #[error("profile {}: {message}", .path.display())]
    Profile {
        /// The profile file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
        /// The TOML reader's error, when the file is not the profile format at all.
        #[source]
        source: Option<toml::de::Error>,
    },
    /// A value of the configuration file cannot be used as it is (a price in a currency
    /// other than the usage it would price).
    #[error("{}: {key}: {message}", .path.display())]
    ConfigValue {
        /// The configuration file.
        path: PathBuf,
        /// The key, with its table (`rate[2].currency`).
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The configuration file (`gpuaudit.toml`) is malformed.
    #[error("{}: {message}", .path.display())]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
        /// The TOML reader's error.
        #[source]
        source: toml::de::Error,
    },
    /// A statement file could not be read as CSV.
    #[error("{}: {source}", .path.display())]
    Statement {
        /// The statement file.
        path: PathBuf,
        /// The CSV reader's error.
        #[source]
        source: csv::Error,
    },
    /// A committed file of the ledger cannot be read.
    #[error("ledger {}: {message}; the file is part of batch {batch}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The batch that names it.
        batch: String,
        /// What went wrong.
        message: String,
    },
    /// A bill's delivery is not readable: a zip archive, a compressed stream, a folder's
    /// manifest (see `import::delivery`).
    #[error("{}: {message}", .path.display())]
    Delivery {
        /// The archive, member, manifest or folder.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A spreadsheet could not be read as a workbook.
    #[error("{}: {message}", .path.display())]
    Spreadsheet {
        /// The file.
        path: PathBuf,
        /// What is wrong with it, in plain words, with the reader's cause.
        message: String,
    },
    /// The file cannot be split into rows at some place (an unclosed quote, a row of
    /// megabytes): nothing of it is read.
    #[error("{location}: {message}")]
    Malformed {
        /// Where the offending row starts, and its column.
        location: Location,
        /// What is wrong.
        message: String,
    },
    /// A sum or product of money does not fit exactly in 28 significant digits.
    #[error("{what}: the exact result does not fit in 28 significant digits")]
    Overflow {
        /// What was being computed.
        what: String,
    },
    /// An inventory file (a cloud CLI's JSON) cannot be read as one snapshot.
    #[error("{}: {at}: {message}", .path.display())]
    Inventory {
        /// The file.
        path: PathBuf,
        /// Where in it, as a JSON path (`$.Volumes[3].State`).
        at: String,
        /// What is wrong.
        message: String,
    },
    /// The file holds no rows at all.
    #[error("{}: the file is empty", .path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// No profile matches the header of a file.
    #[error("{}", unknown_format_message(location, header, closest))]
    UnknownFormat {
        /// The row taken for the header, and the first column it lacked.
        location: Location,
        /// The row that looked most like a header.
        header: Vec<String>,
        /// The closest profiles and what they missed.
        closest: Vec<NearMiss>,
    },
    /// `--profile` named no known profile.
    #[error("unknown profile {name:?}; known profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The names that exist, comma-separated.
        known: String,
    },
    /// Rows of the input could not be read; nothing was imported.
    #[error("{}", invalid_rows_message(errors, *total))]
    InvalidRows {
        /// The first problems, in file order.
        errors: Vec<RowError>,
        /// How many rows were invalid in all.
        total: u64,
    },
    /// Lines of an input that is not a bill (a statement file …) are malformed.
    #[error("{}", list_errors(errors, *total))]
    InvalidLines {
        /// The first problems, in file order.
        errors: Vec<RowError>,
        /// How many there were in all.
        total: u64,
    },
    /// A ledger location (`--ledger`) that this build cannot open.
    #[error("--ledger {location}: {message}")]
    Location {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        message: String,
    },
    /// The ledger folder is not in a state gpuaudit understands.
    #[error("ledger {}: {message}", .path.display())]
    Ledger {
        /// The ledger folder or file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The Parquet engine failed.
    #[cfg(feature = "store")]
    #[error("{}: parquet: {source}", .path.display())]
    Parquet {
        /// The Parquet file.
        path: PathBuf,
        /// The engine's error.
        #[source]
        source: polars::error::PolarsError,
    },
}

fn unknown_format_message(location: &Location, header: &[String], closest: &[NearMiss]) -> String {
    let what = if location.column.is_some() { "not found in the header: " } else { "" };
    let mut s = format!(
        "{location}: {what}no known bill format matches this file\n  header found: {}",
        header.join(", ")
    );
    for near in closest {
        s.push_str(&format!(
            "\n  closest: {} (missing: {})",
            near.profile,
            near.missing.join(", ")
        ));
    }
    s
}

/// How many row problems an error message lists before it says "and N more".
pub const MAX_LISTED_ROW_ERRORS: usize = 10;

fn invalid_rows_message(errors: &[RowError], total: u64) -> String {
    let mut text = list_errors(errors, total);
    text.push_str("\nnothing was imported");
    text
}

fn list_errors(errors: &[RowError], total: u64) -> String {
    let mut lines: Vec<String> =
        errors.iter().take(MAX_LISTED_ROW_ERRORS).map(ToString::to_string).collect();
    let listed = lines.len() as u64;
    if total > listed {
        lines.push(format!("… and {} more invalid rows", total - listed));
    }
    lines.join("\n")
}

/// The library's error: a boxed [`ErrorKind`], cheap to return.
#[derive(Debug)]
pub struct Error(Box<ErrorKind>);

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// Where in an input the error is, when it is about one place: the first row of a list of
    /// row problems, the header of an unknown format, the cell of an encoding error.
    pub fn location(&self) -> Option<&Location> {
        match &*self.0 {
            ErrorKind::Encoding { location, .. }
            | ErrorKind::UnknownFormat { location, .. }
            | ErrorKind::Malformed { location, .. } => Some(location),
            ErrorKind::InvalidRows { errors, .. } | ErrorKind::InvalidLines { errors, .. } => {
                errors.first().map(|e| &e.location)
            }
            _ => None,
        }
    }

    /// The error's kind, by value.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ErrorKind::Io { path: path.into(), source }.into()
    }

    #[cfg(feature = "store")]
    pub(crate) fn ledger(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        ErrorKind::Ledger { path: path.into(), message: message.into() }.into()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(kind))
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How many [`catch`]es are running (on any thread: the reader they guard may panic on a
/// thread of its own pool).
static CATCHING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether the panic at `location` (a source file path) is one the library turns into an
/// error: a third-party reader's (polars'), while the library is catching its panics (see
/// `catch`). A program's panic hook may stay quiet then: the error follows.
pub fn catching_panic(location: &str) -> bool {
    CATCHING.load(std::sync::atomic::Ordering::SeqCst) > 0 && location.contains("polars")
}

/// Runs `f`, a panic in it becoming `Err` with the panic's message: for third-party readers
/// (polars' Parquet decoder) that panic on some damaged files instead of returning an error.
#[cfg_attr(not(feature = "store"), allow(dead_code))]
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    CATCHING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CATCHING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    result.map_err(|panic| {
        let text = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".to_owned());
        format!("the reader failed on this file ({text})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_names_a_parquet_row_as_its_import_error_does() {
        let error = Location::line("x/bill.parquet", 4).as_rows(true).to_string();
        assert_eq!(place("x/bill.parquet", 4), error);
        assert_eq!(place("x/BILL.PARQUET", 2), "x/BILL.PARQUET: row 1");
        assert_eq!(place("x/bill.csv", 4), "x/bill.csv:4");
        assert_eq!(place(".parquet", 4), ".parquet:4");
    }

    #[test]
    fn a_row_error_reads_file_line_column_then_the_problem() {
        let at = Location::line("bills/a.csv", 7).with_column("金额");
        let cases = [
            (RowProblem::Empty, "bills/a.csv:7: column 金额: is empty"),
            (
                RowProblem::Missing { found: 3, width: 9 },
                "bills/a.csv:7: column 金额: missing (the row has 3 fields, the header 9)",
            ),
            (
                RowProblem::NotDirection {
                    text: "退款".into(),
                    words: Box::new(["收入".into(), "支出".into()]),
                },
                "bills/a.csv:7: column 金额: \"退款\" is neither 收入 nor 支出",
            ),
            (
                RowProblem::OutsideWindow {
                    text: "1970-01-01".into(),
                    first_year: 2000,
                    last_year: 2100,
                },
                "bills/a.csv:7: column 金额: \"1970-01-01\" is outside the years 2000–2100 a bill \
                 may have (the import window)",
            ),
        ];
        for (problem, want) in cases {
            assert_eq!(RowError::new(at.clone(), problem).to_string(), want);
        }
        // Small enough to return by value on every cell read.
        assert!(std::mem::size_of::<RowError>() <= 128, "{}", std::mem::size_of::<RowError>());
    }
}
