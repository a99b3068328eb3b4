//! The language a customer is addressed in: its stored code, the browser's choice on
//! pages shown before sign-in, the region's default.

use std::fmt;
use std::str::FromStr;

use policy_engine::Region;
use serde::{Deserialize, Serialize};

use crate::script::Script;

/// The language of a ticket and of everything its customer is told. Stored as its
/// ISO 639-1 code (`en`, `zh`, `ja`, `de`, `fr`, `es`, `it`, `nl`, `pt`, `ko`) in
/// `tickets.language` (a TEXT column: new language codes need no migration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    En,
    Zh,
    Ja,
    De,
    Fr,
    Es,
    It,
    Nl,
    Pt,
    Ko,
}

/// A language code that is none of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown language '{0}' (expected en, zh, ja, de, fr, es, it, nl, pt or ko)")]
pub struct UnknownLanguage(pub String);

impl Language {
    pub const ALL: [Language; 10] = [
        Language::En,
        Language::Zh,
        Language::Ja,
        Language::De,
        Language::Fr,
        Language::Es,
        Language::It,
        Language::Nl,
        Language::Pt,
        Language::Ko,
    ];

    /// The language's place in [`Language::ALL`], for tables with one text per language.
    pub const fn index(self) -> usize {
        match self {
            Language::En => 0,
            Language::Zh => 1,
            Language::Ja => 2,
            Language::De => 3,
            Language::Fr => 4,
            Language::Es => 5,
            Language::It => 6,
            Language::Nl => 7,
            Language::Pt => 8,
            Language::Ko => 9,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Zh => "zh",
            Language::Ja => "ja",
            Language::De => "de",
            Language::Fr => "fr",
            Language::Es => "es",
            Language::It => "it",
            Language::Nl => "nl",
            Language::Pt => "pt",
            Language::Ko => "ko",
        }
    }

    /// A stored code. English is the fallback for any other language, so a
    /// code this build does not know (written by a newer one, or a language we read
    /// but do not answer in) still gets answers.
    pub fn from_stored(code: &str) -> Language {
        code.parse().unwrap_or(Language::En)
    }

    /// The language of a page shown before we know who the customer is (the sign-in
    /// page): the first of the browser's `Accept-Language` choices, by weight, that is
    /// one of ours; English when none is.
    pub fn from_accept_language(header: Option<&str>) -> Language {
        Language::accepted(header).unwrap_or(Language::En)
    }

    /// The first of the browser's `Accept-Language` choices, by weight, that is one of
    /// ours; `None` when none is (or the header is missing).
    pub fn accepted(header: Option<&str>) -> Option<Language> {
        let mut choices: Vec<(f32, Language)> = header
            .unwrap_or_default()
            .split(',')
            .filter_map(|item| {
                let mut parts = item.split(';');
                let tag = parts.next()?.trim().to_ascii_lowercase();
                let primary = tag.split('-').next()?;
                let weight = parts
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
                let lang = primary.parse::<Language>().ok()?;
                (weight > 0.0).then_some((weight, lang))
            })
            .collect();
        // A stable sort: equal weights keep the browser's order.
        choices.sort_by(|a, b| b.0.total_cmp(&a.0));
        choices.first().map(|(_, lang)| *lang)
    }

    /// The language of a customer-facing page, mail or error, first known first
    /// (docs/spec/interfaces.md, "Pages"): the link's own (`?lang=`), the customer's
    /// (their newest ticket's), the browser's `Accept-Language`, and last `fallback`
    /// (the customer's region's language when it names one, else `DEFAULT_LANGUAGE`).
    pub fn for_customer(
        link: Option<Language>,
        customer: Option<Language>,
        browser: Option<Language>,
        fallback: Language,
    ) -> Language {
        link.or(customer).or(browser).unwrap_or(fallback)
    }

    /// The language a customer is addressed in before they have written anything.
    pub fn of_region(region: Region) -> Language {
        match region {
            Region::CN => Language::Zh,
            Region::JP => Language::Ja,
            Region::US | Region::EU => Language::En,
        }
    }
}

