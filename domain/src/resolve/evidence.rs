//! Secondary evidence in the customer's text: the products, money amounts, currencies
//! and explicit dates they write, in the ten languages we answer in, used to choose
//! among their orders when no id is named. Text is compared as `structure::fold_words`
//! folds it (lower case, no accents); amounts are read with a decimal point or comma
//! (`12.99`, `12,99 €`, `1.299,00 EUR`, `9,800円`).

use rust_decimal::Decimal;

use std::sync::LazyLock;

use super::normalise::{contains_phrase, phrase_spans};
use super::product_words::{PRODUCT_WORDS, SUBSCRIPTION};
use crate::phrases::PhraseSet;
use crate::structure::fold_words;

/// Every product word, in `PRODUCT_WORDS`' order, found in one pass over a text: only
/// the words it holds are then looked for where they stand (searching each of the
/// hundreds of words in turn was most of a replayed ticket's reading).
static PRODUCT_PHRASES: LazyLock<PhraseSet> = LazyLock::new(|| {
    PhraseSet::new(
        PRODUCT_WORDS
            .iter()
            .flat_map(|(_, words)| words.iter().copied()),
    )
});

/// Words that say something was bought by mistake, folded: with two of their orders
/// named, one thing bought twice (RP-001 §1 and §4.1), whatever else the words say.
const BY_MISTAKE: &[&str] = &[
    "by accident",
    "accidentally",
    "by mistake",
    "mistakenly",
    "versehentlich",
    "aus versehen",
    "par erreur",
    "par accident",
    "par megarde",
    "por error",
    "sin querer",
    "per errore",
    "per sbaglio",
    "per ongeluk",
    "per vergissing",
    "por engano",
    "sem querer",
    "不小心",
    "误买",
    "誤買",
    "手滑",
    "点错",
    "誤って",
    "間違えて",
    "실수로",
    "잘못 눌",
    "przez przypadek",
    "przez pomylke",
    "av misstag",
    "rakade",
    "yanlislikla",
    "omylem",
];

/// Words that point at the customer's newest order ("my most recent order", "dernière
/// commande", "最新的订单"), folded.
#[rustfmt::skip]
const LATEST: &[&str] = &[
    "most recent order", "latest order", "last order", "most recent purchase", "latest purchase",
    "last purchase", "newest order", "letzte bestellung", "letzten bestellung", "neueste bestellung",
    "derniere commande", "dernier achat", "ultimo pedido", "ultima compra", "ultimo ordine",
    "ultimo acquisto", "laatste bestelling", "laatste aankoop", "ultima encomenda", "最近一次",
    "最新的订单", "最近的订单", "最新の注文", "最後の注文", "直近の注文", "마지막 주문",
    "최근 주문", "ostatnie zamowienie", "senaste bestallningen", "son siparis", "posledni objednavk",
];

/// Words that say a plan renewed itself, folded: a renewal is the newest order of its
/// plan, never an older one (a year's plan renews as a new order a year later).
#[rustfmt::skip]
const RENEWED: &[&str] = &[
    "renewed", "renewal", "auto-renew", "auto renew", "autorenew", "auto-renewed", "renews",
    "charged for another year", "verlangert", "verlangerung", "renouvele", "renouvelee",
    "renouvellement", "reconduit", "reconduction", "se renovo", "renovado", "renovada",
    "renovacion", "rinnovato", "rinnovata", "rinnovo automatico", "verlengd", "verlenging",
    "renovou", "renovacao", "自动续费", "续费", "续订", "續費", "續訂", "自動更新", "갱신",
    "자동연장", "자동 연장", "odnowil", "odnowila", "odnowienie", "fornyades", "fornyelse",
    "yenilendi", "otomatik yenileme", "obnovilo", "obnoveni",
];

/// Whether `folded` points at the customer's newest order: says so, or says the plan
/// renewed.
pub(super) fn says_latest(folded: &str) -> bool {
    LATEST
        .iter()
        .chain(RENEWED)
        .any(|w| contains_phrase(folded, w))
}

