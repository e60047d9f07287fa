//! A token bucket on the client's socket (being written).
