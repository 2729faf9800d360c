//! How numbers are written for people (labels, messages, file comments): one
//! rule everywhere, at most six significant digits, no float noise
//! (`0.30000000000000004` is `0.3`) and no trailing zeros (`-1.0` is `-1`).

/// `x` with at most 6 significant digits (all the integer digits of a large
/// number), trailing zeros and a trailing point removed.
pub fn short(x: f64) -> String {
    let decimals = (5 - x.abs().max(1e-300).log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    // "-0" (a tiny negative rounded away) is 0.
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn six_significant_digits_without_noise_or_trailing_zeros() {
        assert_eq!(short(-1.0), "-1");
        assert_eq!(short(-0.25), "-0.25");
        assert_eq!(short(0.1 + 0.2), "0.3");
        assert_eq!(short(3.5559999999999996), "3.556");
        assert_eq!(short(31.0e9 / 1e9), "31");
        assert_eq!(short(0.000123456789), "0.000123457");
        assert_eq!(short(1234567.0), "1234567");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(-1e-14), "0");
        assert_eq!(short(7.112), "7.112");
    }
}
