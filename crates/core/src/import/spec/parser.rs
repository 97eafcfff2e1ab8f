//! The row engine: one row of a bill into a charge, by a compiled profile
//! (the steps of the module docs of `spec`).

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, Datelike, Duration, Utc};

use super::*;

use crate::charge::Charge;
use crate::charge::{Category, Kind, Pricing, YearMonth, local_midnight};
use crate::error::{Result, RowError, RowProblem};
use crate::import::row::Row;

use super::amounts::{follow_sign, money, read_at};
use super::fields::{find_instance, gpu_count, gpu_model, resource_of};
use crate::import::Rounding;

/// A charge read from a row, with the row's native id when the format has one.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The charge; its `id` is filled in by the reader.
    pub charge: Charge,
    /// The format's own row id (流水号 …), which then alone decides identity.
    pub native_id: Option<String>,
    /// For a row without a native id: a hash of its non-empty cells in columns the profile
    /// does not read, by header name (`None` when there are none). Part of the row's content
    /// identity, so that rows differing only there (a FOCUS export's own `Id`) stay apart
    /// across the files of a split export.
    pub unmapped: Option<u128>,
    /// The row's amounts that had more decimals than the ledger keeps, rounded.
    pub rounded: Rounding,
    /// The platform the row's identity is hashed with, when it is not the charge's: the
    /// profile's own, for a row whose platform comes from the provider it names (such rows
    /// were imported on the profile's platform before providers were told apart, and keep
    /// their ids).
    pub identity_platform: Option<&'static str>,
}

impl Parsed {
    /// A charge with every field empty, for a parser to fill in place.
    pub(crate) fn blank() -> Self {
        Parsed {
            charge: Charge::blank(),
            native_id: None,
            unmapped: None,
            rounded: Rounding::default(),
            identity_platform: None,
        }
    }
}

/// Row values the rules see.
pub(super) struct Facts<'r> {
    pub(super) texts: Vec<Option<Cow<'r, str>>>,
    pub(super) direction: Option<Direction>,
    pub(super) kind: Option<Kind>,
    pub(super) category: Option<Category>,
}

impl Facts<'_> {
    pub(super) fn text(&self, i: usize) -> &str {
        self.texts[i].as_deref().unwrap_or("")
    }

    fn holds<T>(&self, rule: &CompiledRule<T>, text: Option<&str>) -> bool {
        if rule.direction.is_some() && rule.direction != self.direction {
            return false;
        }
        if !rule.kind.is_empty() && !self.kind.is_some_and(|k| rule.kind.contains(&k)) {
            return false;
        }
        if !rule.category.is_empty() && !self.category.is_some_and(|c| rule.category.contains(&c)) {
            return false;
        }
        if rule.words.is_empty() && rule.values.is_empty() {
            return true;
        }
        let found = |hay: &str| {
            rule.words.iter().any(|w| contains_ignore_ascii_case(hay, w))
                || rule.values.iter().any(|v| v.eq_ignore_ascii_case(hay.trim()))
        };
        match text {
            Some(t) => found(t),
            None => rule.columns.iter().any(|&c| found(self.text(c))),
        }
    }

    fn classify<T: Copy>(&self, c: &CompiledClassifier<T>) -> T {
        if c.by_column.is_empty() {
            return c.rules.iter().find(|r| self.holds(r, None)).map_or(c.default, |r| r.value);
        }
        for &column in &c.by_column {
            let text = self.text(column);
            if let Some(r) = c.rules.iter().find(|r| self.holds(r, Some(text))) {
                return r.value;
            }
        }
        c.default
    }
}

/// Cell `i` of the row for the amount and time parsers: from `texts`, the cells already read,
/// or read again when the profile called it null there (those parsers have their own view of
/// what means "no value", and say what they think of the rest).
pub(super) fn cell<'c>(
    row: &Row<'c>,
    texts: &'c [Option<Cow<'c, str>>],
    i: usize,
) -> Result<Option<Cow<'c, str>>, RowError> {
    match &texts[i] {
        Some(text) => Ok(Some(Cow::Borrowed(text))),
        None => row.text(i),
    }
}

