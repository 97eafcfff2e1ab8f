//! Reconciliation: bills checked the way an accountant checks books (DESIGN.md § Rules:
//! reconciliation).
//!
//! [`check`] takes the charges of a month (and, for the balance chain, every row of the files
//! they came from) plus a [`ReconcileInput`] and returns [`Discrepancy`]s. Each check is a unit
//! struct implementing [`Check`], listed in [`CHECKS`] with a stable code R001–R008.
//!
//! Decisions:
//! - Every discrepancy states what was expected, what was found and the exact difference
//!   (`actual − expected`), in a [`Measure`]: money (with its currency), hours, days or a count.
//! - R001's tolerance is half a unit of the last printed digit of the amount, at least 0.01;
//!   the ledger keeps values, not their printing, so an amount is taken to print with at
//!   least two decimals (the tolerance is then 0.01 unless the bill printed more digits).
//! - R002 compares rows of the same resource, category and bill item whose times overlap
//!   (touching end to start is not overlap); rows without duration are left out.
//! - R003 looks at continuously billed resources (disks, IPs, snapshots): gaps between the
//!   first and last charge of the month at least as long as their usual charge.
//! - R004 follows each file's rows in the file's own order (newest-first exports are read
//!   backwards) and reports every line where the chain breaks, then continues from the
//!   balance that line states.
//! - R006 reads the unit price from the bill, or for an hour-long compute row its amount.
//! - R008 flags charges whose whole time lies outside their billing period, by days outside.
//! - Where a charge was read (its file and line) is evidence: a check names it through
//!   [`Context::line`] and orders charges by it through [`Context::lines_of`]. A store's
//!   window is read without them (`Store::reconcile`, when every check says
//!   [`Check::lines_through_context`]): [`Context::line`] then stands for the charge, and
//!   [`check_rows`] reads the files and lines of every charge the discrepancies name, at
//!   once, after the checks ran (R002 reads those of the charges billed for the same span
//!   of time, which it orders by line; R004 those of the rows with a balance). The
//!   discrepancies are the same as a read of every charge's file and line gives.
//! - The checks know nothing of files or storage, and print nothing.

mod agree;
mod checks;

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

pub use checks::{
    Arithmetic, BalanceChain, CoverageGap, DoubleCharge, MixedCurrency, PeriodMismatch,
    RateCardCheck, StatementTotal,
};

use crate::charge::ControlTotal;
use crate::charge::YearMonth;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Location, Result, RowError, RowProblem};
use crate::parse::parse_amount;
use crate::window::{Row, Sym, Texts, Window};

/// What a discrepancy's figures count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Measure {
    /// Money, in a currency.
    Money(String),
    /// Hours of billed time.
    Hours,
    /// Days.
    Days,
    /// A number of things (currencies …).
    Count,
}

/// A place in a bill.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Line {
    /// The file.
    pub file: String,
    /// The line, 1-based.
    pub line: u64,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::error::place(&self.file, self.line))
    }
}

/// Bills that do not add up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discrepancy {
    /// Stable check code (R001 …).
    pub code: &'static str,
    /// Check name (arithmetic …).
    pub check: &'static str,
    /// Platform.
    pub platform: String,
    /// Billing account, when known.
    pub account: Option<String>,
    /// The resource concerned, when one is.
    pub resource_id: Option<String>,
    /// The period concerned: a month (`2024-05`) or a span of time.
    pub period: String,
    /// What the figures count.
    pub measure: Measure,
    /// What was expected.
    pub expected: Decimal,
    /// What the bill says.
    pub actual: Decimal,
    /// `actual − expected`, exact.
    pub difference: Decimal,
    /// The bill lines involved.
    pub locations: Vec<Line>,
    /// One sentence on what is wrong.
    pub detail: String,
}

impl Discrepancy {
    /// The currency of the figures, when they are money.
    pub fn currency(&self) -> Option<&str> {
        match &self.measure {
            Measure::Money(c) => Some(c),
            _ => None,
        }
    }
}

/// A control total from a footer row, with what the file's rows add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterTotal {
    /// The file and the footer's line.
    pub location: Line,
    /// Platform of the file.
    pub platform: String,
    /// The footer's label (合计 …).
    pub label: String,
    /// The footer's figure.
    pub expected: Decimal,
    /// What the file's rows add up to (spend, in `currency`).
    pub actual: Decimal,
    /// Currency of the rows.
    pub currency: String,
}

/// One line of a `--statement` file: `platform,account,month,currency,total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementLine {
    /// The statement file and line.
    pub location: Line,
    /// Platform.
    pub platform: String,
    /// Account; `None` for every account of the platform.
    pub account: Option<String>,
    /// Billing month.
    pub month: YearMonth,
    /// Currency.
    pub currency: String,
    /// The statement's total.
    pub total: Decimal,
}

/// What reconciliation needs besides the charges.
#[derive(Debug, Clone, Default)]
pub struct ReconcileInput {
    /// Footer control totals of the files that billed the month.
    pub footers: Vec<FooterTotal>,
    /// Statement lines given with `--statement`.
    pub statements: Vec<StatementLine>,
    /// The zone and the unit-price basis of each platform (R008, R001); the built-in
    /// profiles' by default.
    pub platforms: crate::platforms::Platforms,
    /// Rate cards (R006).
    pub config: Config,
}

