//! Machine-readable exports, one file per format.