/// Sets `slot` to `value`, reusing its allocation.
pub(super) fn set(slot: &mut String, value: &str) {
    if slot != value {
        slot.clear();
        slot.push_str(value);
    }
}

/// Sets `slot` to `value`, reusing its allocation when it holds a string.
pub(super) fn set_opt(slot: &mut Option<String>, value: Option<&str>) {
    match (slot.as_mut(), value) {
        (Some(s), Some(v)) => set(s, v),
        (None, Some(v)) => *slot = Some(v.to_owned()),
        (_, None) => *slot = None,
    }
}

/// Whether `hay` contains `needle` (given in lower case), ASCII case ignored.
pub(super) fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

/// Turns the rows of one file into charges, by a compiled profile. One parser reads one
/// file.
pub(crate) struct Parser<'p> {
    pub(super) profile: &'p Profile,
    /// Rows whose span needs the previous row of their instance and category:
    /// (instance and category, start, longest span, parsed).
    pub(super) kept: Vec<(String, DateTime<Utc>, Option<u32>, Parsed)>,
    /// The file's name as charges record it, made once.
    pub(super) file: Option<String>,
    /// Per column, the last time read and its text: exports repeat times row after row.
    pub(super) last_time: Vec<Option<(String, DateTime<Utc>)>>,
    /// Kind, category and pricing per distinct classifier input (see `class_columns`).
    pub(super) classes: HashMap<String, (Kind, Category, Pricing)>,
    pub(super) class_key: String,
    /// Where each instance regex matched, reused from row to row.
    pub(super) locations: Vec<regex::CaptureLocations>,
    /// The vector of a row's cells, kept (empty) for the next row.
    pub(super) texts: Vec<Option<Cow<'static, str>>>,
    /// The file's columns the profile does not read, by name (see [`Parsed::unmapped`]).
    pub(super) unmapped: Option<Vec<(usize, String)>>,
    /// The bytes of a row's unmapped cells, kept (empty) for the next row.
    pub(super) unmapped_bytes: Vec<u8>,
    /// The last provider named and its platform: a bill names one provider row after row.
    pub(super) last_provider: Option<(String, &'static str)>,
}

/// The hash of a row's non-empty cells among `unmapped` (index, lower-case name), in name
/// order; `None` when all are empty, so that a file without such columns keeps the identity
/// it had before they counted.
pub(super) fn unmapped_key(
    row: &Row<'_>,
    unmapped: &[(usize, String)],
    bytes: &mut Vec<u8>,
) -> Result<Option<u128>, RowError> {
    // The bytes are gathered and hashed at once: the same hash as xxh3's streaming state,
    // which is 600 bytes to set up a row.
    bytes.clear();
    let mut any = false;
    for (i, name) in unmapped {
        let Some(text) = row.unmapped_cell(*i)? else { continue };
        any = true;
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(0x1f);
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(0x1e);
    }
    Ok(any.then(|| xxhash_rust::xxh3::xxh3_128(bytes)))
}

/// A row's start, end, and for a row kept until the file is read (its span is since the
/// previous row of its instance), the longest span in hours it may have.
type Span = (DateTime<Utc>, DateTime<Utc>, Option<Option<u32>>);

/// Distinct classifier inputs a parser remembers before it starts afresh.
pub(super) const MAX_REMEMBERED_CLASSES: usize = 4096;

