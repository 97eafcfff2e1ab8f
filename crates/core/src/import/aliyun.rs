//! Alibaba Cloud 阿里云 BillingItemDetail (账单明细, 计费项粒度), Chinese or English headers.
//!
//! Decisions:
//! - billed cost = 应付金额 (PretaxAmount); list cost = 原价 (PretaxGrossAmount); the billing
//!   period is 账期 (BillingCycle).
//! - Pricing from 计费方式, else 消费类型: 包年包月/预付费/Subscription = subscription,
//!   按量付费/后付费/PayAsYouGo = on-demand, 抢占式/Spot = spot, 预留/节省计划 = reserved.
//! - Kind from 账单类型 (Item): 退款/Refund = refund, forced negative; 调账/Adjustment =
//!   adjustment; 新购/续费/升级/预付订单/SubscriptionOrder = purchase; else usage.
//! - Category from 计费项, else 产品明细, else 产品, by the keyword table below (traffic is
//!   checked before public IP so that 公网流量 is traffic).
//! - The instance of a row: 实例ID when it is an ECS id (`i-…`), else an `i-…` token in
//!   实例配置 or 实例标签 (`绑定实例:i-…`); a disk that names none is unlinked.
//! - GPU model from the ECS family in 实例规格 (`ecs.gn7i-…` = A10 …) `[I]`; the count is
//!   not derivable from the name and is left empty.
//! - Times: 账单开始/结束时间, else 消费时间 for both; naive times are Asia/Shanghai.
//! - The format has no row id: identity is every field plus the occurrence number.

use chrono_tz::Tz;

use crate::charge::{Category, Charge, ChargeId, Kind, Origin, Pricing, YearMonth};
use crate::error::RowError;
use crate::import::profile::{Column, Parsed, Profile, RowParser, classify};
use crate::import::source::Row;

/// The Alibaba Cloud profile.
pub struct Aliyun;

const PERIOD: usize = 0;
const ACCOUNT: usize = 1;
const PRODUCT: usize = 2;
const PRODUCT_DETAIL: usize = 3;
const SUBSCRIPTION: usize = 4;
const PAYMENT_TIME: usize = 5;
const START: usize = 6;
const END: usize = 7;
const BILL_TYPE: usize = 8;
const BILLING_METHOD: usize = 9;
const INSTANCE: usize = 10;
const NICK: usize = 11;
const TAGS: usize = 12;
const CONFIG: usize = 13;
const SPEC: usize = 14;
const REGION: usize = 15;
const ITEM: usize = 16;
const UNIT_PRICE: usize = 17;
const USAGE: usize = 18;
const USAGE_UNIT: usize = 19;
const LIST: usize = 20;
const BILLED: usize = 21;
const CURRENCY: usize = 22;

static COLUMNS: &[Column] = &[
    Column {
        key: "billing_period",
        aliases: &["账期", "BillingCycle", "Billing Cycle"],
        required: true,
    },
    Column { key: "account", aliases: &["账号ID", "AccountID", "Account ID"], required: false },
    Column { key: "product", aliases: &["产品", "ProductName", "Product"], required: false },
    Column { key: "product_detail", aliases: &["产品明细", "ProductDetail"], required: false },
    Column {
        key: "subscription_type",
        aliases: &["消费类型", "SubscriptionType"],
        required: false,
    },
    Column { key: "payment_time", aliases: &["消费时间", "PaymentTime"], required: false },
    Column {
        key: "charge_start", aliases: &["账单开始时间", "UsageStartTime"], required: false
    },
    Column { key: "charge_end", aliases: &["账单结束时间", "UsageEndTime"], required: false },
    Column { key: "bill_type", aliases: &["账单类型", "Item"], required: false },
    Column { key: "billing_method", aliases: &["计费方式", "BillingMethod"], required: false },
    Column {
        key: "resource_id",
        aliases: &["实例ID", "InstanceID", "Instance ID"],
        required: true,
    },
    Column {
        key: "resource_name",
        aliases: &["实例昵称", "NickName", "InstanceNickName"],
        required: false,
    },
    Column { key: "tags", aliases: &["实例标签", "Tag", "Tags"], required: false },
    Column { key: "config", aliases: &["实例配置", "InstanceConfig"], required: false },
    Column { key: "spec", aliases: &["实例规格", "InstanceSpec"], required: false },
    Column { key: "region", aliases: &["地域", "Region"], required: false },
    Column { key: "item", aliases: &["计费项", "BillingItem"], required: false },
    Column { key: "unit_price", aliases: &["单价", "ListPrice"], required: false },
    Column { key: "quantity", aliases: &["用量", "Usage"], required: false },
    Column { key: "unit", aliases: &["用量单位", "UsageUnit"], required: false },
    Column { key: "list_cost", aliases: &["原价", "PretaxGrossAmount"], required: false },
    Column { key: "billed_cost", aliases: &["应付金额", "PretaxAmount"], required: true },
    Column { key: "currency", aliases: &["币种", "Currency"], required: false },
];

