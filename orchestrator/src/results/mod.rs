//! Result bundles: manifest, journal, verify, report.
