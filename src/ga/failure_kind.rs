//! Why designs failed, in a few kinds a user can act on: counted per
//! generation in the run log and `history.csv`, per run in `inspect`.
//!
//! Failure reasons are kept as text in checkpoints (earlier checkpoints hold
//! them too), so the kind is read from the text: the evaluation of a design
//! prefixes its reason with the stage that failed ("geometry: ...",
//! "simulation: ...", "fitness: ...", "objective: ...").

use std::fmt::Write as _;

use super::state::FailureRecord;

/// What stage a design failed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// The parameter values give no valid geometry or mesh (overlaps, sizes, the budget).
    Geometry,
    /// The fields became non-finite during the simulation.
    Diverged,
    /// The simulation was refused (an invalid job) or returned nothing.
    Simulation,
    /// The results could not be scored against the goals or objectives.
    Fitness,
    /// Anything else.
    Other,
}

impl FailureKind {
    /// Every kind, in the order of the `history.csv` columns.
    pub const ALL: [FailureKind; 5] =
        [FailureKind::Geometry, FailureKind::Diverged, FailureKind::Simulation, FailureKind::Fitness, FailureKind::Other];

    /// The kind of a failure reason.
    pub fn of(reason: &str) -> FailureKind {
        // Divergence first: a diverged simulation is reported as "simulation: fields became non-finite ...".
        if reason.contains("non-finite") {
            FailureKind::Diverged
        } else if reason.starts_with("geometry:") {
            FailureKind::Geometry
        } else if reason.starts_with("simulation:") {
            FailureKind::Simulation
        } else if reason.starts_with("fitness:") || reason.starts_with("objective:") {
            FailureKind::Fitness
        } else {
            FailureKind::Other
        }
    }

    /// The kind's word in logs and tables.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Geometry => "geometry",
            FailureKind::Diverged => "diverged",
            FailureKind::Simulation => "simulation",
            FailureKind::Fitness => "fitness",
            FailureKind::Other => "other",
        }
    }

    /// The `history.csv` column counting this kind.
    pub fn column(self) -> String {
        format!("failed_{}", self.name())
    }
}

/// Counts per kind, in [`FailureKind::ALL`] order.
pub fn count<'a>(records: impl IntoIterator<Item = &'a FailureRecord>) -> [usize; 5] {
    let mut n = [0; 5];
    for r in records {
        let k = FailureKind::of(&r.reason);
        n[FailureKind::ALL.iter().position(|&a| a == k).unwrap_or(4)] += 1;
    }
    n
}

/// The counts as words, kinds with none left out: "geometry 5, diverged 4".
pub fn summary(counts: &[usize; 5]) -> String {
    let mut s = String::new();
    for (k, &n) in FailureKind::ALL.iter().zip(counts) {
        if n > 0 {
            let _ = write!(s, "{}{} {n}", if s.is_empty() { "" } else { ", " }, k.name());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(reason: &str) -> FailureRecord {
        FailureRecord { generation: 0, genome: vec![], reason: reason.into() }
    }

    #[test]
    fn reasons_are_sorted_into_kinds_and_counted() {
        let recs = [
            rec("geometry: designs/x.ron: geometry[2]: Box has zero width"),
            rec("simulation: fields became non-finite at step 812 (Ez at (3, 4, 5))"),
            rec("simulation: invalid job: no port"),
            rec("fitness: \"\" is not a number"),
            rec("objective: designs/x.ron: objectives[0]: ..."),
            rec("fields went non-finite"),
            rec("the engine said no"),
            rec("geometry: again"),
        ];
        let n = count(&recs);
        assert_eq!(n, [2, 2, 1, 2, 1]);
        assert_eq!(summary(&n), "geometry 2, diverged 2, simulation 1, fitness 2, other 1");
        assert_eq!(summary(&[0, 3, 0, 0, 0]), "diverged 3");
        assert_eq!(FailureKind::Diverged.column(), "failed_diverged");
    }
}