const ZONE: Tz = chrono_tz::Asia::Shanghai;

/// Item words → category, first match wins (ASCII case ignored).
static CATEGORY_WORDS: &[(&str, Category)] = &[
    ("流量", Category::Traffic),
    ("traffic", Category::Traffic),
    ("data transfer", Category::Traffic),
    ("快照", Category::Snapshot),
    ("snapshot", Category::Snapshot),
    ("镜像", Category::Snapshot),
    ("系统盘", Category::SystemDisk),
    ("system disk", Category::SystemDisk),
    ("systemdisk", Category::SystemDisk),
    ("数据盘", Category::DataDisk),
    ("云盘", Category::DataDisk),
    ("data disk", Category::DataDisk),
    ("datadisk", Category::DataDisk),
    ("带宽", Category::PublicIp),
    ("公网ip", Category::PublicIp),
    ("eip", Category::PublicIp),
    ("bandwidth", Category::PublicIp),
    ("实例规格", Category::Compute),
    ("云服务器", Category::Compute),
    ("instance type", Category::Compute),
    ("instancetype", Category::Compute),
    ("gpu", Category::Compute),
    ("对象存储", Category::Storage),
    ("文件存储", Category::Storage),
    ("oss", Category::Storage),
    ("nas", Category::Storage),
];

/// ECS GPU families → GPU model `[I]`, longest prefix first.
static GPU_FAMILIES: &[(&str, &str)] = &[
    ("ecs.gn7i-", "A10"),
    ("ecs.gn7e-", "A100 80GB"),
    ("ecs.gn7-", "A100 40GB"),
    ("ecs.gn6i-", "T4"),
    ("ecs.gn6v-", "V100"),
    ("ecs.gn6e-", "V100"),
];

impl Profile for Aliyun {
    fn name(&self) -> &'static str {
        "aliyun"
    }
    fn description(&self) -> &'static str {
        "Alibaba Cloud BillingItemDetail (账期, 实例ID, 计费项, 原价, 应付金额; Chinese or English headers)"
    }
    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }
    fn billed_column(&self) -> Option<usize> {
        Some(BILLED)
    }
    fn zone(&self) -> Tz {
        ZONE
    }
    fn parser(&self) -> Box<dyn RowParser> {
        Box::new(Parser)
    }
}

struct Parser;

