//! Unit tests of the design layer on small inline designs.
