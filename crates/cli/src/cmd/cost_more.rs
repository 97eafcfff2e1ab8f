//! `gpuaudit cost`'s comparison and break-even, in every format.
//!
//! Machine contract: `cost --compare --format csv` has the `--by` keys, then the header
//! [`COMPARE_HEADER`], one row per attached line × target platform × basis (`ledger`: the rates paid
//! there; `card`: `gpuaudit.toml`'s). `actual` is what the usage cost where it ran, all in;
//! `comparable` what the priced part of it cost there; `priced_*` and `priced` the priced
//! part on the target (money rounded to cents); `saving` = comparable − priced (negative: the
//! target is dearer); `unpriced_actual` the money of what no rate priced, `unpriced` what it
//! is and why, `rates` each price used with where it comes from (`;`-separated).
//! `cost --breakeven --format csv` has [`BREAKEVEN_HEADER`], one row per instance of each
//! GPU model with an on-demand and a plan price (an empty `instance` when the model did not
//! run in the month).

use gpuaudit_core::cost::{Basis, Comparison, CostKey, CostReport};
use gpuaudit_core::report::money_text;
use rust_decimal::Decimal;

use crate::cmd::cost::four;
use crate::error::CliError;
use crate::render::cents;
use crate::render::{Align, csv, markdown, table};

/// The CSV header of `cost --compare`, after the `--by` keys.
pub const COMPARE_HEADER: &[&str] = &[
    "currency",
    "target",
    "basis",
    "gpu_hours",
    "actual",
    "comparable",
    "priced_compute",
    "priced_system_disk",
    "priced_data_disk",
    "priced_snapshot",
    "priced_public_ip",
    "priced_traffic",
    "priced",
    "saving",
    "unpriced_actual",
    "unpriced",
    "rates",
];

/// The CSV header of `cost --breakeven`.
pub const BREAKEVEN_HEADER: &[&str] = &[
    "platform",
    "gpu_model",
    "currency",
    "hourly",
    "hourly_basis",
    "monthly",
    "weekly",
    "monthly_hours",
    "weekly_hours",
    "instance",
    "hours",
    "on_demand",
    "cheaper",
    "plan_basis",
];

fn unpriced_actual(c: &Comparison) -> Result<Decimal, CliError> {
    Ok(gpuaudit_core::money::sum(c.unpriced.iter().map(|u| u.actual), "the unpriced money")?)
}

fn unpriced_text(c: &Comparison) -> String {
    let list: Vec<String> = c
        .unpriced
        .iter()
        .map(|u| format!("{} {} ({})", u.category, money_text(u.actual), u.reason))
        .collect();
    list.join("; ")
}

fn rates_text(c: &Comparison) -> String {
    let list: Vec<String> = c
        .figures
        .iter()
        .map(|f| {
            let unit = f.measure.map_or("gpu_hours", |m| m.as_str());
            format!("{unit} {} × {} ({})", four(f.quantity), four(f.rate), f.whence)
        })
        .collect();
    list.join("; ")
}

fn compare_cells(c: &Comparison) -> Result<Vec<String>, CliError> {
    let p = &c.priced;
    let mut cells: Vec<String> = c.keys.iter().map(|k| k.clone().unwrap_or_default()).collect();
    cells.extend([
        c.currency.clone(),
        c.target.clone(),
        c.basis.as_str().to_owned(),
        c.gpu_hours.map(four).unwrap_or_default(),
        money_text(c.actual),
        money_text(c.comparable),
        cents(p.compute),
        cents(p.system_disk),
        cents(p.data_disk),
        cents(p.snapshot),
        cents(p.public_ip),
        cents(p.traffic),
        cents(c.priced_total()?),
        cents(c.saving()?),
        money_text(unpriced_actual(c)?),
        unpriced_text(c),
        rates_text(c),
    ]);
    Ok(cells)
}

fn compare_header(by: &[CostKey]) -> Vec<&'static str> {
    let mut h: Vec<&str> = by.iter().map(|k| k.as_str()).collect();
    h.extend(COMPARE_HEADER);
    h
}

/// `cost --compare --format csv`.
pub fn compare_csv(report: &CostReport, by: &[CostKey]) -> Result<String, CliError> {
    let rows = report.comparisons.iter().map(compare_cells).collect::<Result<Vec<_>, _>>()?;
    Ok(csv(&compare_header(by), &rows))
}

/// The comparison as JSON objects with [`COMPARE_HEADER`]'s names.
pub fn compare_json(report: &CostReport, by: &[CostKey]) -> Result<serde_json::Value, CliError> {
    let header = compare_header(by);
    let mut items = Vec::new();
    for c in &report.comparisons {
        let mut obj = serde_json::Map::new();
        for (k, v) in header.iter().zip(compare_cells(c)?) {
            let value = if v.is_empty() { serde_json::Value::Null } else { v.into() };
            obj.insert((*k).to_owned(), value);
        }
        items.push(serde_json::Value::Object(obj));
    }
    Ok(items.into())
}

