//! The ledger as other engines read it: `gpuaudit sql ddl` and the symlink manifests, and a
//! `--ledger` this build cannot open.

use super::{gpuaudit, stderr, stdout, workdir};

#[test]
fn a_ledger_url_this_build_cannot_read_is_refused_and_no_folder_is_made() {
    let dir = workdir();
    for args in [
        &["--ledger", "s3://bills/ledger", "import", "examples/bills/autodl-2024-05.csv"][..],
        &["--ledger", "s3://bills/ledger", "summary"],
        &["--ledger", "gopher://bills/ledger", "summary"],
    ] {
        let out = gpuaudit(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with(&format!("error: --ledger {}: ", args[1])), "{err}");
        if cfg!(not(feature = "cloud")) || args[1].starts_with("gopher") {
            assert!(err.contains("cloud") || err.contains("unknown scheme"), "{err}");
        }
    }
    assert!(!dir.path().join("s3:").exists(), "no local folder named after the scheme");
    assert!(!dir.path().join("gopher:").exists());
}

#[test]
fn table_definitions_read_the_committed_files_partitioned_with_decimal_money() {
    let dir = workdir();
    let bills = ["examples/bills/aliyun-2024-04.csv", "examples/bills/autodl-2024-05.csv"];
    let out = gpuaudit(dir.path(), &["import", bills[0], bills[1]]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ledger = dir.path().join(".gpuaudit").canonicalize().unwrap();
    let store = gpuaudit_core::ledger::Store::open(&ledger);
    let parts: Vec<String> = store
        .manifest()
        .unwrap()
        .batches
        .iter()
        .flat_map(|b| &b.files)
        .map(|p| p.path.clone())
        .collect();
    assert_eq!(parts.len(), 2);
    // The symlink manifests: one per partition, naming its committed files by URL.
    for part in &parts {
        let partition = std::path::Path::new(part).parent().unwrap();
        let partition = partition.strip_prefix("charges").unwrap();
        let manifest = ledger.join("_symlink_format_manifest").join(partition).join("manifest");
        let text = std::fs::read_to_string(&manifest).unwrap();
        assert_eq!(text, format!("file://{}/{part}\n", ledger.display()));
    }
    let ddl = |dialect: &str| {
        let out = gpuaudit(dir.path(), &["sql", "ddl", "--dialect", dialect]);
        assert_eq!(out.status.code(), Some(0), "{dialect}: {}", stderr(&out));
        stdout(&out)
    };
    let duckdb = ddl("duckdb");
    for part in &parts {
        assert!(duckdb.contains(&format!("'{}/{part}'", ledger.display())), "{duckdb}");
    }
    assert!(duckdb.contains("hive_partitioning = true"), "{duckdb}");
    let spark = ddl("spark");
    assert!(spark.contains("`billed_cost` DECIMAL(38,12),"), "{spark}");
    assert!(spark.contains("`charge_start` TIMESTAMP,"), "{spark}");
    assert!(spark.contains(&format!("basePath 'file:{}/charges'", ledger.display())), "{spark}");
    assert!(spark.contains("SET spark.sql.session.timeZone = UTC;"), "{spark}");
    for dialect in ["athena", "trino"] {
        let hive = ddl(dialect);
        assert!(hive.contains("PARTITIONED BY (`month` STRING, `platform` STRING)"), "{hive}");
        assert!(hive.contains("'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat'"), "{hive}");
        let location = format!("LOCATION 'file:{}/_symlink_format_manifest/';", ledger.display());
        assert!(hive.contains(&location), "{hive}");
        assert!(
            !hive.contains("`platform` STRING,"),
            "a partition column is not a data column too"
        );
        assert!(hive.contains("`list_cost` DECIMAL(38,12),"), "{hive}");
    }
    assert!(ddl("athena").contains("MSCK REPAIR TABLE `charges`;"));
    assert!(ddl("trino").contains("sync_partition_metadata('default', 'charges', 'FULL')"));
    let moved = gpuaudit(
        dir.path(),
        &[
            "sql",
            "ddl",
            "--dialect",
            "spark",
            "--location",
            "s3a://bills/ledger/",
            "--table",
            "bills_2024",
        ],
    );
    let moved = stdout(&moved);
    assert!(moved.contains("CREATE OR REPLACE TEMPORARY VIEW bills_2024 ("), "{moved}");
    assert!(moved.contains("path 's3a://bills/ledger/charges/{month="), "{moved}");
}

#[test]
fn a_table_definition_of_nothing_or_with_an_odd_name_is_refused() {
    let dir = workdir();
    let empty = gpuaudit(dir.path(), &["sql", "ddl", "--dialect", "duckdb"]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(stderr(&empty).contains("holds no charges yet"), "{}", stderr(&empty));
    let athena = gpuaudit(dir.path(), &["sql", "ddl", "--dialect", "athena"]);
    assert_eq!(athena.status.code(), Some(0), "a symlink table of an empty ledger is fine");
    let odd =
        gpuaudit(dir.path(), &["sql", "ddl", "--dialect", "athena", "--table", "x; DROP TABLE y"]);
    assert_eq!(odd.status.code(), Some(2));
    assert!(stderr(&odd).contains("is not a table name"), "{}", stderr(&odd));
    let quoted =
        gpuaudit(dir.path(), &["sql", "ddl", "--dialect", "trino", "--location", "s3://a'b"]);
    assert_eq!(quoted.status.code(), Some(2));
    assert!(stderr(&quoted).contains("cannot be written in SQL"), "{}", stderr(&quoted));
}
