//! When the customer says an order was placed: an explicit date ("3. November",
//! `21 Kasım`, `10/08`), a weekday ("am Samstag", "afgelopen zaterdag", "上周六"), or a
//! day counted back from the ticket ("yesterday", "前天", "wczoraj") — always a calendar
//! day of the customer's own, since they count days where they live
//! (docs/spec/domain.md, "Reading a customer's words").
//!
//! An order is an instant; which day it was on depends on the customer's time zone,
//! which the records do not hold. Their region bounds it ([`Moment::offsets`]), and an
//! order matches a day when one of those offsets puts both the order and the ticket
//! where the words say; their script may add where they live at home
//! ([`Moment::script_offset`]). Weekdays and relative days are read against the ticket's
//! own date, never a clock, so a replay decides the same at any later date. Which days
//! the words name is `said_days`'.

use policy_engine::Region;
use time::{Date, Duration, OffsetDateTime, UtcOffset, Weekday};

use crate::script::{script_of, Script};

/// When the ticket was opened and where its customer lives: the frame the customer's
/// days are counted in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moment {
    pub reported_at: OffsetDateTime,
    pub region: Option<Region>,
    /// The UTC offset, in hours, where the customer's script is written at home
    /// (Hangul and kana +9, Chinese characters +8), or `None`: the region is where
    /// their shop or card is, not always where they live (a Korean in Seoul buys from
    /// the US shop). `resolve` sets it from the customer's words.
    pub script_offset: Option<i8>,
}

/// A day the customer names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Day {
    /// A calendar date; the year only when written.
    Date {
        year: Option<i32>,
        month: u8,
        day: u8,
    },
    /// The most recent such weekday, on or before the ticket's day.
    Weekday(Weekday),
    /// That weekday in the week before the ticket's ("上周六", "先週の土曜日").
    LastWeeks(Weekday),
    /// So many days before the ticket's day (0 today, 1 yesterday).
    DaysAgo(u8),
    /// Between so many days before the ticket's day, both included ("3 days ago" is 2
    /// to 4 days back: people round; "a few days ago" 1 to 6).
    Within(u8, u8),
    /// Last week: the Monday-to-Sunday week before the ticket's, or five to nine days
    /// back (how "last week" is said loosely).
    LastWeek,
    /// A day of the month alone ("on the 28th", "am 28.", "28号", "28日に", "28일에"):
    /// its most recent date on or before the ticket's day.
    OfMonth(u8),
    /// A shopping day with a name ("Black Friday", "双十一"): its last date on or
    /// before the ticket's day.
    Named(NamedDay),
    /// The Monday-to-Sunday week before last week, or twelve to sixteen days back.
    WeekBeforeLast,
    /// A calendar month counted back from the ticket's (0 "this month", 1 "last
    /// month"): any of its days up to the ticket's.
    Month(u8),
    /// Last night: from five in the afternoon of the day before the ticket's to six in
    /// the morning of the ticket's own day ("late last night" is often after midnight).
    LastNight,
}

/// The shopping days customers name instead of a date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedDay {
    /// The fourth Thursday of November (US).
    Thanksgiving,
    /// The day after Thanksgiving.
    BlackFriday,
    /// The Monday after Thanksgiving.
    CyberMonday,
    /// 11 November, Singles' Day (China, Korea's Pepero Day).
    SinglesDay,
}

impl NamedDay {
    /// Its name, as the reviewer reads it.
    pub fn name(self) -> &'static str {
        match self {
            NamedDay::Thanksgiving => "Thanksgiving",
            NamedDay::BlackFriday => "Black Friday",
            NamedDay::CyberMonday => "Cyber Monday",
            NamedDay::SinglesDay => "Singles' Day",
        }
    }

    /// Its date in `year`.
    fn in_year(self, year: i32) -> Option<Date> {
        let thanksgiving = || {
            let first = Date::from_calendar_date(year, time::Month::November, 1).ok()?;
            let to_thursday =
                (3 - i64::from(first.weekday().number_days_from_monday())).rem_euclid(7);
            first.checked_add(Duration::days(to_thursday + 21))
        };
        match self {
            NamedDay::Thanksgiving => thanksgiving(),
            NamedDay::BlackFriday => thanksgiving()?.checked_add(Duration::days(1)),
            NamedDay::CyberMonday => thanksgiving()?.checked_add(Duration::days(4)),
            NamedDay::SinglesDay => Date::from_calendar_date(year, time::Month::November, 11).ok(),
        }
    }

    /// Its last date on or before `today`.
    fn last_before(self, today: Date) -> Option<Date> {
        [today.year(), today.year() - 1]
            .into_iter()
            .filter_map(|y| self.in_year(y))
            .find(|d| *d <= today)
    }
}

