//! Line by line: which place each line of a message stands in. One pass finds where
//! the quoted and forwarded sections begin (everything after a reply header or a
//! forward banner belongs to them; a `>` line anywhere is quoted); then each run of new
//! lines is checked for a signature at its end and for pasted record lines.

use super::fold::fold_words;
use super::markers::{
    FORWARDED, FORWARD_PREFIXES, FROM_KEYS, HEADER_KEYS, ORIGINAL, SENT_FROM, SIGNATURE_DELIMITERS,
    SIGN_OFFS, SUBJECT_KEYS, WROTE,
};
use super::pasted::is_record_line;
use super::Place;

/// Each line with its place, quote markers removed from quoted lines.
pub(super) fn place_lines(text: &str) -> Vec<(Place, String)> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let sections = sections(&lines);
    let mut placed: Vec<(Place, String)> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if sections[i] != Place::New {
            let line = quoted_rest(lines[i]).unwrap_or(lines[i]);
            placed.push((sections[i], line.to_string()));
            i += 1;
            continue;
        }
        let end = (i..lines.len())
            .find(|j| sections[*j] != Place::New)
            .unwrap_or(lines.len());
        place_new_run(&lines[i..end], &mut placed);
        i = end;
    }
    placed
}

/// The section of each line: `Quoted`, `Forwarded`, or `New` (to be looked at again).
fn sections(lines: &[&str]) -> Vec<Place> {
    let mut out = Vec::with_capacity(lines.len());
    let mut mode = Place::New;
    for i in 0..lines.len() {
        if mode == Place::New {
            if let Some(opened) = opens_section(lines, i) {
                mode = opened;
            }
        }
        let place = match mode {
            Place::New if quoted_rest(lines[i]).is_some() => Place::Quoted,
            other => other,
        };
        out.push(place);
    }
    out
}

/// Whether line `i` opens a quoted or forwarded section that runs to the end.
fn opens_section(lines: &[&str], i: usize) -> Option<Place> {
    let line = lines[i];
    if line.chars().count() > 300 {
        return None;
    }
    let banner = fold_words(line);
    let trimmed =
        banner.trim_matches(|c: char| c == '-' || c == '=' || c == '_' || c.is_whitespace());
    let dashed = banner.matches(['-', '=']).count() >= 2;
    if FORWARDED.iter().any(|f| trimmed.starts_with(f)) && (dashed || trimmed.ends_with(':')) {
        return Some(Place::Forwarded);
    }
    if ORIGINAL.contains(&trimmed) && dashed {
        return Some(Place::Quoted);
    }
    if reply_header(lines, i) {
        return Some(Place::Quoted);
    }
    // An Outlook rule line (`_____`) just above a header block belongs to it.
    if trimmed.is_empty() && banner.trim().chars().count() >= 8 {
        let until = (i + 3).min(lines.len());
        return (i + 1..until).find_map(|j| header_block(lines, j));
    }
    header_block(lines, i)
}

/// "On Mon, 3 Mar 2026 at 10:00, Shop <help@shop.example> wrote:" (possibly wrapped over
/// two lines), "Am … schrieb …:", "在 … 写道：", "2026年3月3日(月) 10:00 Shop <…>:".
fn reply_header(lines: &[&str], i: usize) -> bool {
    let one = fold_words(lines[i]);
    let two = match lines.get(i + 1) {
        Some(next) if !one.trim_end().ends_with(['.', '!', '?', '。']) => {
            format!("{} {}", one.trim_end(), fold_words(next).trim())
        }
        _ => one.clone(),
    };
    let header_like = |s: &str| s.chars().any(|c| c.is_ascii_digit()) || s.contains('@');
    [one.trim_end(), two.trim_end()].iter().any(|s| {
        header_like(s)
            && s.chars().count() <= 300
            && (WROTE.iter().any(|w| s.ends_with(w))
                || (s.ends_with(">:") && s.contains('@'))
                || verb_before_name(s))
    })
}

/// "Op 31-03-2026 om 04:31 schreef Example Shop:", "Am 10.04.2026 schrieb Anna:": the
/// verb before the sender's name, the line ending with a colon (Dutch, German clients).
fn verb_before_name(s: &str) -> bool {
    s.ends_with(':')
        && WROTE
            .iter()
            .filter_map(|w| w.strip_suffix(':'))
            .filter(|w| w.is_ascii() && !w.ends_with(' '))
            .any(|w| s.contains(&format!(" {w} ")))
}

