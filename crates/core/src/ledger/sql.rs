//! The ledger as other engines read it: Hive symlink manifests written at each commit, and
//! table definitions (`gpuaudit sql ddl`) that read only committed files.
//!
//! - `_symlink_format_manifest/month=M/platform=P/manifest` lists the URL of every committed
//!   part file of the partition, a line each: the layout Athena, Trino and Presto read for a
//!   table `STORED AS INPUTFORMAT 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat'`
//!   (the layout Delta Lake writes for them). A commit rewrites the manifests of the
//!   partitions it touched, from the newest state it can read, and reads the commits again
//!   after writing: when another commit came meanwhile it writes them again, so the last
//!   write of a partition's manifest is never older than the newest commit that touched it.
//!   A manifest lists committed files only, so an engine reading it never sees a row of an
//!   uncommitted or crashed batch.
//! - DuckDB and Spark read a list of files rather than a symlink manifest: their definitions
//!   name the committed part files themselves (a view, made again after an import).
//! - Money is DECIMAL(38, 12) as the part files hold it; times are the files' UTC instants
//!   (`TIMESTAMP(MICROS, UTC)`); the table is partitioned by `month` (the billing period) and
//!   `platform`, as the folders are.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::backend::Backend;
use super::log::{self, State};
use super::schema::{SCHEMA, Type};
use super::{Manifest, Store};
use crate::error::{Error, ErrorKind, Result};

/// The folder of the symlink manifests.
pub(crate) const SYMLINKS: &str = "_symlink_format_manifest";

/// The engine a table definition is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// DuckDB: a view over `read_parquet` of the committed files.
    Duckdb,
    /// Spark SQL: a temporary view over the committed files.
    Spark,
    /// Trino (or Presto) through its Hive connector: a symlink table.
    Trino,
    /// Amazon Athena: a symlink table.
    Athena,
}

