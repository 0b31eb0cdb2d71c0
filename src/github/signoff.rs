//! Which head a `/qa approve` signs off (SPEC §10): the commit the comment names, else the head
//! that was current when the comment was written — never a head pushed after it. Pure: the
//! times come from GitHub (the comment's `created_at`, the head's first check suite).

/// Whether a sign-off written at `commented_at` (naming `named`, possibly empty) covers `head`,
/// first seen by GitHub at `pushed_at`; else why not.
pub fn binds(
    named: &str,
    head: &str,
    commented_at: &str,
    pushed_at: Option<&str>,
) -> Result<(), String> {
    if !named.is_empty() {
        let named = named.to_ascii_lowercase();
        let hex =
            named.len() >= 7 && named.len() <= 64 && named.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex {
            return Err(format!(
                "`{}` is not a commit id (7 to 64 hex digits)",
                crate::text::clip(&named, 40)
            ));
        }
        return if head.to_ascii_lowercase().starts_with(&named) {
            Ok(())
        } else {
            Err(format!(
                "it names {named}, the head is {}: a new sign-off is needed",
                crate::text::prefix(head, 12)
            ))
        };
    }
    let commented = seconds(commented_at)
        .ok_or_else(|| format!("the comment's time `{commented_at}` cannot be read"))?;
    let Some(pushed_at) = pushed_at else {
        return Err(format!(
            "when {} was pushed is unknown: name it (`/qa approve {}`)",
            crate::text::prefix(head, 12),
            crate::text::prefix(head, 12)
        ));
    };
    let pushed =
        seconds(pushed_at).ok_or_else(|| format!("the push time `{pushed_at}` cannot be read"))?;
    if pushed <= commented {
        Ok(())
    } else {
        Err(format!(
            "{} was pushed after the comment ({pushed_at} > {commented_at}): a new sign-off is needed",
            crate::text::prefix(head, 12)
        ))
    }
}

/// Seconds since the epoch of an RFC 3339 time (`2026-11-26T23:26:49Z`, fractions and offsets
/// allowed), as GitHub writes them.
pub fn seconds(t: &str) -> Option<i64> {
    let t = t.trim();
    let (date, rest) = t.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time_end = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (time, zone) = rest.split_at(time_end);
    let time = time.split('.').next()?;
    let mut hms = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (hms.next()??, hms.next()??, hms.next()??);
    let offset = match zone {
        "" | "Z" | "z" => 0,
        z => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let (oh, om) = z[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + min * 60 + s - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

    #[test]
    fn a_sign_off_covers_only_the_head_current_when_it_was_written() {
        let cases: &[(&str, &str, Option<&str>, bool, &str)] = &[
            (
                "",
                "2026-11-26T10:00:00Z",
                Some("2026-11-26T09:59:59Z"),
                true,
                "pushed before",
            ),
            (
                "",
                "2026-11-26T10:00:00Z",
                Some("2026-11-26T10:00:00Z"),
                true,
                "same second",
            ),
            (
                "",
                "2026-11-26T10:00:00Z",
                Some("2026-11-26T10:00:01Z"),
                false,
                "pushed after",
            ),
            (
                "",
                "2026-11-26T10:00:00Z",
                Some("2026-11-26T11:30:00+01:00"),
                false,
                "10:30 UTC: after",
            ),
            (
                "",
                "2026-11-26T10:00:00Z",
                Some("2026-11-26T10:30:00+01:00"),
                true,
                "09:30 UTC: before",
            ),
            ("", "2026-11-26T10:00:00Z", None, false, "push time unknown"),
            ("6dcb09b", "", None, true, "named, a prefix of the head"),
            ("6DCB09B5B57875F3", "", None, true, "named, upper case"),
            ("1234567", "", None, false, "named, another commit"),
            ("6dcb", "", None, false, "too short to name a commit"),
            ("latest", "", None, false, "not a commit id"),
        ];
        for (named, commented, pushed, want, comment) in cases {
            assert_eq!(
                binds(named, HEAD, commented, *pushed).is_ok(),
                *want,
                "{comment}: {:?}",
                binds(named, HEAD, commented, *pushed)
            );
        }
    }

    #[test]
    fn times_read_as_github_writes_them() {
        assert_eq!(seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(seconds("2026-11-26T23:26:49Z"), Some(1_795_735_609));
        assert_eq!(seconds("2026-11-26T23:26:49.123Z"), Some(1_795_735_609));
        assert_eq!(seconds("2026-11-27T00:26:49+01:00"), Some(1_795_735_609));
        assert_eq!(seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(seconds("yesterday"), None);
        assert_eq!(seconds("2026-13-01T00:00:00Z"), None);
    }
}
