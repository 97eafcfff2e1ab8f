//! `gpuaudit export --focus`: the ledger as FOCUS 1.2, CSV or Parquet by the file's name (the
//! columns and how each is made: `gpuaudit_core::export`, and the README).

use std::path::PathBuf;
use std::process::ExitCode;

use gpuaudit_core::YearMonth;
use gpuaudit_core::ledger::{ExportFormat, LoadFilter, Store};

use crate::cmd::usage;
use crate::error::CliError;

/// Arguments of `gpuaudit export`.
#[derive(clap::Args)]
pub struct ExportArgs {
    /// Write FOCUS 1.2 (the one format `export` writes today).
    #[arg(long, required = true)]
    focus: bool,
    /// Only this billing month (YYYY-MM).
    #[arg(long, value_name = "YYYY-MM")]
    month: Option<String>,
    /// The file to write: FILE.csv or FILE.parquet.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

/// Streams the ledger into the file and says how many rows it wrote.
pub fn run(store: &Store, args: ExportArgs) -> Result<ExitCode, CliError> {
    let _ = args.focus;
    let format = ExportFormat::of(&args.output).ok_or_else(|| {
        usage(format!("-o {}: name a .csv or a .parquet file", args.output.display()))
    })?;
    let mut filter = LoadFilter::default();
    if let Some(month) = &args.month {
        filter.months.push(month.parse::<YearMonth>().map_err(usage)?);
    }
    let rows = store.export_focus(&filter, &args.output, format)?;
    crate::render::warn(&format!("{}: {rows} FOCUS 1.2 rows", args.output.display()));
    Ok(ExitCode::SUCCESS)
}