impl Dialect {
    /// Every dialect, as named on the command line.
    pub const ALL: [(&'static str, Dialect); 4] = [
        ("duckdb", Dialect::Duckdb),
        ("spark", Dialect::Spark),
        ("trino", Dialect::Trino),
        ("athena", Dialect::Athena),
    ];
}

/// The symlink manifest of a partition.
fn symlink_name(month: &str, platform: &str) -> String {
    format!("{SYMLINKS}/month={month}/platform={platform}/manifest")
}

/// Writes the symlink manifests of `partitions` as of `state`, again as long as commits
/// come while writing (see the module docs); `state` is the newest read afterwards.
pub(crate) fn write_symlinks(
    backend: &Backend,
    state: &mut State,
    partitions: &BTreeSet<(String, String)>,
) -> Result<()> {
    loop {
        let texts = expected(backend, &state.manifest);
        for (month, platform) in partitions {
            let name = symlink_name(month, platform);
            match texts.get(&name) {
                Some(text) => backend.put(&name, text.as_bytes())?,
                None => backend.delete(&name)?,
            }
        }
        let newer = log::after(backend, state.head)?;
        if newer.is_empty() {
            return Ok(());
        }
        for commit in &newer {
            state.apply(commit);
        }
    }
}

/// The partitions whose symlink manifest does not list exactly their committed files (or
/// that have a manifest and no file), as `month=M/platform=P`.
pub(crate) fn stale_symlinks(backend: &Backend, manifest: &Manifest) -> Result<Vec<String>> {
    let want = expected(backend, manifest);
    let mut stale = Vec::new();
    for (name, text) in &want {
        let bytes = backend.read(name)?.unwrap_or_default();
        let listed = String::from_utf8_lossy(&bytes);
        if listed.lines().collect::<BTreeSet<_>>() != text.lines().collect() {
            stale.push(name.clone());
        }
    }
    for listed in backend.list(SYMLINKS)? {
        if listed.name.ends_with("/manifest") && !want.contains_key(&listed.name) {
            stale.push(listed.name);
        }
    }
    let partition = |n: &str| {
        n.trim_start_matches(SYMLINKS)
            .trim_start_matches('/')
            .trim_end_matches("/manifest")
            .to_owned()
    };
    Ok(stale.iter().map(|n| partition(n)).collect())
}

/// The text of every partition's symlink manifest as of `manifest`, by manifest name: the
/// URL of each committed part file of the partition, a line each, in commit order.
fn expected(backend: &Backend, manifest: &Manifest) -> BTreeMap<String, String> {
    let base = backend.base_url();
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for part in manifest.batches.iter().flat_map(|b| &b.files) {
        let text = texts.entry(symlink_name(&part.month, &part.platform)).or_default();
        let _ = writeln!(text, "{base}/{}", part.path);
    }
    texts
}

/// The committed part files (names).
fn files_of(manifest: &Manifest) -> Vec<&str> {
    manifest.batches.iter().flat_map(|b| &b.files).map(|p| p.path.as_str()).collect()
}

/// The SQL type of a column, in the Hive / Spark spelling, and DuckDB's.
fn sql_type(type_: Type) -> (&'static str, &'static str) {
    match type_ {
        Type::Id | Type::Text | Type::Month | Type::Enum(_) => ("STRING", "VARCHAR"),
        Type::Instant => ("TIMESTAMP", "TIMESTAMPTZ"),
        Type::Count => ("INT", "INTEGER"),
        Type::Decimal => ("DECIMAL(38,12)", "DECIMAL(38,12)"),
        Type::Line => ("BIGINT", "BIGINT"),
    }
}

impl Store {
    /// Writes the symlink manifest of every partition from the newest commit, and removes
    /// those of partitions left without files (a commit writes those of the partitions it
    /// touches; this repairs manifests an import killed after its commit left behind).
    /// Returns the number of partitions written.
    pub fn write_manifests(&self) -> Result<usize> {
        let mut state = log::read(&self.backend)?;
        let mut partitions: BTreeSet<(String, String)> = state
            .manifest
            .batches
            .iter()
            .flat_map(|b| &b.files)
            .map(|p| (p.month.clone(), p.platform.clone()))
            .collect();
        let written = partitions.len();
        for listed in self.backend.list(SYMLINKS)? {
            let mut keys = listed.name.split('/').skip(1);
            let month = keys.next().and_then(|k| k.strip_prefix("month="));
            let platform = keys.next().and_then(|k| k.strip_prefix("platform="));
            if let (Some(month), Some(platform)) = (month, platform) {
                partitions.insert((month.to_owned(), platform.to_owned()));
            }
        }
        write_symlinks(&self.backend, &mut state, &partitions)?;
        Ok(written)
    }

    /// A table definition named `table` of the ledger's committed charges for `dialect`.
    /// `location` replaces the ledger's own URL in it, for an engine that reaches the same
    /// files by another one (`s3a://` for Spark, a copy of the ledger).
    pub fn ddl(&self, dialect: Dialect, table: &str, location: Option<&str>) -> Result<String> {
        let bad = |m: String| {
            Error::from(ErrorKind::Location {
                location: location.unwrap_or("").to_owned(),
                message: m,
            })
        };
        if table.is_empty() || !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Error::ledger(
                self.root(),
                format!("{table:?} is not a table name (letters, digits, _)"),
            ));
        }
        let base = match location {
            Some(l) => l.trim_end_matches('/').to_owned(),
            None => self.backend.base_url(),
        };
        if base.contains(['\'', '\\', '\n']) {
            return Err(bad(
                "quotes, backslashes and line breaks cannot be written in SQL here".into()
            ));
        }
        let state = log::read(&self.backend)?;
        let files = files_of(&state.manifest);
        if files.is_empty() && matches!(dialect, Dialect::Duckdb | Dialect::Spark) {
            return Err(Error::ledger(self.root(), "holds no charges yet: import bills first"));
        }
        let mut out = format!(
            "-- The committed charges of the ledger at {} as of commit {} ({} part files).\n",
            self.root().display(),
            state.head,
            files.len()
        );
        match dialect {
            Dialect::Duckdb => duckdb(&mut out, table, &base, &files),
            Dialect::Spark => {
                if base.contains(['{', '}', ',', '*', '?', '[', ']']) {
                    return Err(bad(
                        "Spark would read glob characters in it: use --location".into()
                    ));
                }
                spark(&mut out, table, &base, &files);
            }
            Dialect::Trino | Dialect::Athena => hive(&mut out, dialect, table, &base),
        }
        Ok(out)
    }
}

