//! Money: an exact `Decimal` amount in one of the currencies we serve.
//!
//! Amounts never pass through a float. Files and the JSON API carry decimal strings
//! (`"198.00"`, `"1980"` for JPY); the payment provider carries integer minor units.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::PolicyError;

/// ISO 4217 currencies the product supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Currency {
    CNY,
    USD,
    EUR,
    JPY,
}

impl Currency {
    /// Digits after the decimal point (JPY is a zero-decimal currency).
    pub fn decimals(self) -> u32 {
        match self {
            Currency::JPY => 0,
            _ => 2,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Currency::CNY => "CNY",
            Currency::USD => "USD",
            Currency::EUR => "EUR",
            Currency::JPY => "JPY",
        }
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl FromStr for Currency {
    type Err = PolicyError;
    /// Accepts upper or lower case (the provider speaks lower case, like Stripe).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "CNY" => Ok(Currency::CNY),
            "USD" => Ok(Currency::USD),
            "EUR" => Ok(Currency::EUR),
            "JPY" => Ok(Currency::JPY),
            _ => Err(PolicyError::UnknownCurrency(s.to_string())),
        }
    }
}

/// An exact amount of one currency. Fields are private: every `Money` has a scale the
/// currency allows and is never negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "MoneyRepr", into = "MoneyRepr")]
pub struct Money {
    amount: Decimal,
    currency: Currency,
}

#[derive(Serialize, Deserialize)]
struct MoneyRepr {
    amount: String,
    currency: Currency,
}

impl TryFrom<MoneyRepr> for Money {
    type Error = PolicyError;
    fn try_from(r: MoneyRepr) -> Result<Self, Self::Error> {
        Money::parse(&r.amount, r.currency)
    }
}

impl From<Money> for MoneyRepr {
    fn from(m: Money) -> Self {
        MoneyRepr {
            amount: m.amount_string(),
            currency: m.currency,
        }
    }
}

impl Money {
    /// Builds a money value; fails on a negative amount or more decimals than the
    /// currency has (`1.5` JPY, `1.005` USD).
    pub fn new(amount: Decimal, currency: Currency) -> Result<Self, PolicyError> {
        if amount.is_sign_negative() && !amount.is_zero() {
            return Err(PolicyError::InvalidAmount(format!(
                "{amount} {currency} is negative"
            )));
        }
        let normalized = amount.normalize();
        if normalized.scale() > currency.decimals() {
            return Err(PolicyError::InvalidAmount(format!(
                "{amount} has more than {} decimals for {currency}",
                currency.decimals()
            )));
        }
        let mut amount = normalized;
        amount.rescale(currency.decimals());
        Ok(Money { amount, currency })
    }

    /// Parses a decimal string such as `"198.00"` or `"1980"`.
    pub fn parse(amount: &str, currency: Currency) -> Result<Self, PolicyError> {
        let decimal = Decimal::from_str_exact(amount.trim()).map_err(|_| {
            PolicyError::InvalidAmount(format!("'{amount}' is not a decimal amount"))
        })?;
        Money::new(decimal, currency)
    }

    pub fn zero(currency: Currency) -> Self {
        Money::from_minor(0, currency).expect("zero is a valid amount in every currency")
    }

    /// From integer minor units (cents, fen; yen for JPY), as the provider sends them.
    pub fn from_minor(minor: i64, currency: Currency) -> Result<Self, PolicyError> {
        if minor < 0 {
            return Err(PolicyError::InvalidAmount(format!(
                "{minor} minor units is negative"
            )));
        }
        Money::new(Decimal::new(minor, currency.decimals()), currency)
    }

    /// Integer minor units, as the provider expects them.
    pub fn minor_units(&self) -> i64 {
        let scaled = self.amount * Decimal::from(10i64.pow(self.currency.decimals()));
        i64::try_from(scaled.trunc().mantissa()).unwrap_or(i64::MAX)
    }

    pub fn amount(&self) -> Decimal {
        self.amount
    }

    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The amount as the canonical decimal string: `"198.00"`, `"1980"`.
    pub fn amount_string(&self) -> String {
        self.amount.to_string()
    }

    pub fn is_zero(&self) -> bool {
        self.amount.is_zero()
    }

    /// Sum of two amounts of the same currency.
    pub fn checked_add(&self, other: &Money) -> Result<Money, PolicyError> {
        self.same_currency(other)?;
        Money::new(self.amount + other.amount, self.currency)
    }

    /// Difference, floored at zero (what is left to refund can never go negative).
    pub fn saturating_sub(&self, other: &Money) -> Result<Money, PolicyError> {
        self.same_currency(other)?;
        let d = self.amount - other.amount;
        Money::new(
            if d.is_sign_negative() {
                Decimal::ZERO
            } else {
                d
            },
            self.currency,
        )
    }

    fn same_currency(&self, other: &Money) -> Result<(), PolicyError> {
        if self.currency != other.currency {
            return Err(PolicyError::CurrencyMismatch(self.currency, other.currency));
        }
        Ok(())
    }
}

impl PartialOrd for Money {
    /// Only amounts of the same currency compare.
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self.currency == other.currency).then(|| self.amount.cmp(&other.amount))
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount, self.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_with_the_currency_scale() {
        let cases = [
            ("198", Currency::CNY, "198.00", 19800),
            ("198.00", Currency::CNY, "198.00", 19800),
            ("0.5", Currency::USD, "0.50", 50),
            ("1980", Currency::JPY, "1980", 1980),
            ("1980.0", Currency::JPY, "1980", 1980),
        ];
        for (input, currency, shown, minor) in cases {
            let m = Money::parse(input, currency).unwrap();
            assert_eq!(m.amount_string(), shown, "{input}");
            assert_eq!(m.minor_units(), minor, "{input}");
            assert_eq!(Money::from_minor(minor, currency).unwrap(), m);
        }
    }

    #[test]
    fn rejects_negative_and_overprecise_amounts() {
        for (input, currency) in [
            ("-1", Currency::USD),
            ("1.5", Currency::JPY),
            ("1.005", Currency::EUR),
            ("abc", Currency::CNY),
            ("1e3", Currency::USD),
        ] {
            assert!(Money::parse(input, currency).is_err(), "{input} {currency}");
        }
    }

    #[test]
    fn arithmetic_refuses_mixed_currencies() {
        let a = Money::parse("1", Currency::USD).unwrap();
        let b = Money::parse("1", Currency::EUR).unwrap();
        assert!(a.checked_add(&b).is_err());
        assert_eq!(a.partial_cmp(&b), None);
    }

    #[test]
    fn serde_uses_decimal_strings() {
        let m = Money::parse("198", Currency::CNY).unwrap();
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(json, r#"{"amount":"198.00","currency":"CNY"}"#);
        let back: Money = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        assert!(serde_json::from_str::<Money>(r#"{"amount":1.5,"currency":"USD"}"#).is_err());
    }
}
