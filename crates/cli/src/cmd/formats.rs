//! `gpuaudit formats`: the bill formats gpuaudit reads, and each one as a profile file.

use crate::error::CliError;
use std::process::ExitCode;

use gpuaudit_core::import::Profile;

use crate::cmd::usage;
use crate::render::{Align, emit, table};

/// Arguments of `gpuaudit formats`.
#[derive(clap::Args)]
pub struct FormatsArgs {
    /// Print this profile as a profile file (a starting point for your own; passed back with
    /// `--profile FILE` it reads bills exactly as the built-in one does).
    #[arg(long, value_name = "NAME")]
    show: Option<String>,
}

/// Lists the profiles with the columns that identify each, or prints one.
pub fn run(profiles: &[&'static Profile], args: FormatsArgs) -> Result<ExitCode, CliError> {
    if let Some(name) = &args.show {
        let profile = profiles.iter().find(|p| p.name() == name);
        let Some(profile) = profile else {
            let known: Vec<&str> = profiles.iter().map(|p| p.name()).collect();
            return Err(usage(format!("no profile {name:?}; known: {}", known.join(", "))));
        };
        emit(profile.source())?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = profiles
        .iter()
        .map(|p| {
            let required: Vec<&str> =
                p.columns().iter().filter(|c| c.required).map(|c| c.aliases[0]).collect();
            vec![p.name().to_owned(), required.join(", "), p.description().to_owned()]
        })
        .collect();
    let mut out = table(
        &["profile", "identified by", "format"],
        &[Align::Left, Align::Left, Align::Left],
        &rows,
    );
    out.push_str("\n`gpuaudit formats --show NAME` prints one as a profile file.\n");
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
