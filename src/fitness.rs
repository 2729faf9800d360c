//! Fitness of one simulated design: how far its results miss the goals.
//!
//! For every goal, at each frequency of the sweep inside the goal's band, the
//! violation in dB (0 where the goal is met) is squared; the squares are averaged
//! over those frequencies and multiplied by the goal's weight; the goals' parts
//! are summed. 0 means every goal is met; lower is better.

use num_complex::Complex64;
use serde::{Deserialize, Serialize};

use crate::analysis::pattern::FarField;
use crate::analysis::sparams::SParams;
use crate::numfmt::short;

/// Which side of a level a goal's quantity must stay on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Limit {
    /// quantity >= level (dB).
    Above(f64),
    /// quantity <= level (dB).
    Below(f64),
}

/// What a goal holds to a limit, in dB. Design files write `Goal(s: (2, 1), ...)`,
/// `Goal(gain: (theta: 0, phi: 0), ...)`; directions are in degrees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum GoalKind {
    /// |S_ij| in dB; 1-based port numbers, port j driven.
    S { i: usize, j: usize },
    /// Gain (on accepted power) towards (theta, phi), dBi.
    Gain { theta: f64, phi: f64 },
    /// Realised gain (on incident power: mismatch included), dBi.
    RealizedGain { theta: f64, phi: f64 },
    /// Directivity, dBi.
    Directivity { theta: f64, phi: f64 },
    /// Radiation intensity towards (theta, phi) over the opposite direction, dB.
    FrontToBack { theta: f64, phi: f64 },
}

impl GoalKind {
    /// The port (0-based) whose drive the goal needs, if any (pattern goals:
    /// the far field's port, which the design adds).
    pub fn drive(&self) -> Option<usize> {
        match *self {
            GoalKind::S { j, .. } => j.checked_sub(1),
            _ => None,
        }
    }

    /// Whether the goal is on the far field.
    pub fn is_pattern(&self) -> bool {
        !matches!(self, GoalKind::S { .. })
    }

    /// "|S21|", "gain(theta 0, phi 0)".
    pub fn quantity(&self) -> String {
        let dir = |name: &str, t: f64, p: f64| format!("{name}(theta {}, phi {})", short(t), short(p));
        match *self {
            GoalKind::S { i, j } => format!("|S{i}{j}|"),
            GoalKind::Gain { theta, phi } => dir("gain", theta, phi),
            GoalKind::RealizedGain { theta, phi } => dir("realized gain", theta, phi),
            GoalKind::Directivity { theta, phi } => dir("directivity", theta, phi),
            GoalKind::FrontToBack { theta, phi } => dir("front-to-back", theta, phi),
        }
    }

    /// The unit of the limit: "dB" or "dBi".
    pub fn unit(&self) -> &'static str {
        match self {
            GoalKind::S { .. } | GoalKind::FrontToBack { .. } => "dB",
            _ => "dBi",
        }
    }

    /// The goal's quantity as a power ratio from far field `ff` at its frequency index `fi`.
    pub fn pattern_value(&self, ff: &FarField, fi: usize) -> Option<f64> {
        match *self {
            GoalKind::S { .. } => None,
            GoalKind::Gain { theta, phi } => Some(ff.gain(fi, theta, phi)),
            GoalKind::RealizedGain { theta, phi } => Some(ff.realized_gain(fi, theta, phi)),
            GoalKind::Directivity { theta, phi } => Some(ff.directivity(fi, theta, phi)),
            GoalKind::FrontToBack { theta, phi } => Some(ff.front_to_back(fi, theta, phi)),
        }
    }
}

/// One goal: a quantity above or below a level over `[band.0, band.1]` Hz.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub kind: GoalKind,
    pub band: (f64, f64),
    pub limit: Limit,
    pub weight: f64,
}