/// Whether `folded` holds a word for a subscription, whichever plan it is ("my
/// subscription", "mein Abo", "구독"); a plan named by its product is one too
/// (`matching::Secondary`).
pub fn says_subscription(folded: &str) -> bool {
    SUBSCRIPTION.iter().any(|w| contains_phrase(folded, w))
}

/// How long one order of a plan pays for: a month (at most 31 days) or a year (at
/// most 366); `None` for what is no plan (an add-on is bought once).
pub fn plan_period(product: &str) -> Option<time::Duration> {
    match product {
        "monthly_plan" => Some(time::Duration::days(31)),
        "annual_plan" => Some(time::Duration::days(366)),
        _ => None,
    }
}

/// Whether `folded` says something was bought by mistake.
pub fn says_by_mistake(folded: &str) -> bool {
    BY_MISTAKE.iter().any(|w| contains_phrase(folded, w))
}

/// The products the text names (`annual_plan`…); `text` need not be folded. Where two
/// products' words overlap, the one written first names the product, as a number
/// scopes the word after it: "the 12 month plan" and "a twelve-month subscription" are
/// the annual plan, though they hold "month plan" and "month subscription".
pub fn mentioned_products(text: &str) -> Vec<&'static str> {
    let text = fold_words(text);
    let present = PRODUCT_PHRASES.present(&text);
    let words = PRODUCT_WORDS
        .iter()
        .flat_map(|(product, words)| words.iter().map(move |w| (*product, *w)));
    let found: Vec<(&'static str, (usize, usize))> = words
        .zip(present)
        .filter(|(_, present)| *present)
        .flat_map(|((product, w), _)| phrase_spans(&text, w).map(move |span| (product, span)))
        .collect();
    let overridden = |(product, (start, end)): &(&str, (usize, usize))| {
        found.iter().any(|(other, (s, e))| {
            let overlaps = s < end && start < e;
            let first = s < start || (s == start && e > end);
            other != product && overlaps && first
        })
    };
    let mut products: Vec<&'static str> = Vec::new();
    for hit in found.iter().filter(|hit| !overridden(hit)) {
        if !products.contains(&hit.0) {
            products.push(hit.0);
        }
    }
    products
}

/// Money amounts the text writes with a currency sign, code or decimals (`19.80`,
/// `12,99 €`, `¥9800`, `9,800円`, `$12`): a bare small number ("2 times") is no amount.
/// A separator before three digits reads as thousands (`9.800`, `1,299.00`: no currency
/// of ours has three decimals); one before one or two digits as the decimal point
/// (`12,99`).
pub fn mentioned_amounts(text: &str) -> Vec<Decimal> {
    let chars: Vec<char> = text.chars().collect();
    let mut amounts = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && chars[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        let mut groups: Vec<String> = vec![String::new()];
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_digit() {
                if let Some(group) = groups.last_mut() {
                    group.push(c);
                }
            } else if matches!(c, '.' | ',' | '\'')
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
            {
                groups.push(String::new());
            } else {
                break;
            }
            i += 1;
        }
        if i < chars.len() && chars[i].is_ascii_alphabetic() && !text_has_currency_at(&chars, i) {
            continue;
        }
        let sign_before = chars[..start]
            .iter()
            .rev()
            .find(|c| !c.is_whitespace())
            .is_some_and(|c| matches!(c, '$' | '€' | '¥' | '£' | '₩'));
        let marked = sign_before || text_has_currency_at(&chars, i) || has_decimals(&groups);
        if marked {
            amounts.extend(reading(&groups));
        }
    }
    amounts
}

fn has_decimals(groups: &[String]) -> bool {
    groups.len() >= 2 && groups.last().is_some_and(|g| g.len() <= 2)
}

/// The value a digit run with separators means (see [`mentioned_amounts`]).
fn reading(groups: &[String]) -> Option<Decimal> {
    let parse = |whole: &str, fraction: &str| {
        let text = if fraction.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{fraction}")
        };
        text.parse::<Decimal>().ok().map(|d| d.normalize())
    };
    let last = groups.last()?;
    if groups.len() >= 2 && last.len() <= 2 {
        return parse(&groups[..groups.len() - 1].concat(), last);
    }
    // One group, or three digits after the last separator: thousands.
    parse(&groups.concat(), "")
}