impl FromStr for Language {
    type Err = UnknownLanguage;
    fn from_str(code: &str) -> Result<Self, Self::Err> {
        Language::ALL
            .into_iter()
            .find(|l| l.as_str() == code)
            .ok_or_else(|| UnknownLanguage(code.to_string()))
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The language replies to this text are written in (they follow the customer). Only
/// the customer's new words count (`structure::split`): a quoted reply of ours in
/// English under a German mail is still a German mail. Then, by script first:
///
/// - any Hangul is Korean;
/// - any kana (Hiragana, Katakana, half-width Katakana) is Japanese: Chinese is never
///   written with kana, Japanese almost always is;
/// - Han without kana is Chinese, except from a customer of the JP region, for whom it
///   is Japanese: short Japanese complaints are often all kanji (`二重請求`, `返金希望`),
///   a JP customer is far more likely to write Japanese than Chinese, and a Chinese
///   reader still follows a kanji-heavy Japanese reply better than a Japanese reader
///   follows a Chinese one;
/// - Latin script is told apart by its most frequent short words and its letters
///   (`latin_language`): German, French, Spanish, Italian, Dutch or Portuguese when
///   their words clearly outnumber English ones, else English, the fallback for every
///   other language.
pub fn detect_language(text: &str, region: Option<Region>, default: Language) -> Language {
    written_in(&crate::structure::split(text).new_text(), text, region).unwrap_or(default)
}

/// [`detect_language`] of `text` whose new words (`structure::Parts::new_text`) were
/// split out already.
pub fn detect_language_of(
    new_words: &str,
    text: &str,
    region: Option<Region>,
    default: Language,
) -> Language {
    written_in(new_words, text, region).unwrap_or(default)
}

/// The language of ours `text` is written in, or `None` for a language we read but do
/// not answer in (`unclaimed`): its customer is answered in the team's default.
pub fn written_in(new_words: &str, text: &str, region: Option<Region>) -> Option<Language> {
    let text = if new_words.trim().is_empty() {
        text
    } else {
        new_words
    };
    match crate::script::script_of(text) {
        Some(Script::Hangul) => Some(Language::Ko),
        Some(Script::Kana) => Some(Language::Ja),
        Some(Script::Han) => Some(match region {
            Some(Region::JP) => Language::Ja,
            _ => Language::Zh,
        }),
        None => latin_language(text),
    }
}

/// Frequent short words of each Latin-script language, and letters only it uses (or uses
/// far more than the others). A word shared by two languages (`de`, `que`) counts for
/// both; what decides is which has clearly more.
#[rustfmt::skip]
const LATIN_WORDS: [(Language, &[&str], &[char]); 7] = [
    (Language::En, &[
        "the", "and", "is", "was", "are", "were", "be", "been", "my", "i", "you", "your",
        "please", "for", "to", "it", "of", "have", "has", "had", "this", "that", "these",
        "not", "me", "with", "twice", "charged", "order", "orders", "refund", "hi", "hello",
        "thanks", "thank", "on", "a", "an", "but", "can", "could", "would", "will", "we",
        "our", "us", "they", "them", "there", "what", "which", "when", "why", "how", "from",
        "by", "at", "as", "if", "or", "so", "do", "does", "did", "don't", "i'm", "i've",
        "it's", "can't", "just", "get", "got", "want", "need", "still", "again", "already",
        "any", "some", "no", "yes",
    ], &[]),
    (Language::De, &[
        "liebes", "liebe", "lieber", "geehrte", "geehrter", "herren", "damen", "gruß", "grüße",
        "sein", "darf", "dürfen", "höchstens", "zeichen", "nachricht", "nachrichten",
        "lang", "leer", "erneut", "versuchen", "neu", "laden", "seite", "leider",
        "gefunden", "kurzer", "zeit", "moment", "inzwischen", "geändert", "schiefgelaufen",
        "ich", "und", "der", "die", "das", "ist", "nicht", "mein", "meine", "meinen",
        "meinem", "bitte", "zweimal", "bestellung", "wurde", "wurden", "mit", "für", "fur",
        "ein", "eine", "einen", "einer", "eines", "habe", "hat", "haben", "den", "dem",
        "des", "sie", "zu", "auf", "hallo", "danke", "hiermit", "widerrufe", "widerruf",
        "vertrag", "erstattung", "erstattet", "erstatten", "geld", "zurück", "zuruck",
        "abgebucht", "ihre", "ihr", "ihnen", "es", "wir", "mir", "mich", "noch", "auch",
        "doppelt", "guten", "tag", "dieser", "diese", "dieses", "kann", "können", "konnte",
        "nach", "unserer", "unser", "unsere", "werden", "wird", "sind", "von", "bei", "aus",
        "über", "uns", "oder", "aber", "wenn", "dass", "als", "nur", "schon", "kein",
        "keine", "nichts", "etwas", "bereits", "um", "wie", "was", "weil", "sich", "im",
        "zum", "zur", "vom", "beim", "kauf", "karte", "zahlung", "abbuchung", "richtlinie",
        "bearbeitung", "anfrage", "gibt", "wieder", "ist's", "freundlichen", "grüßen",
    ], &['ß', 'ä', 'ö', 'ü']),
    (Language::Fr, &[
        "bonsoir", "salut", "chère", "cher", "équipe",
        "trouvé", "message", "messages", "vide", "caractères", "page", "réessayer",
        "rechargez", "introuvable", "veuillez", "peu", "temps", "beaucoup", "problème",
        "survenu", "entre-temps", "font", "je", "et", "le", "la", "les", "est", "pas",
        "mon", "ma", "mes", "une", "un", "pour", "du", "des", "deux", "fois", "commande",
        "remboursement", "merci", "bonjour", "avec", "ai", "été", "vous", "votre", "vos",
        "j'ai", "c'est", "au", "aux", "ne", "sur", "rembourser", "droit", "rétractation",
        "débité", "prélevé", "annuler", "madame", "monsieur", "cordialement", "ce", "cette",
        "ces", "qui", "que", "dans", "par", "plus", "mais", "ou", "nous", "notre", "nos",
        "il", "elle", "ils", "sont", "avait", "être", "avoir", "fait", "faire", "déjà",
        "encore", "aucun", "rien", "car", "comme", "si", "très", "bien", "sa", "son",
        "leur", "paiement", "carte", "achat", "politique", "selon", "demande", "n'a",
        "n'est", "d'un", "d'une", "l'argent", "s'il",
    ], &['ç', 'è', 'ê', 'œ', 'à', 'ù', 'î', 'ë', 'é']),
    (Language::Es, &[
        "quedo", "espera", "respuesta", "estimados", "estimado", "señores", "señor", "buenas", "tardes", "noches", "pronto", "atentamente",
        "favor", "cuál", "sé", "era", "o", "cancelen", "reembolsen", "pedidos", "devuelvan",
        "mensaje", "mensajes", "vacío", "caracteres", "página", "intentarlo", "vuelva",
        "espere", "momento", "encontrado", "tiempo", "poco", "muchos", "algo", "salido",
        "mal", "tienen", "máximo", "yo", "y", "el", "los", "las", "es", "no", "mi", "mis",
        "por", "para", "con", "una", "un", "del", "dos", "veces", "pedido", "reembolso",
        "gracias", "hola", "cobraron", "que", "me", "he", "han", "cargo", "cobro", "quiero",
        "cancelar", "desistimiento", "compra", "tarjeta", "buenos", "días", "saludos", "su",
        "sus", "se", "lo", "al", "como", "pero", "más", "este", "esta", "estos", "ya",
        "hay", "está", "están", "ha", "sido", "ser", "fue", "nada", "ningún", "ninguna",
        "le", "les", "nos", "nuestro", "nuestra", "según", "política", "solicitud", "pago",
        "dinero", "también", "muy", "cuando", "porque", "usted",
    ], &['ñ', '¿', '¡', 'á', 'í', 'ó', 'ú']),
    (Language::It, &[
        "e", "i", "soldi", "gentile", "assistenza", "egregi", "spettabile",
        "trovata", "messaggio", "messaggi", "vuoto", "caratteri", "pagina", "riprovi",
        "ricarichi", "attenda", "momento", "trovato", "tempo", "poco", "molti", "qualcosa",
        "andato", "storto", "possono", "massimo", "io", "il", "lo", "gli", "è", "non",
        "mio", "mia", "miei", "per", "con", "una", "di", "del", "della", "dei", "delle",
        "due", "volte", "ordine", "rimborso", "grazie", "ciao", "ho", "sono", "che", "mi",
        "addebitato", "addebito", "carta", "recesso", "annullare", "buongiorno", "salve",
        "vorrei", "stato", "stata", "sulla", "nel", "nella", "alla", "al", "ai", "questo",
        "questa", "questi", "già", "ancora", "nessun", "nulla", "niente", "ha", "hanno",
        "essere", "come", "ma", "anche", "più", "se", "perché", "quando", "suo", "sua",
        "nostro", "nostra", "secondo", "politica", "richiesta", "pagamento", "acquisto",
        "rimborsato", "rimborsare", "cordiali", "saluti",
    ], &['ì', 'ò', 'à', 'è', 'ù']),
    (Language::Nl, &[
        "geachte", "heer", "mevrouw", "beste", "klantenservice", "groeten", "vriendelijke",
        "bericht", "berichten", "leeg", "tekens", "pagina", "opnieuw", "probeer", "wacht",
        "even", "gevonden", "tijd", "korte", "veel", "iets", "mis", "ging", "maximaal",
        "lang", "ik", "en", "het", "een", "is", "niet", "mijn", "voor", "met", "van",
        "twee", "keer", "bestelling", "terugbetaling", "bedankt", "graag", "alstublieft",
        "heb", "werd", "dubbel", "u", "uw", "je", "dat", "er", "op", "aan", "geld", "terug",
        "afgeschreven", "herroeping", "annuleren", "hallo", "groet", "wil", "zijn", "bij",
        "ook", "nog", "goedendag", "deze", "dit", "die", "wordt", "worden", "kan", "kunnen",
        "naar", "ons", "onze", "we", "wij", "al", "geen", "niets", "maar", "of", "als",
        "om", "tot", "uit", "door", "hebben", "heeft", "was", "waren", "betaling", "kaart",
        "aankoop", "beleid", "volgens", "verzoek", "hier", "daar", "wat", "hoe", "wanneer",
        "omdat", "zou", "moet",
    ], &[]),
    (Language::Pt, &[
        "e", "isto", "diz", "respeito", "fico", "aguardar", "vossa", "resposta", "exmos", "senhores", "boa", "tarde", "assinatura", "cumprimentos", "atenciosamente",
        "mensagem", "mensagens", "vazia", "caracteres", "página", "tente", "recarregue",
        "aguarde", "momento", "encontrado", "tempo", "pouco", "muitas", "algo", "correu",
        "mal", "têm", "máximo", "eu", "o", "os", "as", "é", "não", "meu", "minha", "meus",
        "minhas", "para", "com", "uma", "um", "do", "da", "dos", "das", "duas", "vezes",
        "pedido", "reembolso", "obrigado", "obrigada", "olá", "fui", "cobrado", "cobrada",
        "que", "me", "você", "cartão", "compra", "cancelar", "arrependimento", "estorno",
        "bom", "dia", "foi", "na", "no", "nas", "nos", "favor", "por", "ao", "aos", "se",
        "lhe", "já", "ainda", "nada", "nenhum", "nenhuma", "está", "estão", "foram", "ser",
        "ter", "tem", "como", "mas", "mais", "também", "quando", "porque", "seu", "sua",
        "nosso", "nossa", "segundo", "política", "encomenda", "pagamento", "dinheiro",
        "devolução",
    ], &['ã', 'õ', 'ç', 'á', 'é', 'í', 'ó', 'ú', 'â', 'ê', 'ô']),
];

/// The Latin-script language of `text`: the one whose words and letters score highest,
/// if it beats English by a margin; `None` when a language we do not answer in scores
/// higher still; English otherwise.
fn latin_language(text: &str) -> Option<Language> {
    let lower = text.to_lowercase();
    // Each word looked up once: which of LATIN_WORDS' languages list it (a bit each).
    let mut by_word = [0usize; LATIN_WORDS.len()];
    let common = common_words();
    for word in lower
        .split(|c: char| !(c.is_alphabetic() || c == '\''))
        .filter(|w| !w.is_empty())
    {
        let listed = common.get(word).copied().unwrap_or(0);
        for (i, points) in by_word.iter_mut().enumerate() {
            *points += usize::from(listed >> i & 1 == 1) * 2;
        }
    }
    let score = |i: usize| -> usize {
        let letters = LATIN_WORDS[i].2;
        by_word[i] + lower.chars().filter(|c| letters.contains(c)).count().min(6)
    };
    let english = score(0);
    let best = (1..LATIN_WORDS.len())
        .map(|i| (score(i), LATIN_WORDS[i].0))
        .max_by_key(|(points, _)| *points);
    let ours = best.map_or(0, |(points, _)| points).max(english);
    let unclaimed = super::unclaimed::best_score(&lower);
    if unclaimed > ours && unclaimed >= 4 {
        return None;
    }
    Some(match best {
        Some((points, lang)) if points > english && points >= 2 => lang,
        _ => Language::En,
    })
}

/// Every word of [`LATIN_WORDS`], with a bit set for each language listing it (bit `i`
/// for entry `i`), made once.
fn common_words() -> &'static std::collections::HashMap<&'static str, u8> {
    static WORDS: std::sync::OnceLock<std::collections::HashMap<&'static str, u8>> =
        std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        let mut words = std::collections::HashMap::new();
        for (i, (_, common, _)) in LATIN_WORDS.iter().enumerate() {
            for word in *common {
                *words.entry(*word).or_insert(0u8) |= 1 << i;
            }
        }
        words
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_detection_follows_the_script_and_for_kanji_only_the_region() {
        use Language::{De, En, Es, Fr, It, Ja, Ko, Nl, Pt, Zh};
        let jp = Some(Region::JP);
        let cn = Some(Region::CN);
        let us = Some(Region::US);
        let cases: &[(&str, Option<Region>, Language)] = &[
            // Kana: Japanese, whoever writes it.
            ("年間プランの料金が二重に請求されました", None, Ja),
            ("年間プランの料金が二重に請求されました", cn, Ja),
            ("にじゅうせいきゅう", us, Ja),
            ("ｷｬﾝｾﾙしたい", None, Ja),
            // Kanji only: Japanese from a JP customer, Chinese from anyone else.
            ("二重請求", jp, Ja),
            ("二重請求", None, Zh),
            ("二重請求", cn, Zh),
            ("二重請求", us, Zh),
            // Mixed scripts: any kana decides.
            ("月額プラン cancel please, I no longer want it.", jp, Ja),
            ("O-4001 charged twice です", us, Ja),
            ("我的订单 O-1001 was charged twice", cn, Zh),
            // Chinese stays Chinese (the katakana middle dot is punctuation here).
            ("我的年度会员被扣了两次款", cn, Zh),
            ("我的年度会员被扣了两次款", None, Zh),
            ("列夫・托尔斯泰的书被扣了两次款", cn, Zh),
            // Hangul is Korean, whatever else is mixed in.
            ("연간 플랜이 두 번 결제되었습니다", None, Ko),
            ("주문 O-4001 환불해 주세요 please", us, Ko),
            // Latin script: the language whose short words clearly dominate.
            ("Hiermit widerrufe ich den Vertrag über meine Bestellung.", None, De),
            ("Ich wurde zweimal belastet, bitte erstatten Sie den Betrag.", None, De),
            ("Je souhaite exercer mon droit de rétractation pour la commande.", None, Fr),
            ("On m'a débité deux fois, merci de me rembourser.", None, Fr),
            ("Me cobraron dos veces", None, Es),
            ("Cancelen y reembolsen, por favor: O-34201 o O-34203, no sé cuál era.", None, Es),
            ("Quiero ejercer mi derecho de desistimiento, por favor.", None, Es),
            ("Mi avete addebitato due volte l'ordine, vorrei il rimborso.", None, It),
            ("Ik ben twee keer afgeschreven voor mijn bestelling.", None, Nl),
            ("Fui cobrado duas vezes pela minha encomenda, quero o reembolso.", None, Pt),
            // Only the new words count: a quoted English reply under a German mail.
            ("Bitte erstatten Sie mir das Geld.\n\nOn Mon, 3 Mar 2026, Shop <a@shop.example> wrote:\n> Thank you for your order, it was charged.", None, De),
            // English, and the fallback for everything without Han, kana or Hangul.
            ("I was charged twice for my annual plan", jp, En),
            ("Please refund order 65169, thanks", None, En),
            // A language we do not answer in gets the team's default (here English).
            ("Hej, jag blev debiterad två gånger", None, En),
            ("😡😡 refund now!!", None, En),
            ("🙏", jp, En),
            ("１２３４５", jp, En),
            ("", None, En),
        ];
        for (text, region, expected) in cases {
            assert_eq!(
                detect_language(text, *region, Language::En),
                *expected,
                "{text:?} from {region:?}"
            );
        }
    }

    #[test]
    fn a_language_we_do_not_answer_in_gets_the_default_never_a_third_one() {
        let unclaimed = [
            "Dzień dobry, chciałabym odstąpić od umowy na abonament roczny. Proszę o zwrot pieniędzy.",
            "Cześć, wczoraj przez przypadek kupiłem dodatek dwa razy, czy możecie zwrócić za drugi?",
            "Hej, jag vill utnyttja min ångerrätt för årsabonnemanget. Vänligen betala tillbaka.",
            "Merhaba, 21 Kasım'daki yıllık abonelik ödemem iki kez çekildi. İade eder misiniz?",
            "Merhaba, yillik uyeligimi iptal edip cayma hakki kapsaminda paramin iadesini istiyorum.",
            "Dobrý den, byla mi dvakrát stržena platba za předplatné. Prosím o vrácení peněz.",
        ];
        for text in unclaimed {
            assert_eq!(written_in(text, text, None), None, "{text}");
            for default in [Language::En, Language::De] {
                assert_eq!(detect_language(text, None, default), default, "{text}");
            }
        }
        // Ours stay ours, whatever the default.
        for (text, lang) in [
            (
                "Ich wurde zweimal belastet, bitte erstatten Sie den Betrag.",
                Language::De,
            ),
            ("Me cobraron dos veces, quiero el reembolso", Language::Es),
            (
                "Mi avete addebitato due volte l'ordine, vorrei il rimborso.",
                Language::It,
            ),
            (
                "Fui cobrado duas vezes pela minha encomenda, quero o reembolso.",
                Language::Pt,
            ),
            ("I was charged twice for my annual plan", Language::En),
        ] {
            assert_eq!(detect_language(text, None, Language::Ko), lang, "{text}");
        }
    }

    #[test]
    fn language_codes_round_trip_and_unknown_codes_fall_back_to_english() {
        for lang in Language::ALL {
            assert_eq!(lang.as_str().parse::<Language>(), Ok(lang));
            assert_eq!(serde_json::to_value(lang).unwrap(), lang.as_str());
        }
        for (at, lang) in Language::ALL.into_iter().enumerate() {
            assert_eq!(lang.index(), at, "{lang}");
        }
        assert_eq!("jp".parse::<Language>(), Err(UnknownLanguage("jp".into())));
        assert_eq!(Language::from_stored("ko"), Language::Ko);
        assert_eq!(Language::from_stored("sv"), Language::En);
        let accept = |h: &str| Language::from_accept_language(Some(h));
        assert_eq!(accept("ja,en-US;q=0.9,en;q=0.8"), Language::Ja);
        assert_eq!(accept("en-US;q=0.5, zh-CN"), Language::Zh);
        assert_eq!(accept("fr-FR, ja;q=0.3"), Language::Fr);
        assert_eq!(accept("sv-SE, ja;q=0.3"), Language::Ja);
        assert_eq!(accept("ja;q=0, de"), Language::De);
        assert_eq!(accept("ja;q=0, sv"), Language::En);
        assert_eq!(accept("pt-BR,pt;q=0.9"), Language::Pt);
        assert_eq!(accept("ja;q=oops"), Language::En);
        assert_eq!(Language::from_accept_language(None), Language::En);
        assert_eq!(Language::of_region(Region::JP), Language::Ja);
        assert_eq!(Language::of_region(Region::CN), Language::Zh);
        assert_eq!(Language::of_region(Region::EU), Language::En);
    }

    #[test]
    fn a_customer_page_speaks_the_link_then_the_tickets_then_the_browser_then_the_fallback() {
        use Language::{De, En, Ja, Ko};
        let en_us = Language::accepted(Some("en-US,en;q=0.9"));
        assert_eq!(Language::for_customer(Some(Ja), Some(De), en_us, En), Ja);
        assert_eq!(Language::for_customer(None, Some(De), en_us, En), De);
        assert_eq!(Language::for_customer(None, Some(Ko), en_us, En), Ko);
        assert_eq!(Language::for_customer(None, None, en_us, Ko), En);
        assert_eq!(Language::accepted(Some("sv-SE")), None);
        assert_eq!(Language::for_customer(None, None, None, Ko), Ko);
    }
}