/// A header block starting at line `i` ("From: …" and at least two more header lines
/// within the next six): `Forwarded` when its subject is a forward's, else `Quoted`.
fn header_block(lines: &[&str], i: usize) -> Option<Place> {
    let (key, _) = header(lines[i])?;
    if !FROM_KEYS.contains(&key.as_str()) {
        return None;
    }
    let following: Vec<(String, String)> = lines[i + 1..]
        .iter()
        .take(6)
        .filter_map(|l| header(l))
        .filter(|(k, _)| HEADER_KEYS.contains(&k.as_str()))
        .collect();
    if following.len() < 2 {
        return None;
    }
    let forwarded = following.iter().any(|(k, v)| {
        SUBJECT_KEYS.contains(&k.as_str()) && FORWARD_PREFIXES.iter().any(|p| v.starts_with(p))
    });
    Some(if forwarded {
        Place::Forwarded
    } else {
        Place::Quoted
    })
}

/// `("from", "shop <help@shop.example>")` of a `Key: value` line (`:` or `：`), folded.
fn header(line: &str) -> Option<(String, String)> {
    let folded = fold_words(line);
    let at = folded.find([':', '：'])?;
    let key = folded[..at]
        .trim()
        .trim_start_matches(['*', '>', ' '])
        .trim();
    if key.is_empty() || key.chars().count() > 16 {
        return None;
    }
    let value = folded[at..].trim_start_matches([':', '：']).trim();
    Some((key.to_string(), value.to_string()))
}

/// The text of a `>` line after its markers (`> > text` → `text`).
fn quoted_rest(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if !(t.starts_with('>') || t.starts_with('＞')) {
        return None;
    }
    Some(t.trim_start_matches(['>', '＞', ' ', '\t']))
}

/// One run of new lines: a signature at its end, pasted record lines, the rest new.
fn place_new_run(run: &[&str], placed: &mut Vec<(Place, String)>) {
    let signature_from = signature_start(run);
    for (k, line) in run.iter().enumerate() {
        let place = if signature_from.is_some_and(|s| k >= s) || sent_from(line) {
            Place::Signature
        } else if is_record_line(line) {
            Place::Pasted
        } else {
            Place::New
        };
        placed.push((place, line.to_string()));
    }
}

/// The first line of the signature that ends a run, if any: a `-- ` delimiter or a
/// sign-off ("Best regards,", "Mit freundlichen Grüßen", "此致") followed by at most
/// eight short lines, none a `P.S.`.
fn signature_start(run: &[&str]) -> Option<usize> {
    let filled: Vec<usize> = (0..run.len())
        .filter(|k| !run[*k].trim().is_empty())
        .collect();
    // A signature has at most eight lines after its first, so only the last nine filled
    // lines can open one: the search stays linear in the run however long the mail.
    let tail = filled.len().saturating_sub(9);
    filled[tail..].iter().copied().find(|&k| {
        let after: Vec<&str> = run[k + 1..]
            .iter()
            .filter(|l| !l.trim().is_empty())
            .copied()
            .collect();
        let short = after.len() <= 8
            && after.iter().all(|l| l.chars().count() <= 80)
            && !after.iter().any(|l| postscript(l));
        short && (delimiter(run[k]) || (k != filled[0] && sign_off(run[k])))
    })
}

/// `-- `, or a rule of dashes (any width, `―` and `─` too) or underscores.
fn delimiter(line: &str) -> bool {
    let rule = |c: char| {
        matches!(
            c,
            '_' | '-' | '\u{2010}'..='\u{2015}' | '\u{2500}' | '\u{2501}' | '\u{30fc}' | '\u{ff0d}'
        )
    };
    SIGNATURE_DELIMITERS.contains(&line.trim_end_matches(['\r']))
        || (line.trim().chars().count() >= 2 && line.trim().chars().all(rule))
}

/// A sign-off line: the phrase, then at most a name (no digits), nothing else.
fn sign_off(line: &str) -> bool {
    let folded = fold_words(line.trim());
    if folded.chars().count() > 48 {
        return false;
    }
    SIGN_OFFS.iter().any(|s| {
        folded.strip_prefix(s).is_some_and(|rest| {
            // "regards" is not "regardless"; a CJK sign-off needs no boundary.
            let starts_clean = !s.is_ascii()
                || s.ends_with(',')
                || rest.chars().next().is_none_or(|c| !c.is_alphanumeric());
            starts_clean && !rest.chars().any(|c| c.is_ascii_digit())
        })
    })
}

fn sent_from(line: &str) -> bool {
    let folded = fold_words(line.trim());
    folded.chars().count() <= 60 && SENT_FROM.iter().any(|s| folded.contains(s))
}

fn postscript(line: &str) -> bool {
    let folded = fold_words(line.trim());
    folded.starts_with("ps") || folded.starts_with("p.s") || folded.starts_with("nb:")
}
