//! `gpuaudit config`: the settings in force, or every default.

use crate::error::CliError;
use std::process::ExitCode;

use gpuaudit_core::config::Config;

use crate::render::emit;

/// Arguments of `gpuaudit config`.
#[derive(clap::Args)]
pub struct ConfigArgs {
    /// Print every setting with its default, as a gpuaudit.toml to start from.
    #[arg(long)]
    defaults: bool,
}

/// Prints the defaults, or the configuration read from `--config` / `gpuaudit.toml`.
pub fn run(config: &Config, args: ConfigArgs) -> Result<ExitCode, CliError> {
    let text = if args.defaults { Config::defaults_toml() } else { config.to_toml() };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}
