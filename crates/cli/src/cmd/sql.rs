//! `gpuaudit sql ddl --dialect duckdb|spark|trino|athena`: a ready table definition of the
//! ledger's committed charges for another engine (see the library's `ledger::sql`).

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use gpuaudit_core::ledger::{Dialect, Store};

use crate::error::CliError;

/// The arguments of `gpuaudit sql`.
#[derive(Args)]
pub struct SqlArgs {
    #[command(subcommand)]
    command: SqlCommand,
}

#[derive(Subcommand)]
enum SqlCommand {
    /// Print a table definition that reads only committed charges, partitioned by month and
    /// platform, money DECIMAL(38,12), times UTC.
    Ddl(DdlArgs),
}

#[derive(Args)]
struct DdlArgs {
    /// The engine.
    #[arg(long, value_enum)]
    dialect: DialectArg,
    /// The table (or view) name.
    #[arg(long, default_value = "charges")]
    table: String,
    /// The ledger's URL as the engine reaches it, when that is not the ledger's own (s3a://
    /// for Spark, a copy of the ledger).
    #[arg(long, value_name = "URL")]
    location: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum DialectArg {
    Duckdb,
    Spark,
    Trino,
    Athena,
}

/// Runs `gpuaudit sql`.
pub fn run(store: &Store, args: SqlArgs) -> Result<ExitCode, CliError> {
    let SqlCommand::Ddl(args) = args.command;
    let dialect = match args.dialect {
        DialectArg::Duckdb => Dialect::Duckdb,
        DialectArg::Spark => Dialect::Spark,
        DialectArg::Trino => Dialect::Trino,
        DialectArg::Athena => Dialect::Athena,
    };
    let text = store.ddl(dialect, &args.table, args.location.as_deref())?;
    crate::render::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}