impl Moment {
    /// UTC offsets, in hours, a customer of the region may live at (daylight saving
    /// included): the records name a region, never a zone. UTC is always one of them: a
    /// receipt or a provider's dashboard may show the day in UTC, and customers copy it.
    /// The US region stands for the Americas: South America's -3 is one of them.
    fn offsets(&self) -> impl Iterator<Item = i8> + '_ {
        let region: &'static [i8] = match self.region {
            Some(Region::CN) => &[8, 0],
            Some(Region::JP) => &[9, 0],
            Some(Region::EU) => &[0, 1, 2, 3],
            Some(Region::US) => &[-10, -9, -8, -7, -6, -5, -4, -3, 0],
            None => &[0],
        };
        let script = self.script_offset.filter(|h| !region.contains(h));
        region.iter().copied().chain(script)
    }

    /// This moment with the offset the customer's script suggests (see
    /// [`Moment::script_offset`]).
    pub fn written_in(self, messages: &[String]) -> Moment {
        let script = messages.iter().filter_map(|m| script_of(m)).min();
        let script_offset = match script {
            Some(Script::Hangul | Script::Kana) => Some(9),
            Some(Script::Han) => Some(8),
            None => None,
        };
        Moment {
            script_offset: self.script_offset.or(script_offset),
            ..self
        }
    }

    /// Whether an order placed at `placed_at` was placed on `day`, as the customer
    /// counts days (for one of their region's offsets).
    pub fn placed_on(&self, placed_at: OffsetDateTime, day: Day) -> bool {
        self.offsets()
            .any(|hours| on_day_at(self.reported_at, hours, placed_at, day))
    }

    /// Whether an order was placed on `day` where the customer's script is written at
    /// home ([`Moment::script_offset`]): the likelier reading when the region's many
    /// offsets leave two orders on the day.
    pub fn placed_on_at_home(&self, placed_at: OffsetDateTime, day: Day) -> bool {
        self.script_offset
            .is_some_and(|hours| on_day_at(self.reported_at, hours, placed_at, day))
    }
}

/// Whether `placed_at` falls on `day` counted at UTC offset `hours` from a ticket
/// reported at `reported_at`.
fn on_day_at(reported_at: OffsetDateTime, hours: i8, placed_at: OffsetDateTime, day: Day) -> bool {
    let Ok(offset) = UtcOffset::from_hms(hours, 0, 0) else {
        return false;
    };
    if day == Day::LastNight {
        return last_night(
            reported_at.to_offset(offset).date(),
            placed_at.to_offset(offset),
        );
    }
    let placed = placed_at.to_offset(offset).date();
    if let Day::Date { year, month, day } = day {
        return year.is_none_or(|y| y == placed.year())
            && u8::from(placed.month()) == month
            && placed.day() == day;
    }
    let today = reported_at.to_offset(offset).date();
    days_meant(day, today).contains(&placed)
}

/// Whether `placed` (local) was last night as seen on `today`: between 17:00 the day
/// before and 06:00 today.
fn last_night(today: Date, placed: OffsetDateTime) -> bool {
    let (Some(yesterday), Ok(evening), Ok(morning)) = (
        today.previous_day(),
        time::Time::from_hms(17, 0, 0),
        time::Time::from_hms(6, 0, 0),
    ) else {
        return false;
    };
    let at = time::PrimitiveDateTime::new(placed.date(), placed.time());
    time::PrimitiveDateTime::new(yesterday, evening) <= at
        && at < time::PrimitiveDateTime::new(today, morning)
}

/// The dates a weekday or a day back can mean when the customer writes on `today`. A
/// weekday that is today's own may mean today or a week ago; "last week's" is in the
/// Monday-to-Sunday week before this one.
fn days_meant(day: Day, today: Date) -> Vec<Date> {
    let back = |n: i64| today.checked_sub(Duration::days(n));
    match day {
        // Calendar dates are compared as written, last night by the hour (`on_day_at`).
        Day::Date { .. } | Day::LastNight => Vec::new(),
        Day::Weekday(w) => {
            let since = days_since(today.weekday(), w);
            let mut out: Vec<Date> = back(since).into_iter().collect();
            if since == 0 {
                out.extend(back(7));
            }
            out
        }
        Day::LastWeeks(w) => {
            let monday = i64::from(today.weekday().number_days_from_monday());
            back(monday + 7 - i64::from(w.number_days_from_monday()))
                .into_iter()
                .collect()
        }
        Day::DaysAgo(n) => back(i64::from(n)).into_iter().collect(),
        Day::Within(from, to) => (from..=to).filter_map(|n| back(i64::from(n))).collect(),
        Day::LastWeek => {
            let monday = i64::from(today.weekday().number_days_from_monday());
            (monday + 1..=monday + 7)
                .chain(5..=9)
                .filter_map(back)
                .collect()
        }
        Day::Month(months) => days_of_month(today, months),
        Day::Named(named) => named.last_before(today).into_iter().collect(),
        Day::WeekBeforeLast => {
            let monday = i64::from(today.weekday().number_days_from_monday());
            (monday + 8..=monday + 14)
                .chain(12..=16)
                .filter_map(back)
                .collect()
        }
        // This month's, when it has come; else last month's.
        Day::OfMonth(d) => today
            .replace_day(d)
            .ok()
            .filter(|date| *date <= today)
            .or_else(|| {
                today
                    .replace_day(1)
                    .ok()?
                    .previous_day()?
                    .replace_day(d)
                    .ok()
            })
            .into_iter()
            .collect(),
    }
}

/// The days of the month `months` before `today`'s, up to `today`.
fn days_of_month(today: Date, months: u8) -> Vec<Date> {
    let mut first = today.replace_day(1).ok();
    for _ in 0..months {
        first = first
            .and_then(|f| f.previous_day())
            .and_then(|d| d.replace_day(1).ok());
    }
    let Some(first) = first else {
        return Vec::new();
    };
    std::iter::successors(Some(first), |d| d.next_day())
        .take_while(|d| d.month() == first.month() && *d <= today)
        .collect()
}

fn days_since(today: Weekday, then: Weekday) -> i64 {
    let (t, w) = (
        i64::from(today.number_days_from_monday()),
        i64::from(then.number_days_from_monday()),
    );
    (t - w).rem_euclid(7)
}

#[cfg(test)]
#[path = "when_tests.rs"]
mod tests;
