//! The reconciliation checks R001–R008, each a unit struct implementing [`Check`].

use std::collections::BTreeMap;

use chrono::Duration;
use rust_decimal::Decimal;

use super::agree::agrees;
use super::{Check, Context, Discrepancy, Line, Measure, span_text};
use crate::charge::UnitPriceOf;
use crate::charge::{Category, Kind, Pricing};
use crate::error::Result;
use crate::money;
use crate::report::{duration_text, money_text};
use crate::slots::SlotMap;
use crate::window::{Micros, Row, Sym, in_text_order};
use rustc_hash::FxHashMap as HashMap;

fn line(ctx: &Context<'_>, c: &Row) -> Line {
    ctx.line(c)
}

fn base(ctx: &Context<'_>, check: &dyn Check, c: &Row, period: String) -> Discrepancy {
    Discrepancy {
        code: check.code(),
        check: check.name(),
        platform: ctx.text(c.platform).to_owned(),
        account: ctx.opt(c.account).map(str::to_owned),
        resource_id: ctx.opt(c.resource_id).map(str::to_owned),
        period,
        measure: Measure::Money(ctx.text(c.currency).to_owned()),
        expected: Decimal::ZERO,
        actual: Decimal::ZERO,
        difference: Decimal::ZERO,
        locations: vec![line(ctx, c)],
        detail: String::new(),
    }
}

fn hours(d: Duration) -> Decimal {
    Decimal::from(d.num_seconds()) / Decimal::from(3600)
}

/// `e` said of charge `c`, met by `check` ([`crate::window::Window::said_of`]).
fn said(ctx: &Context<'_>, check: &dyn Check, c: &Row, e: crate::Error) -> crate::Error {
    ctx.window.said_of(c, check.code(), check.name(), e)
}

/// R001: unit price × quantity against the money that price applies to: the list cost (the
/// billed cost where a row has none), or the billed cost for platforms whose profile says so
/// (AWS CUR's unblended rate prices the unblended cost; its list cost is the public on-demand
/// cost, stated even where a reservation or a Savings Plan made the row cost nothing).
/// Signs are compared apart from the figures (negation rows carry negative rates). Rows
/// without both a price and a quantity are not compared: they have nothing to multiply.
pub struct Arithmetic;

impl Check for Arithmetic {
    fn code(&self) -> &'static str {
        "R001"
    }
    fn name(&self) -> &'static str {
        "arithmetic"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        let mut out = Vec::new();
        // What the platform's unit price prices, by platform (a few per window).
        let mut prices: Vec<(Sym, UnitPriceOf)> = Vec::new();
        for c in ctx.in_month() {
            let amounts = ctx.amounts(c);
            let (Some(price), Some(quantity)) = (amounts.unit_price(), amounts.quantity()) else {
                continue;
            };
            let of = match prices.iter().find(|(p, _)| *p == c.platform) {
                Some(&(_, of)) => of,
                None => {
                    let of = ctx.input.platforms.unit_price_of(ctx.text(c.platform));
                    prices.push((c.platform, of));
                    of
                }
            };
            let actual = match of {
                UnitPriceOf::ListCost => amounts.list_cost().unwrap_or(c.billed_cost()),
                UnitPriceOf::BilledCost => c.billed_cost(),
            };
            if agrees(price, quantity, actual) {
                continue;
            }
            let expected = money::mul(price, quantity, "a unit price times its quantity")
                .map_err(|e| said(ctx, self, c, e))?
                .abs();
            let actual = actual.abs();
            let difference = money::sub(actual, expected, "a line's arithmetic")
                .map_err(|e| said(ctx, self, c, e))?;
            // Half a unit of the figure's last decimal, at least 0.01: always 0.01 (`agrees`).
            let tolerance = Decimal::new(1, 2);
            if difference.abs() <= tolerance {
                continue;
            }
            let mut d = base(ctx, self, c, c.billing_period.to_string());
            d.expected = expected;
            d.actual = actual;
            d.difference = difference;
            d.detail = format!(
                "{} × {} = {}, but the bill says {} ({})",
                money_text(price),
                quantity.normalize(),
                money_text(expected),
                money_text(actual),
                ctx.window.item(c)
            );
            out.push(d);
        }
        Ok(out)
    }
}

