//! The request-kind words of languages we read but do not answer in: Polish, Swedish,
//! Turkish and Czech (docs/spec/domain.md, "Languages"). A customer writing in one of
//! them still names what happened ("dwa razy", "två gånger", "iki kez", "dvakrát") and
//! still has statutory wording for a withdrawal ("odstąpienie od umowy", "ångerrätt",
//! "cayma hakkı", "odstoupení od smlouvy"); their reply goes out in the team's default
//! language. Data only, folded as `structure::fold_words` folds text (lower case,
//! accents dropped, `ł` as `l`, `ı` as `i`), with the same `*` stems and `…` phrases as
//! `keywords`. Written from how these languages and their consumer law put it.

/// Holds: "blokada środków", "reserverat belopp", "provizyon", "blokace částky".
pub(crate) const HOLD_OTHER: &[&str] = &[
    // Polish
    "blokad*",
    "zablokowan*",
    "transakcja oczekujaca",
    "oczekujac*",
    "preautoryzacj*",
    "autoryzacj*",
    "niezaksiegowan*",
    // Swedish
    "reserverat",
    "reserverad*",
    "reservation",
    "vantande",
    "preliminar dragning",
    "inte dragits",
    "sparrat belopp",
    // Turkish
    "provizyon*",
    "bloke",
    "bekleyen",
    "beklemede",
    "askida",
    // Czech
    "blokac*",
    "zablokovan*",
    "rezervac*",
    "cekajici",
    "predautorizac*",
    "nezauctovan*",
];

/// Duplicates and repeat purchases: "dwa razy", "två gånger", "iki kez", "dvakrát".
pub(crate) const DUPLICATE_OTHER: &[&str] = &[
    // Polish
    "dwa razy",
    "2 razy",
    "dwukrotnie",
    "podwojn*",
    "zdublowan*",
    "zduplikowan*",
    "drugi raz",
    "dwa obciazenia",
    "dwie platnosci",
    "dwie transakcje",
    "pobrano dwa",
    "obciazono dwa",
    "ponownie pobran*",
    // Swedish
    "tva ganger",
    "2 ganger",
    "dubbel*",
    "dubbla",
    "tva dragningar",
    "tva betalningar",
    "tva debiteringar",
    "dragits tva",
    "debiterad tva",
    "debiterats tva",
    // Turkish
    "iki kez",
    "iki kere",
    "iki defa",
    "2 kez",
    "2 kere",
    "2 defa",
    "mukerrer",
    "cift cekim",
    "cift odeme",
    "ikinci kez",
    "iki odeme",
    "iki cekim",
    "tekrar cekil*",
    // Czech
    "dvakrat",
    "2krat",
    "dvojit*",
    "duplicitn*",
    "dve platby",
    "dvoji platb*",
    "podruhe",
    "dve strzeni",
];

/// Overcharges: "za dużo", "för mycket", "fazla ücret", "vyšší částka".
pub(crate) const OVERCHARGE_OTHER: &[&str] = &[
    // Polish
    "za duzo",
    "zawyzon*",
    "nadplat*",
    "zla kwot*",
    "zlej kwoty",
    "wiecej niz powinn*",
    // Swedish
    "for mycket",
    "overdebiter*",
    "fel belopp",
    "hogre belopp",
    // Turkish
    "fazla ucret",
    "fazla para",
    "fazladan",
    "yanlis tutar",
    "fazla cekil*",
    // Czech
    "prilis mnoho",
    "vyssi castk*",
    "spatn* castk*",
    "preplat*",
];

/// Withdrawals and cancellations: "odstąpić od umowy", "ångerrätt", "cayma hakkı",
/// "odstoupit od smlouvy", and plain "cancel".
pub(crate) const CANCELLATION_OTHER: &[&str] = &[
    // Polish (ustawa o prawach konsumenta: "odstąpienie od umowy")
    "odstap*",
    "rezygn*",
    "zrezygnowac",
    "anulowac",
    "anuluj*",
    "wypowiedz*",
    "juz nie chce",
    "nie potrzebuje",
    // Swedish (distansavtalslagen: "ångerrätt")
    "angerratt*",
    "angra*",
    "saga upp",
    "sager upp",
    "avsluta*",
    "avbryt*",
    "annuller*",
    "hava kopet",
    "vill inte ha",
    "behover inte",
    "inte langre",
    // Turkish (Mesafeli Sözleşmeler Yönetmeliği: "cayma hakkı")
    "cayma*",
    "iptal*",
    "vazgec*",
    "artik istemiyorum",
    "ihtiyacim yok",
    // Czech (občanský zákoník: "odstoupení od smlouvy")
    "odstoup*",
    "zrus*",
    "vypoved*",
    "uz nechci",
    "nepotrebuji",
];

/// Words that show a message is about money (`classify::speaks_of_money`).
pub(crate) const MONEY_WORDS_OTHER: &[&str] = &[
    // Polish
    "zwrot*",
    "zwroc*",
    "pieniadz*",
    "platnosc*",
    "obciaz*",
    "pobran*",
    "pobrano",
    "karta",
    "karty",
    "karte",
    "kwot*",
    "faktur*",
    // Swedish
    "aterbetal*",
    "pengar*",
    "betala tillbaka",
    "betalning*",
    "dragning*",
    "dragits",
    "debiter*",
    "kortet",
    "belopp*",
    // Turkish
    "iade*",
    "paramin",
    "parami",
    "odeme*",
    "ucret*",
    "tutar*",
    "cekil*",
    "cekim*",
    "kartim*",
    // Czech
    "vraceni",
    "vratit",
    "vratte",
    "penize",
    "platb*",
    "castk*",
    "kartu",
    "strzen*",
];
