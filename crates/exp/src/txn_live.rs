//! Running a transaction experiment point on the live UDP runtime.
