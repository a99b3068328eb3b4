//! The days a customer's words name, read in any of the languages we read: dates
//! (`evidence::mentioned_dates`), weekdays, days and weeks counted back, months, a day of
//! the month alone, named shopping days. Words and phrases are data here, each looked
//! for in one pass (`phrases::PhraseSet`); what a day means against the records is
//! `when`'s.

use time::Weekday;

use super::evidence::mentioned_dates;
use super::normalise::contains_phrase;
use super::when::{Day, NamedDay};

/// Named shopping days, folded; found before the weekdays, since "Black Friday" is not
/// any Friday.
#[rustfmt::skip]
const NAMED_DAYS: &[(&str, NamedDay)] = &[
    ("black friday", NamedDay::BlackFriday), ("blackfriday", NamedDay::BlackFriday),
    ("블랙프라이데이", NamedDay::BlackFriday), ("블랙 프라이데이", NamedDay::BlackFriday),
    ("黑五", NamedDay::BlackFriday), ("黑色星期五", NamedDay::BlackFriday),
    ("ブラックフライデー", NamedDay::BlackFriday), ("cyber monday", NamedDay::CyberMonday),
    ("사이버 먼데이", NamedDay::CyberMonday), ("thanksgiving", NamedDay::Thanksgiving),
    ("추수감사절", NamedDay::Thanksgiving), ("双十一", NamedDay::SinglesDay),
    ("雙十一", NamedDay::SinglesDay), ("双11", NamedDay::SinglesDay),
    ("빼빼로데이", NamedDay::SinglesDay), ("singles day", NamedDay::SinglesDay),
    ("singles' day", NamedDay::SinglesDay),
];

/// The week before last, folded; found before "last week", which most of them contain.
#[rustfmt::skip]
const WEEK_BEFORE_LAST: &[&str] = &[
    "week before last", "vorletzte woche", "vorletzten woche", "avant-derniere semaine",
    "semana antepasada", "settimana prima della scorsa", "twee weken terug", "지지난주",
    "지지난 주", "저저번주", "저저번 주", "上上周", "上上週", "上上个星期", "先々週", "先先週",
];

/// Korean native counts of days ("사흘", "열흘", "보름"), read when they count back
/// ("열흘 전", "열흘 정도 됐는데").
#[rustfmt::skip]
const KOREAN_DAY_COUNTS: &[(&str, u8)] = &[
    ("하루", 1), ("이틀", 2), ("사흘", 3), ("나흘", 4), ("닷새", 5), ("엿새", 6), ("이레", 7),
    ("여드레", 8), ("아흐레", 9), ("열흘", 10), ("보름", 15),
];

/// What follows a Korean count of days when it counts back.
const KOREAN_BACK: &[&str] = &[
    " 전",
    "전",
    " 정도 전",
    "쯤 전",
    " 정도 됐",
    " 됐",
    "됐",
    " 지났",
    " 정도 지났",
    "째",
];

/// Phrases read whole before anything else, with their day: named days, the week before
/// last, Korean counts of days back; each is then blanked out of the text, so "黑五" is
/// no Friday and "지지난주" no "지난주".
static WHOLE_PHRASES: std::sync::LazyLock<(Vec<(String, Day)>, crate::phrases::PhraseSet)> =
    std::sync::LazyLock::new(|| {
        let mut out: Vec<(String, Day)> = NAMED_DAYS
            .iter()
            .map(|(w, d)| (w.to_string(), Day::Named(*d)))
            .collect();
        out.extend(
            WEEK_BEFORE_LAST
                .iter()
                .map(|w| (w.to_string(), Day::WeekBeforeLast)),
        );
        for (word, n) in KOREAN_DAY_COUNTS {
            let spread = if *n > 10 { 2 } else { 1 };
            for back in KOREAN_BACK {
                out.push((format!("{word}{back}"), Day::Within(n - spread, n + spread)));
            }
        }
        let set = crate::phrases::PhraseSet::new(out.iter().map(|(p, _)| p.as_str()));
        (out, set)
    });

