//! `gpuaudit formats`: the bill formats gpuaudit reads.

use std::process::ExitCode;

use gpuaudit_core::import::profiles;

use crate::render::{Align, emit, table};

/// Arguments of `gpuaudit formats`.
#[derive(clap::Args)]
pub struct FormatsArgs {}

/// Lists the built-in profiles with the columns that identify each.
pub fn run(_args: FormatsArgs) -> Result<ExitCode, gpuaudit_core::Error> {
    let rows: Vec<Vec<String>> = profiles()
        .iter()
        .map(|p| {
            let required: Vec<&str> =
                p.columns().iter().filter(|c| c.required).map(|c| c.aliases[0]).collect();
            vec![p.name().to_owned(), required.join(", "), p.description().to_owned()]
        })
        .collect();
    emit(&table(
        &["profile", "required columns", "format"],
        &[Align::Left, Align::Left, Align::Left],
        &rows,
    ))?;
    Ok(ExitCode::SUCCESS)
}
