//! How long the customer may expect to wait for our answer, from the target
//! of the queue their case waits in. What it does not do: promise. The words say
//! "usually", as a support team does; the target is a setting, not a measurement.

use super::language::Language;

/// "We usually answer within N hours" in `lang` (one hour said as one).
pub fn reply_time_text(lang: Language, hours: u32) -> String {
    let one = hours == 1;
    match lang {
        Language::En if one => "We usually answer within an hour.".into(),
        Language::En => format!("We usually answer within {hours} hours."),
        Language::Zh => format!("我们通常会在 {hours} 小时内回复。"),
        Language::Ja => format!("通常 {hours} 時間以内にご回答します。"),
        Language::De if one => "Wir antworten in der Regel innerhalb einer Stunde.".into(),
        Language::De => format!("Wir antworten in der Regel innerhalb von {hours} Stunden."),
        Language::Fr if one => "Nous répondons généralement en moins d'une heure.".into(),
        Language::Fr => format!("Nous répondons généralement en moins de {hours} heures."),
        Language::Es if one => "Solemos responder en menos de una hora.".into(),
        Language::Es => format!("Solemos responder en menos de {hours} horas."),
        Language::It if one => "Di solito rispondiamo entro un'ora.".into(),
        Language::It => format!("Di solito rispondiamo entro {hours} ore."),
        Language::Nl if one => "We antwoorden meestal binnen een uur.".into(),
        Language::Nl => format!("We antwoorden meestal binnen {hours} uur."),
        Language::Pt if one => "Normalmente respondemos em menos de uma hora.".into(),
        Language::Pt => format!("Normalmente respondemos em menos de {hours} horas."),
        Language::Ko => format!("보통 {hours}시간 이내에 답변드립니다."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_names_the_hours_and_english_says_one_hour_as_one() {
        for lang in Language::ALL {
            assert!(reply_time_text(lang, 4).contains('4'), "{lang:?}");
        }
        assert_eq!(
            reply_time_text(Language::En, 1),
            "We usually answer within an hour."
        );
        assert_eq!(
            reply_time_text(Language::En, 4),
            "We usually answer within 4 hours."
        );
    }
}