impl Goal {
    /// Violation in dB at a point where the quantity is `db` (0 when met).
    pub fn violation_db(&self, db: f64) -> f64 {
        match self.limit {
            Limit::Above(l) => (l - db).max(0.0),
            Limit::Below(l) => (db - l).max(0.0),
        }
    }

    /// Whether frequency `f` belongs to the goal's band (sweep points computed by
    /// linspace may miss the edges by rounding, hence the tolerance).
    pub fn contains(&self, f: f64) -> bool {
        let tol = 1e-9 * self.band.1.abs().max(1.0);
        f >= self.band.0 - tol && f <= self.band.1 + tol
    }

    /// "|S21| > -1 dB over 31.0-32.1 GHz".
    pub fn label(&self) -> String {
        let (op, level) = match self.limit {
            Limit::Above(l) => (">", l),
            Limit::Below(l) => ("<", l),
        };
        format!("{} {op} {} {} over {}", self.kind.quantity(), short(level), self.kind.unit(), band_text(self.band))
    }

    /// The goal's quantity as (frequency, linear magnitude) pairs: the sweep's
    /// for S, the far field's for pattern goals (a power ratio's square root,
    /// so that 20 log10 gives its dB).
    fn magnitudes(&self, sp: &SParams, ff: Option<&FarField>, label: &str, reading: Reading) -> Result<Vec<(f64, f64)>, FitnessError> {
        match self.kind {
            GoalKind::S { i, j } => {
                let s: &[Complex64] = sp
                    .get(i, j)
                    .or_else(|| if reading == Reading::Reciprocal { sp.get(j, i) } else { None })
                    .ok_or_else(|| FitnessError::Missing { label: label.to_string(), i, j })?;
                Ok(sp.freqs.iter().zip(s).map(|(&f, z)| (f, z.norm())).collect())
            }
            kind => {
                let ff = ff.ok_or_else(|| FitnessError::NoFarField { label: label.to_string() })?;
                Ok((0..ff.patterns.len())
                    .filter(|&fi| self.contains(ff.patterns[fi].freq))
                    .map(|fi| (ff.patterns[fi].freq, kind.pattern_value(ff, fi).unwrap_or(f64::NAN).sqrt()))
                    .collect())
            }
        }
    }

    /// The error for a non-finite value of the quantity at `freq_hz`.
    fn non_finite(&self, label: String, freq_hz: f64) -> FitnessError {
        match self.kind {
            GoalKind::S { i, j } => FitnessError::NonFinite { label, i, j, freq_hz },
            _ => FitnessError::NonFinitePattern { label, freq_hz },
        }
    }
}

/// "31.0-32.1 GHz", with as few decimals (at least one) as show both edges exactly.
pub fn band_text((f1, f2): (f64, f64)) -> String {
    let (scale, unit) = match f2.abs() {
        x if x >= 1e9 => (1e9, "GHz"),
        x if x >= 1e6 => (1e6, "MHz"),
        x if x >= 1e3 => (1e3, "kHz"),
        _ => (1.0, "Hz"),
    };
    let (a, b) = (f1 / scale, f2 / scale);
    let exact = |x: f64, d: i32| {
        let p = 10f64.powi(d);
        ((x * p).round() - x * p).abs() < 1e-6
    };
    let d = (1..=3).find(|&d| exact(a, d) && exact(b, d)).unwrap_or(3) as usize;
    format!("{a:.d$}-{b:.d$} {unit}")
}

/// How one goal fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalScore {
    pub label: String,
    /// Weighted mean squared violation (dB^2); 0 when met everywhere.
    pub violation: f64,
    /// The frequency with the least margin (largest violation) in the band.
    pub worst_freq_hz: f64,
    /// The quantity (dB) there.
    pub worst_db: f64,
    /// Its unit: "dB", or "dBi" for gain and directivity (absent in older checkpoints: dB).
    #[serde(default = "db_unit")]
    pub unit: String,
}

fn db_unit() -> String {
    "dB".into()
}

