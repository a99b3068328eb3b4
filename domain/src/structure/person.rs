//! Whether a customer's words ask for a person instead of the agent: "a real
//! person", "人工", "担当者", "einen Menschen", … in the ten languages we answer in.
//! Compared in `fold_words`' form. What it deliberately does not do: decide anything —
//! the workflow hands the case to a person when this says so and the case may go there.

use super::fold::fold_words;

/// Phrases, folded, that ask for a person. Each is specific enough not to be read in an
/// ordinary complaint ("human error" is not here; "a human" is).
const ASKS: &[&str] = &[
    // en
    "real person",
    "to a human",
    "with a human",
    "human being",
    "human agent",
    "live agent",
    "real agent",
    "talk to a person",
    "speak to a person",
    "speak with a person",
    "talk to someone",
    "speak to someone",
    "speak with someone",
    "a representative",
    "an operator",
    // zh
    "人工",
    "真人",
    "客服人员",
    // ja
    "担当者",
    "人間",
    "オペレーター",
    "有人対応",
    // de
    "echten menschen",
    "einem menschen",
    "einen menschen",
    "echte person",
    "mit einem mitarbeiter",
    "einen mitarbeiter",
    // fr
    "vraie personne",
    "un humain",
    "une personne reelle",
    "un conseiller",
    "un etre humain",
    // es
    "persona real",
    "un humano",
    "agente humano",
    "hablar con alguien",
    "una persona de verdad",
    // it
    "persona reale",
    "un operatore",
    "un essere umano",
    "una persona vera",
    // nl
    "echte persoon",
    "een mens",
    "een medewerker",
    "met iemand spreken",
    // pt
    "pessoa real",
    "um humano",
    "um atendente",
    "falar com alguem",
    // ko
    "상담원",
    "사람과",
    "직원 연결",
    "사람이랑",
];

/// Whether `text` (the customer's new words) asks for a person.
pub fn asks_for_a_person(text: &str) -> bool {
    let folded = fold_words(text);
    ASKS.iter().any(|phrase| folded.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::asks_for_a_person;

    #[test]
    fn a_request_for_a_person_is_heard_in_every_language_and_a_complaint_is_not() {
        for asked in [
            "I'd like to talk to a real person please",
            "Can I speak to a human?",
            "转人工",
            "担当者と話したいです",
            "Ich möchte mit einem Menschen sprechen",
            "Je voudrais parler à un conseiller",
            "Quiero hablar con una persona real",
            "Vorrei parlare con un operatore",
            "Ik wil een medewerker spreken",
            "Quero falar com alguém, uma pessoa real",
            "상담원 연결해 주세요",
        ] {
            assert!(asks_for_a_person(asked), "{asked}");
        }
        for complaint in [
            "I was charged twice for my annual plan",
            "That must be a human error on your side",
            "Ich wurde doppelt belastet",
            "二重に請求されました",
        ] {
            assert!(!asks_for_a_person(complaint), "{complaint}");
        }
    }
}
