//! `gpuaudit summary`: spend grouped by platform, category, instance, month, account and sub
//! account.
//!
//! Machine contract (`--format csv`): a header of the `--by` keys in order, then
//! `currency,billed_cost,list_cost,charges`; one row per group, largest billed_cost first;
//! money exact with at least two decimals, no thousands separators. `--format json`:
//! `{"rows":[…]}` with the same keys, money as strings, `charges` a number, a missing key
//! value `null`.

use crate::error::CliError;
use std::process::ExitCode;

use gpuaudit_core::YearMonth;
use gpuaudit_core::ledger::{LoadFilter, Store};
use gpuaudit_core::report::{GroupKey, SummaryRow, money_text};

use crate::cmd::usage;
use crate::render::{Align, Format, csv, emit, markdown, table};

/// Arguments of `gpuaudit summary`.
#[derive(clap::Args)]
pub struct SummaryArgs {
    /// Only this billing month (YYYY-MM).
    #[arg(long, value_name = "YYYY-MM")]
    month: Option<String>,
    /// Group by these keys, in order: platform, category, instance, month, account (the
    /// billing account), sub_account (AWS linked account, Azure subscription, GCP project, OCI
    /// compartment).
    #[arg(long, value_delimiter = ',', default_value = "platform,category")]
    by: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// With `--format xlsx`: the workbook to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.xlsx")]
    output: Option<std::path::PathBuf>,
}

/// Loads the month (or everything), groups and renders.
pub fn run(store: &Store, args: SummaryArgs) -> Result<ExitCode, CliError> {
    let keys: Vec<GroupKey> =
        args.by.iter().map(|k| k.parse().map_err(usage)).collect::<Result<_, _>>()?;
    let mut filter = LoadFilter::default();
    if let Some(month) = &args.month {
        filter.months.push(month.parse::<YearMonth>().map_err(usage)?);
    }
    let rows = store.summary(&filter, &keys)?;
    emit(&render(&keys, &rows, args.format, args.output.as_deref())?)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn render(
    keys: &[GroupKey],
    rows: &[SummaryRow],
    format: Format,
    output: Option<&std::path::Path>,
) -> Result<String, CliError> {
    let mut header: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    header.extend(["currency", "billed_cost", "list_cost", "charges"]);
    let cells = |r: &SummaryRow| {
        let mut c: Vec<String> = r.keys.iter().map(|k| k.clone().unwrap_or_default()).collect();
        c.extend([
            r.currency.clone(),
            money_text(r.billed_cost),
            money_text(r.list_cost),
            r.charges.to_string(),
        ]);
        c
    };
    let mut align = vec![Align::Left; keys.len() + 1];
    align.extend([Align::Right; 3]);
    Ok(match format {
        Format::Csv => csv(&header, &rows.iter().map(cells).collect::<Vec<_>>()),
        Format::Xlsx => {
            crate::xlsx::write(
                output,
                &[("summary", csv(&header, &rows.iter().map(cells).collect::<Vec<_>>()))],
            )?;
            String::new()
        }
        Format::Json => {
            let items: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    let mut obj = serde_json::Map::new();
                    for (k, v) in keys.iter().zip(&r.keys) {
                        obj.insert(k.as_str().into(), v.clone().into());
                    }
                    obj.insert("currency".into(), r.currency.clone().into());
                    obj.insert("billed_cost".into(), money_text(r.billed_cost).into());
                    obj.insert("list_cost".into(), money_text(r.list_cost).into());
                    obj.insert("charges".into(), r.charges.into());
                    obj.into()
                })
                .collect();
            let mut s = serde_json::json!({ "rows": items }).to_string();
            s.push('\n');
            s
        }
        Format::Table | Format::Md => {
            let mut body: Vec<Vec<String>> = rows.iter().map(cells).collect();
            for total in summarize_totals(rows)? {
                let mut row = vec![String::new(); keys.len()];
                if let Some(first) = row.first_mut() {
                    *first = "total".into();
                }
                row.extend(cells(&total));
                body.push(row);
            }
            if format == Format::Md {
                markdown(&header, &align, &body)
            } else {
                table(&header, &align, &body)
            }
        }
    })
}

/// One total row per currency.
fn summarize_totals(rows: &[SummaryRow]) -> Result<Vec<SummaryRow>, CliError> {
    use gpuaudit_core::money::add;
    let mut totals: Vec<SummaryRow> = Vec::new();
    for r in rows {
        match totals.iter_mut().find(|t| t.currency == r.currency) {
            Some(t) => {
                t.billed_cost = add(t.billed_cost, r.billed_cost, "the summary's total")?;
                t.list_cost = add(t.list_cost, r.list_cost, "the summary's total")?;
                t.charges += r.charges;
            }
            None => totals.push(SummaryRow { keys: Vec::new(), ..r.clone() }),
        }
    }
    Ok(totals)
}
