//! `gpuaudit cost`: what the work cost, all in, per GPU-hour; with `--compare`, the month
//! priced on every other platform; the commitment break-even.
//!
//! Machine contract (`--format csv`): a header of the `--by` keys in order (default
//! `platform,gpu_model,instance`), then `currency,compute_hours,gpu_hours,compute,
//! system_disk,data_disk,snapshot,public_ip,traffic,other,all_in,per_gpu_hour_compute,
//! per_gpu_hour_all_in,hidden_share,line,gpu_count,hours_on,hours_off`, then `<measure>_on,
//! <measure>_off` for `system_disk_gb_days`, `data_disk_gb_days`, `snapshot_gb_months`,
//! `public_ip_hours`, `traffic_gb`, then `unmeasured,charges,service`. One row per line,
//! attached lines first, largest all-in first; `line` is `attached`, `unattached` (the
//! platform's charges linked to no instance, with an empty `instance` and `gpu_model`),
//! `not_linked` (the same, of a platform whose bills never link disks and IPs to instances:
//! AWS, Azure, GCP, OCI) or `service` (compute that is no instance: a NAT gateway, a
//! function, a managed database; `service` names it, and it has no hours). Money as the
//! bills add it up (exact, at least two decimals); hours, quantities, prices per GPU-hour
//! and the hidden share rounded to four decimals (half away from zero); an unknown figure
//! is empty. `--compare --format csv` gives the comparison instead (`cost_more::COMPARE_HEADER`),
//! `--breakeven --format csv` the break-even (`cost_more::BREAKEVEN_HEADER`). `--format json`:
//! `{"month","lines":[…],"total":[…],"breakeven":[…]}` and `"compare":[…]` with
//! `--compare`, the same names, figures as strings, `null` for unknown.

use std::process::ExitCode;

use gpuaudit_core::YearMonth;
use gpuaudit_core::config::Config;
use gpuaudit_core::cost::{Apart, CostKey, CostLine, CostOptions, CostReport, Measure};
use gpuaudit_core::ledger::Store;
use gpuaudit_core::report::money_text;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::cmd::cost_more;
use crate::cmd::usage;
use crate::error::CliError;
use crate::render::{Align, Format, emit, markdown, table};

/// Arguments of `gpuaudit cost`.
#[derive(clap::Args)]
pub struct CostArgs {
    /// The billing month (YYYY-MM).
    #[arg(long, value_name = "YYYY-MM")]
    month: String,
    /// Group by these keys, in order: platform, gpu_model, instance.
    #[arg(long, value_delimiter = ',', default_value = "platform,gpu_model,instance")]
    by: Vec<String>,
    /// Price the month's usage on every other platform (ledger rates and the rate card).
    #[arg(long)]
    compare: bool,
    /// With --format csv: the commitment break-even instead of the lines.
    #[arg(long)]
    breakeven: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// With `--format xlsx`: the workbook to write (sheets: lines, compare, breakeven).
    #[arg(short = 'o', long = "output", value_name = "FILE.xlsx")]
    output: Option<std::path::PathBuf>,
}

