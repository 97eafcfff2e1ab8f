//! Errors said of a window's charge: where it was read, for a user to find it.

use super::{Row, Window};

impl Window {
    /// `e`, when it is money that does not fit (a bill of figures no real bill holds),
    /// said of charge `c` by the check `code` `name` that met it: where the charge was read
    /// (its file and line when the window read them or reads them now, else its charge
    /// id), the check, what was being computed, and the charge's resource and start. Any
    /// other error as it is.
    pub(crate) fn said_of(&self, c: &Row, code: &str, name: &str, e: crate::Error) -> crate::Error {
        let what = match e.into_kind() {
            crate::ErrorKind::Overflow { what } => what,
            other => return other.into(),
        };
        // Read again if the window was read without them (a store's reconciliation).
        let (file, line) = match self.lines_of(&[c]) {
            Ok(mut read) => read.pop().unwrap_or_default(),
            Err(_) => Default::default(),
        };
        let at = match line {
            line if line > 0 && !file.is_empty() => format!("{file}:{line}"),
            _ => format!("charge {}", self.id(c)),
        };
        let texts = &self.texts;
        let resource =
            texts.opt(c.resource_id).or(texts.opt(c.instance_id)).unwrap_or("no resource");
        let start = c.charge_start.time().format("%Y-%m-%d %H:%M UTC");
        let what = format!("{at}: {code} {name}: {what} (the charge of {resource} from {start})");
        crate::ErrorKind::Overflow { what }.into()
    }
}
