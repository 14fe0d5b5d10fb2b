//! The SMPs and the time the tables read after discovery may take (`discover`'s forwarding and
//! partition tables, `qos`'s multicast and QoS tables share one budget).

use crate::fabric::discovery::model::BudgetSpent;

/// SMPs left for the tables, and until when.
pub struct Budget {
    pub mads: u64,
    pub max: u64,
    pub until: std::time::Instant,
}

impl Budget {
    /// Takes one SMP from the budget, or says why there is none left.
    pub fn take(&mut self) -> Result<(), BudgetSpent> {
        if self.mads >= self.max {
            return Err(BudgetSpent::Smps(self.max));
        }
        if std::time::Instant::now() >= self.until {
            return Err(BudgetSpent::Deadline);
        }
        self.mads += 1;
        Ok(())
    }
}