/// Weekday names, folded (`structure::fold_words`), Monday first: English, German,
/// French, Spanish, Italian, Dutch, Portuguese, Polish, Swedish, Turkish, Czech. A
/// name ending in `*` is a stem (Polish, Czech and Turkish inflect them: "w sobotę",
/// "v sobotu", "cumartesi günü", Swedish "i fredags"), and German and Dutch glue a time of day to them
/// ("Freitagabend", "vrijdagavond"). Portuguese weekdays are written with `-feira`, since
/// "segunda" alone is "the second" (the second charge).
#[rustfmt::skip]
const WEEKDAY_WORDS: [&[&str]; 7] = [
    &[
        "monday", "on mon", "last mon", "this mon", "mon night", "mon morning", "montag*", "lundi",
        "lunes", "lunedi", "maandag*", "segunda-feira", "poniedzial*", "mandag*", "pazartesi",
        "pondel*",
    ],
    &[
        "tuesday", "on tue", "last tue", "this tue", "tue night", "tue morning", "on tues",
        "last tues", "this tues", "tues night", "tues morning", "dienstag*", "mardi", "martes",
        "martedi", "dinsdag*", "terca-feira", "wtor*", "tisdag*", "sali", "uter*",
    ],
    &[
        "wednesday", "on wed", "last wed", "this wed", "wed night", "wed morning", "mittwoch*",
        "mercredi", "miercoles", "mercoledi", "woensdag*", "quarta-feira", "srod*", "onsdag*",
        "carsamba", "stred*",
    ],
    &[
        "thursday", "on thu", "last thu", "this thu", "thu night", "thu morning", "on thur",
        "last thur", "this thur", "thur night", "thur morning", "on thurs", "last thurs",
        "this thurs", "thurs night", "thurs morning", "donnerstag*", "jeudi", "jueves", "giovedi",
        "donderdag*", "quinta-feira", "czwart*", "torsdag*", "persembe", "ctvrt*",
    ],
    &[
        "friday", "on fri", "last fri", "this fri", "fri night", "fri morning", "freitag*",
        "vendredi", "viernes", "venerdi", "vrijdag*", "sexta-feira", "piat*", "fredag*", "cuma",
        "patek", "patku",
    ],
    &[
        "saturday", "on sat", "last sat", "this sat", "sat night", "sat morning", "samstag*",
        "sonnabend", "samedi", "sabado", "sabato", "zaterdag*", "sobot*", "lordag*", "cumartesi*",
    ],
    &[
        "sunday", "on sun", "last sun", "this sun", "sun night", "sun morning", "sonntag*",
        "dimanche", "domingo", "domenica", "zondag*", "niedziel*", "sondag*", "pazar", "nedel*",
    ],
];

