//! Yee FDTD engine.