fn breakeven_rows(report: &CostReport) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for b in &report.breakeven {
        let head = vec![
            b.platform.clone(),
            b.gpu_model.clone(),
            b.currency.clone(),
            money_text(b.hourly),
            b.hourly_basis.as_str().to_owned(),
            b.monthly.map(money_text).unwrap_or_default(),
            b.weekly.map(money_text).unwrap_or_default(),
            b.monthly_hours.map(four).unwrap_or_default(),
            b.weekly_hours.map(four).unwrap_or_default(),
        ];
        let plan_basis = b.plan_basis.as_str().to_owned();
        if b.instances.is_empty() {
            let mut row = head.clone();
            row.extend([
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                plan_basis.clone(),
            ]);
            rows.push(row);
        }
        for i in &b.instances {
            let mut row = head.clone();
            let cheaper = if i.plan_wins { "monthly plan" } else { "on demand" };
            row.extend([
                i.instance.clone(),
                four(i.hours),
                cents(i.on_demand),
                cheaper.into(),
                plan_basis.clone(),
            ]);
            rows.push(row);
        }
    }
    rows
}

/// `cost --breakeven --format csv`.
pub fn breakeven_csv(report: &CostReport) -> String {
    csv(BREAKEVEN_HEADER, &breakeven_rows(report))
}

/// The break-even as JSON objects with [`BREAKEVEN_HEADER`]'s names.
pub fn breakeven_json(report: &CostReport) -> serde_json::Value {
    let items: Vec<serde_json::Value> = breakeven_rows(report)
        .into_iter()
        .map(|row| {
            let obj: serde_json::Map<String, serde_json::Value> = BREAKEVEN_HEADER
                .iter()
                .zip(row)
                .map(|(k, v)| {
                    let value = if v.is_empty() { serde_json::Value::Null } else { v.into() };
                    ((*k).to_owned(), value)
                })
                .collect();
            obj.into()
        })
        .collect();
    items.into()
}

/// The break-even for people: per model, the price, the plan and the hours above which it
/// wins; then each instance's hours against it.
pub fn breakeven_text(report: &CostReport, md: bool) -> String {
    let header = [
        "platform",
        "GPU model",
        "on demand/h",
        "monthly",
        "plan wins above",
        "instance",
        "hours",
        "cheaper",
    ];
    let mut align = vec![Align::Left, Align::Left, Align::Right, Align::Right, Align::Right];
    align.extend([Align::Left, Align::Right, Align::Left]);
    let rows: Vec<Vec<String>> = breakeven_rows(report)
        .into_iter()
        .map(|r| {
            let basis = if r[4] == Basis::Ledger.as_str() { " (ledger)" } else { "" };
            let plan_basis = if r[13] == Basis::Ledger.as_str() { " (ledger)" } else { "" };
            let above = if r[7].is_empty() { "-".to_owned() } else { format!("{} h/month", r[7]) };
            vec![
                r[0].clone(),
                r[1].clone(),
                format!("{} {}{basis}", r[3], r[2]),
                if r[5].is_empty() { "-".into() } else { format!("{} {}{plan_basis}", r[5], r[2]) },
                above,
                if r[9].is_empty() { "-".into() } else { r[9].clone() },
                if r[10].is_empty() { "-".into() } else { r[10].clone() },
                if r[12].is_empty() { "-".into() } else { r[12].clone() },
            ]
        })
        .collect();
    if md { markdown(&header, &align, &rows) } else { table(&header, &align, &rows) }
}

/// The comparison for people: per source and target, what it cost, what the priced part
/// would have cost there and by which basis; then what was not priced.
pub fn compare_text(report: &CostReport, md: bool) -> Result<String, CliError> {
    if report.comparisons.is_empty() {
        return Ok("no other platform has rates to compare with\n".to_owned());
    }
    let header =
        ["usage of", "on", "basis", "paid all in", "priced part", "there", "saving", "not priced"];
    let mut align = vec![Align::Left; 3];
    align.extend([Align::Right; 5]);
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for c in &report.comparisons {
        let of: Vec<&str> = c.keys.iter().flatten().map(String::as_str).collect();
        let of = of.join(" ");
        rows.push(vec![
            of.clone(),
            c.target.clone(),
            c.basis.as_str().to_owned(),
            format!("{} {}", cents(c.actual), c.currency),
            cents(c.comparable),
            cents(c.priced_total()?),
            cents(c.saving()?),
            cents(unpriced_actual(c)?),
        ]);
        let rates = rates_text(c);
        let unpriced = unpriced_text(c);
        let mut note = format!("- {of} on {} ({}): {rates}", c.target, c.basis.as_str());
        if !unpriced.is_empty() {
            note.push_str(&format!("; not priced: {unpriced}"));
        }
        notes.push(note);
    }
    let mut out = if md { markdown(&header, &align, &rows) } else { table(&header, &align, &rows) };
    out.push('\n');
    for n in notes {
        out.push_str(&crate::render::visible(&n));
        out.push('\n');
    }
    Ok(out)
}