/// The CJK and Hangul weekday names, Monday first, each with the forms that mean "of
/// last week" (`上周六`, `先週の土曜`, `지난주 토요일`) listed apart.
#[rustfmt::skip]
const WEEKDAY_CJK: [(&[&str], &[&str]); 7] = [
    (
        &["周一", "星期一", "礼拜一", "禮拜一", "週一", "月曜", "월요일", "월욜"],
        &["上周一", "上星期一", "上週一", "先週の月曜", "先週月曜", "지난주 월요일", "저번주 월요일", "저번 주 월요일", "지난 주 월요일"],
    ),
    (
        &["周二", "星期二", "礼拜二", "禮拜二", "週二", "火曜", "화요일", "화욜"],
        &["上周二", "上星期二", "上週二", "先週の火曜", "先週火曜", "지난주 화요일", "저번주 화요일", "저번 주 화요일", "지난 주 화요일"],
    ),
    (
        &["周三", "星期三", "礼拜三", "禮拜三", "週三", "水曜", "수요일", "수욜"],
        &["上周三", "上星期三", "上週三", "先週の水曜", "先週水曜", "지난주 수요일", "저번주 수요일", "저번 주 수요일", "지난 주 수요일"],
    ),
    (
        &["周四", "星期四", "礼拜四", "禮拜四", "週四", "木曜", "목요일", "목욜"],
        &["上周四", "上星期四", "上週四", "先週の木曜", "先週木曜", "지난주 목요일", "저번주 목요일", "저번 주 목요일", "지난 주 목요일"],
    ),
    (
        &["周五", "星期五", "礼拜五", "禮拜五", "週五", "金曜", "금요일", "금욜"],
        &["上周五", "上星期五", "上週五", "先週の金曜", "先週金曜", "지난주 금요일", "저번주 금요일", "저번 주 금요일", "지난 주 금요일"],
    ),
    (
        &["周六", "星期六", "礼拜六", "禮拜六", "週六", "土曜", "토요일", "토욜"],
        &["上周六", "上星期六", "上週六", "先週の土曜", "先週土曜", "지난주 토요일", "저번주 토요일", "저번 주 토요일", "지난 주 토요일"],
    ),
    (
        &["周日", "周天", "星期日", "星期天", "礼拜天", "禮拜天", "週日", "日曜", "일요일", "일욜"],
        &[
            "上周日", "上周天", "上星期日", "上星期天", "上週日", "先週の日曜", "先週日曜", "지난주 일요일", "저번주 일요일",
            "저번 주 일요일", "지난 주 일요일",
        ],
    ),
];

/// Days counted back from the ticket's, folded: today, yesterday, the day before.
/// French "hier" is left out: it is "here" in German and Dutch; "hier soir" is not.
#[rustfmt::skip]
const DAYS_AGO: [(u8, &[&str]); 3] = [
    (0, &[
        "today", "this morning", "this afternoon", "this evening", "earlier today", "heute",
        "aujourd'hui", "ce matin", "cet apres-midi", "hoy", "esta manana", "esta tarde",
        "oggi", "stamattina", "stamani", "vandaag", "vanochtend", "vanmiddag", "hoje",
        "dzisiaj", "dzis", "idag", "bugun", "dnes", "今天", "今日", "今朝", "本日", "头先", "頭先", "오늘",
    ]),
    (1, &[
        "yesterday", "gestern", "hier soir", "hier matin", "hier apres-midi", "ayer", "ieri",
        "gisteren", "ontem", "wczoraj", "igar", "dun", "vcera", "昨天", "昨日", "琴日", "尋日",
        "寻日", "어제",
    ]),
    (2, &[
        "day before yesterday", "vorgestern", "avant-hier", "anteayer", "antier",
        "l'altro ieri", "altroieri", "eergisteren", "anteontem", "przedwczoraj", "i forrgar",
        "evvelsi gun", "predevcirem", "前天", "前日", "一昨日", "おととい", "그저께", "그제",
    ]),
];

/// Last night, folded ([`Day::LastNight`]): an order placed after midnight is still
/// "last night's". French "hier soir" and Korean "어젯밤" are here, not yesterday's.
#[rustfmt::skip]
const LAST_NIGHT: &[&str] = &[
    "last night", "yesterday night", "yesterday evening", "last evening", "gestern abend",
    "gestern nacht", "letzte nacht", "hier soir", "anoche", "ieri sera", "ieri notte",
    "gisteravond", "gisternacht", "ontem a noite", "ontem de noite", "wczoraj wieczorem",
    "wczoraj w nocy", "igar kvall", "i gar kvall", "dun gece", "dun aksam", "vcera vecer",
    "vcera v noci", "昨晚", "昨夜", "ゆうべ", "夕べ", "어젯밤", "어제 밤", "어제밤", "어제 저녁",
];