/// The first ECS instance id (`i-` followed by at least 4 letters or digits, not inside a
/// longer word) in `text`.
pub(crate) fn ecs_instance_in(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(pos) = text[from..].find("i-") {
        let at = from + pos;
        let boundary = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        let id: String = text[at + 2..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if boundary && id.len() >= 4 {
            return Some(format!("i-{id}"));
        }
        from = at + 2;
    }
    None
}

fn pricing_of(text: &str) -> Pricing {
    let t = text.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
    if has(&["包年包月", "预付费", "subscription", "prepaid"]) {
        Pricing::Subscription
    } else if has(&["抢占", "竞价", "spot", "preemptible"]) {
        Pricing::Spot
    } else if has(&["预留", "节省计划", "reserved", "savingsplan", "savings plan"]) {
        Pricing::Reserved
    } else if has(&["按量", "后付费", "payasyougo", "pay-as-you-go", "postpaid"]) {
        Pricing::OnDemand
    } else {
        Pricing::Unknown
    }
}

fn kind_of(text: &str) -> Kind {
    let t = text.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
    if has(&["退款", "退订", "refund"]) {
        Kind::Refund
    } else if has(&["调账", "adjustment"]) {
        Kind::Adjustment
    } else if has(&["新购", "续费", "升级", "降配", "预付订单", "subscriptionorder"]) {
        Kind::Purchase
    } else {
        Kind::Usage
    }
}

impl RowParser for Parser {
    fn parse(&mut self, row: &Row<'_>) -> Result<Option<Parsed>, RowError> {
        let period_text = row.required_text(PERIOD)?;
        let period: YearMonth = period_text.parse().map_err(|m: String| row.error(PERIOD, m))?;
        let mut billed = row.required_amount(BILLED)?;
        let mut list = row.amount(LIST)?;
        let kind = kind_of(&row.text(BILL_TYPE)?.unwrap_or_default());
        if kind == Kind::Refund {
            billed = -billed.abs();
            list = list.map(|l| -l.abs());
        }
        let pricing = match row.text(BILLING_METHOD)? {
            Some(m) if pricing_of(&m) != Pricing::Unknown => pricing_of(&m),
            _ => pricing_of(&row.text(SUBSCRIPTION)?.unwrap_or_default()),
        };
        let item = row.text(ITEM)?;
        let detail = row.text(PRODUCT_DETAIL)?;
        let product = row.text(PRODUCT)?;
        let category = [&item, &detail, &product]
            .into_iter()
            .flatten()
            .find_map(|t| classify(t, CATEGORY_WORDS))
            .unwrap_or(Category::Other);
        let resource = row.text(INSTANCE)?.map(|s| s.into_owned());
        let instance = match &resource {
            Some(r) if r.starts_with("i-") => Some(r.clone()),
            _ => [row.text(CONFIG)?, row.text(TAGS)?]
                .into_iter()
                .flatten()
                .find_map(|t| ecs_instance_in(&t)),
        };
        let spec = row.text(SPEC)?.unwrap_or_default().to_lowercase();
        let gpu_model = (category == Category::Compute)
            .then(|| GPU_FAMILIES.iter().find(|(p, _)| spec.starts_with(p)))
            .flatten()
            .map(|(_, m)| (*m).to_owned());
        let start = match row.time(START, ZONE)? {
            Some(t) => t,
            None => row
                .time(PAYMENT_TIME, ZONE)?
                .ok_or_else(|| row.error(START, "is empty and so is 消费时间"))?,
        };
        let end = row.time(END, ZONE)?.unwrap_or(start);
        if end < start {
            return Err(row.error(END, "is before the start of the charge"));
        }
        let charge = Charge {
            id: ChargeId(0),
            platform: "aliyun".into(),
            account: row.text(ACCOUNT)?.map(|s| s.into_owned()),
            billing_period: period,
            charge_start: start,
            charge_end: end,
            resource_id: resource,
            resource_name: row.text(NICK)?.map(|s| s.into_owned()),
            instance_id: instance,
            region: row.text(REGION)?.map(|s| s.into_owned()),
            category,
            kind,
            pricing,
            gpu_model,
            gpu_count: None,
            quantity: row.amount(USAGE)?,
            unit: row.text(USAGE_UNIT)?.map(|s| s.into_owned()),
            unit_price: row.amount(UNIT_PRICE)?,
            list_cost: list,
            billed_cost: billed,
            currency: row.text(CURRENCY)?.map_or_else(|| "CNY".into(), |s| s.into_owned()),
            balance_after: None,
            origin: Origin {
                file: row.path().display().to_string(),
                line: row.line(),
                item: item.or(detail).map(|s| s.into_owned()).unwrap_or_default(),
            },
        };
        Ok(Some(Parsed { charge, native_id: None }))
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
    fn ecs_ids_are_found_in_config_text_but_not_inside_words() {
        assert_eq!(ecs_instance_in("绑定实例:i-bp1a2b3c4d").as_deref(), Some("i-bp1a2b3c4d"));
        assert_eq!(ecs_instance_in("instance=i-uf6x9k2"), Some("i-uf6x9k2".into()));
        assert_eq!(ecs_instance_in("multi-az; ti-abcdef"), None);
        assert_eq!(ecs_instance_in("i-ab"), None);
    }

    #[test]
    fn pricing_and_kind_words_in_both_languages() {
        assert_eq!(pricing_of("包年包月"), Pricing::Subscription);
        assert_eq!(pricing_of("PayAsYouGo"), Pricing::OnDemand);
        assert_eq!(pricing_of("按量付费"), Pricing::OnDemand);
        assert_eq!(pricing_of("后付费"), Pricing::OnDemand);
        assert_eq!(pricing_of(""), Pricing::Unknown);
        assert_eq!(kind_of("退款"), Kind::Refund);
        assert_eq!(kind_of("Refund"), Kind::Refund);
        assert_eq!(kind_of("SubscriptionOrder"), Kind::Purchase);
        assert_eq!(kind_of("后付账单"), Kind::Usage);
        assert_eq!(kind_of("调账"), Kind::Adjustment);
    }
}
