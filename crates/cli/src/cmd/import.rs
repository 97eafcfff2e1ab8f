//! `gpuaudit import`: bill files into the ledger, as one batch.

use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;

use gpuaudit_core::import::{Profile, Progress};
use gpuaudit_core::ledger::{ImportOptions, Store};
use gpuaudit_core::report::money_text;

use crate::render::{Align, emit, table, warn};

/// Arguments of `gpuaudit import`.
#[derive(clap::Args)]
pub struct ImportArgs {
    /// Read every file with this profile, a name (see `gpuaudit formats`) or a profile file.
    #[arg(long, value_name = "NAME|FILE")]
    profile: Option<String>,
    /// Import the valid rows and keep the invalid ones, with why, under the ledger's rejects/.
    #[arg(long)]
    skip_invalid: bool,
    /// Read and count only; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Bill files (CSV, XLSX, XLS, ODS; gzip-compressed or not), zip archives of bills, folders
    /// of them (with an AWS export manifest, the files it lists); `-` reads one from standard
    /// input.
    #[arg(required = true, value_name = "FILES")]
    files: Vec<PathBuf>,
}

/// Imports, then prints per file what happened and the billed totals of the new charges.
pub fn run(
    store: &Store,
    config: &gpuaudit_core::config::Config,
    profiles: &[&'static Profile],
    args: ImportArgs,
) -> Result<ExitCode, CliError> {
    let profile = args.profile.as_deref().map(|p| resolve(profiles, p)).transpose()?;
    let bar = progress_bar(&args.files);
    let options = ImportOptions {
        profile,
        candidates: profiles.to_vec(),
        skip_invalid: args.skip_invalid,
        dry_run: args.dry_run,
        progress: bar.clone().map(progress_of),
        window: config.import,
        ids_in_memory: None,
    };
    let outcome = store.import(&args.files, &options);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let outcome = outcome?;
    for skipped in &outcome.skipped {
        warn(&format!("note: skipped {}: {}", skipped.path.display(), skipped.reason));
    }
    warn_footers(&outcome)?;
    let mut out = String::new();
    for f in &outcome.files {
        out.push_str(&format!(
            "{}: profile {}, {} rows read, {} new, {} duplicates, {} rejected{}\n",
            f.report.path,
            f.report.profile,
            f.report.rows_read,
            f.new,
            f.duplicates,
            f.report.rejected,
            rounding(&f.report.rounded)
        ));
    }
    let new: u64 = outcome.files.iter().map(|f| f.new).sum();
    match (&outcome.batch, args.dry_run) {
        (_, true) => out.push_str(&format!("dry run: {new} new charges, nothing written\n")),
        (Some(batch), false) => out.push_str(&format!("batch {batch}: {new} new charges\n")),
        (None, false) => out.push_str("nothing new: the ledger is unchanged\n"),
    }
    let rejected: u64 = outcome.files.iter().map(|f| f.report.rejected).sum();
    if rejected > 0 && args.skip_invalid && !args.dry_run {
        out.push_str(&format!(
            "{rejected} rows rejected: see {}\n",
            store.root().join("rejects").display()
        ));
    }
    if !outcome.totals.is_empty() {
        out.push('\n');
        out.push_str(&totals_table(&outcome));
    }
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Warns of each file's footer whose figure is not what its rows add up to (R005).
fn warn_footers(outcome: &gpuaudit_core::ledger::ImportOutcome) -> Result<(), CliError> {
    for footer in outcome.files.iter().flat_map(|f| &f.footer_mismatches) {
        warn(&format!(
            "warning: {}: the footer {} says {}, the rows add up to {} {} (difference {})",
            footer.location,
            footer.label,
            money_text(footer.expected),
            money_text(footer.actual),
            footer.currency,
            money_text(gpuaudit_core::money::sub(
                footer.actual,
                footer.expected,
                "a footer's difference"
            )?)
        ));
    }
    Ok(())
}

/// The billed totals of the new charges by platform, category and currency.
fn totals_table(outcome: &gpuaudit_core::ledger::ImportOutcome) -> String {
    let rows: Vec<Vec<String>> = outcome
        .totals
        .iter()
        .map(|((platform, category, currency), (billed, n))| {
            vec![
                platform.clone(),
                category.to_string(),
                currency.clone(),
                money_text(*billed),
                n.to_string(),
            ]
        })
        .collect();
    table(
        &["platform", "category", "currency", "billed_cost", "charges"],
        &[Align::Left, Align::Left, Align::Left, Align::Right, Align::Right],
        &rows,
    )
}

/// Files of more than this many bytes in all get a progress bar.
const PROGRESS_BYTES: u64 = 8 << 20;

/// A progress bar on stderr, a file at a time, when stderr is a terminal and the files are
/// big enough for it to matter (DESIGN: long work shows a progress bar).
fn progress_bar(files: &[PathBuf]) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    let total: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    if !std::io::stderr().is_terminal() || total < PROGRESS_BYTES {
        return None;
    }
    let style =
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {wide_msg}")
            .ok()?;
    Some(indicatif::ProgressBar::new(0).with_style(style))
}

/// Reading progress shown on `bar`, a file at a time.
fn progress_of(bar: indicatif::ProgressBar) -> Progress {
    Progress(std::sync::Arc::new(move |path, done, size| {
        if bar.length() != Some(size) || bar.message() != path.to_string_lossy() {
            bar.set_length(size);
            bar.set_message(path.display().to_string());
        }
        bar.set_position(done);
    }))
}

/// A profile file (an existing file, or a name ending in `.toml`), else a registered name.
fn resolve(profiles: &[&'static Profile], name: &str) -> Result<&'static Profile, CliError> {
    let path = std::path::Path::new(name);
    if path.is_file() || name.ends_with(".toml") {
        return Ok(Profile::load(path)?);
    }
    profiles.iter().copied().find(|p| p.name() == name).ok_or_else(|| {
        let known: Vec<&str> = profiles.iter().map(|p| p.name()).collect();
        let unknown = gpuaudit_core::ErrorKind::UnknownProfile {
            name: name.to_owned(),
            known: known.join(", "),
        };
        gpuaudit_core::Error::from(unknown).into()
    })
}

/// What the summary line of a file says of its amounts rounded to the ledger's 12 decimals:
/// how many, and what that took off the file's billed cost in each currency (the bill's total
/// is the ledger's plus that).
fn rounding(rounded: &std::collections::BTreeMap<String, gpuaudit_core::Rounding>) -> String {
    let amounts: u64 = rounded.values().map(|r| r.amounts).sum();
    if amounts == 0 {
        return String::new();
    }
    let off: Vec<String> =
        rounded.iter().map(|(currency, r)| format!("{:+} {currency}", r.billed_off)).collect();
    let noun = if amounts == 1 { "amount" } else { "amounts" };
    format!(
        ", {amounts} {noun} rounded to 12 decimals (the bill's billed cost minus the ledger's: {})",
        off.join(", ")
    )
}
