//! Tests of `when`: the days customers name, read and placed in their own time.

use super::*;
use crate::resolve::mentioned_days;
use crate::structure::fold_words;
use time::macros::datetime;

fn days(text: &str) -> Vec<Day> {
    mentioned_days(&fold_words(text))
}

/// Wednesday 11 November 2026, 09:40 UTC, from the EU.
const WEDNESDAY: Moment = Moment {
    reported_at: datetime!(2026-11-11 09:40 UTC),
    region: Some(Region::EU),
    script_offset: None,
};

#[test]
fn weekdays_are_read_in_every_language_we_meet() {
    for text in [
        "das Abo, das ich am Samstag abgeschlossen habe",
        "afgelopen zaterdag",
        "samedi dernier",
        "el sábado pasado",
        "w sobotę kupiłem",
        "i lördags",
        "cumartesi günü",
        "v sobotu",
        "土曜日に購入",
        "토요일에 결제",
        "周六买的",
    ] {
        assert_eq!(days(text), [Day::Weekday(Weekday::Saturday)], "{text}");
    }
    assert_eq!(days("上周六的订单"), [Day::LastWeeks(Weekday::Saturday)]);
    for text in [
        "vrijdagavond per ongeluk afgesloten",
        "am Freitagabend gekauft",
    ] {
        assert_eq!(days(text), [Day::Weekday(Weekday::Friday)], "{text}");
    }
    assert_eq!(days("a segunda cobrança"), []);
}

#[test]
fn a_weekday_is_the_last_one_before_the_ticket_in_the_customers_time() {
    let saturday = Day::Weekday(Weekday::Saturday);
    assert!(WEDNESDAY.placed_on(datetime!(2026-11-07 08:40 UTC), saturday));
    assert!(!WEDNESDAY.placed_on(datetime!(2026-10-31 08:40 UTC), saturday));
    // Friday 23:30 UTC is already Saturday in Berlin.
    assert!(WEDNESDAY.placed_on(datetime!(2026-11-06 23:30 UTC), saturday));
    // Last week's Saturday, counted from Wednesday, is four days back as well.
    let last_weeks = Day::LastWeeks(Weekday::Saturday);
    assert!(WEDNESDAY.placed_on(datetime!(2026-11-07 08:40 UTC), last_weeks));
    assert!(WEDNESDAY.placed_on(datetime!(2026-11-10 12:00 UTC), Day::DaysAgo(1)));
    assert!(!WEDNESDAY.placed_on(datetime!(2026-11-09 12:00 UTC), Day::DaysAgo(1)));
}

#[test]
fn dates_and_days_back_are_read_with_the_weekdays() {
    assert_eq!(
        days("21 Kasım'daki ödeme"),
        [Day::Date {
            year: None,
            month: 11,
            day: 21
        }]
    );
    assert_eq!(days("wczoraj przez przypadek"), [Day::DaysAgo(1)]);
    assert_eq!(days("hier ist meine Bestellung"), []);
    assert_eq!(days("我今天中午12:05下了一单"), [Day::DaysAgo(0)]);
    assert_eq!(days("I bought it 3 days ago"), [Day::Within(2, 4)]);
    assert_eq!(days("hace tres días"), [Day::Within(2, 4)]);
    assert_eq!(days("comprei faz uns dias"), [Day::Within(1, 6)]);
    assert_eq!(days("五天前开通的"), [Day::Within(4, 6)]);
    assert_eq!(days("last week"), [Day::LastWeek]);
    assert_eq!(
        days("am Wochenende"),
        [
            Day::Weekday(Weekday::Saturday),
            Day::Weekday(Weekday::Sunday)
        ]
    );
}

#[test]
fn abbreviated_and_colloquial_weekdays_are_weekdays() {
    let sat = Day::Weekday(Weekday::Saturday);
    assert_eq!(days("I signed up on Sat. but won't use it"), [sat]);
    assert_eq!(days("토욜에 결제했는데"), [sat]);
    assert_eq!(
        days("저번 주 수요일에 결제한 거"),
        [Day::LastWeeks(Weekday::Wednesday)]
    );
    assert_eq!(days("저번주에 샀어요"), [Day::LastWeek]);
    // "sat" is also the verb: only "on/last/this sat" or "sat night" is a day.
    assert_eq!(days("I sat down and bought the plan"), []);
}

#[test]
fn a_month_and_a_day_of_the_month_are_read() {
    assert_eq!(days("refund this month please"), [Day::Month(0)]);
    assert_eq!(days("지난달에 결제한 연간 플랜"), [Day::Month(1)]);
    assert_eq!(days("it renewed itself on the 28th."), [Day::OfMonth(28)]);
    assert_eq!(days("am 5. habe ich bestellt"), [Day::OfMonth(5)]);
    assert_eq!(days("5号买的年费"), [Day::OfMonth(5)]);
    assert_eq!(days("28일에 결제"), [Day::OfMonth(28)]);
    // Ordinals of charges and days counted back are not days of the month.
    assert_eq!(days("refund the 2nd charge"), []);
    assert_eq!(days("28일 전에"), [Day::Within(27, 29)]);
    assert_eq!(days("5日前に"), [Day::Within(4, 6)]);
}

