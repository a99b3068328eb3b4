//! Latin-script languages customers write in that we read but do not answer in: Polish,
//! Swedish, Turkish and Czech (docs/spec/domain.md, "Languages"). Told apart from ours by
//! their frequent short words and letters, as `language::latin_language` tells ours
//! apart, so that such a customer is answered in the team's default language and never
//! in a third one (a Polish mail once got a Spanish reply: its `na` and `a` outscored
//! English). Words are lower case as written, with and without their accents (customers
//! type them both ways).

/// Frequent words and letters of each language, distinctive enough not to be ours.
#[rustfmt::skip]
const WORDS: [(&[&str], &[char]); 4] = [
    // Polish
    (&[
        "się", "sie", "jest", "że", "mnie", "mój", "moje", "moja", "proszę", "prosze",
        "dzień", "dzien", "dobry", "zamówienie", "zamowienie", "zamówienia", "zamowienia",
        "pieniędzy", "pieniedzy", "zwrot", "dwa", "razy", "czy", "już", "juz", "dziękuję",
        "dziekuje", "pozdrawiam", "konto", "koncie", "karty", "kartę", "przez", "przypadek",
        "chciałabym", "chciałbym", "umowy", "płatność", "platnosc", "państwa", "panstwa",
        "można", "mozna", "bardzo", "został", "została", "zostało", "który", "która",
        "które", "roczny", "miesięczny", "wczoraj", "dzięki", "cześć", "czesc", "oraz",
        "obciążenie", "obciazenie", "pobrano", "imieniu", "żony", "męża",
    ], &['ł', 'ą', 'ę', 'ś', 'ż', 'ź', 'ć', 'ń']),
    // Swedish
    (&[
        "jag", "och", "att", "det", "är", "inte", "för", "på", "som", "min", "mitt", "mina",
        "till", "kan", "hej", "tack", "vänliga", "hälsningar", "beställning", "pengar",
        "tillbaka", "två", "gånger", "igår", "köpte", "betalning", "kortet", "återbetala",
        "snälla", "mvh", "också", "bara", "eller", "när", "där", "här", "ångerrätt",
        "årsabonnemang", "betala", "vänligen", "blev", "debiterad", "mycket", "ni", "mig",
    ], &['å']),
    // Turkish
    (&[
        "ve", "bir", "bu", "için", "icin", "ile", "çok", "cok", "ama", "gibi", "daha",
        "benim", "sipariş", "siparis", "siparişi", "ödeme", "odeme", "ödemem", "iade",
        "iki", "kez", "merhaba", "teşekkürler", "tesekkurler", "teşekkür", "ederim",
        "lütfen", "lutfen", "param", "paramı", "paramin", "paramın", "kartımdan", "ücret",
        "ucret", "abonelik", "üyelik", "uyelik", "uyeligimi", "üyeliğimi", "yıllık", "yillik",
        "aylık", "aylik", "istiyorum", "önce", "once", "oldu", "var", "yok", "nasıl", "olarak",
        "çekildi", "cekildi", "hakkı", "hakki", "cayma", "iptal", "eşim", "hesabı", "misiniz",
        "numarasını", "bulamadım", "fazla", "olanı", "yaklasik", "aldim", "adına", "yazıyorum",
    ], &['ş', 'ğ', 'ı']),
    // Czech
    (&[
        "je", "jsem", "jste", "mě", "můj", "moje", "prosím", "prosim", "dobrý", "dobry",
        "děkuji", "dekuji", "objednávka", "objednávku", "objednávky", "objednavka",
        "objednavku", "platba", "platbu", "peníze", "penize", "vrácení", "vraceni",
        "dvakrát", "dvakrat", "předplatné", "predplatne", "účet", "kartu", "byl", "byla",
        "bylo", "už", "ale", "nebo", "když", "odstoupit", "smlouvy", "zrušit", "zrusit",
        "pozdravem", "stržena", "strzena", "vrátit", "vratit", "dne", "mám", "mam",
    ], &['ř', 'ě', 'ů', 'ň', 'ť', 'ď']),
];

/// The highest score among these languages for `lower` (lower-cased text): two points a
/// listed word, one a letter only they use (at most six), as `latin_language` scores ours.
pub(super) fn best_score(lower: &str) -> usize {
    WORDS
        .iter()
        .map(|(words, letters)| {
            let listed = lower
                .split(|c: char| !(c.is_alphabetic() || c == '\''))
                .filter(|w| words.contains(w))
                .count();
            listed * 2 + lower.chars().filter(|c| letters.contains(c)).count().min(6)
        })
        .max()
        .unwrap_or(0)
}
