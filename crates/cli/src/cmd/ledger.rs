//! `gpuaudit ledger`: what the ledger holds.

use std::process::ExitCode;

use gpuaudit_core::ledger::{LoadFilter, Store};
use gpuaudit_core::report::{GroupKey, money_text, summarize};

use crate::render::{Align, emit, table};

/// Arguments of `gpuaudit ledger`.
#[derive(clap::Args)]
pub struct LedgerArgs {}

/// Prints the batches, then charges and spend per month and platform.
pub fn run(store: &Store, _args: LedgerArgs) -> Result<ExitCode, gpuaudit_core::Error> {
    let manifest = store.manifest()?;
    let charges = store.load(&LoadFilter::default())?;
    let mut out = format!(
        "ledger {}: {} batches, {} charges\n",
        store.root().display(),
        manifest.batches.len(),
        charges.len()
    );
    if manifest.batches.is_empty() {
        out.push_str("empty: run `gpuaudit import FILES…` first\n");
        emit(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let batches: Vec<Vec<String>> = manifest
        .batches
        .iter()
        .map(|b| {
            let files: Vec<&str> = b.sources.iter().map(|s| s.path.as_str()).collect();
            vec![b.id.clone(), b.created.clone(), b.rows.to_string(), files.join(" ")]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(
        &["batch", "created", "charges", "files"],
        &[Align::Left, Align::Left, Align::Right, Align::Left],
        &batches,
    ));
    let rows: Vec<Vec<String>> = summarize(&charges, &[GroupKey::Month, GroupKey::Platform])?
        .into_iter()
        .map(|r| {
            let mut c: Vec<String> = r.keys.into_iter().map(Option::unwrap_or_default).collect();
            c.extend([r.currency, money_text(r.billed_cost), r.charges.to_string()]);
            c
        })
        .collect();
    out.push('\n');
    out.push_str(&table(
        &["month", "platform", "currency", "billed_cost", "charges"],
        &[Align::Left, Align::Left, Align::Left, Align::Right, Align::Right],
        &rows,
    ));
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
