//! PNG plots made from result records (never from re-typed numbers).
