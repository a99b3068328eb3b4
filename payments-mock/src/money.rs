//! Currencies and the conversion between decimal strings (billing world files) and
//! integer minor units (the Stripe wire).
//!
//! Only the four currencies of the product are known; anything else is refused, so a
//! typo in a world file fails loudly instead of becoming a charge in "usdd".

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Currency {
    Cny,
    Usd,
    Eur,
    Jpy,
}

impl Currency {
    /// Parses an ISO 4217 code in either case (`"CNY"` in files, `"cny"` on the wire).
    pub fn parse(code: &str) -> Option<Self> {
        match code.to_ascii_lowercase().as_str() {
            "cny" => Some(Self::Cny),
            "usd" => Some(Self::Usd),
            "eur" => Some(Self::Eur),
            "jpy" => Some(Self::Jpy),
            _ => None,
        }
    }

    /// The lowercase code used on the wire and in the database.
    pub fn code(self) -> &'static str {
        match self {
            Self::Cny => "cny",
            Self::Usd => "usd",
            Self::Eur => "eur",
            Self::Jpy => "jpy",
        }
    }

    /// Number of decimal places of the minor unit.
    pub fn exponent(self) -> u32 {
        match self {
            Self::Jpy => 0,
            Self::Cny | Self::Usd | Self::Eur => 2,
        }
    }
}

/// Converts a decimal string (`"198.00"`, `"19800"` for JPY) into minor units.
/// Refuses negatives, non-numbers and amounts finer than the currency's minor unit.
pub fn to_minor_units(amount: &str, currency: Currency) -> Result<i64, String> {
    let value: Decimal = amount
        .trim()
        .parse()
        .map_err(|_| format!("invalid amount {amount:?}"))?;
    if value.is_sign_negative() {
        return Err(format!("negative amount {amount:?}"));
    }
    let scaled = value * Decimal::from(10_i64.pow(currency.exponent()));
    if !scaled.fract().is_zero() {
        return Err(format!(
            "amount {amount:?} has more than {} decimal places for {}",
            currency.exponent(),
            currency.code()
        ));
    }
    scaled
        .to_i64()
        .ok_or_else(|| format!("amount {amount:?} is out of range"))
}

/// Formats minor units as a decimal with the currency's exponent (`2145` → `"21.45"`).
pub fn format_major(minor: i64, currency: Currency) -> String {
    Decimal::new(minor, currency.exponent()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_strings_become_minor_units() {
        let cases = [
            ("198.00", Currency::Cny, Ok(19800)),
            ("12", Currency::Usd, Ok(1200)),
            ("9.99", Currency::Eur, Ok(999)),
            ("19800", Currency::Jpy, Ok(19800)),
            ("0", Currency::Jpy, Ok(0)),
        ];
        for (input, currency, expected) in cases {
            assert_eq!(to_minor_units(input, currency), expected, "{input}");
        }
    }

    #[test]
    fn amounts_finer_than_the_minor_unit_are_refused() {
        assert!(to_minor_units("1.5", Currency::Jpy).is_err());
        assert!(to_minor_units("1.005", Currency::Usd).is_err());
        assert!(to_minor_units("-1.00", Currency::Usd).is_err());
        assert!(to_minor_units("ten", Currency::Usd).is_err());
    }

    #[test]
    fn minor_units_format_with_the_currency_exponent() {
        assert_eq!(format_major(2145, Currency::Usd), "21.45");
        assert_eq!(format_major(19800, Currency::Jpy), "19800");
    }

    #[test]
    fn currency_codes_parse_in_either_case() {
        assert_eq!(Currency::parse("CNY"), Some(Currency::Cny));
        assert_eq!(Currency::parse("jpy"), Some(Currency::Jpy));
        assert_eq!(Currency::parse("gbp"), None);
    }
}
