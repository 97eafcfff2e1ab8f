//! `gpuaudit report --month YYYY-MM -o report.html [--xlsx FILE]`: the month's review as one
//! self-contained HTML page (no script, no network: the CSS and the SVG charts are inline),
//! and optionally the same tables as a workbook.
//!
//! Every table is made from the CSV output of the command it reports (`summary`, `waste`,
//! `reconcile`, `cost`), so each figure is the one the CSV gives. Every text from a bill is
//! HTML-escaped, and the page's Content-Security-Policy forbids scripts. The charts are
//! drawn by plotters' SVG backend; their bar heights are the only place money is a float
//! (pixels), never a printed figure.

use std::path::PathBuf;
use std::process::ExitCode;

use gpuaudit_core::YearMonth;
use gpuaudit_core::config::Config;
use gpuaudit_core::cost::CostKey;
use gpuaudit_core::ledger::{LoadFilter, Store};
use gpuaudit_core::report::GroupKey;
use gpuaudit_core::waste;

use crate::cmd::{cost, report_html as html, summary, usage};
use crate::error::CliError;
use crate::render::Format;

/// The most findings and discrepancies a page lists (the largest findings first): a ledger
/// of millions of charges has thousands, which no one reads on a page; the CSV has them all.
pub const MAX_ROWS: usize = 200;

/// The most bill lines a finding lists on the page.
pub const MAX_LINES: usize = 20;

/// Arguments of `gpuaudit report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// The billing month (YYYY-MM).
    #[arg(long, value_name = "YYYY-MM")]
    month: String,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    output: PathBuf,
    /// Also write the report's tables as a workbook, one sheet per section.
    #[arg(long, value_name = "FILE.xlsx")]
    xlsx: Option<PathBuf>,
}

/// The tables of a report, each the CSV text of its command.
pub struct Tables {
    pub month: YearMonth,
    pub spend: String,
    pub trend: String,
    /// The findings shown (the largest [`MAX_ROWS`]).
    pub findings: Vec<waste::Finding>,
    /// How many there are.
    pub all_findings: usize,
    /// The month's wasted money per currency, of every finding.
    pub wasted: Vec<(String, rust_decimal::Decimal)>,
    pub waste: String,
    pub discrepancies: String,
    /// How many discrepancies there are (the first [`MAX_ROWS`] are shown).
    pub all_discrepancies: usize,
    pub cost: String,
    pub sources: Vec<[String; 4]>,
}

/// Reads the month's reports from the ledger, writes the page (and the workbook).
pub fn run(
    store: &Store,
    config: &Config,
    profiles: &[&'static gpuaudit_core::import::Profile],
    args: ReportArgs,
) -> Result<ExitCode, CliError> {
    let month: YearMonth = args.month.parse().map_err(usage)?;
    let platforms = store.platforms_over(profiles)?;
    let filter = LoadFilter { months: vec![month] };
    let keys = [GroupKey::Platform, GroupKey::Category];
    let spend = summary::render(&keys, &store.summary(&filter, &keys)?, Format::Csv, None)?;
    let trend_keys = [GroupKey::Month, GroupKey::Platform];
    let all = LoadFilter::default();
    let trend =
        summary::render(&trend_keys, &store.summary(&all, &trend_keys)?, Format::Csv, None)?;
    let by = vec![CostKey::Platform, CostKey::GpuModel];
    // One read of the months waste, reconcile and cost need.
    let review = store.review(month, config, &platforms, &by)?;
    let cost = cost::csv(&cost::header(&by), &cost::line_cells(&review.cost.lines)?);
    let wasted = waste::totals(&review.findings)?;
    let (findings, found) = (review.findings, review.discrepancies);
    let shown_findings = &findings[..findings.len().min(MAX_ROWS)];
    let shown_found = &found[..found.len().min(MAX_ROWS)];
    let mut sources = Vec::new();
    for source in store.manifest()?.batches.iter().flat_map(|b| &b.sources) {
        let rows = source.rows_read.to_string();
        sources.push([source.path.clone(), source.sha256.clone(), source.profile.clone(), rows]);
    }
    let tables = Tables {
        month,
        spend,
        trend,
        waste: crate::cmd::waste::render_csv(shown_findings),
        findings: shown_findings.to_vec(),
        all_findings: findings.len(),
        wasted: wasted.clone(),
        discrepancies: crate::cmd::reconcile::render_csv(shown_found),
        all_discrepancies: found.len(),
        cost,
        sources,
    };
    let page = html::page(&tables)?;
    std::fs::write(&args.output, page).map_err(|source| {
        let path = args.output.clone();
        gpuaudit_core::Error::from(gpuaudit_core::ErrorKind::Io { path, source })
    })?;
    if let Some(path) = &args.xlsx {
        let sheets = [
            ("spend", tables.spend.clone()),
            ("trend", tables.trend.clone()),
            // The workbook has every finding and discrepancy.
            ("waste", crate::cmd::waste::render_csv(&findings)),
            ("reconcile", crate::cmd::reconcile::render_csv(&found)),
            ("cost", tables.cost.clone()),
        ];
        crate::xlsx::write(Some(path), &sheets)?;
    }
    let wasted: Vec<String> =
        wasted.iter().map(|(c, a)| format!("{} {c}", crate::render::cents(*a))).collect();
    crate::render::warn(&format!(
        "{}: report of {month} ({} findings, {} wasted)",
        args.output.display(),
        tables.all_findings,
        if wasted.is_empty() { "nothing".to_owned() } else { wasted.join(" + ") }
    ));
    Ok(ExitCode::SUCCESS)
}