/// R002: one resource charged twice for overlapping time for the same item and usage (the
/// bill's usage type and operation, or SKU, where it gives them: lines it keys apart bill
/// different usage, as S3's HeadBucket and ReadACL requests of one bucket and hour do).
pub struct DoubleCharge;

impl Check for DoubleCharge {
    fn code(&self) -> &'static str {
        "R002"
    }
    fn name(&self) -> &'static str {
        "double-charge"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        // Like with like: the same resource, item and usage (the bill's usage type and
        // operation, its SKU), so that two lines the bill keys apart are two charges.
        type Key = (Sym, Option<Sym>, Sym, Category, Option<Sym>, Option<Sym>, Sym);
        // Found through the groups met last ([`SlotMap`]): a month's rows take turns among a
        // few resources hour after hour.
        let mut groups: SlotMap<Key, Vec<&Row>> = SlotMap::default();
        for c in ctx.in_month() {
            let charged = matches!(c.kind, Kind::Usage) && c.billed_positive();
            if let (true, Some(r)) = (charged && c.charge_end > c.charge_start, c.resource_id) {
                let (item, usage) = (ctx.window.item_sym(c), ctx.window.usage_type_sym(c));
                let key = (c.platform, c.account, r, c.category, item, usage, c.currency);
                groups.entry(key, Vec::new).push(c);
            }
        }
        let texts = |k: &Key| {
            let (item, usage) = (ctx.opt(k.4).unwrap_or(""), ctx.opt(k.5).unwrap_or(""));
            (ctx.text(k.0), ctx.opt(k.1), ctx.text(k.2), k.3, item, usage, ctx.text(k.6))
        };
        // Rows of the same span are taken in the order of their lines, read for those rows
        // alone (where the window was read without them, at once for every group).
        let span = |c: &&Row| (c.charge_start, c.charge_end);
        let mut groups = in_text_order(groups.into_values(), texts);
        let mut tied: Vec<&Row> = Vec::new();
        for (_, rows) in &mut groups {
            rows.sort_by_key(span);
            for pair in rows.windows(2).filter(|p| span(&p[0]) == span(&p[1])) {
                tied.extend([pair[0], pair[1]]);
            }
        }
        tied.sort_by_key(|c| c.pos);
        tied.dedup_by_key(|c| c.pos);
        let lines: HashMap<u32, u64> =
            tied.iter().map(|c| c.pos).zip(ctx.lines_of(&tied)?.into_iter().map(|l| l.1)).collect();
        let mut out = Vec::new();
        for (_, mut rows) in groups {
            if !lines.is_empty() {
                rows.sort_by_key(|c| (span(c), lines.get(&c.pos).copied().unwrap_or(0)));
            }
            let mut latest: Option<&Row> = None;
            for c in rows {
                if let Some(prev) = latest.filter(|p| c.charge_start < p.charge_end) {
                    let start = c.charge_start;
                    let end = c.charge_end.min(prev.charge_end);
                    let mut d = base(ctx, self, c, span_text(start.time(), end.time()));
                    d.expected = prev.billed_cost();
                    d.actual = money::add(prev.billed_cost(), c.billed_cost(), "a double charge")
                        .map_err(|e| said(ctx, self, c, e))?;
                    d.difference = c.billed_cost();
                    d.locations = vec![line(ctx, prev), line(ctx, c)];
                    d.detail = format!(
                        "{} is charged twice for {} of the same time ({})",
                        ctx.opt(c.resource_id).unwrap_or_default(),
                        duration_text(hours(end - start)),
                        ctx.window.item(c)
                    );
                    out.push(d);
                }
                if latest.is_none_or(|p| c.charge_end > p.charge_end) {
                    latest = Some(c);
                }
            }
        }
        Ok(out)
    }
}

/// R003: a continuously billed resource with time missing between its first and last charge.
pub struct CoverageGap;