fn text_has_currency_at(chars: &[char], i: usize) -> bool {
    let rest: String = chars[i..]
        .iter()
        .skip_while(|c| c.is_whitespace())
        .take(7)
        .collect();
    [
        "usd", "eur", "cny", "jpy", "rmb", "yen", "dollar", "euro", "円", "元", "块", "美元",
        "欧元", "日元", "dolar", "dollari", "dollaro", "엔", "달러", "유로", "위안", "€", "$", "¥",
    ]
    .iter()
    .any(|w| rest.starts_with(w))
}

/// Currencies the text names by sign, code or word.
pub(super) fn mentioned_currencies(text: &str) -> Vec<&'static str> {
    let table: &[(&str, &[&str])] = &[
        (
            "USD",
            &[
                "$", "usd", "dollar", "dolar", "dolares", "dollaro", "dollari", "美元", "ドル",
                "달러",
            ],
        ),
        (
            "EUR",
            &["€", "eur", "euro", "euros", "欧元", "ユーロ", "유로"],
        ),
        ("JPY", &["円", "jpy", "yen", "日元", "엔화"]),
        (
            "CNY",
            &["cny", "rmb", "yuan", "renminbi", "人民币", "元", "위안"],
        ),
    ];
    table
        .iter()
        .filter(|(code, words)| {
            words.iter().any(|w| {
                if w.is_ascii() && w.chars().all(|c| c.is_ascii_alphabetic()) {
                    contains_phrase(text, w)
                } else if *code == "CNY" && *w == "元" {
                    // 元 is also the second character of 美元 / 欧元 / 日元.
                    text.match_indices('元').any(|(at, _)| {
                        !text[..at].ends_with('美')
                            && !text[..at].ends_with('欧')
                            && !text[..at].ends_with('日')
                    })
                } else {
                    text.contains(w)
                }
            })
        })
        .map(|(code, _)| *code)
        .collect()
}

/// Month names, folded, per month: English (and its abbreviations), German, French,
/// Spanish, Italian, Dutch, Portuguese; then Polish (nominative and genitive, "20
/// października"), Swedish, Turkish and Czech (nominative and genitive), languages we do
/// not answer in but whose dates still point at an order.
#[rustfmt::skip]
const MONTHS: [&[&str]; 12] = [
    &["jan", "january", "januar", "janvier", "janv", "enero", "gennaio", "januari", "janeiro",
      "styczen", "stycznia", "ocak", "leden", "ledna"],
    &["feb", "february", "februar", "fevrier", "fev", "febrero", "febbraio", "februari",
      "fevereiro", "luty", "lutego", "subat", "unor", "unora"],
    &["mar", "march", "marz", "mars", "marzo", "maart", "marco", "marzec", "marca", "mart",
      "brezen", "brezna"],
    &["apr", "april", "avril", "avr", "abril", "aprile", "kwiecien", "kwietnia", "nisan",
      "duben", "dubna"],
    &["may", "mai", "mayo", "maggio", "mei", "maio", "maj", "maja", "mayis", "kveten", "kvetna"],
    &["jun", "june", "juni", "juin", "junio", "giugno", "junho", "czerwiec", "czerwca",
      "haziran", "cerven", "cervna"],
    &["jul", "july", "juli", "juillet", "juil", "julio", "luglio", "julho", "lipiec", "lipca",
      "temmuz", "cervenec", "cervence"],
    &["aug", "august", "aout", "agosto", "augustus", "sierpien", "sierpnia", "augusti",
      "agustos", "srpen", "srpna"],
    &["sep", "sept", "september", "septembre", "septiembre", "setiembre", "settembre",
      "setembro", "wrzesien", "wrzesnia", "eylul", "zari"],
    &["oct", "october", "oktober", "okt", "octobre", "octubre", "ottobre", "outubro",
      "pazdziernik", "pazdziernika", "ekim", "rijen", "rijna"],
    &["nov", "november", "novembre", "noviembre", "novembro", "listopad", "listopada", "kasim",
      "listopadu"],
    &["dec", "december", "dezember", "dez", "decembre", "diciembre", "dicembre", "dezembro",
      "grudzien", "grudnia", "aralik", "prosinec", "prosince"],
];

