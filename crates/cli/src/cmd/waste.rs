//! `gpuaudit waste`: money that bought nothing, by rule.
//!
//! Machine contract (`--format csv`): header
//! `code,rule,platform,account,instance_id,resource_id,category,period_start,period_end,amount,currency,monthly_projection,charges,recommendation`,
//! one row per finding, largest amount first; periods in RFC 3339 UTC; `charges` the charge
//! ids separated by `;`. `--format json`: `{"credited":[…],"findings":[…],"month":…,"not_judged":[…],"total":[{"currency":…,"amount":…}]}`
//! with money as strings; `not_judged` lists, per platform and currency, the exact money of
//! the disks, IPs and snapshots its bills link to no instance (`amount`, `charges`,
//! `currency`, `platform`), which no rule judged; a bill line's `wasted` has the digits it
//! needs (up to 12 decimals) so that a finding's lines add up to it (a credit's share is a
//! line of its own, negative); `credited` lists, per currency, the flagged money the month's
//! credits paid for (`amount`, `currency`). Money is computed exactly and rounded to cents (half away from
//! zero) only here, when printed; totals are rounded from the exact sums.

use crate::error::CliError;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use gpuaudit_core::config::Config;
use gpuaudit_core::ledger::Store;
use gpuaudit_core::platforms::Platforms;
use gpuaudit_core::report::money_text;
use gpuaudit_core::waste::{self, Evidence, Finding, Rule};
use gpuaudit_core::{YearMonth, parse_amount};
use rust_decimal::Decimal;

use crate::cmd::{select, usage};
use crate::render::{
    Align, Format, cents, emit, emit_with, markdown, md_text, table, to_cents, visible,
};

/// Arguments of `gpuaudit waste`.
#[derive(clap::Args)]
pub struct WasteArgs {
    /// The billing month to audit (YYYY-MM).
    #[arg(long, value_name = "YYYY-MM")]
    month: String,
    /// Only these rules (W001 … W006); repeat or separate with commas.
    #[arg(long = "rule", value_name = "CODE", value_delimiter = ',')]
    rules: Vec<String>,
    /// Drop findings below this amount (default: `min_amount` of gpuaudit.toml, 1.00).
    #[arg(long, value_name = "X")]
    min_amount: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// With `--format xlsx`: the workbook to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.xlsx")]
    output: Option<std::path::PathBuf>,
    /// Exit with code 1 when the total wasted (in any currency, as printed) exceeds X.
    #[arg(long, value_name = "X")]
    fail_over: Option<String>,
    /// List the bill lines behind each finding.
    #[arg(long)]
    explain: bool,
}

fn decimal_arg(name: &str, text: &str) -> Result<Decimal, CliError> {
    match parse_amount(text) {
        Ok(Some(d)) => Ok(d),
        _ => Err(usage(format!("{name}: {text:?} is not an amount"))),
    }
}

