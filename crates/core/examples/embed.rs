//! Finance tooling embeds gpuaudit-core without its Parquet store: parse bills with the
//! library, audit a month, and print the findings itself (the library prints nothing).
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
    Ok(())
}
