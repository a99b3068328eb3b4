//! Words about another person's account or order ("my wife's account", "on behalf of
//! my colleague", "他的账号", "夫のアカウント", "동생 계정"), folded. A flag for the
//! reviewer only: whose an order is, the records say (RP-007: an order of another
//! customer's is escalated whoever writes), and "my husband used my card" on the
//! customer's own order is still their case.

use super::normalise::contains_phrase;

#[rustfmt::skip]
const MARKERS: &[&str] = &[
    // English
    "on behalf of", "for my wife", "for my husband", "my wife's", "my husband's", "my son's",
    "my daughter's", "my friend's", "my colleague's", "my partner's", "my boss's", "his account",
    "her account", "his order", "her order", "their account", "assistant to", "my client",
    // German
    "im namen", "fur meinen mann", "fur meine frau", "meines mannes", "meiner frau",
    "sein konto", "seinem konto", "ihrem konto",
    // French
    "au nom de", "pour le compte de", "pour mon mari", "pour ma femme", "son compte",
    // Spanish
    "en nombre de", "de mi esposa", "de mi esposo", "de mi marido", "la cuenta de",
    // Italian
    "a nome di", "per conto di", "di mia moglie", "di mio marito", "il suo account",
    // Dutch
    "namens", "haar account", "zijn account", "van mijn vrouw", "van mijn man",
    // Portuguese
    "em nome de", "da minha esposa", "do meu marido", "a conta dele", "a conta dela",
    // Chinese, Japanese, Korean
    "我老公", "我老婆", "我丈夫", "我妻子", "他的账号", "她的账号", "他的帐号", "她的帐号",
    "委托我", "代为处理", "替他", "替她", "夫の", "妻の", "息子の", "娘の", "代わりに",
    "동생 계정", "남편 계정", "아내 계정", "대신 연락", "대신 문의",
    // Polish, Swedish, Turkish, Czech
    "w imieniu", "pa uppdrag av", "adina yaziyorum", "jmenem",
];

/// The markers `folded` (`structure::fold_words` applied) holds, in the list's order.
pub fn mentions_someone_else(folded: &str) -> Vec<&'static str> {
    MARKERS
        .iter()
        .copied()
        .filter(|m| contains_phrase(folded, m))
        .collect()
}