/// Loads the month and its look-back, audits, renders.
pub fn run(
    store: &Store,
    config: &Config,
    profiles: &[&'static gpuaudit_core::import::Profile],
    args: WasteArgs,
) -> Result<ExitCode, CliError> {
    let month: YearMonth = args.month.parse().map_err(usage)?;
    let mut config = config.clone();
    if let Some(min) = &args.min_amount {
        config.waste.min_amount = decimal_arg("--min-amount", min)?;
    }
    let fail_over = args.fail_over.as_deref().map(|x| decimal_arg("--fail-over", x)).transpose()?;
    let rules =
        select(&args.rules, waste::RULES, waste::rule_by_code, "rule", "rules: W001 to W006")?;
    // The same facts cut the months and show local times.
    let platforms = store.platforms_over(profiles)?;
    // Only the JSON document and `--explain` show where each bill line was read.
    let evidence = args.format == Format::Json || args.explain;
    let audit = match store.audit_judged(month, &config, &rules, &platforms, evidence) {
        // Money that does not fit names its charge by id only (no file or line was read):
        // audited again reading them, the error says where the charge was read.
        Err(e) if !evidence && matches!(e.kind(), gpuaudit_core::ErrorKind::Overflow { .. }) => {
            let again = store.audit(month, &config, &rules, &platforms);
            return Err(again.err().unwrap_or(e).into());
        }
        found => found?,
    };
    let (findings, not_judged, credited) = (audit.findings, audit.not_judged, audit.credited);
    let totals = waste::totals(&findings)?;
    match args.format {
        Format::Csv => emit_with(|out| write_csv(out, &findings))?,
        Format::Xlsx => {
            crate::xlsx::write(args.output.as_deref(), &[("findings", render_csv(&findings))])?;
        }
        Format::Json => {
            let apart = Apart { not_judged: &not_judged, credited: &credited };
            emit_with(|out| write_json(out, month, &findings, &totals, &apart))?;
        }
        Format::Table | Format::Md => {
            let mut text = render_text(
                month,
                &rules,
                &findings,
                &totals,
                args.format,
                args.explain,
                &platforms,
            )?;
            text.push_str(&credited_text(&credited));
            text.push_str(&not_judged_text(&not_judged));
            emit(&text)?;
        }
    }
    // The limit is compared with the total as printed (in cents), which is what the user saw.
    let over = fail_over.is_some_and(|limit| totals.iter().any(|(_, t)| to_cents(*t) > limit));
    Ok(if over { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A bill line of a finding, as the text and the report show it: where it was read, its
/// item, what it billed and what of that was wasted; texts through `text` (made visible, or
/// escaped), fields apart by `gap`.
pub fn evidence(e: &Evidence<'_>, text: &dyn Fn(&str) -> String, gap: &str) -> String {
    format!(
        "{}{gap}{}{gap}billed {}{gap}wasted {}",
        text(&gpuaudit_core::place(e.file, e.line)),
        text(e.item),
        money_text(e.billed_cost),
        share(e.wasted)
    )
}

/// A bill line's wasted share with the digits it needs (up to the ledger's 12 decimals, at
/// least cents), so that a finding's lines add up to it: a finding of 2.90 made of lines
/// of 0.0041666667 shows each line's 0.0041666667, not 0.00.
fn share(wasted: Decimal) -> String {
    money_text(
        wasted.round_dp_with_strategy(12, rust_decimal::RoundingStrategy::MidpointNearestEven),
    )
}

/// What an audit says beside its findings: the money it could not judge, and what credits
/// paid for.
struct Apart<'a> {
    not_judged: &'a [waste::NotJudged],
    credited: &'a [(String, Decimal)],
}

/// One line saying what the month's credits paid for of the flagged money (none when they
/// paid for none).
fn credited_text(credited: &[(String, Decimal)]) -> String {
    if credited.is_empty() {
        return String::new();
    }
    let paid: Vec<String> = credited.iter().map(|(c, a)| format!("{} {c}", cents(*a))).collect();
    format!(
        "credits paid for {} of the flagged usage: the findings are net of them\n",
        paid.join(" + ")
    )
}

/// One line per platform and currency whose storage and IPs the bill links to no instance
/// (none when every charge could be judged).
fn not_judged_text(not_judged: &[waste::NotJudged]) -> String {
    not_judged
        .iter()
        .map(|n| {
            format!(
                "not judged: {} {} of {} disks, IPs and snapshots ({} charge{}) that its bills \
                 link to no instance; an inventory of them would let waste judge them \
                 (gpuaudit inventory import, of the cloud CLI's listing of volumes, instances, \
                 addresses and snapshots)\n",
                cents(n.amount),
                n.currency,
                n.platform,
                n.charges,
                if n.charges == 1 { "" } else { "s" }
            )
        })
        .collect()
}

fn utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn local(t: DateTime<Utc>, platform: &str, platforms: &Platforms) -> String {
    if t == DateTime::<Utc>::MAX_UTC {
        return "…".into();
    }
    t.with_timezone(&platforms.zone(platform)).format("%Y-%m-%d %H:%M").to_string()
}

pub(crate) const CSV_HEADER: &[&str] = &[
    "code",
    "rule",
    "platform",
    "account",
    "instance_id",
    "resource_id",
    "category",
    "period_start",
    "period_end",
    "amount",
    "currency",
    "monthly_projection",
    "charges",
    "recommendation",
];

pub(crate) fn render_csv(findings: &[Finding]) -> String {
    let mut out = Vec::new();
    let _ = write_csv(&mut out, findings);
    String::from_utf8(out).unwrap_or_default()
}

/// The CSV of `findings`, a finding at a time.
fn write_csv(out: &mut dyn std::io::Write, findings: &[Finding]) -> std::io::Result<()> {
    let size = |f: &Finding| 33 * f.charges.len() + 200;
    crate::render::csv_par_to(out, CSV_HEADER, findings, size, |f| {
        let mut ids = String::with_capacity(33 * f.charges.len());
        for (i, id) in f.charges.ids().enumerate() {
            if i > 0 {
                ids.push(';');
            }
            id.push_hex(&mut ids);
        }
        vec![
            f.code.to_owned(),
            f.rule.to_owned(),
            f.platform.clone(),
            f.account.clone().unwrap_or_default(),
            f.instance_id.clone().unwrap_or_default(),
            f.resource_id.clone().unwrap_or_default(),
            f.category.to_string(),
            utc(f.period_start),
            utc(f.period_end),
            cents(f.amount),
            f.currency.clone(),
            cents(f.monthly_projection),
            ids,
            f.recommendation.clone(),
        ]
    })
}

/// The JSON document of the month's findings, written a finding at a time (a month of
/// millions of bill lines behind its findings is never one value in memory): the bytes
/// `serde_json` gives for the whole document, keys in order.
fn write_json(
    out: &mut dyn std::io::Write,
    month: YearMonth,
    findings: &[Finding],
    totals: &[(String, Decimal)],
    apart: &Apart<'_>,
) -> std::io::Result<()> {
    let credited: Vec<serde_json::Value> = apart
        .credited
        .iter()
        .map(|(c, a)| serde_json::json!({ "amount": money_text(*a), "currency": c }))
        .collect();
    out.write_all(b"{\"credited\":")?;
    serde_json::to_writer(&mut *out, &credited)?;
    out.write_all(b",\"findings\":[")?;
    for (i, f) in findings.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &finding_json(f))?;
    }
    let total: Vec<serde_json::Value> = totals
        .iter()
        .map(|(c, a)| serde_json::json!({ "currency": c, "amount": cents(*a) }))
        .collect();
    out.write_all(b"],\"month\":")?;
    serde_json::to_writer(&mut *out, &month.to_string())?;
    let not_judged: Vec<serde_json::Value> = apart
        .not_judged
        .iter()
        .map(|n| {
            serde_json::json!({
                "amount": money_text(n.amount),
                "charges": n.charges,
                "currency": n.currency,
                "platform": n.platform,
            })
        })
        .collect();
    out.write_all(b",\"not_judged\":")?;
    serde_json::to_writer(&mut *out, &not_judged)?;
    out.write_all(b",\"total\":")?;
    serde_json::to_writer(&mut *out, &total)?;
    out.write_all(b"}\n")
}

/// A finding as its JSON object, written without building a value: its fields in the order
/// of their names, which is the order the document always had (`serde_json`'s maps sort
/// their keys).
#[derive(serde::Serialize)]
struct FindingJson<'a> {
    account: &'a Option<String>,
    amount: String,
    category: &'a str,
    charges: LinesJson<'a>,
    code: &'a str,
    currency: &'a str,
    instance_id: &'a Option<String>,
    monthly_projection: String,
    period_end: String,
    period_start: String,
    platform: &'a str,
    recommendation: &'a str,
    resource_id: &'a Option<String>,
    rule: &'a str,
    severity: &'a str,
}