/// "N days ago" around a number, folded: `(before, after)` per language (EN, DE, FR,
/// ES, IT, NL, PT, ZH, JA, KO, PL, SV, TR, CS).
#[rustfmt::skip]
const DAYS_AGO_AROUND: &[(&str, &str)] = &[
    ("", " days ago"), ("", " day ago"), ("vor ", " tagen"), ("il y a ", " jours"),
    ("hace ", " dias"), ("", " giorni fa"), ("", " dagen geleden"), ("ha ", " dias"),
    ("faz ", " dias"), ("", " dias atras"), ("", "天前"), ("", "日前"), ("", "일 전"), ("", "일전"),
    ("", " dni temu"), ("for ", " dagar sedan"), ("", " gun once"), ("pred ", " dny"),
];

/// "N weeks ago" around a number, folded, as [`DAYS_AGO_AROUND`]: so many weeks back,
/// three days either side.
#[rustfmt::skip]
const WEEKS_AGO_AROUND: &[(&str, &str)] = &[
    ("", " weeks ago"), ("vor ", " wochen"), ("il y a ", " semaines"), ("hace ", " semanas"),
    ("", " settimane fa"), ("", " weken geleden"), ("ha ", " semanas"), ("faz ", " semanas"),
    ("", "周前"), ("", "週前"), ("", "个星期前"), ("", "個星期前"), ("", "週間前"),
    ("", "주 전"), ("", "주전"), ("", "주일 전"), ("", " tygodnie temu"), ("for ", " veckor sedan"),
    ("", " hafta once"), ("pred ", " tydny"),
];

/// The days back `n` weeks ago can mean.
fn weeks_back(n: u8) -> Day {
    let days = n.saturating_mul(7);
    Day::Within(days.saturating_sub(3), days.saturating_add(3))
}

/// Numbers written as words, one to ten, folded, in the languages of
/// [`DAYS_AGO_AROUND`] with number words of their own.
#[rustfmt::skip]
const NUMBER_WORDS: [&[&str]; 10] = [
    &["one", "a", "einem", "un", "uno", "een", "um", "一", "jeden"],
    &["two", "zwei", "deux", "dos", "due", "twee", "dois", "二", "两", "dwa", "tva", "iki", "dva"],
    &["three", "drei", "trois", "tres", "tre", "drie", "三", "trzy", "tre", "uc", "tri"],
    &["four", "vier", "quatre", "cuatro", "quattro", "quatro", "四", "cztery", "fyra", "dort"],
    &["five", "funf", "cinq", "cinco", "cinque", "vijf", "五", "piec", "fem", "bes", "pet"],
    &["six", "sechs", "seis", "sei", "zes", "六", "szesc", "sex", "alti", "sest"],
    &["seven", "sieben", "sept", "siete", "sette", "zeven", "sete", "七", "siedem", "sju", "yedi"],
    &["eight", "acht", "huit", "ocho", "otto", "oito", "八", "osiem", "atta", "sekiz", "osm"],
    &["nine", "neun", "neuf", "nueve", "nove", "negen", "九", "dziewiec", "nio", "dokuz", "devet"],
    &["ten", "zehn", "dix", "diez", "dieci", "tien", "dez", "十", "dziesiec", "tio", "on", "deset"],
];