impl GoalScore {
    /// "met    |S21| > -1 dB over 31.0-32.1 GHz   violation 0.0000 dB^2, worst -0.42 dB at 31.0500 GHz".
    pub fn line(&self) -> String {
        let state = if self.violation == 0.0 { "met   " } else { "missed" };
        format!(
            "{state} {:<44} violation {:>10.4} dB^2, worst {:.2} {} at {:.4} GHz",
            self.label,
            self.violation,
            self.worst_db,
            self.unit,
            self.worst_freq_hz / 1e9
        )
    }
}

/// The fitness of one design (lower is better, 0 when every goal is met).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitness {
    pub total: f64,
    pub per_goal: Vec<GoalScore>,
}

/// Why the fitness of a simulated design could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FitnessError {
    #[error("goal {label}: S{i}{j} was not computed (port {j} was not driven, or there is no such port)")]
    Missing { label: String, i: usize, j: usize },
    #[error("goal {label}: no frequency of the sweep lies in its band")]
    NoPoints { label: String },
    #[error("goal {label}: S{i}{j} is not finite at {freq_hz} Hz")]
    NonFinite { label: String, i: usize, j: usize, freq_hz: f64 },
    #[error("goal {label}: no far field was computed (the simulation recorded no Huygens box)")]
    NoFarField { label: String },
    #[error("goal {label}: the far field is not finite at {freq_hz} Hz")]
    NonFinitePattern { label: String, freq_hz: f64 },
}

/// Score `sp` (and the far field `ff`, for pattern goals) against `goals`.
pub fn evaluate(goals: &[Goal], sp: &SParams, ff: Option<&FarField>) -> Result<Fitness, FitnessError> {
    evaluate_reading(goals, sp, ff, Reading::Direct)
}

/// How a goal on S_ij finds its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Column j only (port j driven).
    Direct,
    /// Column j, else S_ji from column i: S_ij = S_ji in a reciprocal design
    /// (`Design::reciprocity` decides), so the GA need not drive port j.
    Reciprocal,
}

