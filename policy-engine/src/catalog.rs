//! The closed lists a policy speaks of: the regions it covers and the products it prices.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;

/// Customer regions, each with its own cooling-off and hold-release periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Region {
    CN,
    US,
    EU,
    JP,
}

impl Region {
    pub const ALL: [Region; 4] = [Region::CN, Region::US, Region::EU, Region::JP];

    pub fn code(self) -> &'static str {
        match self {
            Region::CN => "CN",
            Region::US => "US",
            Region::EU => "EU",
            Region::JP => "JP",
        }
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl FromStr for Region {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Region::ALL
            .into_iter()
            .find(|r| r.code() == s)
            .ok_or_else(|| PolicyError::Rules(format!("unknown region '{s}'")))
    }
}

/// What an order bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Product {
    AnnualPlan,
    MonthlyPlan,
    Addon,
}

impl Product {
    pub const ALL: [Product; 3] = [Product::AnnualPlan, Product::MonthlyPlan, Product::Addon];

    /// The snake-case name used in files and JSON (`annual_plan`).
    pub fn as_str(self) -> &'static str {
        match self {
            Product::AnnualPlan => "annual_plan",
            Product::MonthlyPlan => "monthly_plan",
            Product::Addon => "addon",
        }
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Product {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Product::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| PolicyError::Rules(format!("unknown product '{s}'")))
    }
}