/// What may stand between a day and its month name ("5. Dezember", "5 de diciembre",
/// "1er mai", "5th of December", "1º de maio").
const DAY_MONTH_GAPS: &[&str] = &[
    "", ".", "de", "of", "st", "nd", "rd", "th", "th of", "er", "o de",
];

/// Digit runs of a text: `(start, end, value)`, byte offsets.
fn numbers(s: &str) -> Vec<(usize, usize, u32)> {
    crate::structure::pasted::digit_runs(s)
        .into_iter()
        .filter_map(|(start, end)| Some((start, end, s[start..end].parse().ok()?)))
        .collect()
}

fn valid(m: u32, d: u32) -> bool {
    (1..=12).contains(&m) && (1..=31).contains(&d)
}

/// Explicit dates (`2026-12-05`, `2026/12/05`, `05.12.2026`, `2026年12月5日`, `12月5日`,
/// `12월 5일`, `Dec 5`, `5 December`, `5. Dezember`, `5 de diciembre`) as
/// `(year if written, month, day)`. `text` is folded (`structure::fold_words`).
pub(super) fn mentioned_dates(text: &str) -> Vec<(Option<i32>, u8, u8)> {
    let nums = numbers(text);
    let mut dates = numeric_dates(text, &nums);
    dates.extend(named_month_dates(text, &nums));
    dates
}

fn numeric_dates(text: &str, nums: &[(usize, usize, u32)]) -> Vec<(Option<i32>, u8, u8)> {
    let mut dates = Vec::new();
    let year = |y: u32| (2000..=2100).contains(&y);
    for w in nums.windows(3) {
        let [(_, e1, a), (s2, e2, b), (s3, _, c)] = [w[0], w[1], w[2]];
        let (sep1, sep2) = (text[e1..s2].trim(), text[e2..s3].trim());
        let ymd = matches!(
            (sep1, sep2),
            ("-", "-") | ("/", "/") | ("年", "月") | ("년", "월")
        );
        if year(a) && valid(b, c) && ymd {
            dates.push((Some(a as i32), b as u8, c as u8));
        }
        // Day first with dots, slashes or dashes (05.12.2026, 03/10/2026, 03-10-2026), as
        // much of the world writes it; with slashes also month first, as the US does.
        let same = sep1 == sep2 && matches!(sep1, "." | "/" | "-");
        if year(c) && same && valid(b, a) {
            dates.push((Some(c as i32), b as u8, a as u8));
        }
        if year(c) && same && sep1 == "/" && a != b && valid(a, b) {
            dates.push((Some(c as i32), a as u8, b as u8));
        }
    }
    // A day and month alone with a slash ("a compra do dia 10/08"): either order, since
    // only the records can tell which the customer meant.
    for (i, w) in nums.windows(2).enumerate() {
        let [(s1, e1, a), (s2, e2, b)] = [w[0], w[1]];
        let joined = |from: usize, to: usize| text[from..to].trim() == "/";
        let part_of_more = (i > 0 && joined(nums[i - 1].1, s1))
            || nums.get(i + 2).is_some_and(|n| joined(e2, n.0));
        if text[e1..s2].trim() != "/" || part_of_more || e1 - s1 > 2 || e2 - s2 > 2 {
            continue;
        }
        if valid(b, a) {
            dates.push((None, b as u8, a as u8));
        }
        if a != b && valid(a, b) {
            dates.push((None, a as u8, b as u8));
        }
    }
    for w in nums.windows(2) {
        let [(_, e1, m), (s2, e2, d)] = [w[0], w[1]];
        let month_day = (text[e1..s2].trim() == "月" && text[e2..].starts_with('日'))
            || (text[e1..s2].trim() == "월" && text[e2..].trim_start().starts_with('일'));
        if month_day && valid(m, d) {
            dates.push((None, m as u8, d as u8));
        }
    }
    dates
}

