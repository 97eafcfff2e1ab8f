//! `gpuaudit reconcile`: bills that do not add up, by check.
//!
//! Machine contract (`--format csv`): header
//! `code,check,platform,account,resource_id,period,expected,actual,difference,currency,location,detail`,
//! in check order; figures exact (money with at least two decimals); `currency` empty when
//! the figures are hours, days or a count (the detail says which); `location` the bill lines
//! (`file:line`) separated by `;`. `--format json`: `{"month":…,"discrepancies":[…]}` with
//! the same keys, figures as strings, `measure` (money, hours, days, count) and `locations`
//! as a list.

use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;

use gpuaudit_core::YearMonth;
use gpuaudit_core::config::Config;
use gpuaudit_core::ledger::Store;
use gpuaudit_core::reconcile::{self, Discrepancy, Measure, ReconcileInput, read_statement};
use gpuaudit_core::report::{duration_text, money_text};
use rust_decimal::Decimal;

use crate::cmd::{select, usage};
use crate::render::{Align, Format, csv, emit, markdown, table};

/// Arguments of `gpuaudit reconcile`.
#[derive(clap::Args)]
pub struct ReconcileArgs {
    /// The billing month to check (YYYY-MM).
    #[arg(long, value_name = "YYYY-MM")]
    month: String,
    /// A statement of control totals: CSV `platform,account,month,currency,total`.
    #[arg(long, value_name = "FILE")]
    statement: Vec<PathBuf>,
    /// Only these checks (R001 … R008); repeat or separate with commas.
    #[arg(long = "check", value_name = "CODE", value_delimiter = ',')]
    checks: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// With `--format xlsx`: the workbook to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.xlsx")]
    output: Option<std::path::PathBuf>,
    /// Exit with code 1 when any discrepancy is found.
    #[arg(long)]
    strict: bool,
}

/// A figure exactly, for CSV and JSON.
fn figure(d: &Discrepancy, value: Decimal) -> String {
    match d.measure {
        Measure::Money(_) => money_text(value),
        _ => value.normalize().to_string(),
    }
}

/// A figure as people read it, for tables and Markdown: hours and days as `5 h`, `2 d 4 h`.
fn figure_for_people(d: &Discrepancy, value: Decimal) -> String {
    match d.measure {
        Measure::Hours => duration_text(value),
        Measure::Days => duration_text(value * Decimal::from(24)),
        _ => figure(d, value),
    }
}

fn measure(m: &Measure) -> &'static str {
    match m {
        Measure::Money(_) => "money",
        Measure::Hours => "hours",
        Measure::Days => "days",
        Measure::Count => "count",
    }
}

/// Loads the month, gathers footers and statements, checks, renders.
pub fn run(
    store: &Store,
    config: &Config,
    profiles: &[&'static gpuaudit_core::import::Profile],
    args: ReconcileArgs,
) -> Result<ExitCode, CliError> {
    let month: YearMonth = args.month.parse().map_err(usage)?;
    let checks = select(
        &args.checks,
        reconcile::CHECKS,
        reconcile::check_by_code,
        "check",
        "checks: R001 to R008",
    )?;
    let mut input = ReconcileInput { config: config.clone(), ..Default::default() };
    input.platforms = store.platforms_over(profiles)?;
    for path in &args.statement {
        input.statements.extend(read_statement(path)?);
    }
    let found = store.reconcile(month, &checks, input)?;
    let text = match args.format {
        Format::Csv => render_csv(&found),
        Format::Xlsx => {
            crate::xlsx::write(args.output.as_deref(), &[("discrepancies", render_csv(&found))])?;
            String::new()
        }
        Format::Json => render_json(month, &found),
        Format::Table | Format::Md => render_text(month, &found, args.format),
    };
    emit(&text)?;
    Ok(if args.strict && !found.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

pub(crate) const CSV_HEADER: &[&str] = &[
    "code",
    "check",
    "platform",
    "account",
    "resource_id",
    "period",
    "expected",
    "actual",
    "difference",
    "currency",
    "location",
    "detail",
];

fn row(d: &Discrepancy) -> Vec<String> {
    let locations: Vec<String> = d.locations.iter().map(ToString::to_string).collect();
    vec![
        d.code.to_owned(),
        d.check.to_owned(),
        d.platform.clone(),
        d.account.clone().unwrap_or_default(),
        d.resource_id.clone().unwrap_or_default(),
        d.period.clone(),
        figure(d, d.expected),
        figure(d, d.actual),
        figure(d, d.difference),
        d.currency().unwrap_or_default().to_owned(),
        locations.join(";"),
        d.detail.clone(),
    ]
}

pub(crate) fn render_csv(found: &[Discrepancy]) -> String {
    csv(CSV_HEADER, &found.iter().map(row).collect::<Vec<_>>())
}

fn render_json(month: YearMonth, found: &[Discrepancy]) -> String {
    let items: Vec<serde_json::Value> = found
        .iter()
        .map(|d| {
            let locations: Vec<String> = d.locations.iter().map(ToString::to_string).collect();
            serde_json::json!({
                "code": d.code, "check": d.check, "platform": d.platform, "account": d.account,
                "resource_id": d.resource_id, "period": d.period, "measure": measure(&d.measure),
                "expected": figure(d, d.expected), "actual": figure(d, d.actual),
                "difference": figure(d, d.difference), "currency": d.currency(),
                "locations": locations, "detail": d.detail,
            })
        })
        .collect();
    let mut s =
        serde_json::json!({ "month": month.to_string(), "discrepancies": items }).to_string();
    s.push('\n');
    s
}

fn render_text(month: YearMonth, found: &[Discrepancy], format: Format) -> String {
    if found.is_empty() {
        return format!("reconcile {month}: no discrepancy\n");
    }
    let header =
        ["code", "platform", "resource", "expected", "actual", "difference", "unit", "where"];
    let align = [
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Left,
    ];
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|d| {
            let first = d.locations.first().map(ToString::to_string).unwrap_or_default();
            let more = if d.locations.len() > 1 {
                format!(" (+{})", d.locations.len() - 1)
            } else {
                String::new()
            };
            vec![
                d.code.to_owned(),
                d.platform.clone(),
                d.resource_id.clone().unwrap_or_else(|| "-".into()),
                figure_for_people(d, d.expected),
                figure_for_people(d, d.actual),
                figure_for_people(d, d.difference),
                match d.measure {
                    Measure::Hours | Measure::Days => "time".to_owned(),
                    _ => d.currency().map_or_else(|| measure(&d.measure).to_owned(), str::to_owned),
                },
                format!("{first}{more}"),
            ]
        })
        .collect();
    let mut out = format!(
        "reconcile {month}: {} discrepanc{}\n\n",
        found.len(),
        if found.len() == 1 { "y" } else { "ies" }
    );
    out.push_str(&if format == Format::Md {
        markdown(&header, &align, &rows)
    } else {
        table(&header, &align, &rows)
    });
    out.push('\n');
    // Identical explanations (a price repeated on every hourly row) are said once.
    let mut said: Vec<(String, usize)> = Vec::new();
    for d in found {
        let text = format!("{} {}: {}", d.code, d.check, d.detail);
        match said.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => said.push((text, 1)),
        }
    }
    for (text, n) in said {
        let times = if n > 1 { format!(" ({n} lines)") } else { String::new() };
        let text = match format {
            Format::Md => crate::render::md_text(&text),
            _ => crate::render::visible(&text).into_owned(),
        };
        out.push_str(&format!("- {text}{times}\n"));
    }
    out
}