/// Spans of days back named without a number, folded.
#[rustfmt::skip]
const DAYS_BACK: &[(Day, &[&str])] = &[
    (Day::Within(1, 6), &[
        "a few days ago", "couple of days ago", "couple days ago", "vor ein paar tagen",
        "vor einigen tagen", "vor wenigen tagen", "il y a quelques jours", "hace unos dias",
        "hace algunos dias", "hace unos pocos dias", "qualche giorno fa", "pochi giorni fa",
        "een paar dagen geleden", "enkele dagen geleden", "ha alguns dias", "ha uns dias",
        "faz uns dias", "uns dias atras", "几天前", "前几天", "前幾天", "數日前", "数日前", "며칠 전", "며칠전",
        "kilka dni temu", "for nagra dagar sedan", "birkac gun once", "pred par dny",
        "pred nekolika dny",
    ]),
    (Day::LastWeek, &[
        "last week", "a week ago", "one week ago", "letzte woche", "letzten woche",
        "vorige woche", "vor einer woche", "la semaine derniere", "il y a une semaine",
        "la semana pasada", "hace una semana", "la settimana scorsa", "una settimana fa",
        "vorige week", "afgelopen week", "een week geleden", "semana passada", "ha uma semana",
        "uma semana atras", "上周", "上星期", "上週", "一周前", "一个星期前", "一個星期前", "先週", "一週間前", "1週間前",
        "지난주", "지난 주", "저번주", "저번 주", "일주일 전", "1주일 전", "w zeszlym tygodniu", "tydzien temu", "forra veckan",
        "for en vecka sedan", "gecen hafta", "bir hafta once", "minuly tyden", "pred tydnem",
    ]),
    (Day::Month(0), &[
        "this month", "earlier this month", "diesen monat", "dieser monat", "ce mois-ci",
        "ce mois ci", "este mes", "questo mese", "deze maand", "neste mes", "本月", "这个月",
        "這個月", "今月", "이번 달", "이번달", "w tym miesiacu", "den har manaden", "bu ay",
        "tento mesic",
    ]),
    (Day::Month(1), &[
        "last month", "letzten monat", "vorigen monat", "le mois dernier", "el mes pasado",
        "il mese scorso", "vorige maand", "mes passado", "上个月", "上個月", "先月", "지난달",
        "지난 달", "저번 달", "저번달", "w zeszlym miesiacu", "forra manaden", "gecen ay",
        "minuly mesic",
    ]),
    (Day::Weekday(Weekday::Saturday), &[
        "weekend", "wochenende", "week-end", "fin de semana", "fine settimana",
        "fim de semana", "周末", "週末", "주말", "helgen", "hafta sonu", "vikend",
    ]),
];

/// Every phrase of [`DAYS_AGO_AROUND`] × [`NUMBER_WORDS`] (digits are read apart), with
/// its day, and the one-pass set that finds them.
static NUMBERED: std::sync::LazyLock<(Vec<(String, Day)>, crate::phrases::PhraseSet)> =
    std::sync::LazyLock::new(|| {
        let mut phrases = Vec::new();
        for (before, after) in DAYS_AGO_AROUND {
            for (i, words) in NUMBER_WORDS.iter().enumerate() {
                let n = i as u8 + 1;
                for word in *words {
                    let joined = format!("{before}{word}{after}");
                    phrases.push((joined, Day::Within(n.saturating_sub(1), n + 1)));
                }
            }
        }
        for (before, after) in WEEKS_AGO_AROUND {
            for (i, words) in NUMBER_WORDS.iter().enumerate().skip(1) {
                for word in *words {
                    phrases.push((format!("{before}{word}{after}"), weeks_back(i as u8 + 1)));
                }
            }
        }
        for phrase in [
            "a fortnight ago",
            "fortnight ago",
            "couple of weeks ago",
            "couple weeks ago",
        ] {
            phrases.push((phrase.to_string(), Day::Within(10, 18)));
        }
        let set = crate::phrases::PhraseSet::new(phrases.iter().map(|(p, _)| p.as_str()));
        (phrases, set)
    });

/// "3 days ago", "vor 3 Tagen", "3天前", "2주 전" with digits: days back around the number.
fn days_ago_in_digits(folded: &str) -> Vec<Day> {
    let mut out = Vec::new();
    for (start, end) in crate::structure::pasted::digit_runs(folded) {
        let Ok(n) = folded[start..end].parse::<u8>() else {
            continue;
        };
        let (head, tail) = (&folded[..start], &folded[end..]);
        let around = |list: &[(&str, &str)]| {
            list.iter()
                .any(|(before, after)| head.ends_with(before) && tail.starts_with(after))
        };
        if n > 0 && around(DAYS_AGO_AROUND) {
            out.push(Day::Within(n - 1, n.saturating_add(1)));
        }
        if n > 1 && around(WEEKS_AGO_AROUND) {
            out.push(weeks_back(n));
        }
    }
    out
}

