//! The `gpuaudit` command: parses arguments, calls gpuaudit-core, renders what it returns.
#![allow(clippy::print_stderr)]

mod cmd;
mod error;
mod render;
mod xlsx;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc: import allocates a few small strings per row on two threads; glibc's malloc
/// spent about 15% of an import in malloc/free (perf, see benches/vs_duckdb.py).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tells mimalloc to keep the memory the program frees instead of handing it back to the
/// system after 10 ms (its default). An import frees and allocates megabyte buffers (Parquet
/// pages, column chunks) all the time; each one handed back came again as fresh pages the
/// kernel had to zero: 28,000 page faults and about 7% of the CPU time of a 1 GB import
/// (`perf stat -e page-faults`). Peak memory rises by about 40 MB; the program is short-lived.
fn keep_freed_memory() {
    /// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (libmimalloc-sys 0.1.49 names
    /// the options of mimalloc 2 only); -1 means never purge.
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    #[allow(unsafe_code)]
    // SAFETY: mi_option_set only stores an integer option; any option index and value are
    // accepted (an unknown index is ignored with a warning).
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1)
    }
}

/// Turns transparent huge pages off for this process, for the commands that read a window
/// of the ledger. Such a command writes each page of its window and findings once; a huge
/// page the kernel must first assemble stalled it (memory compaction) whenever another
/// program had run just before: over a 10 M-charge window, `waste` alternating with DuckDB
/// took 2.1–4.2 s and 1.60–1.63 GB with huge pages, 2.36–2.78 s and 1.50–1.52 GB without;
/// `reconcile` 3.7–4.0 s against 2.7 s. An import keeps them: it reuses its buffers and was
/// 4–6% faster with them. (mimalloc's `allow_thp` option does the same, but only when set
/// before its first allocation, which is before `main`.)
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: PR_SET_THP_DISABLE takes four integer arguments and touches no memory of ours;
    // it fails harmlessly (an old kernel) and the result is only a hint to the kernel.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Import GPU and cloud bills into one exact ledger, and see where the money went.
#[derive(Parser)]
#[command(name = "gpuaudit", version, about, max_term_width = 100)]
struct Cli {
    /// The ledger: a folder (or file://…); with the `cloud` feature also s3://bucket/prefix,
    /// gs://… or az://… (credentials from the cloud's usual environment variables).
    #[arg(long, global = true, env = "GPUAUDIT_LEDGER", default_value = ".gpuaudit")]
    ledger: String,
    /// The endpoint of an S3-compatible store (Alibaba OSS, Tencent COS, MinIO), instead of
    /// AWS_ENDPOINT_URL; http:// allows plain HTTP.
    #[arg(long, global = true, env = "GPUAUDIT_ENDPOINT", value_name = "URL")]
    endpoint: Option<String>,
    /// The configuration file (thresholds, rate cards); optional at its default place.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import bill files (CSV) into the ledger as one batch.
    Import(cmd::import::ImportArgs),
    /// Inventory snapshots of the clouds' CLIs (volumes, instances, addresses, snapshots):
    /// what lets waste and cost judge what the big clouds' bills cannot.
    Inventory(cmd::inventory::InventoryArgs),
    /// Show what is in the ledger: batches, months, platforms, totals.
    Ledger(cmd::ledger::LedgerArgs),
    /// Spend grouped by platform, category, instance, month, account or sub account.
    Summary(cmd::summary::SummaryArgs),
    /// Find money that bought nothing in a month (rules W001–W006).
    Waste(cmd::waste::WasteArgs),
    /// Check that the bills of a month add up (checks R001–R008).
    Reconcile(cmd::reconcile::ReconcileArgs),
    /// What the work cost, all in, per GPU-hour, and on the other platforms.
    Cost(cmd::cost::CostArgs),
    /// Write the ledger as FOCUS 1.2 (CSV or Parquet).
    Export(cmd::export::ExportArgs),
    /// Write the month's review as one self-contained HTML page (and a workbook).
    Report(cmd::report::ReportArgs),
    /// Show the configuration in force, or every default.
    Config(cmd::config::ConfigArgs),
    /// List the bill formats gpuaudit reads.
    Formats(cmd::formats::FormatsArgs),
    /// Table definitions of the ledger for DuckDB, Spark, Trino and Athena.
    Sql(cmd::sql::SqlArgs),
    /// Print the shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(cmd::shell::CompletionsArgs),
    /// Print the man page (roff): `gpuaudit man > gpuaudit.1`.
    Man,
}

fn main() -> ExitCode {
    keep_freed_memory();
    // A panic the library turns into an error (a foreign reader on a damaged file) is not
    // reported twice; any other is reported as usual.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let location = info.location().map(|l| l.file()).unwrap_or_default();
        if !gpuaudit_core::catching_panic(location) {
            report(info);
        }
    }));
    let cli = Cli::parse();
    // What describes the command line needs no ledger and no configuration.
    match cli.command {
        Command::Completions(args) => {
            return cmd::shell::completions(Cli::command(), args).unwrap_or_else(fail);
        }
        Command::Man => return cmd::shell::man(Cli::command()).unwrap_or_else(fail),
        _ => {}
    }
    let store = match gpuaudit_core::ledger::Store::at(&cli.ledger, cli.endpoint.as_deref()) {
        Ok(store) => store,
        Err(e) => return fail(e.into()),
    };
    let config = match &cli.config {
        Some(path) => gpuaudit_core::config::Config::load(path, true),
        None => gpuaudit_core::config::Config::load("gpuaudit.toml".as_ref(), false),
    };
    let config = match config {
        Ok(config) => config,
        Err(e) => return fail(e.into()),
    };
    // Profile files in a `profiles/` folder next to the configuration file are registered.
    let profiles_dir = cli
        .config
        .as_deref()
        .and_then(|c| c.parent())
        .unwrap_or(std::path::Path::new(""))
        .join("profiles");
    let profiles = match gpuaudit_core::import::spec::load_dir(&profiles_dir) {
        Ok(extra) => gpuaudit_core::import::spec::with_extra(&extra),
        Err(e) => return fail(e.into()),
    };
    if !matches!(cli.command, Command::Import(_)) {
        no_huge_pages();
    }
    let result = match cli.command {
        Command::Waste(args) => cmd::waste::run(&store, &config, &profiles, args),
        Command::Config(args) => cmd::config::run(&config, args),
        Command::Reconcile(args) => cmd::reconcile::run(&store, &config, &profiles, args),
        Command::Cost(args) => cmd::cost::run(&store, &config, &profiles, args),
        Command::Export(args) => cmd::export::run(&store, args),
        Command::Report(args) => cmd::report::run(&store, &config, &profiles, args),
        Command::Import(args) => cmd::import::run(&store, &config, &profiles, args),
        Command::Ledger(args) => cmd::ledger::run(&store, args),
        Command::Inventory(args) => cmd::inventory::run(&store, args),
        Command::Summary(args) => cmd::summary::run(&store, args),
        Command::Formats(args) => cmd::formats::run(&profiles, args),
        Command::Sql(args) => cmd::sql::run(&store, args),
        Command::Completions(_) | Command::Man => Ok(ExitCode::SUCCESS),
    };
    result.unwrap_or_else(fail)
}

/// Prints `e` and gives its exit code.
fn fail(e: error::CliError) -> ExitCode {
    eprintln!("error: {e}");
    e.exit_code()
}