/// One reconciliation check.
pub trait Check: Sync {
    /// Stable code, such as `R001`.
    fn code(&self) -> &'static str;
    /// Short name, such as `arithmetic`.
    fn name(&self) -> &'static str;
    /// The check's discrepancies.
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>>;
    /// Whether the check names where charges were read only through [`Context::line`] (and
    /// orders them by it only through [`Context::lines_of`]), as every built-in check does:
    /// a store then reads the files and lines of the charges a discrepancy names after the
    /// checks ran, not of every charge before. A check that reads
    /// [`Window::origin`] itself keeps the default, and a store reads every charge's.
    fn lines_through_context(&self) -> bool {
        false
    }
}

/// Every check, in code order.
pub static CHECKS: &[&dyn Check] = &[
    &Arithmetic,
    &DoubleCharge,
    &CoverageGap,
    &BalanceChain,
    &StatementTotal,
    &RateCardCheck,
    &MixedCurrency,
    &PeriodMismatch,
];

/// What the checks see.
pub struct Context<'a> {
    /// Every charge given (the month's, and the rest of their files for R004). A store's
    /// reconciliation (`Store::reconcile`) keeps of the months around only the charges with
    /// a balance and compute (which the others link to their instances by), and reads no
    /// column no check reads: its rows have no charge id (0), unit or GPU count.
    pub charges: &'a [Row],
    /// Their texts.
    pub texts: &'a Texts,
    /// Their window, whose amounts they are ([`Context::amounts`]).
    pub window: &'a Window,
    /// The month checked.
    pub month: YearMonth,
    /// Footers, statements, rate cards.
    pub input: &'a ReconcileInput,
}

impl<'a> Context<'a> {
    /// The text `sym` stands for.
    pub fn text(&self, sym: Sym) -> &'a str {
        self.texts.get(sym)
    }

    /// [`Context::text`] of a text that may be absent.
    pub fn opt(&self, sym: Option<Sym>) -> Option<&'a str> {
        self.texts.opt(sym)
    }

    /// The quantity, unit price, list cost and balance of a charge.
    pub fn amounts(&self, c: &Row) -> crate::window::Amounts {
        self.window.amounts(c)
    }

    /// The month's charges.
    pub fn in_month(&self) -> impl Iterator<Item = &'a Row> + '_ {
        let month = self.month;
        self.charges.iter().filter(move |c| c.billing_period == month)
    }

    /// Where charge `c` was read, for a discrepancy's locations. Of a window read without
    /// the charges' files and lines it stands for the charge until every check has run,
    /// and [`check_rows`] then reads those of every charge named at once: a check puts it
    /// in [`Discrepancy::locations`] only (not in its text), and orders charges by their
    /// lines through [`Context::lines_of`].
    pub fn line(&self, c: &Row) -> Line {
        if self.window.reads_lines_later() {
            return Line { file: String::new(), line: PENDING | u64::from(c.pos) };
        }
        let (file, line) = self.window.line_of(c);
        Line { file, line }
    }

    /// The file (empty for none) and line (0 for none) where each of `rows` was read, read
    /// at once where the window was read without them.
    pub fn lines_of(&self, rows: &[&Row]) -> Result<Vec<(String, u64)>> {
        self.window.lines_of(rows)
    }
}

/// A location [`Context::line`] gives before its file and line are read: the charge's place
/// in its window in `line`, beside this bit, which no line of a file has.
const PENDING: u64 = 1 << 63;

/// Each location of `found` that [`Context::line`] left to be read, read (all at once).
fn read_pending(window: &Window, found: &mut [Vec<Discrepancy>]) -> Result<()> {
    let pending = |l: &Line| l.file.is_empty() && l.line & PENDING != 0;
    let all = found.iter().flatten().flat_map(|d| &d.locations);
    let mut places: Vec<u32> = all.filter(|l| pending(l)).map(|l| l.line as u32).collect();
    if places.is_empty() {
        return Ok(());
    }
    places.sort_unstable();
    places.dedup();
    let read = window.lines_at(&places)?;
    for line in found.iter_mut().flatten().flat_map(|d| &mut d.locations) {
        if pending(line)
            && let Ok(at) = places.binary_search(&(line.line as u32))
        {
            (line.file, line.line) = read[at].clone();
        }
    }
    Ok(())
}

/// The months a reconciliation of `month` reads: the month and the ones around it, since the
/// balance chain (R004) follows whole files, which may start or end in another month.
pub fn months_to_read(month: YearMonth) -> Vec<YearMonth> {
    vec![month.previous(), month, month.next()]
}

/// The check with `code`, case ignored.
pub fn check_by_code(code: &str) -> Option<&'static dyn Check> {
    CHECKS.iter().copied().find(|c| c.code().eq_ignore_ascii_case(code))
}

