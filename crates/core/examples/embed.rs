//! Finance tooling embeds gpuaudit-core without its Parquet store: parse bills with the
//! library, audit a month and price its work per GPU-hour, and print both itself (the library
//! prints nothing).
//!
//! cargo run -p gpuaudit-core --no-default-features --example embed -- \
//!     2024-05 examples/gpuaudit.toml examples/bills/*.csv
#![allow(clippy::print_stdout)]

use gpuaudit_core::config::Config;
use gpuaudit_core::waste::{audit, totals};
use gpuaudit_core::{YearMonth, parse_bill};
use rust_decimal::RoundingStrategy;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [month, config, files @ ..] = args.as_slice() else {
        return Err("usage: embed YYYY-MM CONFIG.toml BILL…".into());
    };
    let month: YearMonth = month.parse()?;
    let config = Config::load(config.as_ref(), true)?;
    let mut charges = Vec::new();
    for file in files {
        charges.extend(parse_bill(file.as_ref(), None)?.charges);
    }
    let cents = |d: rust_decimal::Decimal| {
        d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
    };
    let findings = audit(&charges, month, &config)?;
    println!("{} charges read, {} findings in {month}", charges.len(), findings.len());
    for f in &findings {
        println!(
            "{} {:<8} {:<22} {:>9} {} ({} bill lines)",
            f.code,
            f.platform,
            f.resource_id.as_deref().unwrap_or("-"),
            cents(f.amount),
            f.currency,
            f.charges.len()
        );
    }
    for (currency, amount) in totals(&findings)? {
        println!("total wasted: {} {currency}", cents(amount));
    }
    let cost = gpuaudit_core::cost::report(&charges, month, &config, &Default::default())?;
    for line in cost.lines.iter().filter(|l| l.usage.gpu_seconds.is_some_and(|s| s > 0)) {
        let per = |d: Option<rust_decimal::Decimal>| d.map(cents).unwrap_or_default();
        println!(
            "cost {:<8} {:<9} {:<16} {:>8} GPU-h {:>8} all in {:>6} per GPU-hour, {:>6} all in",
            line.platform.as_deref().unwrap_or("-"),
            line.gpu_model.as_deref().unwrap_or("-"),
            line.instance.as_deref().unwrap_or("-"),
            line.gpu_hours().map(cents).unwrap_or_default(),
            cents(line.all_in()?),
            per(line.per_gpu_hour_compute()?),
            per(line.per_gpu_hour_all_in()?),
        );
    }
    Ok(())
}
