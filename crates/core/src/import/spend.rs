//! The spend of a batch of charges, added up once a batch instead of a charge at a time: by
//! currency (an index into the batch's currencies), category, and whether the charge is new to
//! the sink. The file's totals take every charge of a currency, the sink's only the new ones.

use rust_decimal::Decimal;

use crate::charge::Category;
use crate::error::Result;
use crate::money;

/// Billed cost and number of charges per (currency, category, new).
pub(crate) struct SpendTable {
    groups: Vec<(Decimal, u64)>,
}

impl SpendTable {
    /// An empty table for `currencies` currencies.
    pub(crate) fn new(currencies: usize) -> Self {
        SpendTable { groups: vec![(Decimal::ZERO, 0); currencies * Category::ALL.len() * 2] }
    }

    /// Adds a charge of `billed` in currency `currency`, of `category`, new to the sink or not.
    pub(crate) fn add(
        &mut self,
        currency: usize,
        category: Category,
        new: bool,
        billed: Decimal,
    ) -> Result<()> {
        let group = (currency * Category::ALL.len() + category as usize) * 2 + usize::from(new);
        let group = &mut self.groups[group];
        group.0 = money::add(group.0, billed, "a file's spend")?;
        group.1 += 1;
        Ok(())
    }

    /// The new charges of currency `currency`: (category, billed, charges) of each category
    /// that has some.
    pub(crate) fn new_of(
        &self,
        currency: usize,
    ) -> impl Iterator<Item = (Category, Decimal, u64)> + '_ {
        let per = Category::ALL.len() * 2;
        let groups = &self.groups[currency * per..(currency + 1) * per];
        Category::ALL
            .iter()
            .zip(groups.chunks(2))
            .filter(|(_, known_new)| known_new[1].1 > 0)
            .map(|(&category, known_new)| (category, known_new[1].0, known_new[1].1))
    }

    /// Every charge of currency `currency`, new or not: their billed cost, or `None` when
    /// there were none.
    pub(crate) fn total_of(&self, currency: usize) -> Result<Option<Decimal>> {
        let per = Category::ALL.len() * 2;
        let groups = &self.groups[currency * per..(currency + 1) * per];
        if groups.iter().all(|g| g.1 == 0) {
            return Ok(None);
        }
        money::sum(groups.iter().map(|g| g.0), "a file's spend").map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn new_charges_go_to_the_sink_and_every_charge_to_the_file() {
        let mut t = SpendTable::new(2);
        t.add(0, Category::Compute, true, dec!(1.25)).unwrap();
        t.add(0, Category::Compute, false, dec!(2.00)).unwrap();
        t.add(0, Category::DataDisk, true, dec!(0.50)).unwrap();
        t.add(1, Category::Traffic, false, dec!(9)).unwrap();
        let new: Vec<_> = t.new_of(0).collect();
        assert_eq!(new, [(Category::Compute, dec!(1.25), 1), (Category::DataDisk, dec!(0.50), 1)]);
        assert_eq!(t.new_of(1).count(), 0, "a currency whose charges were all known");
        assert_eq!(t.total_of(0).unwrap(), Some(dec!(3.75)));
        assert_eq!(t.total_of(1).unwrap(), Some(dec!(9)));
        assert_eq!(SpendTable::new(1).total_of(0).unwrap(), None);
        let mut big = SpendTable::new(1);
        big.add(0, Category::Other, true, rust_decimal::Decimal::MAX).unwrap();
        assert!(big.add(0, Category::Other, true, rust_decimal::Decimal::MAX).is_err());
    }
}