#[test]
fn named_shopping_days_are_their_dates_not_weekdays() {
    assert_eq!(
        days("bought it on black friday"),
        [Day::Named(NamedDay::BlackFriday)]
    );
    assert_eq!(days("黑五买的年费"), [Day::Named(NamedDay::BlackFriday)]);
    let december = Moment {
        reported_at: datetime!(2026-12-07 15:00 UTC),
        region: Some(Region::US),
        script_offset: None,
    };
    let black_friday = Day::Named(NamedDay::BlackFriday);
    assert!(december.placed_on(datetime!(2026-11-27 18:00 UTC), black_friday));
    assert!(!december.placed_on(datetime!(2026-12-04 18:00 UTC), black_friday));
    let cyber_monday = Day::Named(NamedDay::CyberMonday);
    assert!(december.placed_on(datetime!(2026-11-30 18:00 UTC), cyber_monday));
    // In January "Black Friday" is last November's.
    let january = Moment {
        reported_at: datetime!(2027-01-10 15:00 UTC),
        ..december
    };
    assert!(january.placed_on(datetime!(2026-11-27 18:00 UTC), black_friday));
}

#[test]
fn a_weekday_with_last_week_is_last_weeks() {
    assert_eq!(
        days("Saturday last week I bought the plan"),
        [Day::LastWeeks(Weekday::Saturday)]
    );
    // Written on Sunday 2026-11-15: last week's Saturday is the 7th, not yesterday.
    let sunday = Moment {
        reported_at: datetime!(2026-11-15 12:00 UTC),
        ..WEDNESDAY
    };
    let day = Day::LastWeeks(Weekday::Saturday);
    assert!(sunday.placed_on(datetime!(2026-11-07 12:00 UTC), day));
    assert!(!sunday.placed_on(datetime!(2026-11-14 12:00 UTC), day));
}

#[test]
fn a_script_written_at_home_breaks_a_tie_the_region_leaves() {
    // A Korean customer of the US shop: Saturday 07:30 in Seoul is Friday in the US.
    let seoul = Moment {
        reported_at: datetime!(2026-12-07 02:00 UTC),
        region: Some(Region::US),
        script_offset: None,
    }
    .written_in(&["토요일 아침에 결제한 연간 플랜".to_string()]);
    let saturday = Day::Weekday(Weekday::Saturday);
    assert!(seoul.placed_on(datetime!(2026-12-04 22:30 UTC), saturday));
    assert!(seoul.placed_on_at_home(datetime!(2026-12-04 22:30 UTC), saturday));
    assert!(!seoul.placed_on_at_home(datetime!(2026-12-05 16:00 UTC), saturday));
}

#[test]
fn a_day_of_the_month_is_its_last_date_before_the_ticket() {
    // Reported on Wednesday 2026-11-11: "the 28th" is 28 October, "the 5th" 5 November.
    assert!(WEDNESDAY.placed_on(datetime!(2026-10-28 12:00 UTC), Day::OfMonth(28)));
    assert!(!WEDNESDAY.placed_on(datetime!(2026-11-28 12:00 UTC), Day::OfMonth(28)));
    assert!(WEDNESDAY.placed_on(datetime!(2026-11-05 12:00 UTC), Day::OfMonth(5)));
    assert!(WEDNESDAY.placed_on(datetime!(2026-11-02 12:00 UTC), Day::Month(0)));
    assert!(!WEDNESDAY.placed_on(datetime!(2026-10-30 12:00 UTC), Day::Month(0)));
    assert!(WEDNESDAY.placed_on(datetime!(2026-10-30 12:00 UTC), Day::Month(1)));
}

#[test]
fn weeks_and_korean_counts_of_days_count_back() {
    assert_eq!(days("I bought it two weeks ago"), [Day::Within(11, 17)]);
    assert_eq!(days("2주 전에 결제했어요"), [Day::Within(11, 17)]);
    assert_eq!(days("a fortnight ago"), [Day::Within(10, 18)]);
    assert_eq!(
        days("열흘 정도 됐는데 거의 안 썼어요"),
        [Day::Within(9, 11)]
    );
    assert_eq!(days("보름 전에 샀어요"), [Day::Within(13, 17)]);
    assert_eq!(days("사흘 전"), [Day::Within(2, 4)]);
    // The week before last is not last week, though its words contain them.
    assert_eq!(days("지지난주에 결제"), [Day::WeekBeforeLast]);
    assert_eq!(days("the week before last"), [Day::WeekBeforeLast]);
    // A date's day is no day of the month besides it.
    assert_eq!(
        days("11월9일에 결제"),
        [Day::Date {
            year: None,
            month: 11,
            day: 9
        }]
    );
}

#[test]
fn last_night_runs_past_midnight() {
    for text in [
        "I bought it late last night",
        "어젯밤에 결제",
        "昨晚买的",
        "hier soir",
    ] {
        assert!(days(text).contains(&Day::LastNight), "{text}");
    }
    // Read from Japan at noon on Monday 7 December: 00:40 that morning was last night,
    // as was 22:00 on Sunday; Sunday's lunch and afternoon were not (in Japan, nor in
    // UTC, the other clock a Japanese customer may read).
    let monday = Moment {
        reported_at: datetime!(2026-12-07 03:00 UTC),
        region: Some(Region::JP),
        script_offset: None,
    };
    let placed = |at| monday.placed_on(at, Day::LastNight);
    assert!(placed(datetime!(2026-12-06 15:40 UTC)));
    assert!(placed(datetime!(2026-12-06 13:00 UTC)));
    assert!(!placed(datetime!(2026-12-06 03:00 UTC)));
    assert!(!placed(datetime!(2026-12-06 07:00 UTC)));
}
