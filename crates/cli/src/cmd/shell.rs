//! `gpuaudit completions SHELL` and `gpuaudit man`: the shell completions (clap_complete) and
//! the man page (clap_mangen) of the command line as it is defined, so they never drift from
//! it.

use std::process::ExitCode;

use crate::error::CliError;
use crate::render::emit;

/// Arguments of `gpuaudit completions`.
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Prints the completion script of `command` for the shell.
pub fn completions(
    mut command: clap::Command,
    args: CompletionsArgs,
) -> Result<ExitCode, CliError> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "gpuaudit", &mut out);
    emit(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page of `command` (roff).
pub fn man(command: clap::Command) -> Result<ExitCode, CliError> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command).render(&mut out).map_err(|e| {
        gpuaudit_core::Error::from(gpuaudit_core::ErrorKind::Io {
            path: "<stdout>".into(),
            source: e,
        })
    })?;
    emit(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}
