//! `emvolve export`: a design at given parameter values as files for other
//! tools; `--vtk DIR` writes the mesh and the material/PEC geometry for ParaView.

use std::path::PathBuf;

use clap::Args;

use crate::job::EngineKind;
use super::simulate::with_params_file;
use crate::design::Design;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The design file (RON).
    pub design: PathBuf,
    /// Parameter values, `name=value` (repeatable); missing ones take their midpoint.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Parameter values from a RON file (a run's `best/parameters.ron`); `--set` overrides.
    #[arg(long, value_name = "FILE")]
    pub params: Option<PathBuf>,
    /// Mesh the design as this engine would (the mesh differs between FDTD and TLM only in the padding).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Write VTK files (`.vtm` opening `.vtr` cells, `_sheets.vtp`, `_ports.vtp`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub vtk: PathBuf,
}

pub fn run(a: ExportArgs) -> anyhow::Result<i32> {
    let design = Design::load(&a.design)?;
    let sets = with_params_file(&design, a.params.as_deref(), &a.set)?;
    let values = design.values_from_sets(&sets)?;
    let job = design.jobs(&values, &[0], a.engine)?.remove(0);
    let files = crate::export::vtk::write(&job, &a.vtk, design.name())
        .map_err(|e| anyhow::anyhow!("writing VTK files into {}: {e}", a.vtk.display()))?;
    let n = job.mesh.n();
    println!(
        "{}: {} x {} x {} cells ({} in all), {} materials, {} PEC sheets, {} ports",
        design.name(),
        n[0],
        n[1],
        n[2],
        job.mesh.cells(),
        job.materials.len(),
        job.sheets.len(),
        job.ports.len()
    );
    println!("wrote (open the .vtm in ParaView):");
    for f in files {
        println!("  {}", f.display());
    }
    Ok(0)
}
