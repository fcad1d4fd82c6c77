//! Durations and sizes as people type them on a command line (`30s`, `32MiB`), parsed the same
//! way by `serve`, `bridge` and `bench`, so one spelling works everywhere.

use std::time::Duration;

/// Parses `250ms`, `10s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try 30s, 1500ms, 2m, 1h)"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        other => {
            return Err(format!(
                "unknown duration unit {other:?} (use ms, s, m, h, d)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{text:?} is not a valid duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `1048576`, `64KiB`, `32MiB`, `1GiB` (also `KB`, `MB`, `GB` as powers of 1000).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: usize = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size (try 32MiB)"))?;
    let factor: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        other => return Err(format!("unknown size unit {other:?} (use KiB, MiB, GiB)")),
    };
    value
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_parse_with_units() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_bytes("32MiB").unwrap(), 32 << 20);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("lots").is_err());
    }
}