impl Check for CoverageGap {
    fn code(&self) -> &'static str {
        "R003"
    }
    fn name(&self) -> &'static str {
        "coverage-gap"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        let continuous =
            [Category::SystemDisk, Category::DataDisk, Category::PublicIp, Category::Snapshot];
        let mut groups: SlotMap<(Sym, Sym, Category), Vec<&Row>> = SlotMap::default();
        for c in ctx.in_month() {
            if let (true, Some(r)) = (
                continuous.contains(&c.category)
                    && c.kind == Kind::Usage
                    && c.charge_end > c.charge_start,
                c.resource_id,
            ) {
                groups.entry((c.platform, r, c.category), Vec::new).push(c);
            }
        }
        let texts = |k: &(Sym, Sym, Category)| (ctx.text(k.0), ctx.text(k.1), k.2);
        let mut out = Vec::new();
        for (_, rows) in in_text_order(groups.into_values(), texts) {
            let mut durations: Vec<Duration> =
                rows.iter().map(|c| c.charge_end - c.charge_start).collect();
            durations.sort();
            let usual = durations[durations.len() / 2];
            let mut sorted = rows.clone();
            sorted.sort_by_key(|c| c.charge_start);
            let mut covered_to = sorted[0].charge_end;
            let mut before = sorted[0];
            for c in sorted.into_iter().skip(1) {
                let gap = c.charge_start - covered_to;
                if gap >= usual {
                    let mut d =
                        base(ctx, self, c, span_text(covered_to.time(), c.charge_start.time()));
                    let span = c.charge_end - before.charge_start;
                    d.measure = Measure::Hours;
                    d.expected = hours(span);
                    d.actual = hours(span - gap);
                    d.difference = -hours(gap);
                    d.locations = vec![line(ctx, before), line(ctx, c)];
                    d.detail = format!(
                        "{} has no charge for {} between two of its charges: the export may be incomplete",
                        ctx.opt(c.resource_id).unwrap_or_default(),
                        duration_text(hours(gap))
                    );
                    out.push(d);
                }
                if c.charge_end > covered_to {
                    covered_to = c.charge_end;
                    before = c;
                }
            }
        }
        Ok(out)
    }
}

/// R004: running balances that do not chain (previous − expense + income ≠ balance).
pub struct BalanceChain;

impl Check for BalanceChain {
    fn code(&self) -> &'static str {
        "R004"
    }
    fn name(&self) -> &'static str {
        "balance-chain"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        // Each file by its place among `names` (the rows' files and lines read at once).
        type Key = (Sym, Option<Sym>, usize);
        let rows: Vec<&Row> =
            ctx.charges.iter().filter(|c| ctx.amounts(c).balance_after().is_some()).collect();
        let (mut names, mut named) = (Vec::new(), HashMap::<String, usize>::default());
        let mut files: HashMap<Key, Vec<(&Row, u64)>> = HashMap::default();
        for (c, (file, line)) in rows.iter().zip(ctx.lines_of(&rows)?) {
            let file = *named.entry(file).or_insert_with_key(|file| {
                names.push(file.clone());
                names.len() - 1
            });
            files.entry((c.platform, c.account, file)).or_default().push((c, line));
        }
        let texts = |k: &Key| (ctx.text(k.0), ctx.opt(k.1), names[k.2].as_str());
        let mut out = Vec::new();
        for (_, mut lines) in in_text_order(files, texts) {
            lines.sort_by_key(|&(_, line)| line);
            let mut rows: Vec<&Row> = lines.into_iter().map(|(c, _)| c).collect();
            let (first, last) = (rows[0], rows[rows.len() - 1]);
            if first.charge_end > last.charge_end {
                rows.reverse(); // a newest-first export
            }
            let mut balance: Option<Decimal> = None;
            for c in rows {
                let stated = ctx.amounts(c).balance_after().unwrap_or_default();
                if let Some(previous) = balance {
                    let expected = money::sub(previous, c.billed_cost(), "a running balance")
                        .map_err(|e| said(ctx, self, c, e))?;
                    if expected != stated && c.billing_period == ctx.month {
                        let mut d = base(ctx, self, c, c.billing_period.to_string());
                        d.expected = expected;
                        d.actual = stated;
                        d.difference = money::sub(stated, expected, "a running balance")
                            .map_err(|e| said(ctx, self, c, e))?;
                        d.detail = format!(
                            "balance {} after {} {} should be {}",
                            money_text(stated),
                            if c.billed_cost().is_sign_negative() { "income" } else { "expense" },
                            money_text(c.billed_cost().abs()),
                            money_text(expected)
                        );
                        out.push(d);
                    }
                }
                balance = Some(stated);
            }
        }
        Ok(out)
    }
}

