//! AutoDL's account transaction log (收支明细): a cash ledger, not an itemised bill.
//!
//! Decisions (FORMATS.md marks most of this format `[S]`/`[I]`):
//! - 收支类型 支出 is an expense (billed positive), 收入 income (billed negative). Without
//!   收支类型 the amount's sign decides (negative = expense). Amounts may be printed
//!   positive or signed either way.
//! - Income that is a top-up (充值) and withdrawals (提现) are `payment`: kept for the
//!   balance chain, never spend. Other income is `refund` (退款) or `credit`.
//! - 备注 `容器实例ID：<id>` is a compute charge of that instance; the row at T covers
//!   (max(T − 1 h, previous compute row of that instance in the file), T]. Rows may come in
//!   any order: the parser keeps compute rows until the file is read, then sorts them.
//! - 备注 `容器实例ID：<id> 数据盘` is that instance's data disk for the local day of T
//!   (resource id `<id>/data_disk`).
//! - 包日/包周/包月/包年 are subscription purchases; 镜像 is image storage (snapshot);
//!   文件存储 / autodl-fs / 网盘 are file storage.
//! - The billing period is the local month of the transaction time: a cash log's month is
//!   the month the money left the account.
//! - 流水号 is the native row id.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use crate::charge::{Category, Charge, ChargeId, Kind, Origin, Pricing, YearMonth, local_midnight};
use crate::error::RowError;
use crate::import::profile::{Column, Parsed, Profile, RowParser, classify};
use crate::import::source::Row;

/// The AutoDL profile.
pub struct AutoDl;

const SERIAL: usize = 0;
const TIME: usize = 1;
const DIRECTION: usize = 2;
const TYPE: usize = 3;
const CHANNEL: usize = 4;
const AMOUNT: usize = 5;
const BALANCE: usize = 6;
const NOTE: usize = 7;

static COLUMNS: &[Column] = &[
    Column {
        key: "native_id", aliases: &["流水号", "交易流水号", "流水ID"], required: false
    },
    Column { key: "time", aliases: &["交易时间", "时间"], required: true },
    Column { key: "direction", aliases: &["收支类型", "收支"], required: false },
    Column { key: "type", aliases: &["交易类型"], required: false },
    Column { key: "channel", aliases: &["交易渠道", "支付渠道"], required: false },
    Column { key: "billed_cost", aliases: &["交易金额", "金额"], required: true },
    Column { key: "balance_after", aliases: &["账户余额", "余额"], required: false },
    Column { key: "note", aliases: &["备注", "说明"], required: true },
];

const ZONE: Tz = chrono_tz::Asia::Shanghai;

/// 备注 words → category, first match wins.
static CATEGORY_WORDS: &[(&str, Category)] = &[
    ("数据盘", Category::DataDisk),
    ("镜像", Category::Snapshot),
    ("文件存储", Category::Storage),
    ("autodl-fs", Category::Storage),
    ("网盘", Category::Storage),
    ("流量", Category::Traffic),
    ("实例", Category::Compute),
];

const SUBSCRIPTION_WORDS: &[&str] = &["包日", "包周", "包月", "包年"];

impl Profile for AutoDl {
    fn name(&self) -> &'static str {
        "autodl"
    }
    fn description(&self) -> &'static str {
        "AutoDL 收支明细 (account transaction log: 流水号, 交易时间, 收支类型, 交易金额, 账户余额, 备注)"
    }
    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }
    fn billed_column(&self) -> Option<usize> {
        Some(AMOUNT)
    }
    fn zone(&self) -> Tz {
        ZONE
    }
    fn parser(&self) -> Box<dyn RowParser> {
        Box::new(Parser::default())
    }
}

#[derive(Default)]
struct Parser {
    /// Compute rows, kept until the file is read: (instance, posting time, parsed).
    compute: Vec<(String, DateTime<Utc>, Parsed)>,
}

/// The instance id written after `实例ID：` (or `实例ID:`) in a note.
pub(crate) fn instance_in_note(note: &str) -> Option<String> {
    let at = note.find("实例ID")? + "实例ID".len();
    let rest = note[at..].trim_start_matches([':', '：', ' ', '\u{3000}']);
    let id: String =
        rest.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).collect();
    (!id.is_empty()).then_some(id)
}

