//! Money: an exact `Decimal` amount in one of the currencies we serve.
//!
//! Amounts never pass through a float. Files and the JSON API carry decimal strings
//! (`"198.00"`, `"1980"` for JPY); the payment provider carries integer minor units.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::error::PolicyError;

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
        // Already non-negative and in the currency's scale (every sum or difference of
        // two valid amounts): normalizing and rescaling would give it back unchanged.
        if amount.is_sign_positive() && amount.scale() == currency.decimals() {
            return Ok(Money { amount, currency });
        }
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
        let mut buffer = [0u8; AMOUNT_DIGITS];
        match amount_digits(self.amount, &mut buffer) {
            Some(start) => String::from_utf8(buffer[start..].to_vec()).expect("digits are ASCII"),
            None => self.amount.to_string(),
        }
    }

    /// Appends this value's `Display` text (`198.00 CNY`) to `line`: the engine builds
    /// its trace lines piece by piece.
    pub(crate) fn push_to(&self, line: &mut String) {
        let mut buffer = [0u8; AMOUNT_DIGITS];
        match amount_digits(self.amount, &mut buffer) {
            Some(start) => {
                line.push_str(std::str::from_utf8(&buffer[start..]).expect("digits are ASCII"))
            }
            None => line.push_str(&self.amount.to_string()),
        }
        line.push(' ');
        line.push_str(self.currency.code());
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
            return Err(PolicyError::CurrencyMismatch(
                self.currency.code(),
                other.currency.code(),
            ));
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
    /// `198.00 CNY`, `1980 JPY`: written in one piece, the code after the digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [b' '; AMOUNT_DIGITS + 4];
        let Some(start) = amount_digits(self.amount, &mut text[..AMOUNT_DIGITS]) else {
            return write!(f, "{} {}", self.amount, self.currency);
        };
        text[AMOUNT_DIGITS + 1..].copy_from_slice(self.currency.code().as_bytes());
        f.write_str(std::str::from_utf8(&text[start..]).expect("digits and a code are ASCII"))
    }
}

/// Room for [`amount_digits`]: 20 digits of a `u64`, a point and a leading zero.
const AMOUNT_DIGITS: usize = 24;

/// Writes `amount` exactly as `Decimal`'s `Display` does (`198.00`, `0.05`, `1980`) into
/// the end of `buffer`, right to left from the integer mantissa, and returns where it
/// starts. `Decimal` divides its 96-bit mantissa by ten once per digit and goes through
/// the formatting machinery twice, and a decision's trace shows a dozen amounts. `None`
/// for what no valid `Money` holds (a negative amount, a mantissa beyond `u64`, a scale
/// beyond 19), which the caller leaves to `Decimal`.
/// `tests::amounts_are_written_as_decimal_displays_them` checks the two agree.
fn amount_digits(amount: Decimal, buffer: &mut [u8]) -> Option<usize> {
    let scale = amount.scale() as usize;
    if amount.is_sign_negative() || scale > 19 {
        return None;
    }
    let mut rest = u64::try_from(amount.mantissa()).ok()?;
    let mut start = buffer.len();
    let mut digits = 0;
    // At least one digit before the point: 5 at scale 2 is `0.05`.
    while rest > 0 || digits <= scale {
        if digits == scale && scale > 0 {
            start -= 1;
            buffer[start] = b'.';
        }
        start -= 1;
        buffer[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        digits += 1;
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5_000))]

        #[test]
        fn amounts_are_written_as_decimal_displays_them(
            lo in any::<u32>(),
            mid in any::<u32>(),
            hi in any::<u32>(),
            digits in 0u32..=96,
            negative in any::<bool>(),
            scale in 0u32..=28,
        ) {
            // Mantissas of every size, from a few digits to the full 96 bits.
            let wide = (u128::from(hi) << 64 | u128::from(mid) << 32 | u128::from(lo)) >> (96 - digits);
            let [lo, mid, hi] = [wide as u32, (wide >> 32) as u32, (wide >> 64) as u32];
            let amount = Decimal::from_parts(lo, mid, hi, negative, scale);
            let mut buffer = [0u8; AMOUNT_DIGITS];
            if let Some(start) = amount_digits(amount, &mut buffer) {
                prop_assert_eq!(std::str::from_utf8(&buffer[start..]).unwrap(), amount.to_string());
            } else {
                prop_assert!(negative || scale > 19 || wide > u128::from(u64::MAX));
            }
        }

        #[test]
        fn new_takes_the_shortcut_only_when_normalizing_changes_nothing_and_displays_as_decimal(
            mantissa in -10_000_000i64..10_000_000,
            scale in 0u32..=4,
            currency in prop::sample::select(vec![Currency::USD, Currency::JPY]),
        ) {
            // What `Money::new` did before its shortcut for amounts already in scale.
            let reference = |amount: Decimal| -> Option<Decimal> {
                if amount.is_sign_negative() && !amount.is_zero() {
                    return None;
                }
                let mut normalized = amount.normalize();
                (normalized.scale() <= currency.decimals()).then(|| {
                    normalized.rescale(currency.decimals());
                    normalized
                })
            };
            let amount = Decimal::new(mantissa, scale);
            for amount in [amount, -amount] {
                if let Ok(money) = Money::new(amount, currency) {
                    prop_assert_eq!(money.to_string(), format!("{} {currency}", money.amount()));
                    let mut line = String::new();
                    money.push_to(&mut line);
                    prop_assert_eq!(line, money.to_string());
                    prop_assert_eq!(money.amount_string(), money.amount().to_string());
                }
                let made = Money::new(amount, currency).ok().map(|m| m.amount());
                let expected = reference(amount);
                prop_assert_eq!(made.map(|d| d.serialize()), expected.map(|d| d.serialize()));
            }
        }
    }

    #[test]
    fn amounts_of_every_currency_display_with_its_scale() {
        let cases = [
            ("0", Currency::CNY, "0.00 CNY"),
            ("0.05", Currency::USD, "0.05 USD"),
            ("1234567.5", Currency::EUR, "1234567.50 EUR"),
            ("0", Currency::JPY, "0 JPY"),
            ("19800", Currency::JPY, "19800 JPY"),
            ("-0", Currency::USD, "0.00 USD"),
        ];
        for (input, currency, shown) in cases {
            let m = Money::parse(input, currency).unwrap();
            assert_eq!(m.to_string(), shown);
            assert_eq!(format!("{} {currency}", m.amount()), shown);
        }
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
