//! `kill -9` at random moments: a small CPU run of the fixture design is killed
//! again and again (during set-up, generations and checkpoint writes alike) and
//! resumed each time. No generation completed before a kill may be lost, the
//! latest checkpoint is never damaged, and the run, once finished, equals a run
//! never interrupted, row for row and state for state.

use crate::common;

use std::time::Duration;

use common::cli::*;
use emvolve::run::checkpoint;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const KILLS: usize = 12;

#[test]
fn runs_killed_at_random_moments_lose_nothing_and_end_as_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let design = fixture(tmp.path(), "killed", "Ga(population: 8, generations: 40, seed: 21, stop: (target: None, stagnation: None))");
    let design = design.to_str().unwrap();
    let started = std::time::Instant::now();
    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", "reference"]);
    assert!(ok, "{text}");
    // Kill delays scale with this machine's speed: all KILLS rounds together may
    // run on average 40 % of an uninterrupted run, so the run cannot end before
    // the kills are spent, however fast the engine or the machine is.
    let whole = started.elapsed().as_millis() as u64;
    let longest = (whole * 4 / 5 / KILLS as u64).clamp(60, 900);
    let reference = tmp.path().join("reference");
    let dir = tmp.path().join("killed");

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(77);
    let (mut kills, mut lost, mut most) = (0, 0, None::<usize>);
    for round in 0..3 * KILLS {
        if kills == KILLS {
            break;
        }
        // A run directory exists whole or not at all.
        assert_eq!(dir.exists(), dir.join("settings.ron").exists() && dir.join("design.ron").exists(), "round {round}");
        let args: Vec<&str> = if dir.exists() {
            vec!["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet"]
        } else {
            vec!["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root]
        };
        let mut r = spawn(&args);
        std::thread::sleep(Duration::from_millis(rng.random_range(30..longest)));
        let killed = r.child.try_wait().unwrap().is_none();
        r.child.kill().unwrap();
        let (_, out, err) = r.finish();
        kills += killed as usize;
        // Generations this process reported complete: each line is printed after its checkpoint.
        let reported = out.iter().filter_map(|l| l.strip_prefix("gen ")?.split('/').next()?.parse::<usize>().ok()).max();
        let on_disk = match checkpoint::load(&dir) {
            Ok(l) => {
                assert!(l.warning.is_none(), "round {round}: the latest checkpoint was damaged: {:?}", l.warning);
                Some(l.state.generation)
            }
            Err(emvolve::run::CheckpointError::Missing { .. }) => None,
            Err(e) => panic!("round {round}: {e}"),
        };
        let before = most.max(reported);
        if before > on_disk {
            lost += 1;
        }
        assert!(on_disk >= before, "round {round}: generations {before:?} were complete, the checkpoint holds {on_disk:?}\n{out:?}\n{err:?}");
        most = on_disk;
    }
    let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet"]);
    assert!(ok, "{text}");
    println!("kill-at-random: {kills} kills survived, {lost} generations lost, last checkpoint before the final resume at generation {most:?}");
    assert!(kills >= 10, "only {kills} processes were still running when killed (the run ended first)");
    assert_eq!(lost, 0);
    assert_eq!(history(&dir), history(&reference));
    let (a, b) = (checkpoint::load(&dir).unwrap().state, checkpoint::load(&reference).unwrap().state);
    assert!(a.without_timings() == b.without_timings(), "the killed-and-resumed run's state differs from the reference");
}