/// Loads the month (and with `--compare` the year before it), reports, renders.
pub fn run(
    store: &Store,
    config: &Config,
    profiles: &[&'static gpuaudit_core::import::Profile],
    args: CostArgs,
) -> Result<ExitCode, CliError> {
    let month: YearMonth = args.month.parse().map_err(usage)?;
    let by: Vec<CostKey> =
        args.by.iter().map(|k| k.parse().map_err(usage)).collect::<Result<_, _>>()?;
    if by.is_empty() {
        return Err(usage("--by: name at least one key (platform, gpu_model, instance)"));
    }
    if args.compare && args.breakeven && args.format == Format::Csv {
        return Err(usage("--format csv gives one table: --compare or --breakeven, not both"));
    }
    let platforms = store.platforms_over(profiles)?;
    let options = CostOptions { by: by.clone(), compare: args.compare };
    let report = store.cost(month, config, &platforms, &options)?;
    let text = match args.format {
        Format::Csv if args.compare => cost_more::compare_csv(&report, &by)?,
        Format::Csv if args.breakeven => cost_more::breakeven_csv(&report),
        Format::Csv => csv(&header(&by), &line_cells(&report.lines)?),
        Format::Xlsx => {
            let mut sheets = vec![("lines", csv(&header(&by), &line_cells(&report.lines)?))];
            if args.compare {
                sheets.push(("compare", cost_more::compare_csv(&report, &by)?));
            }
            sheets.push(("breakeven", cost_more::breakeven_csv(&report)));
            crate::xlsx::write(args.output.as_deref(), &sheets)?;
            String::new()
        }
        Format::Json => json(&report, &by, args.compare)?,
        Format::Table | Format::Md => text(&report, &by, args.format, args.compare)?,
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// A figure rounded to four decimals, half away from zero, without trailing zeros.
pub fn four(d: Decimal) -> String {
    let r = d.round_dp_with_strategy(4, RoundingStrategy::MidpointAwayFromZero).normalize();
    if r.is_zero() { "0".to_owned() } else { r.to_string() }
}

use crate::render::cents;

fn opt(d: Option<Decimal>) -> String {
    d.map(four).unwrap_or_default()
}

/// The CSV header of the lines.
pub(crate) fn header(by: &[CostKey]) -> Vec<String> {
    let mut h: Vec<String> = by.iter().map(|k| k.as_str().to_owned()).collect();
    h.extend(
        [
            "currency",
            "compute_hours",
            "gpu_hours",
            "compute",
            "system_disk",
            "data_disk",
            "snapshot",
            "public_ip",
            "traffic",
            "other",
            "all_in",
            "per_gpu_hour_compute",
            "per_gpu_hour_all_in",
            "hidden_share",
            "line",
            "gpu_count",
            "hours_on",
            "hours_off",
        ]
        .map(str::to_owned),
    );
    for m in Measure::ALL {
        h.push(format!("{}_on", m.as_str()));
        h.push(format!("{}_off", m.as_str()));
    }
    h.extend(["unmeasured", "charges", "service"].map(str::to_owned));
    h
}

pub(crate) fn csv(header: &[String], rows: &[Vec<String>]) -> String {
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    crate::render::csv(&header, rows)
}

/// The CSV cells of each line (in [`header`]'s order).
pub(crate) fn line_cells(lines: &[CostLine]) -> Result<Vec<Vec<String>>, CliError> {
    let mut rows = Vec::with_capacity(lines.len());
    for l in lines {
        let mut c: Vec<String> = l.keys.iter().map(|k| k.clone().unwrap_or_default()).collect();
        let cost = &l.cost;
        c.extend([
            l.currency.clone(),
            four(l.compute_hours()),
            opt(l.gpu_hours()),
            money_text(cost.compute),
            money_text(cost.system_disk),
            money_text(cost.data_disk),
            money_text(cost.snapshot),
            money_text(cost.public_ip),
            money_text(cost.traffic),
            money_text(cost.other),
            money_text(l.all_in()?),
            opt(l.per_gpu_hour_compute()?),
            opt(l.per_gpu_hour_all_in()?),
            opt(l.hidden_share()?),
            l.apart.as_ref().map_or("attached", |a| a.as_str()).to_owned(),
            l.gpu_count.map(|n| n.to_string()).unwrap_or_default(),
            four(gpuaudit_core::cost::hours(l.usage.on_seconds)),
            opt(l.usage.off_seconds.map(gpuaudit_core::cost::hours)),
        ]);
        for m in Measure::ALL {
            let q = l.usage.quantities.get(m);
            c.push(q.map(|q| four(q.on)).unwrap_or_default());
            c.push(q.map(|q| four(q.off)).unwrap_or_default());
        }
        c.push(money_text(l.usage.unmeasured.total()?));
        c.push(l.charges.to_string());
        c.push(match &l.apart {
            Some(Apart::Service(s)) => s.clone(),
            _ => String::new(),
        });
        rows.push(c);
    }
    Ok(rows)
}

/// All-in per currency, in currency order.
fn totals(lines: &[CostLine]) -> Result<Vec<(String, Decimal)>, CliError> {
    let mut t: std::collections::BTreeMap<String, Decimal> = Default::default();
    for l in lines {
        let total = t.entry(l.currency.clone()).or_default();
        *total = gpuaudit_core::money::add(*total, l.all_in()?, "the month's all-in cost")?;
    }
    Ok(t.into_iter().collect())
}

fn json(report: &CostReport, by: &[CostKey], compare: bool) -> Result<String, CliError> {
    let header = header(by);
    let mut lines = Vec::new();
    for cells in line_cells(&report.lines)? {
        let mut obj = serde_json::Map::new();
        for (i, (k, v)) in header.iter().zip(cells).enumerate() {
            let value = match (v.is_empty(), i < by.len() || k == "currency" || k == "line") {
                (true, _) => serde_json::Value::Null,
                (false, _) if k == "charges" => v.parse::<u64>().map_or(v.into(), Into::into),
                (false, _) => v.into(),
            };
            obj.insert(k.clone(), value);
        }
        lines.push(serde_json::Value::Object(obj));
    }
    let total: Vec<serde_json::Value> = totals(&report.lines)?
        .into_iter()
        .map(|(c, a)| serde_json::json!({ "currency": c, "all_in": money_text(a) }))
        .collect();
    let mut doc = serde_json::json!({
        "month": report.month.to_string(),
        "lines": lines,
        "total": total,
        "breakeven": cost_more::breakeven_json(report),
    });
    if compare {
        doc["compare"] = cost_more::compare_json(report, by)?;
    }
    let mut s = doc.to_string();
    s.push('\n');
    Ok(s)
}

/// The lines for people: the keys, hours, the components, all-in, prices per GPU-hour and
/// the hidden share; a total per currency; then the break-even and the comparison.
fn text(
    report: &CostReport,
    by: &[CostKey],
    format: Format,
    compare: bool,
) -> Result<String, CliError> {
    let mut header: Vec<&str> = by.iter().map(|k| k.as_str()).collect();
    header.extend([
        "hours",
        "GPU-h",
        "compute",
        "disks",
        "snapshot",
        "IP",
        "traffic",
        "other",
        "all-in",
        "/GPU-h",
        "/GPU-h all-in",
        "hidden",
    ]);
    let mut align = vec![Align::Left; by.len()];
    align.extend([Align::Right; 12]);
    let mut rows = Vec::new();
    for l in &report.lines {
        let mut c: Vec<String> = l
            .keys
            .iter()
            .zip(by)
            .map(|(k, key)| match (k, key, &l.apart) {
                (None, CostKey::Instance, Some(Apart::Unattached)) => "(unattached)".to_owned(),
                (None, CostKey::Instance, Some(Apart::NotLinked)) => {
                    "(not linked by the bill)".to_owned()
                }
                (None, CostKey::Instance, Some(Apart::Service(s))) if s.is_empty() => {
                    "(compute of no instance)".to_owned()
                }
                (None, CostKey::Instance, Some(Apart::Service(s))) => format!("(service {s})"),
                (k, _, _) => k.clone().unwrap_or_else(|| "-".into()),
            })
            .collect();
        let disks = gpuaudit_core::money::add(l.cost.system_disk, l.cost.data_disk, "disks")?;
        let share = l.hidden_share()?.map(|s| format!("{}%", cents(s * Decimal::ONE_HUNDRED)));
        c.extend([
            four(l.compute_hours()),
            opt(l.gpu_hours()),
            cents(l.cost.compute),
            cents(disks),
            cents(l.cost.snapshot),
            cents(l.cost.public_ip),
            cents(l.cost.traffic),
            cents(l.cost.other),
            format!("{} {}", cents(l.all_in()?), l.currency),
            l.per_gpu_hour_compute()?.map(cents).unwrap_or_else(|| "-".into()),
            l.per_gpu_hour_all_in()?.map(cents).unwrap_or_else(|| "-".into()),
            share.unwrap_or_else(|| "-".into()),
        ]);
        rows.push(c);
    }
    let md = format == Format::Md;
    let heading = |t: &str| if md { format!("### {t}\n\n") } else { format!("{t}\n\n") };
    let mut out = heading(&format!("cost in {}: all in, per GPU-hour", report.month));
    if rows.is_empty() {
        out.push_str("no charges in the month\n");
        return Ok(out);
    }
    out.push_str(&if md {
        markdown(&header, &align, &rows)
    } else {
        table(&header, &align, &rows)
    });
    let grand: Vec<String> =
        totals(&report.lines)?.iter().map(|(c, a)| format!("{} {c}", money_text(*a))).collect();
    out.push_str(&format!("\ntotal all in: {}\n", grand.join(" + ")));
    if !report.breakeven.is_empty() {
        out.push('\n');
        out.push_str(&heading("commitment break-even"));
        out.push_str(&cost_more::breakeven_text(report, md));
    }
    if compare {
        out.push('\n');
        out.push_str(&heading("the same usage elsewhere"));
        out.push_str(&cost_more::compare_text(report, md)?);
    }
    Ok(out)
}