impl Parser<'_> {
    /// Column `col` as a time, the last one read again when its text is unchanged.
    fn time(
        &mut self,
        row: &Row<'_>,
        texts: &[Option<Cow<'_, str>>],
        col: usize,
    ) -> Result<Option<DateTime<Utc>>, RowError> {
        let Some(text) = cell(row, texts, col)? else { return Ok(None) };
        if let Some((last, at)) = &self.last_time[col]
            && *last == *text
        {
            return Ok(Some(*at));
        }
        let at =
            crate::parse::parse_time_in(&text, self.profile.zone, self.profile.spec.date_order)
                .map_err(|m| row.error(col, RowProblem::Time(m)))?;
        let window = row.window();
        if !window.holds(at.with_timezone(&self.profile.zone).year()) {
            return Err(row.error(col, window.refusal(&text)));
        }
        match &mut self.last_time[col] {
            Some((last, t)) => {
                last.clear();
                last.push_str(&text);
                *t = at;
            }
            slot => *slot = Some((text.into_owned(), at)),
        }
        Ok(Some(at))
    }

    /// The cells of the row the profile reads, in last row's vector (emptied, it has the same
    /// layout); a cell the profile calls null is `None`.
    fn cells<'r>(&mut self, row: &Row<'r>) -> Result<Vec<Option<Cow<'r, str>>>, RowError> {
        let p = self.profile;
        let mut texts: Vec<Option<Cow<'r, str>>> =
            std::mem::take(&mut self.texts).into_iter().map(|_| None).collect();
        texts.clear();
        for i in 0..p.columns.len() {
            let text = row.text(i)?;
            let null = text.as_deref().is_some_and(|v| p.spec.nulls.iter().any(|n| n == v));
            texts.push(if null { None } else { text });
        }
        Ok(texts)
    }

    /// The first non-empty time among `columns`.
    fn first_time(
        &mut self,
        row: &Row<'_>,
        texts: &[Option<Cow<'_, str>>],
        columns: &[usize],
    ) -> Result<Option<DateTime<Utc>>, RowError> {
        for &i in columns {
            if let Some(t) = self.time(row, texts, i)? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// The span the row pays for (`[times]`: start, end, and a span rule), and for a row whose
    /// span is since the previous row of its instance, its longest span: such a row is kept.
    fn span(
        &mut self,
        row: &Row<'_>,
        texts: &[Option<Cow<'_, str>>],
        kind: Kind,
        category: Category,
    ) -> Result<Span, RowError> {
        let p = self.profile;
        let Some(mut start) = self.first_time(row, texts, &p.start)? else {
            return Err(row.error(p.start[0], RowProblem::Empty));
        };
        let mut end = self.first_time(row, texts, &p.end)?.unwrap_or(start);
        if end < start {
            return Err(row.error(p.end[0], RowProblem::EndBeforeStart));
        }
        let rule = p.spec.times.rules.iter().find(|r| {
            (r.category.is_empty() || r.category.contains(&category))
                && (r.kind.is_empty() || r.kind.contains(&kind))
        });
        let mut keep = None;
        match rule.map(|r| (r.span, r.max_hours)) {
            Some((SpanRule::LocalDay, _)) => {
                let tz = p.zone;
                let day = start.with_timezone(&tz).date_naive();
                start = local_midnight(day, tz);
                end = local_midnight(day.succ_opt().unwrap_or(day), tz);
            }
            Some((SpanRule::SincePreviousRow, max)) => keep = Some(max),
            None => {}
        }
        Ok((start, end, keep))
    }

    /// The billing period (`[period]`): a period column, a period-time column, or the local
    /// month of the posting time (`from = "posted"`) or of the start. A column the file lacks
    /// falls back to the times.
    fn billing_period(
        &mut self,
        row: &Row<'_>,
        texts: &[Option<Cow<'_, str>>],
        posted: DateTime<Utc>,
        start: DateTime<Utc>,
    ) -> Result<YearMonth, RowError> {
        let p = self.profile;
        let (f, tz) = (&p.fields, p.zone);
        if let Some(i) = f.billing_period.filter(|&i| row.has(i)) {
            let text = texts[i].as_deref().ok_or_else(|| row.error(i, RowProblem::Empty))?;
            let month =
                text.parse::<YearMonth>().map_err(|m| row.error(i, RowProblem::Month(m)))?;
            if !row.window().holds(month.year()) {
                return Err(row.error(i, row.window().refusal(text)));
            }
            return Ok(month);
        }
        if let Some(i) = f.period_time.filter(|&i| row.has(i)) {
            let t = self.time(row, texts, i)?.ok_or_else(|| row.error(i, RowProblem::Empty))?;
            return Ok(YearMonth::of(t, tz));
        }
        Ok(match p.spec.period.from.as_deref() {
            Some("posted") => YearMonth::of(posted, tz),
            _ => YearMonth::of(start, tz),
        })
    }

    /// The row's identity: its native id (the cells of `native_id` joined by U+001F, in last
    /// row's string; none when all are empty), else the hash of its unmapped cells.
    fn identify(
        &mut self,
        row: &Row<'_>,
        facts: &Facts<'_>,
        parsed: &mut Parsed,
    ) -> Result<(), RowError> {
        let mut id = parsed.native_id.take().unwrap_or_default();
        id.clear();
        for (n, &i) in self.profile.fields.native_id.iter().enumerate() {
            if n > 0 {
                id.push('\u{1f}');
            }
            id.push_str(facts.text(i));
        }
        parsed.native_id = id.chars().any(|c| c != '\u{1f}').then_some(id);
        parsed.unmapped = match parsed.native_id {
            Some(_) => None,
            None => {
                let unmapped = self.unmapped.get_or_insert_with(|| row.unmapped());
                unmapped_key(row, unmapped, &mut self.unmapped_bytes)?
            }
        };
        Ok(())
    }

    /// Kind, category and pricing of a row, remembered per distinct input.
    fn classify(&mut self, facts: &mut Facts<'_>) -> (Kind, Category, Pricing) {
        let p = self.profile;
        let key = &mut self.class_key;
        key.clear();
        key.push(match facts.direction {
            None => '-',
            Some(Direction::Expense) => 'e',
            Some(Direction::Income) => 'i',
        });
        for &c in &p.class_columns {
            key.push('\u{1f}');
            key.push_str(facts.text(c));
        }
        if let Some(&found) = self.classes.get(key.as_str()) {
            return found;
        }
        let kind = facts.classify(&p.kind);
        facts.kind = Some(kind);
        let category = facts.classify(&p.category);
        facts.category = Some(category);
        let pricing = facts.classify(&p.pricing);
        if self.classes.len() >= MAX_REMEMBERED_CLASSES {
            self.classes.clear();
        }
        self.classes.insert(key.clone(), (kind, category, pricing));
        (kind, category, pricing)
    }
}

impl Parser<'_> {
    /// A row into `out`, in the steps of the module docs: cells, money and sign, kind,
    /// category and pricing, instance and resource, times and span, billing period, GPU,
    /// the charge, its identity; a row whose span needs the next rows is kept back.
    /// True when `out` holds the row's charge; false for a row kept back until
    /// [`Parser::finish`] (its span needs the next rows) or that carries no charge.
    pub(crate) fn parse_into(
        &mut self,
        row: &Row<'_>,
        out: &mut Option<Parsed>,
    ) -> Result<bool, RowError> {
        let p = self.profile;
        let f = &p.fields;
        let texts = self.cells(row)?;
        let numbers = p.number_format();
        let mut rounded = Rounding::default();
        let (mut billed, mut list, direction) = money(p, row, &texts, &mut rounded)?;
        let printed = billed;
        let mut facts = Facts { texts, direction, kind: None, category: None };
        let (kind, category, pricing) = self.classify(&mut facts);
        if p.spec.sign.negative_kinds.contains(&kind) {
            billed = -billed.abs();
            list = list.map(|l| -l.abs());
        }
        let instance = find_instance(p, &mut self.locations, &facts.texts, category);
        let resource_id = resource_of(p, &facts.texts, category, instance);
        let posted = f.posted.map(|i| self.time(row, &facts.texts, i)).transpose()?.flatten();
        let (start, end, keep) = self.span(row, &facts.texts, kind, category)?;
        let billing_period =
            self.billing_period(row, &facts.texts, posted.unwrap_or(start), start)?;
        let (gpu_model, gpus) = gpu_model(p, &facts, category).unzip();
        let gpu_count = gpu_count(row, &facts.texts, f.gpu_count, numbers)?.or(gpus.flatten());
        let item = p.item.iter().find_map(|&i| facts.texts[i].as_deref()).unwrap_or("");
        let service = p.service.iter().find_map(|&i| facts.texts[i].as_deref());
        let text = |i: Option<usize>| i.and_then(|i| facts.texts[i].as_deref());
        // A platform or GPU model the row names itself (gpuaudit's own FOCUS export), or the
        // provider it names (FOCUS from the clouds).
        let (platform, identity_platform) =
            self.row_platform(row, text(f.platform), text(f.provider))?;
        let gpu_model = text(f.gpu_model).filter(|_| category == Category::Compute).or(gpu_model);
        let file = self.file.get_or_insert_with(|| row.path().display().to_string());
        let parsed = out.get_or_insert_with(Parsed::blank);
        let c = &mut parsed.charge;
        set(&mut c.platform, platform);
        // gpuaudit's own export names a platform's name as the account of a bill without one
        // (FOCUS requires an account): read back, it is no account.
        let named = text(f.platform).is_some();
        let account =
            text(f.account).filter(|a| !(named && *a == crate::export::provider_name(platform)));
        set_opt(&mut c.account, account);
        set_opt(&mut c.sub_account, text(f.sub_account));
        set_opt(&mut c.account_name, text(f.account_name));
        set_opt(&mut c.sub_account_name, text(f.sub_account_name));
        c.billing_period = billing_period;
        c.charge_start = start;
        c.charge_end = end;
        set_opt(&mut c.resource_id, resource_id.as_deref());
        set_opt(&mut c.resource_name, text(f.resource_name));
        set_opt(&mut c.instance_id, instance);
        set_opt(&mut c.region, text(f.region));
        c.category = category;
        c.kind = kind;
        c.pricing = pricing;
        set_opt(&mut c.gpu_model, gpu_model);
        c.gpu_count = gpu_count;
        let mut amount_of = |texts: &[Option<Cow<'_, str>>], i: Option<usize>| match i {
            Some(i) => Ok(read_at(row, texts, i, numbers)?.map(|r| {
                rounded.amounts += u64::from(r.rounded);
                r.value
            })),
            None => Ok(None),
        };
        c.quantity = amount_of(&facts.texts, f.quantity)?;
        set_opt(&mut c.unit, text(f.unit));
        c.unit_price = amount_of(&facts.texts, f.unit_price)?;
        c.list_cost = list;
        c.billed_cost = billed;
        set(&mut c.currency, text(f.currency).unwrap_or(&p.spec.currency));
        c.balance_after = amount_of(&facts.texts, f.balance_after)?;
        follow_sign(&mut rounded, printed, billed);
        parsed.rounded = rounded;
        parsed.identity_platform = identity_platform;
        set(&mut c.origin.file, file);
        c.origin.line = row.ctx.source_line(row.line());
        set(&mut c.origin.item, item);
        set_opt(&mut c.service, service);
        set_usage(&mut c.usage_type, &p.usage, &facts.texts);
        self.identify(row, &facts, parsed)?;
        // The previous row is the previous row of the same instance and category.
        let kept =
            keep.zip(instance).map(|(max, id)| (format!("{id}\u{1f}{category}"), start, max));
        self.texts = facts.texts.into_iter().map(|_| None).collect();
        match kept {
            Some((id, start, max)) => {
                self.kept.push((id, start, max, parsed.clone()));
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    /// Hands out what the parser kept back, once the file has been read.
    pub(crate) fn finish(&mut self) -> Vec<Parsed> {
        let mut rows = std::mem::take(&mut self.kept);
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut previous: HashMap<String, DateTime<Utc>> = HashMap::new();
        rows.into_iter()
            .map(|(id, posted, max, mut parsed)| {
                let earliest = max.map(|h| posted - Duration::hours(i64::from(h)));
                let start = match (previous.insert(id, posted), earliest) {
                    (Some(prev), Some(e)) => prev.max(e),
                    (Some(prev), None) => prev,
                    (None, Some(e)) => e,
                    (None, None) => posted,
                };
                parsed.charge.charge_start = start;
                parsed.charge.charge_end = posted;
                parsed
            })
            .collect()
    }
}

/// `slot` made the non-empty cells of `columns` joined by ` / ` ([`ProfileSpec::usage`]),
/// none when all are empty, in the text it holds (a parser fills one charge row after row).
fn set_usage(slot: &mut Option<String>, columns: &[usize], texts: &[Option<Cow<'_, str>>]) {
    let mut parts = columns.iter().filter_map(|&i| texts[i].as_deref()).filter(|t| !t.is_empty());
    let Some(first) = parts.next() else {
        *slot = None;
        return;
    };
    let out = slot.get_or_insert_with(String::new);
    out.clear();
    out.push_str(first);
    for part in parts {
        out.push_str(" / ");
        out.push_str(part);
    }
}