/// R005: the ledger's sum against control totals (footers, statement files).
pub struct StatementTotal;

impl Check for StatementTotal {
    fn code(&self) -> &'static str {
        "R005"
    }
    fn name(&self) -> &'static str {
        "statement-total"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        let mut out = Vec::new();
        for f in &ctx.input.footers {
            if f.expected != f.actual {
                out.push(Discrepancy {
                    code: self.code(),
                    check: self.name(),
                    platform: f.platform.to_string(),
                    account: None,
                    resource_id: None,
                    period: ctx.month.to_string(),
                    measure: Measure::Money(f.currency.to_string()),
                    expected: f.expected,
                    actual: f.actual,
                    difference: money::sub(f.actual, f.expected, "a footer's difference")?,
                    locations: vec![f.location.clone()],
                    detail: format!(
                        "the footer {} says {}, the file's rows add up to {}",
                        f.label,
                        money_text(f.expected),
                        money_text(f.actual)
                    ),
                });
            }
        }
        for s in ctx.input.statements.iter().filter(|s| s.month == ctx.month) {
            let of_statement = ctx
                .in_month()
                .filter(|c| {
                    c.is_spend()
                        && ctx.text(c.platform) == s.platform
                        && ctx.text(c.currency) == s.currency
                        && s.account.as_deref().is_none_or(|a| ctx.opt(c.account) == Some(a))
                })
                .map(|c| c.billed_cost());
            let actual = money::sum(of_statement, "the ledger's total for a statement")?;
            if actual != s.total {
                out.push(Discrepancy {
                    code: self.code(),
                    check: self.name(),
                    platform: s.platform.to_string(),
                    account: s.account.as_deref().map(str::to_owned),
                    resource_id: None,
                    period: s.month.to_string(),
                    measure: Measure::Money(s.currency.to_string()),
                    expected: s.total,
                    actual,
                    difference: money::sub(actual, s.total, "a statement's difference")?,
                    locations: vec![s.location.clone()],
                    detail: format!(
                        "the statement says {}, the ledger holds {}",
                        money_text(s.total),
                        money_text(actual)
                    ),
                });
            }
        }
        Ok(out)
    }
}

/// R006: unit prices above the contracted price of the rate card.
pub struct RateCardCheck;

impl Check for RateCardCheck {
    fn code(&self) -> &'static str {
        "R006"
    }
    fn name(&self) -> &'static str {
        "rate-card"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        let config = &ctx.input.config;
        let mut out = Vec::new();
        // The model and contracted price of each instance (and model) are found once: the
        // notes and the rate card are lists, and a month holds millions of compute rows (a
        // configuration of 2,000 notes took `reconcile` of 2 M charges from 0.35 s to 2 s).
        type Instance = (Sym, Option<Sym>, Option<Sym>);
        let mut cards: SlotMap<Instance, Option<(&str, Decimal)>> = SlotMap::default();
        for c in ctx.in_month() {
            if c.category != Category::Compute
                || c.pricing != Pricing::OnDemand
                || c.kind != Kind::Usage
            {
                continue;
            }
            let card = *cards.entry((c.platform, c.instance_id, c.gpu_model), || {
                let platform = ctx.text(c.platform);
                let model = ctx.opt(c.gpu_model).or_else(|| {
                    ctx.opt(c.instance_id).and_then(|i| config.gpu_model_of(platform, i))
                })?;
                let card =
                    config.rates.iter().find(|r| r.platform == platform && r.gpu_model == model);
                Some((model, card.and_then(|r| r.on_demand_hourly)?))
            });
            let Some((model, contracted)) = card else { continue };
            let hour_long = c.charge_end - c.charge_start == Duration::hours(1);
            let Some(price) = ctx.amounts(c).unit_price().or(hour_long.then_some(c.billed_cost()))
            else {
                continue;
            };
            if price > contracted {
                let mut d = base(ctx, self, c, c.billing_period.to_string());
                d.expected = contracted;
                d.actual = price;
                d.difference = money::sub(price, contracted, "a price above the rate card")
                    .map_err(|e| said(ctx, self, c, e))?;
                d.detail = format!(
                    "{model} billed at {} per hour, the rate card says {}",
                    money_text(price),
                    money_text(contracted)
                );
                out.push(d);
            }
        }
        Ok(out)
    }
}

