//! `gpuaudit inventory`: inventory snapshots, the JSON the clouds' own CLIs print of an
//! account's volumes, instances, addresses and disk snapshots, kept in the ledger so that
//! `waste` and `cost` can say what the big clouds' bills cannot.
//!
//! `inventory import FILE… [--at TIME]` adds the files as one batch (removed with `ledger
//! --remove BATCH`); each is taken at the time it says (a `{"taken_at", "output"}` wrapper),
//! else at `--at`. A file of an unknown shape, without a time, or naming a resource twice
//! with two states is refused (exit 2, naming the file and the JSON path), and nothing is
//! added. `inventory list` prints each snapshot: its time, platform, command and what it
//! lists.

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use gpuaudit_core::ledger::Store;

use crate::error::{CliError, usage};

/// Arguments of `gpuaudit inventory`.
#[derive(clap::Args)]
pub struct InventoryArgs {
    #[command(subcommand)]
    command: InventoryCommand,
}

#[derive(clap::Subcommand)]
enum InventoryCommand {
    /// Add CLI outputs (aws ec2 describe-*, az … list, gcloud compute … list, aliyun ecs
    /// Describe…, tccli) as one batch of inventory snapshots.
    Import {
        /// The files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// When they were taken (RFC 3339), for files that do not say.
        #[arg(long, value_name = "TIME")]
        at: Option<String>,
    },
    /// List the ledger's inventory snapshots.
    List,
}

/// Runs `gpuaudit inventory`.
pub fn run(store: &Store, args: InventoryArgs) -> Result<ExitCode, CliError> {
    match args.command {
        InventoryCommand::Import { files, at } => {
            let at = at
                .map(|t| {
                    DateTime::parse_from_rfc3339(&t)
                        .map(|t| t.with_timezone(&Utc))
                        .map_err(|e| usage(format!("--at {t:?}: not an RFC 3339 time: {e}")))
                })
                .transpose()?;
            let (snapshots, sources) = gpuaudit_core::ledger::read_inventory(&files, at)?;
            let batch = store.add_inventory(&snapshots, sources)?;
            let mut out = String::new();
            for (file, s) in files.iter().zip(&snapshots) {
                out.push_str(&format!(
                    "{}: {}\n",
                    crate::render::visible(&file.display().to_string()),
                    line(s)
                ));
            }
            out.push_str(&format!("batch {batch}: {} inventory snapshots\n", snapshots.len()));
            crate::render::emit(&out)?;
        }
        InventoryCommand::List => {
            let snapshots = store.inventory_snapshots()?;
            let mut out = String::new();
            if snapshots.is_empty() {
                out.push_str("no inventory snapshots: add some with gpuaudit inventory import\n");
            }
            for s in &snapshots {
                out.push_str(&line(s));
                out.push('\n');
            }
            crate::render::emit(&out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One snapshot in a line: its time, platform, command and what it lists.
fn line(s: &gpuaudit_core::inventory::Snapshot) -> String {
    let mut what = Vec::new();
    for (n, name) in [
        (s.volumes.len(), "volumes"),
        (s.instances.len(), "instances"),
        (s.addresses.len(), "addresses"),
        (s.snapshots.len(), "snapshots"),
    ] {
        if n > 0 {
            what.push(format!("{n} {name}"));
        }
    }
    format!(
        "{} {} ({}), taken {}",
        s.platform,
        what.join(", "),
        s.command,
        s.taken.format("%Y-%m-%d %H:%M:%S UTC")
    )
}