/// Runs every check.
pub fn check(
    charges: &[crate::Charge],
    month: YearMonth,
    input: &ReconcileInput,
) -> Result<Vec<Discrepancy>> {
    check_with(CHECKS, charges, month, input)
}

/// Runs the given checks; results in check order, then by location.
pub fn check_with(
    checks: &[&dyn Check],
    charges: &[crate::Charge],
    month: YearMonth,
    input: &ReconcileInput,
) -> Result<Vec<Discrepancy>> {
    check_rows(checks, &crate::window::rows_of(charges), month, input)
}

/// [`check_with`] of the charges as [`Row`]s (what the ledger reads for a window).
pub fn check_rows(
    checks: &[&dyn Check],
    window: &Window,
    month: YearMonth,
    input: &ReconcileInput,
) -> Result<Vec<Discrepancy>> {
    let ctx = Context { charges: &window.rows, texts: &window.texts, window, month, input };
    let mut out = Vec::new();
    // The checks side by side; their discrepancies in the order of the checks.
    // An error names its check (a charge's, `Window::said_of`, names it already).
    let run = |c: &&dyn Check| c.run(&ctx).map_err(|e| crate::money::met_by(c.code(), c.name(), e));
    let mut found = crate::par::map(checks, run).into_iter().collect::<Result<Vec<_>>>()?;
    read_pending(window, &mut found)?;
    for mut found in found {
        found.sort_by(|a, b| {
            a.locations.cmp(&b.locations).then_with(|| a.platform.cmp(&b.platform))
        });
        out.extend(found);
    }
    Ok(out)
}

/// The footer control totals of a file, each with what the file's rows add up to. Files
/// whose rows are in more than one currency are left out (a footer has one figure).
pub fn footers_of(
    file: &str,
    platform: &str,
    control_totals: &[ControlTotal],
    totals: &BTreeMap<String, Decimal>,
) -> Vec<FooterTotal> {
    let mut rows = totals.iter();
    let (Some((currency, actual)), None) = (rows.next(), rows.next()) else { return Vec::new() };
    control_totals
        .iter()
        .filter_map(|t| {
            Some(FooterTotal {
                location: Line { file: file.to_owned(), line: t.line },
                platform: platform.to_owned(),
                label: t.label.clone(),
                expected: t.amount?,
                actual: *actual,
                currency: currency.clone(),
            })
        })
        .collect()
}

/// Reads a statement file: a CSV with the header `platform,account,month,currency,total`
/// (an empty account means every account of the platform).
pub fn read_statement(path: &Path) -> Result<Vec<StatementLine>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(file);
    let want = ["platform", "account", "month", "currency", "total"];
    let header: Vec<String> = reader
        .headers()
        .map_err(|source| Error::from(ErrorKind::Statement { path: path.to_owned(), source }))?
        .iter()
        .map(|h| h.trim().trim_start_matches('\u{feff}').to_owned())
        .collect();
    if header != want {
        let problem = RowProblem::StatementHeader {
            want: want.join(",").into(),
            found: header.join(",").into(),
        };
        let bad = RowError::new(Location::line(path, 1), problem);
        return Err(ErrorKind::InvalidLines { errors: vec![bad], total: 1 }.into());
    }
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|source| {
            Error::from(ErrorKind::Statement { path: path.to_owned(), source })
        })?;
        let n = record.position().map_or(0, |p| p.line());
        let cell = |i: usize| record.get(i).unwrap_or("").trim();
        let at = |column: &str, problem: RowProblem| {
            RowError::new(Location::line(path, n).with_column(column), problem)
        };
        let month = cell(2).parse::<YearMonth>().map_err(|m| at("month", RowProblem::Month(m)));
        let total = match parse_amount(cell(4)) {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Err(at("total", RowProblem::Empty)),
            Err(m) => Err(at("total", RowProblem::Amount(m))),
        };
        let platform = (!cell(0).is_empty())
            .then(|| cell(0).to_owned())
            .ok_or_else(|| at("platform", RowProblem::Empty));
        let currency = (!cell(3).is_empty())
            .then(|| cell(3).to_owned())
            .ok_or_else(|| at("currency", RowProblem::Empty));
        match (platform, month, currency, total) {
            (Ok(platform), Ok(month), Ok(currency), Ok(total)) => lines.push(StatementLine {
                location: Line { file: path.display().to_string(), line: n },
                platform,
                account: (!cell(1).is_empty()).then(|| cell(1).to_owned()),
                month,
                currency,
                total,
            }),
            (p, m, c, t) => {
                errors.extend([p.err(), m.err(), c.err(), t.err()].into_iter().flatten())
            }
        }
    }
    if !errors.is_empty() {
        let total = errors.len() as u64;
        errors.truncate(crate::error::MAX_LISTED_ROW_ERRORS);
        return Err(ErrorKind::InvalidLines { errors, total }.into());
    }
    Ok(lines)
}

/// A span of time as printed in a discrepancy's period (UTC).
pub(crate) fn span_text(start: DateTime<Utc>, end: DateTime<Utc>) -> String {
    let f = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    format!("{}/{}", f(start), f(end))
}