/// What may stand around a day of the month written alone, folded: `(before, after)`.
/// English needs "on" before its ordinal ("the 2nd charge" is the second charge);
/// Japanese and Korean need a particle after the day ("28日前", "28일 전" count days).
#[rustfmt::skip]
const DAY_OF_MONTH_AROUND: &[(&str, &[&str])] = &[
    ("on the ", &["st", "nd", "rd", "th"]), ("on ", &["st", "nd", "rd", "th"]),
    ("since the ", &["st", "nd", "rd", "th"]), ("am ", &[". ", ".,"]), ("", &["号", "號"]),
    ("", &["日に", "日の", "日、"]), ("", &["일에", "일날", "일 날", "일자"]),
];

/// Days of the month written alone, by [`DAY_OF_MONTH_AROUND`].
fn days_of_month_alone(folded: &str) -> Vec<Day> {
    let mut out = Vec::new();
    for (start, end) in crate::structure::pasted::digit_runs(folded) {
        let Ok(n) = folded[start..end].parse::<u8>() else {
            continue;
        };
        let (head, tail) = (&folded[..start], &folded[end..]);
        // "28th" ends where the word does; "28. " and "28号" end in themselves.
        let edge = |after: &str| {
            !after.ends_with(|c: char| c.is_ascii_alphanumeric())
                || !tail[after.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric())
        };
        let fits = DAY_OF_MONTH_AROUND.iter().any(|(before, afters)| {
            head.ends_with(before)
                && (before.is_empty()
                    || !head[..head.len() - before.len()].ends_with(char::is_alphanumeric))
                && afters.iter().any(|a| tail.starts_with(a) && edge(a))
        });
        if (1..=31).contains(&n) && end - start <= 2 && fits {
            out.push(Day::OfMonth(n));
        }
    }
    out
}

/// The days `folded` names (`structure::fold_words` applied): dates, weekdays, days ago.
pub fn mentioned_days(folded: &str) -> Vec<Day> {
    // Looked for in one pass, as the words of `days_in` are; a phrase present still
    // goes through `contains_phrase` (word edges).
    let (phrases, set) = &*WHOLE_PHRASES;
    let whole: Vec<&(String, Day)> = phrases
        .iter()
        .zip(set.present(folded))
        .filter(|((words, _), here)| *here && contains_phrase(folded, words))
        .map(|(phrase, _)| phrase)
        .collect();
    if whole.is_empty() {
        return days_in(folded);
    }
    let mut rest = folded.to_string();
    let mut days = Vec::new();
    for (words, day) in whole {
        rest = rest.replace(words.as_str(), " ");
        if !days.contains(day) {
            days.push(*day);
        }
    }
    days.extend(days_in(&rest));
    days
}

