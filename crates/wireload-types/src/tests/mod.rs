//! Tests of the deserializers against PostgreSQL's answers, round trips, and builders.

mod builders;
mod deserializers;
mod formats;
mod pg_answers;
mod round_trips;
mod swar;