/// A finding's bill lines, each written as it comes.
struct LinesJson<'a>(&'a waste::Lines);

impl serde::Serialize for LinesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|e| LineJson {
            billed_cost: money_text(e.billed_cost),
            file: e.file,
            id: e.id.to_string(),
            item: e.item,
            line: e.line,
            wasted: share(e.wasted),
        }))
    }
}

/// A bill line of a finding as its JSON object, fields in the order of their names.
#[derive(serde::Serialize)]
struct LineJson<'a> {
    billed_cost: String,
    file: &'a str,
    id: String,
    item: &'a str,
    line: u64,
    wasted: String,
}

fn finding_json(f: &Finding) -> FindingJson<'_> {
    FindingJson {
        account: &f.account,
        amount: cents(f.amount),
        category: f.category.as_str(),
        charges: LinesJson(&f.charges),
        code: f.code,
        currency: &f.currency,
        instance_id: &f.instance_id,
        monthly_projection: cents(f.monthly_projection),
        period_end: utc(f.period_end),
        period_start: utc(f.period_start),
        platform: &f.platform,
        recommendation: &f.recommendation,
        resource_id: &f.resource_id,
        rule: f.rule,
        severity: f.severity.as_str(),
    }
}

fn render_text(
    month: YearMonth,
    rules: &[&'static dyn Rule],
    findings: &[Finding],
    totals: &[(String, Decimal)],
    format: Format,
    explain: bool,
    platforms: &Platforms,
) -> Result<String, CliError> {
    let mut out = String::new();
    if findings.is_empty() {
        return Ok(format!("waste in {month}: no findings\n"));
    }
    for rule in rules {
        let mine: Vec<&Finding> = findings.iter().filter(|f| f.code == rule.code()).collect();
        if !mine.is_empty() {
            out.push_str(&rule_section(*rule, &mine, format, explain, platforms)?);
        }
    }
    let grand: Vec<String> = totals.iter().map(|(c, a)| format!("{} {c}", cents(*a))).collect();
    out.push_str(&format!("total wasted in {month}: {}\n", grand.join(" + ")));
    Ok(out)
}

/// The findings of one rule: its heading and total, the table, then each recommendation
/// (with its evidence when `explain`).
fn rule_section(
    rule: &dyn Rule,
    mine: &[&Finding],
    format: Format,
    explain: bool,
    platforms: &Platforms,
) -> Result<String, CliError> {
    let mut out = String::new();
    let header =
        ["platform", "instance", "resource", "category", "from", "to", "wasted", "per month"];
    let align = [
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
    ];
    let rule_totals = waste::totals(mine.iter().copied())?;
    let sum: Vec<String> = rule_totals.iter().map(|(c, a)| format!("{} {c}", cents(*a))).collect();
    out.push_str(&format!(
        "{}{} {}: {} finding{}, {} wasted\n",
        if format == Format::Md { "### " } else { "" },
        rule.code(),
        rule.name(),
        mine.len(),
        if mine.len() == 1 { "" } else { "s" },
        sum.join(" + ")
    ));
    let rows: Vec<Vec<String>> = mine
        .iter()
        .map(|f| {
            vec![
                f.platform.clone(),
                f.instance_id.clone().unwrap_or_else(|| "-".into()),
                f.resource_id.clone().unwrap_or_else(|| "-".into()),
                f.category.to_string(),
                local(f.period_start, &f.platform, platforms),
                local(f.period_end, &f.platform, platforms),
                format!("{} {}", cents(f.amount), f.currency),
                format!("{} {}", cents(f.monthly_projection), f.currency),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&if format == Format::Md {
        markdown(&header, &align, &rows)
    } else {
        table(&header, &align, &rows)
    });
    out.push('\n');
    let text = |t: &str| match format {
        Format::Md => md_text(t),
        _ => visible(t).into_owned(),
    };
    for f in mine {
        out.push_str(&format!("- {}\n", text(&f.recommendation)));
        if explain {
            for e in f.charges.iter() {
                out.push_str(&format!("    {}\n", evidence(&e, &text, "  ")));
            }
        }
    }
    out.push('\n');
    Ok(out)
}