/// R007: more than one currency inside one platform, account and month.
pub struct MixedCurrency;

impl Check for MixedCurrency {
    fn code(&self) -> &'static str {
        "R007"
    }
    fn name(&self) -> &'static str {
        "mixed-currency"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        /// Per currency: its sum and its first charge.
        type Currencies<'a> = BTreeMap<&'a str, (Decimal, &'a Row)>;
        // Keyed by syms while the rows are read (a sym stands for one text of the window),
        // in the order of the texts after.
        type BySym<'a> = HashMap<(Sym, Option<Sym>), Vec<(Sym, money::Sum, &'a Row)>>;
        let mut by_sym = BySym::default();
        for c in ctx.in_month() {
            let currencies = by_sym.entry((c.platform, c.account)).or_default();
            let at = match currencies.iter().position(|(cur, _, _)| *cur == c.currency) {
                Some(at) => at,
                None => {
                    currencies.push((c.currency, money::Sum::new(), c));
                    currencies.len() - 1
                }
            };
            c.add_cost_to(&mut currencies[at].1, "an account's spend in a currency")
                .map_err(|e| said(ctx, self, c, e))?;
        }
        let texts = |k: &(Sym, Option<Sym>)| (ctx.text(k.0), ctx.opt(k.1));
        let groups = in_text_order(by_sym, texts).into_iter().map(|(_, currencies)| {
            let by_text =
                currencies.into_iter().map(|(cur, sum, c)| (ctx.text(cur), (sum.value(), c)));
            by_text.collect::<Currencies<'_>>()
        });
        let mut out = Vec::new();
        for currencies in groups.filter(|g| g.len() > 1) {
            let first = currencies.values().next().map(|v| v.1);
            let Some(first) = first else { continue };
            let mut d = base(ctx, self, first, ctx.month.to_string());
            d.resource_id = None;
            d.measure = Measure::Count;
            d.expected = Decimal::ONE;
            d.actual = Decimal::from(currencies.len());
            d.difference = d.actual - d.expected;
            d.locations = currencies.values().map(|v| line(ctx, v.1)).collect();
            let parts: Vec<String> = currencies
                .iter()
                .map(|(cur, (sum, _))| format!("{} {cur}", money_text(*sum)))
                .collect();
            d.detail = format!("one account bills in {}", parts.join(" and "));
            out.push(d);
        }
        Ok(out)
    }
}

/// R008: a charge whose time lies wholly outside its billing period.
pub struct PeriodMismatch;

impl Check for PeriodMismatch {
    fn code(&self) -> &'static str {
        "R008"
    }
    fn name(&self) -> &'static str {
        "period-mismatch"
    }
    fn lines_through_context(&self) -> bool {
        true
    }
    fn run(&self, ctx: &Context<'_>) -> Result<Vec<Discrepancy>> {
        let mut out = Vec::new();
        // Each platform's period is cut in its zone once, not for each of millions of rows.
        let mut periods = HashMap::default();
        for c in ctx.in_month() {
            let (start, end) =
                *periods.entry((c.platform, c.billing_period)).or_insert_with(|| {
                    let zone = ctx.input.platforms.zone(ctx.text(c.platform));
                    Micros::span(c.billing_period.span(zone))
                });
            let before =
                c.charge_end < start || (c.charge_end == start && c.charge_end > c.charge_start);
            let outside = if before {
                start - c.charge_end
            } else if c.charge_start >= end {
                c.charge_start - end
            } else {
                continue;
            };
            let mut d = base(ctx, self, c, c.billing_period.to_string());
            d.measure = Measure::Days;
            d.expected = Decimal::ZERO;
            d.actual = hours(outside) / Decimal::from(24);
            d.difference = d.actual;
            d.detail = format!(
                "billed in {} for {}: a late charge or a correction",
                c.billing_period,
                span_text(c.charge_start.time(), c.charge_end.time())
            );
            out.push(d);
        }
        Ok(out)
    }
}