/// [`mentioned_days`] without the whole phrases.
fn days_in(folded: &str) -> Vec<Day> {
    let mut days: Vec<Day> = mentioned_dates(folded)
        .into_iter()
        .map(|(year, month, day)| Day::Date { year, month, day })
        .collect();
    // Every word below is looked for once, in one pass (`WORDS`); a word present still
    // goes through `names` (word edges, stems).
    let (_, set) = &*WORDS;
    let mut present = set.present(folded).into_iter();
    let mut said = |words: &[&str]| {
        let mut found = false;
        for w in words {
            let here = present.next().unwrap_or(true);
            found = found || (here && names(folded, w));
        }
        found
    };
    for (i, weekday) in WEEKDAYS.iter().enumerate() {
        let (plain, last_weeks) = WEEKDAY_CJK[i];
        let (last_weeks, plain, words) = (said(last_weeks), said(plain), said(WEEKDAY_WORDS[i]));
        if last_weeks {
            days.push(Day::LastWeeks(*weekday));
        } else if plain || words {
            days.push(Day::Weekday(*weekday));
        }
    }
    for (ago, words) in DAYS_AGO {
        if said(words) {
            days.push(Day::DaysAgo(ago));
        }
    }
    if said(LAST_NIGHT) {
        days.push(Day::LastNight);
    }
    let specific_weekday = days.iter().any(|d| matches!(d, Day::LastWeeks(_)));
    for (day, words) in DAYS_BACK {
        // "上周六" is last week's Saturday, not any day of last week.
        if said(words) && (*day != Day::LastWeek || !specific_weekday) {
            days.push(*day);
            if *day == Day::Weekday(Weekday::Saturday) {
                days.push(Day::Weekday(Weekday::Sunday));
            }
        }
    }
    let (numbered, set) = &*NUMBERED;
    for ((phrase, day), here) in numbered.iter().zip(set.present(folded)) {
        if here && names(folded, phrase) {
            days.push(*day);
        }
    }
    days.extend(days_ago_in_digits(folded));
    // "11월 9일에" is a date; its "9일에" is no other day.
    let dated: Vec<u8> = days
        .iter()
        .filter_map(|d| match d {
            Day::Date { day, .. } => Some(*day),
            _ => None,
        })
        .collect();
    days.extend(
        days_of_month_alone(folded)
            .into_iter()
            .filter(|d| !matches!(d, Day::OfMonth(n) if dated.contains(n))),
    );
    days.dedup();
    last_weeks_weekday(days)
}

/// "Saturday last week", "letzte Woche Samstag": last week's Saturday, not any day of
/// last week nor the latest Saturday (they differ on a weekend).
fn last_weeks_weekday(days: Vec<Day>) -> Vec<Day> {
    let weekdays: Vec<Weekday> = days
        .iter()
        .filter_map(|d| match d {
            Day::Weekday(w) => Some(*w),
            _ => None,
        })
        .collect();
    if weekdays.len() != 1 || !days.contains(&Day::LastWeek) {
        return days;
    }
    days.into_iter()
        .filter_map(|d| match d {
            Day::LastWeek => None,
            Day::Weekday(w) => Some(Day::LastWeeks(w)),
            other => Some(other),
        })
        .collect()
}

/// Every word `mentioned_days` looks for, by its literal part (a stem without its `*`),
/// in the order it asks for them, found in one pass.
static WORDS: std::sync::LazyLock<(Vec<&'static str>, crate::phrases::PhraseSet)> =
    std::sync::LazyLock::new(|| {
        let mut words: Vec<&'static str> = Vec::new();
        for i in 0..7 {
            let (plain, last_weeks) = WEEKDAY_CJK[i];
            words.extend(
                last_weeks
                    .iter()
                    .chain(plain)
                    .chain(WEEKDAY_WORDS[i])
                    .copied(),
            );
        }
        words.extend(DAYS_AGO.iter().flat_map(|(_, w)| w.iter().copied()));
        words.extend(LAST_NIGHT.iter().copied());
        words.extend(DAYS_BACK.iter().flat_map(|(_, w)| w.iter().copied()));
        let literal = words.iter().map(|w| w.strip_suffix('*').unwrap_or(w));
        let set = crate::phrases::PhraseSet::new(literal);
        (words, set)
    });

const WEEKDAYS: [Weekday; 7] = [
    Weekday::Monday,
    Weekday::Tuesday,
    Weekday::Wednesday,
    Weekday::Thursday,
    Weekday::Friday,
    Weekday::Saturday,
    Weekday::Sunday,
];

/// A whole word or phrase, or with a trailing `*` a word's start.
fn names(folded: &str, word: &str) -> bool {
    match word.strip_suffix('*') {
        Some(stem) => folded.match_indices(stem).any(|(at, _)| {
            !folded[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
        }),
        None => contains_phrase(folded, word),
    }
}