/// A DuckDB path: a local file by its path, anything else by its URL.
fn duckdb_path(base: &str) -> &str {
    base.strip_prefix("file://").unwrap_or(base)
}

/// DuckDB's view of the committed files; `union_by_name`, because a part file written before a
/// column was added ([`super::schema::LATE`]) does not have it (DuckDB reads it as null).
fn duckdb(out: &mut String, table: &str, base: &str, files: &[&str]) {
    let base = duckdb_path(base);
    let _ = writeln!(out, "-- Made again after each import (it names the files).");
    let _ = writeln!(out, "CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet([");
    for (i, file) in files.iter().enumerate() {
        let comma = if i + 1 < files.len() { "," } else { "" };
        let _ = writeln!(out, "  '{base}/{file}'{comma}");
    }
    let _ = writeln!(
        out,
        "], hive_partitioning = true, hive_types = {{'month': VARCHAR, 'platform': VARCHAR}}, union_by_name = true);"
    );
}

/// A Hadoop URL: `file:/path` for a local file.
fn hadoop(base: &str) -> String {
    match base.strip_prefix("file://") {
        Some(path) => format!("file:{path}"),
        None if base.starts_with('/') => format!("file:{base}"),
        None => base.to_owned(),
    }
}

fn spark(out: &mut String, table: &str, base: &str, files: &[&str]) {
    let base = hadoop(base);
    let _ = writeln!(out, "-- Made again after each import (it names the files).");
    let _ = writeln!(out, "SET spark.sql.session.timeZone = UTC;");
    let _ = writeln!(out, "CREATE OR REPLACE TEMPORARY VIEW {table} (");
    for column in SCHEMA {
        let _ = writeln!(out, "  `{}` {},", column.name, sql_type(column.type_).0);
    }
    let _ = writeln!(out, "  `month` STRING");
    let relative: Vec<&str> =
        files.iter().map(|f| f.strip_prefix("charges/").unwrap_or(f)).collect();
    let _ = writeln!(out, ") USING parquet OPTIONS (");
    let _ = writeln!(out, "  path '{base}/charges/{{{}}}',", relative.join(","));
    let _ = writeln!(out, "  basePath '{base}/charges'");
    let _ = writeln!(out, ");");
}

fn hive(out: &mut String, dialect: Dialect, table: &str, base: &str) {
    let base = hadoop(base);
    if dialect == Dialect::Trino {
        let _ = writeln!(
            out,
            "-- Run in Hive (or Spark with Hive support) against the metastore of Trino's Hive connector;\n-- the table reads the symlink manifests, which each import rewrites: it need not be made again."
        );
    }
    let _ = writeln!(out, "CREATE EXTERNAL TABLE IF NOT EXISTS `{table}` (");
    let columns: Vec<_> = SCHEMA.iter().filter(|c| c.name != "platform").collect();
    for (i, column) in columns.iter().enumerate() {
        let comma = if i + 1 < columns.len() { "," } else { "" };
        let _ = writeln!(out, "  `{}` {}{comma}", column.name, sql_type(column.type_).0);
    }
    let _ = writeln!(out, ")");
    let _ = writeln!(out, "PARTITIONED BY (`month` STRING, `platform` STRING)");
    let _ = writeln!(
        out,
        "ROW FORMAT SERDE 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe'"
    );
    let _ = writeln!(
        out,
        "STORED AS INPUTFORMAT 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat'"
    );
    let _ =
        writeln!(out, "OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'");
    let _ = writeln!(out, "LOCATION '{base}/{SYMLINKS}/';");
    match dialect {
        Dialect::Trino => {
            let _ = writeln!(
                out,
                "-- Then in Trino, after each import that adds a month or a platform:"
            );
            let _ = writeln!(
                out,
                "-- CALL hive.system.sync_partition_metadata('default', '{table}', 'FULL');"
            );
        }
        _ => {
            let _ = writeln!(out, "-- After each import that adds a month or a platform:");
            let _ = writeln!(out, "MSCK REPAIR TABLE `{table}`;");
        }
    }
}