/// [`evaluate`], S goals read as `reading` says.
pub fn evaluate_reading(goals: &[Goal], sp: &SParams, ff: Option<&FarField>, reading: Reading) -> Result<Fitness, FitnessError> {
    let mut per_goal = Vec::with_capacity(goals.len());
    for g in goals {
        let label = g.label();
        let mags = g.magnitudes(sp, ff, &label, reading)?;
        let mut sum = 0.0;
        let mut count = 0usize;
        // (violation, -margin) orders by the least margin also where every point is met.
        let mut worst: Option<(f64, f64, f64)> = None; // (badness, f, db)
        for (f, mag) in mags {
            if !g.contains(f) {
                continue;
            }
            if !mag.is_finite() {
                return Err(g.non_finite(label, f));
            }
            let db = crate::analysis::db(mag);
            let v = g.violation_db(db);
            sum += v * v;
            count += 1;
            let badness = match g.limit {
                Limit::Above(l) => l - db,
                Limit::Below(l) => db - l,
            };
            if worst.is_none_or(|(b, _, _)| badness > b) {
                worst = Some((badness, f, db));
            }
        }
        let Some((_, worst_freq_hz, worst_db)) = worst else {
            return Err(FitnessError::NoPoints { label });
        };
        let unit = g.kind.unit().to_string();
        per_goal.push(GoalScore { label, violation: g.weight * sum / count as f64, worst_freq_hz, worst_db, unit });
    }
    let total = per_goal.iter().map(|g| g.violation).sum();
    Ok(Fitness { total, per_goal })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-port whose S21 and S11 have the given dB values at 26..=38 GHz (13 points).
    fn sparams(s21_db: impl Fn(f64) -> f64, s11_db: impl Fn(f64) -> f64, drive_2: bool) -> SParams {
        let freqs: Vec<f64> = (0..13).map(|k| (26.0 + k as f64) * 1e9).collect();
        let col = |h: &dyn Fn(f64) -> f64| -> Vec<Complex64> {
            freqs.iter().map(|&f| Complex64::from_polar(10f64.powf(h(f) / 20.0), 0.3)).collect()
        };
        let s11 = col(&s11_db);
        let s21 = col(&s21_db);
        let col2 = drive_2.then(|| s21.clone());
        SParams {
            freqs: freqs.clone(),
            ports: vec!["in".into(), "out".into()],
            s: vec![vec![Some(s11), col2.clone()], vec![Some(s21), col2]],
            zin: vec![None, None],
            zref: vec![vec![Complex64::new(50.0, 0.0); 13]; 2],
        }
    }

    fn goal(s: (usize, usize), band: (f64, f64), limit: Limit, weight: f64) -> Goal {
        Goal { kind: GoalKind::S { i: s.0, j: s.1 }, band, limit, weight }
    }

    #[test]
    fn met_goals_score_zero() {
        let sp = sparams(|_| -0.5, |_| -20.0, false);
        let goals =
            [goal((2, 1), (31e9, 32e9), Limit::Above(-1.0), 1.0), goal((1, 1), (31e9, 32e9), Limit::Below(-15.0), 1.0)];
        let fit = evaluate(&goals, &sp, None).unwrap();
        assert_eq!(fit.total, 0.0);
        assert_eq!(fit.per_goal[0].label, "|S21| > -1 dB over 31.0-32.0 GHz");
        assert_eq!(fit.per_goal[1].label, "|S11| < -15 dB over 31.0-32.0 GHz");
        // Where met, "worst" is the point of least margin.
        assert!((fit.per_goal[0].worst_db + 0.5).abs() < 1e-9);
    }

    #[test]
    fn violations_are_squared_averaged_and_weighted() {
        // S21 = -3 dB at 31 GHz, -1 dB at 32 GHz, -2 dB at 33 GHz; goal > -1 dB over 31-33.
        let sp = sparams(
            |f| match (f / 1e9).round() as i64 {
                31 => -3.0,
                32 => -1.0,
                33 => -2.0,
                _ => -40.0,
            },
            |_| -10.0,
            false,
        );
        let goals = [
            goal((2, 1), (31e9, 33e9), Limit::Above(-1.0), 2.0),
            // S11 = -10 dB everywhere, goal < -15 over 26-27 (two points): violation 5 dB each.
            goal((1, 1), (26e9, 27e9), Limit::Below(-15.0), 0.5),
        ];
        let fit = evaluate(&goals, &sp, None).unwrap();
        let g0 = 2.0 * (4.0 + 0.0 + 1.0) / 3.0;
        let g1 = 0.5 * 25.0;
        assert!((fit.per_goal[0].violation - g0).abs() < 1e-9, "{:?}", fit);
        assert!((fit.per_goal[1].violation - g1).abs() < 1e-9);
        assert!((fit.total - (g0 + g1)).abs() < 1e-9);
        assert_eq!(fit.per_goal[0].worst_freq_hz, 31e9);
        assert!((fit.per_goal[0].worst_db + 3.0).abs() < 1e-9);
        // Serialisable, for inspect and the run files.
        let json = serde_json::to_string(&fit).unwrap();
        assert!(json.contains("worst_freq_hz"));
    }

    #[test]
    fn missing_columns_empty_bands_and_nan_are_errors() {
        let sp = sparams(|_| -1.0, |_| -1.0, false);
        let g = [goal((1, 2), (30e9, 31e9), Limit::Below(-10.0), 1.0)];
        assert!(matches!(evaluate(&g, &sp, None), Err(FitnessError::Missing { i: 1, j: 2, .. })));
        let g = [goal((2, 1), (30.2e9, 30.8e9), Limit::Below(-10.0), 1.0)];
        assert!(matches!(evaluate(&g, &sp, None), Err(FitnessError::NoPoints { .. })));
        let sp = sparams(|f| if f == 30e9 { f64::NAN } else { -1.0 }, |_| -1.0, true);
        let g = [goal((2, 1), (29e9, 31e9), Limit::Below(-10.0), 1.0)];
        assert!(matches!(evaluate(&g, &sp, None), Err(FitnessError::NonFinite { freq_hz, .. }) if freq_hz == 30e9));
        // The second column is there when port 2 was driven (and finite away from 30 GHz).
        let g = [goal((1, 2), (31e9, 32e9), Limit::Below(-10.0), 1.0)];
        assert!(evaluate(&g, &sp, None).is_ok());
    }

    #[test]
    fn a_reciprocal_reading_takes_s12_from_column_one_and_s22_from_nowhere_else() {
        // Port 1 driven only: S21 at -3 dB.
        let sp = sparams(|_| -3.0, |_| -20.0, false);
        let g12 = [goal((1, 2), (30e9, 31e9), Limit::Below(-10.0), 1.0)];
        assert!(matches!(evaluate_reading(&g12, &sp, None, Reading::Direct), Err(FitnessError::Missing { i: 1, j: 2, .. })));
        let via_21 = evaluate_reading(&g12, &sp, None, Reading::Reciprocal).unwrap();
        let g21 = [goal((2, 1), (30e9, 31e9), Limit::Below(-10.0), 1.0)];
        let direct = evaluate(&g21, &sp, None).unwrap();
        assert_eq!(via_21.total, direct.total);
        assert!((via_21.per_goal[0].worst_db + 3.0).abs() < 1e-9);
        // S22 is no other entry's mirror: still missing.
        let g22 = [goal((2, 2), (30e9, 31e9), Limit::Below(-10.0), 1.0)];
        assert!(matches!(evaluate_reading(&g22, &sp, None, Reading::Reciprocal), Err(FitnessError::Missing { i: 2, j: 2, .. })));
        // A simulated S12 is read as it is, not replaced by S21.
        let mut both = sparams(|_| -3.0, |_| -20.0, true);
        both.s[0][1] = Some(vec![Complex64::new(0.01, 0.0); 13]); // S12 at -40 dB: met
        assert!(via_21.total > 0.0);
        assert_eq!(evaluate_reading(&g12, &both, None, Reading::Reciprocal).unwrap().total, 0.0);
    }

    #[test]
    fn pattern_goals_need_a_far_field_and_say_dbi() {
        let sp = sparams(|_| -1.0, |_| -1.0, false);
        let g = Goal { kind: GoalKind::Gain { theta: 0.0, phi: 0.0 }, band: (30e9, 31e9), limit: Limit::Above(5.0), weight: 1.0 };
        assert_eq!(g.label(), "gain(theta 0, phi 0) > 5 dBi over 30.0-31.0 GHz");
        assert!(matches!(evaluate(&[g], &sp, None), Err(FitnessError::NoFarField { .. })));
        let fb = GoalKind::FrontToBack { theta: 90.0, phi: 45.0 };
        assert_eq!((fb.quantity().as_str(), fb.unit()), ("front-to-back(theta 90, phi 45)", "dB"));
        assert!(fb.is_pattern() && fb.drive().is_none());
    }

    #[test]
    fn labels_use_readable_units() {
        let g = goal((1, 1), (2.40e9, 2.48e9), Limit::Below(-10.0), 1.0);
        assert_eq!(g.label(), "|S11| < -10 dB over 2.40-2.48 GHz");
        let g = goal((2, 1), (26e9, 29.5e9), Limit::Below(-30.0), 1.0);
        assert_eq!(g.label(), "|S21| < -30 dB over 26.0-29.5 GHz");
        let g = goal((2, 1), (100e6, 250e6), Limit::Above(-0.25), 1.0);
        assert_eq!(g.label(), "|S21| > -0.25 dB over 100.0-250.0 MHz");
    }
}