impl RowParser for Parser {
    fn parse(&mut self, row: &Row<'_>) -> Result<Option<Parsed>, RowError> {
        let posted = row.time(TIME, ZONE)?.ok_or_else(|| row.error(TIME, "is empty"))?;
        let amount = row.required_amount(AMOUNT)?;
        let kind_text = row.text(TYPE)?.unwrap_or_default();
        let channel = row.text(CHANNEL)?.unwrap_or_default();
        let note = row.text(NOTE)?.unwrap_or_default();
        let expense = match row.text(DIRECTION)? {
            Some(d) if d.contains("支出") => true,
            Some(d) if d.contains("收入") => false,
            Some(d) => return Err(row.error(DIRECTION, format!("{d:?} is neither 支出 nor 收入"))),
            None => amount.is_sign_negative(),
        };
        let words = format!("{kind_text} {channel} {note}");
        let magnitude = amount.abs();
        let billed = if expense { magnitude } else { -magnitude };
        let kind = if words.contains("充值") || words.contains("提现") {
            Kind::Payment
        } else if !expense && words.contains("退款") {
            Kind::Refund
        } else if !expense {
            Kind::Credit
        } else if SUBSCRIPTION_WORDS.iter().any(|w| words.contains(w)) {
            Kind::Purchase
        } else {
            Kind::Usage
        };
        let category = match kind {
            Kind::Payment => Category::Other,
            _ => classify(&note, CATEGORY_WORDS)
                .or_else(|| classify(&kind_text, CATEGORY_WORDS))
                .unwrap_or(Category::Other),
        };
        let pricing = match (kind, category) {
            (Kind::Purchase, _) => Pricing::Subscription,
            (Kind::Usage, Category::Compute | Category::DataDisk) => Pricing::OnDemand,
            _ => Pricing::Unknown,
        };
        let instance = instance_in_note(&note);
        let (start, end) = if category == Category::DataDisk && kind == Kind::Usage {
            let day = posted.with_timezone(&ZONE).date_naive();
            let next = day.succ_opt().unwrap_or(day);
            (local_midnight(day, ZONE), local_midnight(next, ZONE))
        } else {
            (posted, posted)
        };
        let resource_id = match (category, &instance) {
            (Category::Compute, Some(id)) => Some(id.clone()),
            (Category::DataDisk, Some(id)) => Some(format!("{id}/data_disk")),
            _ => None,
        };
        let item = if note.is_empty() { kind_text.to_string() } else { note.to_string() };
        let charge = Charge {
            id: ChargeId(0),
            platform: "autodl".into(),
            account: None,
            billing_period: YearMonth::of(posted, ZONE),
            charge_start: start,
            charge_end: end,
            resource_id,
            resource_name: None,
            instance_id: instance.clone(),
            region: None,
            category,
            kind,
            pricing,
            gpu_model: None,
            gpu_count: None,
            quantity: None,
            unit: None,
            unit_price: None,
            list_cost: None,
            billed_cost: billed,
            currency: "CNY".into(),
            balance_after: row.amount(BALANCE)?,
            origin: Origin { file: row.path().display().to_string(), line: row.line(), item },
        };
        let parsed = Parsed { charge, native_id: row.text(SERIAL)?.map(|s| s.into_owned()) };
        match (category, kind, instance) {
            (Category::Compute, Kind::Usage, Some(id)) => {
                self.compute.push((id, posted, parsed));
                Ok(None)
            }
            _ => Ok(Some(parsed)),
        }
    }

    fn finish(&mut self) -> Vec<Parsed> {
        let mut rows = std::mem::take(&mut self.compute);
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut previous: HashMap<String, DateTime<Utc>> = HashMap::new();
        rows.into_iter()
            .map(|(id, posted, mut parsed)| {
                let hour_before = posted - Duration::hours(1);
                let start = match previous.insert(id, posted) {
                    Some(prev) if prev > hour_before => prev,
                    _ => hour_before,
                };
                parsed.charge.charge_start = start;
                parsed.charge.charge_end = posted;
                parsed
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_keywords_are_lower_case() {
        for (word, _) in CATEGORY_WORDS {
            assert_eq!(*word, word.to_ascii_lowercase());
        }
    }

    #[test]
    fn instance_ids_come_out_of_notes_in_both_colon_styles() {
        assert_eq!(instance_in_note("容器实例ID：a1b2c3d4e5").as_deref(), Some("a1b2c3d4e5"));
        assert_eq!(instance_in_note("容器实例ID: 6f2e-91ab 数据盘").as_deref(), Some("6f2e-91ab"));
        assert_eq!(instance_in_note("余额充值"), None);
        assert_eq!(instance_in_note("容器实例ID："), None);
    }
}