fn named_month_dates(text: &str, nums: &[(usize, usize, u32)]) -> Vec<(Option<i32>, u8, u8)> {
    let mut dates = Vec::new();
    let mut at = 0;
    for word in text.split(|c: char| !c.is_alphabetic()) {
        let start = text[at..].find(word).map_or(at, |p| at + p);
        let end = start + word.len();
        at = end;
        let Some(month) = MONTHS
            .iter()
            .position(|names| !word.is_empty() && names.contains(&word))
        else {
            continue;
        };
        let day_after = nums
            .iter()
            .find(|(s, _, _)| *s >= end && matches!(text[end..*s].trim(), "" | "." | ","));
        let day_before = nums
            .iter()
            .rev()
            .find(|(_, e, _)| *e <= start && DAY_MONTH_GAPS.contains(&text[*e..start].trim()));
        if let Some((_, _, d)) = day_before.or(day_after) {
            if valid(month as u32 + 1, *d) {
                dates.push((None, month as u8 + 1, *d as u8));
            }
        }
    }
    dates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(text: &str) -> Vec<String> {
        mentioned_amounts(&fold_words(text))
            .iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn amounts_with_a_decimal_comma_or_thousands_separators_read_as_written() {
        assert_eq!(amounts("12,99 € abgebucht"), ["12.99"]);
        assert_eq!(amounts("€ 1.299,00 EUR"), ["1299"]);
        assert_eq!(amounts("$1,299.00"), ["1299"]);
        assert_eq!(amounts("9,800円"), ["9800"]);
        assert_eq!(amounts("¥9800"), ["9800"]);
        assert_eq!(amounts("1.980 EUR"), ["1980"]);
        assert!(amounts("2 times, order 65169").is_empty());
    }

    #[test]
    fn dates_are_read_with_month_names_and_numbers_in_every_language() {
        let date = |t: &str| mentioned_dates(&fold_words(t));
        assert_eq!(date("am 5. Dezember"), [(None, 12, 5)]);
        assert_eq!(date("le 1er mai"), [(None, 5, 1)]);
        assert_eq!(date("el 5 de diciembre de 2026"), [(None, 12, 5)]);
        assert_eq!(date("il 5 dicembre"), [(None, 12, 5)]);
        assert_eq!(date("op 5 december"), [(None, 12, 5)]);
        assert_eq!(date("em 5 de março"), [(None, 3, 5)]);
        assert_eq!(date("12월 5일에"), [(None, 12, 5)]);
        assert_eq!(
            date("2026년 12월 5일"),
            [(Some(2026), 12, 5), (None, 12, 5)]
        );
        assert_eq!(date("am 05.12.2026"), [(Some(2026), 12, 5)]);
        assert_eq!(date("Dec 5"), [(None, 12, 5)]);
        assert!(date("maybe marketing 5").is_empty());
    }

    #[test]
    fn products_are_named_in_every_language() {
        assert_eq!(mentioned_products("mein Jahresabo"), ["annual_plan"]);
        assert_eq!(mentioned_products("l'abonnement mensuel"), ["monthly_plan"]);
        assert_eq!(mentioned_products("el paquete adicional"), ["addon"]);
        assert_eq!(mentioned_products("연간 구독"), ["annual_plan"]);
        assert_eq!(
            mentioned_products("köpet av årsprenumerationen"),
            ["annual_plan"]
        );
        assert!(mentioned_products("an extra charge").is_empty());
    }

    #[test]
    fn a_word_inside_another_products_longer_word_names_nothing() {
        assert_eq!(mentioned_products("the 12 month plan"), ["annual_plan"]);
        assert_eq!(
            mentioned_products("a twelve-month subscription"),
            ["annual_plan"]
        );
        assert_eq!(
            mentioned_products("the 12 month plan, not the month plan"),
            ["annual_plan", "monthly_plan"]
        );
    }

    #[test]
    fn a_korean_month_is_a_length_of_time_unless_it_names_a_plan() {
        assert_eq!(
            mentioned_products("한 달 안 됐는데 연간 구독 해지하고 환불받을 수 있나요"),
            ["annual_plan"]
        );
        assert!(mentioned_products("한 달 전에 결제했어요").is_empty());
        assert_eq!(
            mentioned_products("한 달짜리 요금제 환불"),
            ["monthly_plan"]
        );
        assert_eq!(mentioned_products("1개월 이용권 취소"), ["monthly_plan"]);
    }
}
