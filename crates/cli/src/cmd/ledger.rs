//! `gpuaudit ledger`: what the ledger holds.

use crate::error::CliError;
use std::process::ExitCode;

use gpuaudit_core::ledger::Store;
use gpuaudit_core::report::money_text;

use crate::render::{Align, emit, table};

/// Arguments of `gpuaudit ledger`.
#[derive(clap::Args)]
pub struct LedgerArgs {
    /// Take a batch out of the ledger (atomically, like an import); its files are removed.
    #[arg(long, value_name = "BATCH", conflicts_with = "verify")]
    remove: Option<String>,
    /// Check every committed file against its commit (exists, rows, ids unique) and the
    /// symlink manifests engines read; exit 1 when something is wrong.
    #[arg(long, conflicts_with = "manifests")]
    verify: bool,
    /// Write every partition's symlink manifest (Athena, Trino) from the newest commit.
    #[arg(long, conflicts_with = "remove")]
    manifests: bool,
    /// Verify, rebuild from their part files the rollups and look-back files found damaged
    /// or missing, write stale symlink manifests again, and verify again; exit 1 when
    /// something is still wrong (a part file: `--remove` its batch).
    #[arg(long, conflicts_with_all = ["remove", "verify", "manifests"])]
    repair: bool,
}

/// Prints the batches, then charges and spend per month and platform; or removes a batch, or
/// verifies the files.
pub fn run(store: &Store, args: LedgerArgs) -> Result<ExitCode, CliError> {
    match (&args.remove, args.verify) {
        (Some(batch), _) => remove(store, batch),
        (None, true) => verify(store),
        (None, false) if args.repair => repair(store),
        (None, false) if args.manifests => {
            let written = store.write_manifests()?;
            emit(&format!("wrote the symlink manifests of {written} partitions\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        (None, false) => show(store),
    }
}

/// Takes batch `batch` out of the ledger.
fn remove(store: &Store, batch: &str) -> Result<ExitCode, CliError> {
    let removed = store.remove_batch(batch)?;
    let files: Vec<&str> = removed.sources.iter().map(|s| s.path.as_str()).collect();
    emit(&format!(
        "removed batch {}: {} charges of {}\n",
        removed.id,
        removed.rows,
        if files.is_empty() { "no file".to_owned() } else { files.join(" ") }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Rebuilds the derived files found wrong, then reports as `verify` does.
fn repair(store: &Store) -> Result<ExitCode, CliError> {
    let repaired = store.repair()?;
    let mut out = String::new();
    for rebuilt in &repaired.rebuilt {
        out.push_str(&format!(
            "batch {}: rebuilt {} from its part files\n",
            rebuilt.batch,
            rebuilt.files.join(" ")
        ));
    }
    if repaired.manifests > 0 {
        out.push_str(&format!(
            "wrote the symlink manifests of {} partitions\n",
            repaired.manifests
        ));
    }
    emit(&out)?;
    report(store, &repaired.left)
}

/// Checks every file against the manifest: exit 1 and the repair when one is wrong.
fn verify(store: &Store) -> Result<ExitCode, CliError> {
    report(store, &store.verify()?)
}

/// What `verify` found: exit 1 and the repair when something is wrong.
fn report(store: &Store, v: &gpuaudit_core::ledger::Verified) -> Result<ExitCode, CliError> {
    let mut out = format!(
        "ledger {}: {} batches, {} files, {} charges: ",
        store.root().display(),
        v.batches,
        v.files,
        v.charges
    );
    if v.problems.is_empty() && v.stale_manifests.is_empty() {
        out.push_str("every file is as the manifest says\n");
        emit(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.push_str(&format!("{} problems\n", v.problems.len() + v.stale_manifests.len()));
    for partition in &v.stale_manifests {
        out.push_str(&format!(
            "_symlink_format_manifest/{partition}/manifest: does not list the partition's committed files\n"
        ));
    }
    for p in &v.problems {
        out.push_str(&format!("{}: {} (batch {})\n", p.file, p.message, p.batch));
    }
    // A batch with only its rollup or look-back files wrong is rebuilt; one with a part
    // file wrong must be taken out (its charges have no other copy).
    let rebuildable = v.rebuildable();
    let batches: std::collections::BTreeSet<&str> =
        v.problems.iter().map(|p| p.batch.as_str()).collect();
    for batch in batches.into_iter().filter(|b| !rebuildable.contains(b)) {
        out.push_str(&format!("repair: gpuaudit ledger --remove {batch}\n"));
    }
    if !rebuildable.is_empty() {
        out.push_str("repair: gpuaudit ledger --repair\n");
    }
    if !v.stale_manifests.is_empty() {
        out.push_str("repair: gpuaudit ledger --manifests\n");
    }
    emit(&out)?;
    Ok(ExitCode::from(1))
}

/// The batches, then charges and spend per month and platform.
fn show(store: &Store) -> Result<ExitCode, CliError> {
    let overview = store.overview()?;
    let manifest = &overview.manifest;
    let mut out = format!(
        "ledger {}: {} batches, {} charges\n",
        store.root().display(),
        manifest.batches.len(),
        overview.charges
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
    let rows: Vec<Vec<String>> = overview
        .spend
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
